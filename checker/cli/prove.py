"""`regcheck prove SPEC` (induction, guards, consistency) and `regcheck bmc SPEC --depth K`.

Exit codes: 0 every obligation PROVED and the spec consistent (prove) / no violation in any run of
up to K steps (bmc); 1 something REFUTED or UNKNOWN, an inconsistency (prove) / a violation found or
the solver gave up (bmc); 2 bad input (unreadable spec, unknown parameter, bad option).

`prove --format sarif` writes SARIF 2.1.0 (checker/emit/sarif.py); `prove --itf DIR` and `bmc --itf OUT`
write counterexamples as ITF JSON (checker/emit/itf.py) for Quint and Apalache tooling. `prove` draws a
progress bar on standard error when it is a terminal.
"""

from __future__ import annotations

import os
from collections import Counter

import orjson

from ..emit.itf import counterexample_to_itf, run_to_itf
from ..emit.sarif import prove_log
from ..engines.bmc import BmcResult, search_violation
from ..engines.proof import Check, CounterExample, Obligation, ProofReport, ProveOptions
from ..engines.prover import prove
from ..engines.runs import TYPES, Run, format_env, format_state, format_step
from ..language.checked import CheckedSpec
from ..language.diagnostics import RegcheckError, error
from ..language.files import make_directory, require_writable, write_output
from ..language.load import load_spec
from ..symbolic.solver import SolverOptions, Verdict, Witness
from .common import (EXIT_FINDINGS, EXIT_OK, add_env, add_format, add_output, add_verbosity, nonneg_int, parse_env,
                     positive_int, run_trace_line, write_run_trace)
from .progress import progress_bar


