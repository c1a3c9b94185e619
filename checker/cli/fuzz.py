"""`regcheck fuzz SPEC --driver MODULE:FACTORY --max-examples N --seed S`: stateful differential testing.

Exit codes: 0 no failure found; 1 a failure (shrunk, written as a trace, printed as a pytest
function), or a driver that is not deterministic (its results for the same calls differed between
runs, so the search could not go on); 2 bad input.
"""

from __future__ import annotations


from ..drivers.executor import load_factory
from ..engines.runs import semantics_for
from ..language.files import require_writable, write_output
from ..language.load import load_spec
from ..testgen.fuzz import SHRINK_MODES, FuzzOptions, fuzz
from .common import (EXIT_FINDINGS, EXIT_OK, add_env, add_format, add_output, fraction, nonneg_int, parse_env,
                     positive_int)


def register(sub) -> None:
    p = sub.add_parser(
        "fuzz", help="Hypothesis stateful differential testing of a driver against a spec",
        description="Random call sequences (Hypothesis' stateful testing, built from the spec's calls), mostly "
                    "keeping the caller's obligations and sometimes breaking them on purpose; every result is "
                    "compared with the spec's allowed outcomes and every step's page locks with the model's. "
                    "A failure is shrunk, written as a trace file and printed as a pytest function. "
                    "Exit 0: none found; 1: a failure, or a driver that is not deterministic (the same "
                    "calls gave other results); 2: bad input.")
    p.add_argument("spec", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    p.add_argument("--driver", metavar="MODULE:FACTORY",
                   help="a factory returning a Driver (default: checker.drivers.executor:ReferenceDriver)")
    p.add_argument("--max-examples", type=positive_int, default=100, metavar="N",
                   help="call sequences to try (default 100)")
    p.add_argument("--steps", type=positive_int, default=30, metavar="K", help="calls per sequence (default 30)")
    p.add_argument("--seed", type=nonneg_int, default=0, metavar="S", help="random seed (default 0)")
    add_env(p, "fix a spec parameter (default: a configuration drawn per sequence)")
    p.add_argument("--break-rate", type=fraction, default=0.1, metavar="P",
                   help="how often a call breaks an obligation on purpose (default 0.1)")
    p.add_argument("--shrink", choices=SHRINK_MODES, default="calls",
                   help="calls: drop calls by delta debugging, bounded (default); hypothesis: Hypothesis' own "
                        "shrinker (smaller arguments too, can take many minutes); none: as found")
    add_output(p, "--out", help="where to write a failing trace (default: <spec>.fuzz-<seed>.jsonl)")
    add_format(p)
    p.set_defaults(run=run)


def run(args, out) -> int:
    factory = load_factory(args.driver)
    spec = load_spec(args.spec)
    env = parse_env(args.env, spec) if args.env else None
    if env is not None:
        semantics_for(spec, env)  # unknown names and bad values are input errors (exit 2)
    options = FuzzOptions(args.max_examples, args.steps, args.seed, env, args.break_rate, args.shrink)
    if args.output:
        require_writable(args.output)  # now, not after the run has found what it would write
    result = fuzz(args.spec, factory, options)
    driver_text = args.driver or "checker.drivers.executor:ReferenceDriver"
    failure = result.failure
    path = None
    if failure is not None:
        path = args.output or f"{spec.name}.fuzz-{args.seed}.jsonl"
        write_output(path, failure.trace_text(path))
    if args.format == "json":
        out.json({"spec": args.spec, "driver": result.driver, "max_examples": args.max_examples, "seed": args.seed,
                  "calls": result.calls, "seconds": round(result.seconds, 3),
                  "failure": None if failure is None else {
                      "rule": failure.rule, "message": failure.message, "env": dict(failure.env),
                      "calls": len(failure.events), "repeats": failure.repeats, "trace": path,
                      "replay_shows": failure.replay_shows(),
                      "pytest": failure.pytest_function(driver_text)},
                  "nondeterministic": result.nondeterministic})
        return EXIT_OK if result.passed else EXIT_FINDINGS
    if result.nondeterministic is not None:
        out.out(f"{out.paint('DRIVER NOT DETERMINISTIC', 'FAILURE')}: {result.nondeterministic}; no failure found "
                f"before that ({result.calls} driver calls, {result.seconds:.1f} s, seed {args.seed})")
        return EXIT_FINDINGS
    if failure is None:
        out.out(f"{out.paint('no failure', 'ok')} in {args.max_examples} sequences of up to {args.steps} calls "
                f"({result.calls} driver calls, {result.seconds:.1f} s, seed {args.seed})")
        return EXIT_OK
    how = _how_shrunk(failure, options.shrink)
    out.out(f"{out.paint('FAILURE', 'FAILURE')} [{out.paint(failure.rule, 'rule')}] after {len(failure.events)} calls "
            f"({how}; {result.calls} driver calls, {result.seconds:.1f} s)")
    out.out(f"  {failure.message}")
    out.out(f"  configuration: {', '.join(f'{k}={v}' for k, v in failure.env.items())}")
    out.out(f"trace written to {path}: {_how_to_see(failure, path, driver_text)}")
    out.out("")
    out.out("# paste this test into a pytest module:")
    out.out(failure.pytest_function(driver_text))
    return EXIT_FINDINGS


def _how_shrunk(failure, shrink: str) -> str:
    if not failure.repeats:
        return "as it ran: not shrunk, the calls did not fail again"
    return {"calls": f"shrunk from {failure.found_calls} calls by delta debugging",
            "hypothesis": "shrunk by Hypothesis", "none": "not shrunk"}[shrink]


def _how_to_see(failure, path: str, driver: str) -> str:
    """The command that shows the finding: replay where the recorded results show it, else only a
    run of the driver does (page locks and exceptions are not in a trace)."""
    execute = f"`regcheck execute --driver {driver} {path}`"
    if failure.replay_shows():
        return f"`regcheck replay {path}` shows the finding, {execute} reruns it"
    if not failure.repeats:
        return f"{execute} reruns it, and may pass (`regcheck replay` does not show it: it needs the driver)"
    return f"{execute} shows the finding (`regcheck replay` does not: it needs the driver)"
