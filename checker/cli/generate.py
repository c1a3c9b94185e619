"""`regcheck generate SPEC -o DIR [--pytest FILE]`: a conformance suite computed from a spec.

Exit codes: 0 written; 2 bad input (unknown spec, unwritable output, no output asked for).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from ..engines.runs import semantics_for
from ..language.checked import CheckedSpec
from ..language.diagnostics import RegcheckError, error
from ..language.files import make_directory, require_directory_possible, write_output
from ..language.load import load_spec
from ..testgen.configs import config_label, configurations
from ..testgen.generate import generate_suite
from ..testgen.model import ALLOWED, GenerateOptions, Suite
from ..testgen.suite import INDEX, coverage_summary, write_suite
from .common import EXIT_OK, add_env, add_format, add_output, nonneg_int, parse_env, positive_int
from .progress import progress_bar


def register(sub) -> None:
    p = sub.add_parser(
        "generate", help="compute a conformance suite (trace files with expected outcomes) from a spec",
        description="Compute conformance tests from a spec: every outcome branch of every call in every "
                    "configuration the spec distinguishes, with boundary cases, found by enumeration over the "
                    "concrete semantics and, where that does not reach a branch, by bounded model checking "
                    "(Z3). Writes one trace file per test plus suite.json (index and coverage) to DIR, and/or "
                    "a standalone pytest module. Exit 0: written; 2: bad input.")
    p.add_argument("spec", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    add_output(p, metavar="DIR", help="directory for the suite (created if missing; one that already holds a suite "
                                      "needs --force)")
    p.add_argument("--force", "--overwrite", action="store_true",
                   help="replace the suite already in DIR: its trace files and suite.json are removed first")
    p.add_argument("--pytest", metavar="FILE", help="also (or only) write the suite as a pytest module")
    p.add_argument("--depth", type=positive_int, default=3, metavar="N",
                   help="calls in an enumerated prefix (default 3)")
    p.add_argument("--bmc-depth", type=nonneg_int, default=5, metavar="N",
                   help="steps bounded model checking may use for branches enumeration misses (0: off; default 5)")
    add_env(p, "fix a spec parameter in every configuration (default: the configurations the spec distinguishes)")
    add_format(p)
    p.set_defaults(run=run)


def run(args, out) -> int:
    if not args.output and not args.pytest:
        raise RegcheckError([error("E0612", "nothing to write: give -o DIR and/or --pytest FILE")])
    if args.output:
        require_directory_possible(args.output)
        old_suite = existing_suite_files(args.output)
        if old_suite and not args.force:
            raise RegcheckError([error("E0613", f"{args.output} already holds a suite ({INDEX}); give --force "
                                                "(or --overwrite) to replace it, or choose an empty directory")])
    if args.pytest and os.path.dirname(args.pytest):
        require_directory_possible(os.path.dirname(args.pytest))
    configs = None
    if args.env:
        spec = load_spec(args.spec)
        configs = fixed_configs(spec, parse_env(args.env, spec))
    with progress_bar(out.stderr, None, f"generating {args.spec}") as bar:
        suite = generate_suite(args.spec, GenerateOptions(depth=args.depth, bmc_depth=args.bmc_depth, configs=configs),
                               progress=lambda done, total, label: bar.update(done, total, f"generating: {label}"))
    written = []
    if args.output:
        remove_files(old_suite)
        written += write_suite(args.output, suite)  # E0603 when it cannot be written
    if args.pytest:
        from ..emit.pytest_module import render_pytest

        parent = os.path.dirname(args.pytest)
        if parent:
            make_directory(parent)
        written.append(write_output(args.pytest, render_pytest(suite)))
    if args.format == "json":
        out.json({"spec": suite.spec, "tests": len(suite.tests), "configs": [dict(c) for c in suite.configs],
                  "stats": dict(suite.stats), "written": {"suite": args.output, "pytest": args.pytest},
                  "coverage": [c.to_json() for c in suite.coverage]})
        return EXIT_OK
    for line in summary_text(suite):
        out.out(line)
    if args.output:
        out.out(f"wrote {len(suite.tests)} test traces and suite.json to {args.output}")
    if args.pytest:
        out.out(f"wrote pytest module {args.pytest}")
    return EXIT_OK


def fixed_configs(spec: CheckedSpec, env: dict) -> tuple[dict, ...]:
    """The spec's configurations with `env`'s parameters fixed (duplicates dropped); bad names or
    values are input errors (T0720, T0721)."""
    semantics_for(spec, env)
    out: list[dict] = []
    for config in configurations(spec):
        merged = {**config, **env}
        if merged not in out:
            out.append(merged)
    return tuple(out)


def existing_suite_files(directory: str) -> list[Path]:
    """The files of the suite already in `directory` (its index and the trace files it lists); empty
    when there is none."""
    root = Path(directory)
    index = root / INDEX
    if not index.is_file():
        return []
    try:
        entries = orjson.loads(index.read_bytes()).get("tests", [])
    except (OSError, orjson.JSONDecodeError, AttributeError):
        entries = []
    names = {e.get("file") for e in entries if isinstance(e, dict)}
    traces = [root / n for n in sorted(n for n in names if isinstance(n, str) and n == os.path.basename(n))]
    return [p for p in traces if p.is_file()] + [index]


def remove_files(paths: list[Path]) -> None:
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            message = f"cannot remove {path} of the old suite: {exc.strerror or exc}"
            raise RegcheckError([error("E0603", message)]) from None


def summary_text(suite: Suite) -> list[str]:
    st = suite.stats
    by_method: dict[str, int] = {}
    for t in suite.tests:
        by_method[t.method] = by_method.get(t.method, 0) + 1
    methods = ", ".join(f"{n} by {m}" for m, n in sorted(by_method.items()))
    lines = [f"spec {suite.spec}: {len(suite.tests)} tests ({methods}) in {len(suite.configs)} configurations, "
             f"{st.get('seconds', 0)} s; {st.get('states', 0)} states and {st.get('candidates', 0)} candidate calls "
             f"enumerated, {st.get('bmc_queries', 0)} branches asked of bounded model checking"]
    lines.append("configurations: " + "; ".join(config_label(c) for c in suite.configs))
    lines.append("")
    width = max(len(c.rule) for c in suite.coverage) if suite.coverage else 10
    lines.append(f"{'rule':{width}}  {'kind':11}  {'status':19}  tests  note")
    for c in suite.coverage:
        tests = len({t for _, ts in c.branches for t in ts})
        branches = " | ".join(sorted({b for b, _ in c.branches}))
        note = _short(c.note)
        if c.status in ("tested", ALLOWED) and branches:
            note = f"branches: {branches}" + (f"; {c.boundaries} boundary cases" if c.boundaries else "") + \
                   (f"; {note}" if note else "")
        lines.append(f"{c.rule:{width}}  {c.kind:11}  {c.status:19}  {tests:5}  {note}")
        for o in c.origins_missed:
            lines.append(f"{'':{width}}  not covered: {o.label}: {o.why}")
    lines.append("")
    lines.append("rules by status: " + ", ".join(f"{n} {s}" for s, n in sorted(coverage_summary(suite.coverage).items())))
    origins = [o for c in suite.coverage for o in c.origins]
    if origins:
        missed = sum(not o.tests for o in origins)
        lines.append(f"promises about live entries: judged with {len(origins) - missed} of {len(origins)} origins live"
                     + (f"; {missed} not covered (listed above)" if missed else ""))
    return lines


def _short(note: str) -> str:
    """A note that lists configurations, shortened to their count (suite.json keeps them all)."""
    n = note.count(" [")
    if n <= 1:
        return note
    head = note.split(" [", 1)[0]
    return f"{head} [...] ({n} configurations; see suite.json)"