def register(sub) -> None:
    p = sub.add_parser(
        "prove", help="prove a spec's invariants with Z3 and check the spec's consistency",
        description="Prove every invariant inductive (init => inv; inv and call branch => inv') for any number "
                    "of registrations and every configuration, name the broken obligation behind each way to "
                    "break one, and check the spec's consistency. Exit 0: all PROVED and consistent; "
                    "1: something REFUTED, UNKNOWN or inconsistent; 2: bad input.")
    p.add_argument("spec", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    _solver_args(p)
    p.add_argument("--no-consistency", action="store_true", help="skip the consistency checks")
    p.add_argument("--no-guards", action="store_true", help="skip naming the obligation behind each violation")
    p.add_argument("--witness-depth", type=nonneg_int, default=4, metavar="K",
                   help="steps before the final call in consistency witnesses (default 4)")
    p.add_argument("--cti-slots", type=positive_int, default=3, metavar="N",
                   help="entries per table in counterexample searches (default 3)")
    p.add_argument("--reach-depth", type=nonneg_int, default=4, metavar="K",
                   help="for a refuted invariant, search runs of up to K steps from the initial state (0: off)")
    p.add_argument("--witness-dir", metavar="DIR", help="write every witness and violation run there as a trace")
    p.add_argument("--itf", metavar="DIR",
                   help="write the counterexample of every REFUTED or UNKNOWN obligation and every reachable "
                        "violation there as ITF JSON (Quint/Apalache trace viewers)")
    add_verbosity(p)  # -q: the summary line only; -v: every obligation and consistency item
    add_format(p, ("text", "json", "sarif"))
    p.set_defaults(run=run_prove)

    b = sub.add_parser(
        "bmc", help="bounded model checking: every call sequence of up to K steps",
        description="Search every call sequence of up to K steps from the initial state (callers keep their "
                    "obligations) for one that breaks an invariant; write the shortest found as a trace. "
                    "Exit 0: none up to K; 1: a violation (or the solver gave up); 2: bad input.")
    b.add_argument("spec", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    b.add_argument("--depth", type=nonneg_int, required=True, metavar="K", help="the longest call sequence")
    b.add_argument("--invariant", action="append", metavar="RULE-ID",
                   help="only these invariants (repeatable; TYPES: values within their declared types)")
    add_env(b, "fix a spec parameter (default: the solver picks the configuration)")
    add_output(b, "--out", help="where to write the violating trace (default: <spec>.bmc.jsonl)")
    b.add_argument("--itf", metavar="OUT.itf.json",
                   help="also write the violating run, with the model state after each step, as ITF JSON")
    _solver_args(b)
    add_format(b)
    b.set_defaults(run=run_bmc)


def _solver_args(p) -> None:
    p.add_argument("--timeout", type=positive_int, default=5000, metavar="MS", help="per query, milliseconds (default 5000)")
    p.add_argument("--seed", type=nonneg_int, default=0, metavar="S", help="solver random seed (default 0)")
    p.add_argument("--retries", type=nonneg_int, default=2, metavar="N",
                   help="ask a query that timed out again, up to N times, each with the next seed (default 2)")


# ---------------------------------------------------------------- prove


def run_prove(args, out) -> int:
    spec = load_spec(args.spec)
    options = ProveOptions(SolverOptions(args.timeout, args.seed, args.retries), consistency=not args.no_consistency,
                           guards=not args.no_guards, witness_depth=args.witness_depth, cti_slots=args.cti_slots,
                           reach_depth=args.reach_depth)
    with progress_bar(out.stderr, None, f"proving {spec.name}") as bar:
        report = prove(spec, args.spec, options,
                       progress=lambda phase, done, planned: bar.update(done, planned, f"{spec.name}: {phase}"))
    written = _write_witnesses(report, spec, args.witness_dir) if args.witness_dir else {}
    itf = _write_itf(report, spec, args.itf) if args.itf else {}
    if args.format == "sarif":
        out.json(prove_log(report, spec, written, itf))
    elif args.format == "json":
        out.json(report_json(report, spec, written, itf))
    else:
        lines = report_text(report, spec, args.verbose, written, itf)
        for line in lines[-1:] if args.quiet else lines:  # quiet: the summary line
            out.out(painted_verdict(line, out))
    return EXIT_OK if report.ok else EXIT_FINDINGS


def painted_verdict(line: str, out) -> str:
    """An obligation line with its verdict (its first word) in colour, when colour is on."""
    word = line.split(maxsplit=1)[0] if line.startswith("  ") and line.strip() else ""
    if word not in ("PROVED", "REFUTED", "UNKNOWN"):
        return line
    return line.replace(word, out.paint(word, word), 1)


def _write_witnesses(report: ProofReport, spec: CheckedSpec, directory: str) -> dict[int, str]:
    """Write witness runs as traces; returns id(run) -> path."""
    make_directory(directory)
    written: dict[int, str] = {}
    runs = [(f"{c.kind}-{c.subject}", c.run) for c in report.checks if c.run is not None]
    runs += [(f"violation-{'-'.join(r.violation.invariants)}", r.violation.run) for r in report.reach if r.violation]
    for label, run in runs:
        path = os.path.join(directory, _file_name(spec, label, ".jsonl"))
        run.write(path, spec)  # E0603 when it cannot be written
        written[id(run)] = path
    return written


def _file_name(spec: CheckedSpec, label: str, ext: str) -> str:
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)[:120]
    return f"{spec.name}-{name}{ext}"


def _write_itf(report: ProofReport, spec: CheckedSpec, directory: str) -> dict[int, str]:
    """Counterexamples to induction (pre- and post-state) and reachable violations (whole runs) as
    ITF JSON; returns id(obligation or run) -> path."""
    make_directory(directory)
    written: dict[int, str] = {}
    for o in report.obligations:
        if o.cex is not None and o.verdict is not Verdict.PROVED:
            doc = counterexample_to_itf(spec, o.cex, description=f"counterexample to induction: {o.property} after "
                                                                 f"{_where(o)} ({report.spec})")
            path = os.path.join(directory, _file_name(spec, f"cti-{o.property}-{o.call}-{o.branch}", ".itf.json"))
            written[id(o)] = _write_json(path, doc)
    for r in report.reach:
        if r.violation is not None:
            run = r.violation.run
            doc = run_to_itf(spec, run, f"a run of {count_steps(len(run.steps))} from the initial state that breaks "
                                        f"{', '.join(r.violation.invariants)} ({report.spec})")
            path = os.path.join(directory, _file_name(spec, f"violation-{'-'.join(r.violation.invariants)}", ".itf.json"))
            written[id(run)] = _write_json(path, doc)
    return written


def _write_json(path: str, doc: dict) -> str:
    return write_output(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def count_steps(n: int) -> str:
    """`1 step`, `3 steps`."""
    return f"{n} step" if n == 1 else f"{n} steps"


def _where(o: Obligation) -> str:
    return "init" if o.call is None else f"{o.call} {o.branch}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.0f} ms"


def _problem_lines(checks, spec: CheckedSpec, written: dict[int, str], verbose: bool) -> list[str]:
    """The checks that failed (every check with -v), each with its witness run."""
    lines: list[str] = []
    for c in checks:
        if not c.ok or verbose:
            lines.append(f"    {c.status:<9} {c.subject}: {c.detail}")
            lines += _run_lines(c.run, spec, written, verbose)
    return lines


def report_text(report: ProofReport, spec: CheckedSpec, verbose: bool, written: dict[int, str],
                itf: dict[int, str] | None = None) -> list[str]:
    itf = itf or {}
    opts = report.options
    lines = [f"regcheck prove {report.spec}: spec {spec.name}, {len(spec.invariants)} invariants, {len(spec.calls)} calls "
             f"(timeout {opts.solver.timeout_ms} ms, seed {opts.solver.seed}, {opts.solver.retries} retries)", "",
             "induction: init => P and (invariants and call branch) => P' for every property P "
             "(any number of entries, every configuration)"]
    width = max((len(o.property) for o in report.obligations), default=10)
    trivial = Counter()
    for o in report.obligations:
        if o.how in ("frame", "trivial") and not verbose:
            trivial[o.how] += 1
            continue
        note = ""
        if o.how in ("frame", "trivial", "bounded"):
            note = f"  ({o.how}: {o.reason})"
        elif o.verdict is Verdict.UNKNOWN:
            note = f"  (solver: {o.reason})"
        if o.gap:
            note += "  [documentation gap: the documents are silent here]"
        lines.append(f"  {o.verdict.value:<8} {o.property:<{width}}  {_where(o):<42} {_ms(o.seconds)}{note}")
        if o.cex is not None and o.verdict is not Verdict.PROVED:
            lines += ["      " + x for x in _cex_lines(o.cex, spec, "counterexample to induction")]
            if id(o) in itf:
                lines.append(f"        itf:    {itf[id(o)]}")
    if trivial:
        lines.append(f"  PROVED   {trivial['frame']} obligations by the frame argument (the effect writes nothing "
                     f"the property reads), {trivial['trivial']} trivially (a failure leaves the state unchanged); "
                     f"-v lists them")
    for r in report.reach:
        lines += [""] + _reach_lines(r, spec, written)
        if r.violation is not None and id(r.violation.run) in itf:
            lines.append(f"  ITF written to {itf[id(r.violation.run)]}")
    if report.guards:
        lines += ["", "guards: the broken obligation behind each way to break a property "
                      f"(bounded search, at most {opts.cti_slots} entries per table)"]
        by_prop: dict[str, list[str]] = {}
        for g in report.guards:
            if g.witness is Witness.FOUND:
                by_prop.setdefault(g.property, []).append(f"{g.rule} ({g.call})")
        for prop, rules in by_prop.items():
            lines.append(f"  {prop}: broken only through {', '.join(rules)}")
        unknown = [g for g in report.guards if g.witness is Witness.UNKNOWN]
        for g in unknown:
            lines.append(f"  UNKNOWN {g.property} / {g.rule} ({g.call}): {g.reason}")
        if verbose:
            for g in report.guards:
                if g.witness is Witness.FOUND and g.example is not None:
                    lines.append(f"  {g.property} via {g.rule}:")
                    lines += ["      " + x for x in _cex_lines(g.example, spec, "example")]
    if opts.consistency:
        lines += [""] + _consistency_lines(report, spec, verbose, written)
    lines += ["", _summary(report)]
    return lines


def _cex_lines(cex: CounterExample, spec: CheckedSpec, what: str) -> list[str]:
    from ..engines.runs import Step
    step = Step(cex.call, cex.inputs, cex.outputs, None)
    check = "replayed with the concrete semantics" if cex.validated else "NOT confirmed by the concrete semantics"
    return [f"{what} ({check}):",
            f"  config: {format_env(spec, cex.env)}",
            f"  pre:    {format_state(spec, cex.pre)}",
            f"  call:   {format_step(spec, step)}",
            f"  post:   {format_state(spec, cex.post)}",
            f"  fails:  {', '.join(cex.failing) or '-'}",
            f"  rules:  {', '.join(cex.rules)}"]


def _reach_lines(r: BmcResult, spec: CheckedSpec, written: dict[int, str]) -> list[str]:
    if r.violation is not None:
        v = r.violation
        lines = [f"reachable: a run of {count_steps(len(v.run.steps))} from the initial state breaks "
                 f"{', '.join(v.invariants)} (config: {format_env(spec, v.run.env)}):"]
        lines += ["  " + x for x in v.run.describe(spec)]
        path = written.get(id(v.run))
        hint = f"trace written to {path}" if path else \
            f"`regcheck bmc {r.spec} --depth {len(v.run.steps)}` writes it as a trace"
        return lines + [f"  {hint}"]
    if r.witness is Witness.NONE:
        return [f"not reached: no run of up to {r.depth} steps breaks the refuted invariants "
                f"(the counterexample may be unreachable: a strengthening invariant may be missing)"]
    return [f"reachability unknown (solver: {r.reason})"]


def _consistency_lines(report: ProofReport, spec: CheckedSpec, verbose: bool, written: dict[int, str]) -> list[str]:
    opts = report.options
    lines = [f"consistency (witness runs of up to {opts.witness_depth} steps from the initial state, replayed "
             "concretely; unbounded checks over the states the invariants allow)"]
    by_kind: dict[str, list[Check]] = {}
    for c in report.checks:
        by_kind.setdefault(c.kind, []).append(c)
    clauses = by_kind.get("clause", [])
    counts = Counter(c.status for c in clauses)
    lines.append("  clauses: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for c in clauses:
        if c.status != "live" or verbose:
            lines.append(f"    {c.status:<9} {c.subject} ({c.call}): {c.detail}")
            lines += _run_lines(c.run, spec, written, verbose and c.status == "live")
    calls = by_kind.get("call", [])
    ok_calls = [c for c in calls if c.ok]
    lines.append(f"  calls: {len(ok_calls)} of {len(calls)} can succeed")
    lines += _problem_lines(calls, spec, written, verbose)
    invs = by_kind.get("invariant", [])
    lines.append(f"  invariants: {sum(c.ok for c in invs)} of {len(invs)} non-vacuous")
    lines += _problem_lines(invs, spec, written, verbose)
    overlaps = by_kind.get("overlap", [])
    lines.append(f"  overlapping error conditions: {len(overlaps)} ({report.disjoint_pairs} pairs disjoint)")
    for c in overlaps:
        lines.append(f"    {c.call}: {c.subject}: {c.detail}" if c.status == "overlap"
                     else f"    {c.call}: {c.subject}: {c.status}: {c.detail}")
        lines += _run_lines(c.run, spec, written, verbose)
    policy = by_kind.get("policy", [])
    unguarded = [c for c in policy if not c.ok]
    lines.append(f"  documented errors the caller \"must\" avoid: {len(policy) - len(unguarded)} of {len(policy)} "
                 "guarded by an obligation")
    for c in unguarded:
        lines.append(f"    {c.status:<9} {c.subject} ({c.call}): {c.detail}")
        lines += _run_lines(c.run, spec, written, True)
    gaps = [c for c in by_kind.get("gap", []) if c.status != "none"]
    unspecified = [c for c in clauses if spec.rules[c.subject].kind == "unspecified"]
    lines.append(f"  documentation gaps: {len(gaps)} silent successes, {len(unspecified)} `unspecified` clauses")
    for c in gaps:
        lines.append(f"    {c.status:<9} {c.subject}: {c.detail}; rules around: {', '.join(c.rules)}")
        lines += _run_lines(c.run, spec, written, True)
    for c in unspecified:
        cite = spec.rules[c.subject].cite
        lines.append(f"    marked    {c.subject} ({c.call}, {c.status}): {cite.clause if cite else ''}")
        if len(c.rules) > 1:
            lines.append(f"      rules around: {', '.join(c.rules[1:])}")
        lines += _run_lines(c.run, spec, written, True)
    return lines


def _run_lines(run: Run | None, spec: CheckedSpec, written: dict[int, str], show: bool) -> list[str]:
    if run is None or not show:
        return []
    lines = [f"      example (config {format_env(spec, run.env)}):"]
    lines += ["        " + x for x in run.describe(spec)]
    if id(run) in written:
        lines.append(f"        trace: {written[id(run)]}")
    return lines


def _summary(report: ProofReport) -> str:
    obs = report.obligations
    verdicts = Counter(o.verdict for o in obs)
    how = Counter(o.how for o in obs if o.verdict is Verdict.PROVED)
    gaps = sum(o.gap for o in obs)
    text = (f"summary: {len(obs)} obligations: {verdicts[Verdict.PROVED]} PROVED ({how['solver']} by the solver, "
            f"{how['frame']} frame, {how['trivial']} trivial), {verdicts[Verdict.REFUTED]} REFUTED, "
            f"{verdicts[Verdict.UNKNOWN]} UNKNOWN")
    if gaps:
        text += f" ({gaps} in documentation gaps)"
    if report.options.consistency:
        bad = [c for c in report.checks if not c.ok]
        text += "; consistency: " + ("ok" if not bad else f"{len(bad)} problems")
    return text + f"; {report.seconds:.2f} s"


# ---------------------------------------------------------------- JSON


def report_json(report: ProofReport, spec: CheckedSpec, written: dict[int, str],
                itf: dict[int, str] | None = None) -> dict:
    itf = itf or {}
    return {
        "spec": report.spec, "name": report.name, "ok": report.ok, "proved": report.proved,
        "consistent": report.consistent, "seconds": round(report.seconds, 4),
        "phase_seconds": {k: round(v, 4) for k, v in report.phase_seconds.items()},
        "options": {"timeout_ms": report.options.solver.timeout_ms, "seed": report.options.solver.seed,
                    "retries": report.options.solver.retries,
                    "witness_depth": report.options.witness_depth, "cti_slots": report.options.cti_slots},
        "obligations": [{
            "property": o.property, "call": o.call, "branch": o.branch, "verdict": o.verdict.value, "how": o.how,
            "reason": o.reason, "seconds": round(o.seconds, 4), "rules": list(o.rules), "gap": o.gap,
            "counterexample": _cex_json(o.cex, spec) if o.cex else None, "itf": itf.get(id(o))}
            for o in report.obligations],
        "guards": [{"property": g.property, "call": g.call, "rule": g.rule, "witness": g.witness.value,
                    "reason": g.reason, "seconds": round(g.seconds, 4),
                    "example": _cex_json(g.example, spec) if g.example else None} for g in report.guards],
        "reach": [{"depth": r.depth, "witness": r.witness.value, "reason": r.reason,
                   "invariants": list(r.violation.invariants) if r.violation else [],
                   "run": run_json(r.violation.run, spec, written) if r.violation else None,
                   "itf": itf.get(id(r.violation.run)) if r.violation else None} for r in report.reach],
        "consistency": [{"kind": c.kind, "subject": c.subject, "call": c.call, "status": c.status, "ok": c.ok,
                         "rules": list(c.rules), "detail": c.detail, "seconds": round(c.seconds, 4),
                         "run": run_json(c.run, spec, written) if c.run else None} for c in report.checks],
        "disjoint_pairs": report.disjoint_pairs,
    }


def _state_json(spec: CheckedSpec, st) -> dict:
    from ..engines.runs import json_value
    out = {n: json_value(t, st.vars[n]) for n, (t, _) in spec.vars.items()}
    for n, info in spec.tables.items():
        out[n] = [{"key": k, **{f: json_value(t, rec[f]) for f, t in info.fields}}
                  for k, rec in sorted(st.tables[n].rows.items(), key=lambda kv: str(kv[0]))]
    return out


def _cex_json(cex: CounterExample, spec: CheckedSpec) -> dict:
    from ..engines.runs import json_value
    info = spec.calls[cex.call]
    return {"env": {n: json_value(spec.params[n][0], v) for n, v in cex.env.items()},
            "pre": _state_json(spec, cex.pre), "call": cex.call,
            "args": {n: json_value(t, cex.inputs[n]) for n, t in info.params},
            "out": {n: json_value(t, cex.outputs[n]) for n, t in info.outputs},
            "post": _state_json(spec, cex.post), "fails": list(cex.failing), "rules": list(cex.rules),
            "validated": cex.validated}


def run_json(run: Run, spec: CheckedSpec, written: dict[int, str]) -> dict:
    """A run as JSON: its trace header and events, and the trace file it was written to (by `id(run)`)."""
    from ..trace.writer import event_to_json, header_to_json
    return {"header": header_to_json(run.header(spec)), "events": [event_to_json(e) for e in run.events(spec)],
            "trace": written.get(id(run))}


# ---------------------------------------------------------------- bmc


def run_bmc(args, out) -> int:
    spec = load_spec(args.spec)
    env = parse_env(args.env, spec) if args.env else None
    if args.invariant:
        unknown = [r for r in args.invariant if r not in {inv.rule for inv in spec.invariants} | {TYPES}]
        if unknown:
            raise RegcheckError([error("E0201", f"spec {spec.name} has no invariant {unknown[0]}")])
    result = search_violation(spec, args.spec, args.depth, SolverOptions(args.timeout, args.seed, args.retries), env, args.invariant)
    path = itf = unwritten = None
    if result.violation is not None:
        if args.itf:
            require_writable(args.itf)  # before the trace is written: an error leaves neither
        # (E0603 when it cannot be written)
        path, unwritten = write_run_trace(result.violation.run, args.output or f"{spec.name}.bmc.jsonl", spec)
        if args.itf:
            run = result.violation.run
            itf = _write_json(args.itf, run_to_itf(spec, run, f"a run of {count_steps(len(run.steps))} from the initial "
                                                               f"state that breaks {', '.join(result.violation.invariants)} "
                                                               f"({args.spec}, regcheck bmc --depth {args.depth})"))
    if args.format == "json":
        out.json({"spec": args.spec, "depth": args.depth, "witness": result.witness.value, "reason": result.reason,
                  "seconds": round(result.seconds, 4),
                  "queries": [{"depth": d, "seconds": round(s, 4)} for d, s in result.queries],
                  "invariants": list(result.violation.invariants) if result.violation else [],
                  "run": run_json(result.violation.run, spec, {}) if result.violation else None, "trace": path,
                  "trace_not_written": unwritten, "itf": itf})
    else:
        _bmc_text(out, result, spec, path, env, unwritten)
        if itf:
            out.out(f"ITF written to {itf}")
        elif args.itf:
            out.out(f"no ITF written to {args.itf}: no violating run was found")
    return EXIT_OK if result.witness is Witness.NONE else EXIT_FINDINGS


def _bmc_text(out, r: BmcResult, spec: CheckedSpec, path: str | None, env, unwritten: str | None) -> None:
    config = "configuration " + ", ".join(f"{k}={v}" for k, v in env.items()) if env else "every configuration"
    if r.violation is not None:
        v = r.violation
        broken = ", ".join(out.paint(rule, "rule") for rule in v.invariants)
        out.out(f"{out.paint('violation', 'violates')}: a run of {count_steps(len(v.run.steps))} breaks {broken} "
                f"(config: {format_env(spec, v.run.env)}):")
        for line in v.run.describe(spec):
            out.out("  " + line)
        out.out(f"  state after: {format_state(spec, v.states[-1])}")
        out.out(run_trace_line(path, unwritten))
    elif r.witness is Witness.NONE:
        out.out(f"{out.paint('no invariant violation', 'ok')} in any run of up to {r.depth} steps ({config}); "
                f"{r.seconds:.2f} s")
    else:
        out.out(f"{out.paint('UNKNOWN', 'UNKNOWN')}: the solver gave up ({r.reason}) on runs of up to {r.depth} steps; {r.seconds:.2f} s")
