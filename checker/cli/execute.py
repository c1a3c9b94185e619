"""`regcheck execute TRACE...`: replay against the spec and a driver that performs the calls for real.

`--format sarif` writes SARIF 2.1.0 (as `replay` does): every finding, the executor's own kinds
included, with the spec's rules and the executor's rule IDs (EXEC-...) as SARIF rules.
"""

from __future__ import annotations

import re

from ..drivers import execute as execute_module
from ..drivers.execute import (EXEC_ADDRESS_UNOWNED, EXEC_DIVERGENCE, EXEC_DRIVER_ERROR, EXEC_LOCK_EXTRA,
                               ExecutionReport, execute_trace)
from ..drivers.executor import load_factory
from ..emit.sarif import (Citation, Document, ToolRule, notifications_of, replay_results, run_category,
                          sarif_log_of_runs, sarif_run)
from ..language.diagnostics import RegcheckError
from ..language.load import load_spec
from ..trace.reader import header_spec_ref, read_trace
from .common import (EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, add_format, add_trace_limits, add_verbosity, positive_int,
                     render_all)
from .replay import expand_traces, report_text

DEFAULT_DRIVER = "checker.drivers.executor:ReferenceDriver"

# Which finding kinds each executor rule ID is reported under, and its default SARIF level (a result
# still carries its own: EXEC-DIVERGENCE is an error when it names a driver result the spec forbids).
_EXEC_RULE_KINDS = {
    EXEC_ADDRESS_UNOWNED: (("refused",), "note"),
    EXEC_DIVERGENCE: (("divergence", "executor"), "note"),
    EXEC_LOCK_EXTRA: (("pinning",), "error"),
    EXEC_DRIVER_ERROR: (("executor",), "error"),
}


def register(sub) -> None:
    p = sub.add_parser(
        "execute", help="replay traces against the spec and, for real, against a driver",
        description="Relocate each trace's allocations into memory the driver hands out, run every event against "
                    "the spec (as replay does) and the driver, and compare the recorded result, the allowed "
                    "outcomes, the driver's result and the kernel's page locks. Exit codes as for replay.")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="trace file ('-': standard input; gzip, xz and zstd traces are read as they are), a "
                        "directory or a glob pattern")
    add_trace_limits(p)
    p.add_argument("--driver", metavar="MODULE:FACTORY",
                   help=f"a factory returning a Driver (default: {DEFAULT_DRIVER})")
    p.add_argument("--spec", help="spec name or file to use instead of the header's (a warning, T0737, says so "
                                  "when they differ)")
    p.add_argument("--max-findings", type=positive_int, metavar="N",
                   help="stop a trace after N usage/conformance findings (N >= 1)")
    add_verbosity(p)  # -q: each trace's verdict line only; -v: the driver too
    add_format(p, ("text", "json", "sarif"))
    p.set_defaults(run=run)


def run(args, out) -> int:
    factory = load_factory(args.driver)
    reports, errors = [], []
    for path in expand_traces(args.traces):
        try:
            reports.append(execute_trace(path, factory, args.spec, args.max_findings))
        except RegcheckError as exc:
            errors.append((path, exc))
    violated = any(r.verdict == "violates" for r in reports)
    code = EXIT_INPUT if errors else (EXIT_FINDINGS if violated else EXIT_OK)
    if args.format == "sarif":
        out.json(sarif_report(reports, errors, args.spec, args.driver or DEFAULT_DRIVER))
        return code
    if args.format == "json":
        docs = [{"trace": r.path, "spec": r.spec, **r.to_json()} for r in reports]
        if len(docs) == 1 and not errors:
            out.json(docs[0])
        else:
            out.json({"verdict": "error" if errors else ("violates" if violated else "conforms"), "traces": docs,
                      "errors": [{"trace": p, "diagnostics": [d.to_json() for d in e.diagnostics]} for p, e in errors]})
        return code
    if args.verbose:
        out.out(f"driver: {args.driver or DEFAULT_DRIVER}")
    for r in reports:
        lines = report_text(r, out.paint)
        for line in lines[-1:] if args.quiet else lines:  # quiet: the verdict line only
            out.out(line)
    for _, exc in errors:
        out.err(render_all(exc.diagnostics))
    return code


# ---------------------------------------------------------------- SARIF


def executor_rules() -> list[ToolRule]:
    """The executor's own rule IDs as SARIF rules. Their text is read from checker/drivers/execute.py's
    module docstring, the one place they are documented, together with the finding kinds they are
    reported under."""
    entries = _docstring_entries(execute_module.__doc__ or "")
    where = Document("checker/drivers/execute.py", "regcheck executor checks, module docstring")
    rules = []
    for rule, (kinds, level) in _EXEC_RULE_KINDS.items():
        what = entries[rule]
        how = "; ".join(f"`{k}` findings: {entries[k]}" for k in kinds)
        rules.append(ToolRule(rule, "executor", f"{what} (reported as {how})", Citation("EXECUTOR", what), where,
                              level=level))
    return rules


def _docstring_entries(doc: str) -> dict[str, str]:
    """`  NAME   text` entries of a docstring (continuation lines indented further), NAME -> text.
    An entry naming several things (`usage / conformance`) is filed under each."""
    entries: dict[str, str] = {}
    names: list[str] = []
    for line in doc.splitlines():
        head = re.match(r"^  (\S[\w /-]*?)\s{2,}(\S.*)$", line)
        if head:
            names = [n.strip() for n in head.group(1).split("/")]
            for n in names:
                entries[n] = head.group(2).strip()
        elif names and line.startswith("     ") and line.strip():
            for n in names:
                entries[n] += " " + line.strip()
        else:
            names = []
    return entries


def _spec_ref(path: str, spec: str | None) -> str:
    """The spec a trace was executed against, as load_spec takes it: --spec, or the header's."""
    if spec:
        return spec
    header, events = read_trace(path)
    close = getattr(events, "close", None)
    if close:
        close()
    return header_spec_ref(header, path)


def sarif_report(reports: list[ExecutionReport], errors: list, spec: str | None, driver: str) -> dict:
    """One SARIF run per spec, with the spec's rules and the executor's; traces that could not be
    executed become tool notifications of the first run."""
    by_spec: dict[str, list[ExecutionReport]] = {}
    for r in reports:
        by_spec.setdefault(r.spec_ref or _spec_ref(r.path, spec), []).append(r)
    notes = [n for path, exc in errors for n in notifications_of(exc.diagnostics, path)]
    tool_rules = executor_rules()
    runs = []
    for ref, group in by_spec.items():
        checked = load_spec(ref)
        results = [res for r in group for res in replay_results(r, checked)]
        runs.append(sarif_run([*checked.rules.values(), *tool_rules], results,
                              category=run_category("execute", checked.name, ref),
                              notifications=notes if not runs else (),
                              properties={"spec": checked.name, "traces": len(group), "driver": driver}))
    if not runs:
        runs.append(sarif_run(tool_rules, (), category="regcheck/execute/", notifications=notes,
                              properties={"driver": driver}))
    return sarif_log_of_runs(runs)
