"""`regcheck replay TRACE...`: check recorded traces against their specs (the main job)."""

from __future__ import annotations

import argparse
import os

from ..diagnostics import RegcheckError
from ..replay import ReplayReport, replay_trace
from .common import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, add_format, render_all


def register(sub) -> None:
    p = sub.add_parser(
        "replay", help="replay recorded traces against the specs",
        description="Replay trace files (format v1, docs/trace-format.md) against the spec named in their header. "
                    "Exit 0: every trace conforms (unspecified findings alone still conform); 1: a trace "
                    "violates the spec; 2: input error (unreadable or malformed trace, unknown spec or call).")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace file, or a directory: its *.jsonl files")
    p.add_argument("--spec", help="spec name or file to use instead of the one the header names")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when a trace violates the spec (input errors still exit 2)")
    p.add_argument("--max-findings", type=_positive, metavar="N",
                   help="stop a trace after N usage/conformance findings (N >= 1)")
    add_format(p)
    p.set_defaults(run=run)



def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def report_text(report: ReplayReport) -> list[str]:
    out = []
    for f in report.findings:
        out.append(f"{report.path}:{f.line}: {f.kind}[{f.rule}]: {f.message}")
        out.extend(f"  note: {n}" for n in f.notes)
    counts = {k: sum(f.kind == k for f in report.findings) for k in ("usage", "conformance", "unspecified")}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no findings"
    more = " (stopped early: --max-findings)" if report.truncated else ""
    out.append(f"{report.path}: {report.verdict}: {report.events} events, {summary}{more}")
    return out


def expand_traces(paths: list[str]) -> list[str]:
    """Trace files as given; a directory stands for its *.jsonl files, sorted by name."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(os.path.join(p, name) for name in sorted(os.listdir(p)) if name.endswith(".jsonl"))
        else:
            out.append(p)
    return out


def run(args, out) -> int:
    reports: list[ReplayReport] = []
    errors: list[tuple[str, RegcheckError]] = []
    args.traces = expand_traces(args.traces)
    for path in args.traces:
        try:
            reports.append(replay_trace(path, args.spec, args.max_findings))
        except RegcheckError as exc:
            errors.append((path, exc))
    violated = any(r.verdict == "violates" for r in reports)
    code = EXIT_INPUT if errors else (EXIT_FINDINGS if violated and not args.exit_zero else EXIT_OK)
    if args.format == "json":
        if len(args.traces) == 1:
            if errors:
                out.json({"error": {"trace": errors[0][0], "diagnostics": [d.to_json() for d in errors[0][1].diagnostics]}})
            else:
                out.json({"trace": reports[0].path, "spec": reports[0].spec, **reports[0].to_json()})
            return code
        out.json({
            "verdict": "error" if errors else ("violates" if violated else "conforms"),
            "traces": [{"trace": r.path, "spec": r.spec, **r.to_json()} for r in reports],
            "errors": [{"trace": p, "diagnostics": [d.to_json() for d in e.diagnostics]} for p, e in errors],
        })
        return code
    for r in reports:
        for line in report_text(r):
            out.out(line)
    for _, exc in errors:
        out.err(render_all(exc.diagnostics))
    if len(args.traces) > 1:
        violating = sum(r.verdict == "violates" for r in reports)
        out.out(f"{len(args.traces)} traces: {len(reports) - violating} conform, {violating} violate"
                + (f", {len(errors)} unreadable" if errors else ""))
    return code
