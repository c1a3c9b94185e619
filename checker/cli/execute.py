"""`regcheck execute TRACE...`: replay against the spec and a driver that performs the calls for real."""

from __future__ import annotations

import importlib

from ..diagnostics import RegcheckError, error
from ..execute import execute_trace
from ..executor import ReferenceDriver
from .common import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, add_format, render_all
from .replay import expand_traces, report_text


def register(sub) -> None:
    p = sub.add_parser(
        "execute", help="replay traces against the spec and, for real, against a driver",
        description="Relocate each trace's allocations into memory the driver hands out, run every event against "
                    "the spec (as replay does) and the driver, and compare the recorded result, the allowed "
                    "outcomes, the driver's result and the kernel's page locks. Exit codes as for replay.")
    p.add_argument("traces", nargs="+", metavar="TRACE")
    p.add_argument("--driver", metavar="MODULE:FACTORY",
                   help="a factory returning a Driver (default: checker.executor:ReferenceDriver)")
    p.add_argument("--spec", help="spec name or file to use instead of the header's")
    p.add_argument("--max-findings", type=int, metavar="N")
    add_format(p)
    p.set_defaults(run=run)


def load_factory(text: str | None):
    """`module:callable` -> the callable (the reference driver when text is None)."""
    if not text:
        return ReferenceDriver
    module, _, attr = text.partition(":")
    if not module or not attr:
        raise RegcheckError([error("E0603", f"--driver must be MODULE:FACTORY, not {text!r}")])
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise RegcheckError([error("E0603", f"cannot load driver factory {text!r}: {exc}")]) from None
    if not callable(factory):
        raise RegcheckError([error("E0603", f"driver factory {text!r} is not callable")])
    return factory


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
    if args.format == "json":
        docs = [{"trace": r.path, "spec": r.spec, **r.to_json()} for r in reports]
        if len(docs) == 1 and not errors:
            out.json(docs[0])
        else:
            out.json({"verdict": "error" if errors else ("violates" if violated else "conforms"), "traces": docs,
                      "errors": [{"trace": p, "diagnostics": [d.to_json() for d in e.diagnostics]} for p, e in errors]})
        return code
    for r in reports:
        for line in report_text(r):
            out.out(line)
    for _, exc in errors:
        out.err(render_all(exc.diagnostics))
    return code
