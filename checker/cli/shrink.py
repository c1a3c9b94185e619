"""`regcheck shrink TRACE -o OUT`: the smallest subsequence of a trace with the same first finding."""

from __future__ import annotations

import io
import os
from dataclasses import replace

from ..engines.shrink import shrink_trace
from ..trace.reader import spec_ref_for_output
from ..trace.writer import write_trace
from ..language.diagnostics import escape_controls_in_json
from ..language.files import STDIN
from .common import EXIT_OK, Output, add_format, add_trace_limits, render_all

STDOUT = STDIN  # as an output, "-" is standard output


def register(sub) -> None:
    p = sub.add_parser("shrink", help="delta-debug a violating trace to a smallest one with the same first finding",
                       description="Shrink a violating trace: the result is still a well-formed trace and its first "
                                   "usage/conformance finding has the same rule ID. Exit 0: written; 2: input error "
                                   "or nothing to shrink (T0740). With -o -, the trace is written to standard output "
                                   "and the report to standard error.")
    p.add_argument("trace", metavar="TRACE", help="trace file ('-': standard input; gzip, xz and zstd traces are "
                                                  "read as they are)")
    add_trace_limits(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the shrunk trace ('-': standard output)")
    p.add_argument("--spec", help="spec name or file to use instead of the header's")
    add_format(p)
    p.set_defaults(run=run)


def run(args, out) -> int:
    result = shrink_trace(args.trace, args.spec)
    if result.notes:
        out.err(render_all(result.notes))
    # The shrunk trace names the spec it was shrunk against, as seen from where it is written, and
    # relative (or absolute) as the input named it.
    named = args.spec or result.header.spec
    header = replace(result.header, spec=spec_ref_for_output(result.spec_ref, args.output, not os.path.isabs(named)))
    if args.output == STDOUT:
        report = _trace_on_stdout(out, header, result.events)
    else:
        write_trace(args.output, header, result.events)
        report = out
    t = result.target
    if args.format == "json":
        report.json({"trace": args.trace, "output": args.output, "rule": t.rule, "kind": t.kind,
                  "original_events": result.original, "events": len(result.events), "tests": result.tests})
    else:
        first = f"{report.paint(t.kind, t.kind)}[{report.paint(t.rule, 'rule')}]"
        report.out(f"{args.trace}: first finding {first} at line {t.line}")
        report.out(f"shrunk {result.original} events to {len(result.events)} ({result.tests} replays); "
                   f"wrote {_output_name(args.output)}")
    return EXIT_OK


def _trace_on_stdout(out: Output, header, events) -> Output:
    """Write the trace to standard output, whole (an input error part-way leaves no half trace there),
    and return where the report goes instead: standard error, so that stdout is the trace alone."""
    buf = io.BytesIO()
    write_trace(buf, header, events)
    out.stdout.write(escape_controls_in_json(buf.getvalue().decode("utf-8")))
    out.stdout.flush()
    return Output(out.stderr, out.stderr)


def _output_name(output: str) -> str:
    return "standard output" if output == STDOUT else output
