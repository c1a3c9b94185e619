"""`regcheck shrink TRACE -o OUT`: the smallest subsequence of a trace with the same first finding."""

from __future__ import annotations

import os
from dataclasses import replace

from ..engines.shrink import shrink_trace
from ..trace.reader import spec_ref_for_output
from ..trace.writer import write_trace
from .common import EXIT_OK, add_format, add_trace_limits, render_all


def register(sub) -> None:
    p = sub.add_parser("shrink", help="delta-debug a violating trace to a smallest one with the same first finding",
                       description="Shrink a violating trace: the result is still a well-formed trace and its first "
                                   "usage/conformance finding has the same rule ID. Exit 0: written; 2: input error "
                                   "or nothing to shrink (T0740).")
    p.add_argument("trace", metavar="TRACE", help="trace file ('-': standard input; gzip, xz and zstd traces are "
                                                  "read as they are)")
    add_trace_limits(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the shrunk trace")
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
    write_trace(args.output, header, result.events)
    t = result.target
    if args.format == "json":
        out.json({"trace": args.trace, "output": args.output, "rule": t.rule, "kind": t.kind,
                  "original_events": result.original, "events": len(result.events), "tests": result.tests})
    else:
        out.out(f"{args.trace}: first finding {out.paint(t.kind, t.kind)}[{out.paint(t.rule, 'rule')}] at line {t.line}")
        out.out(f"shrunk {result.original} events to {len(result.events)} ({result.tests} replays); wrote {args.output}")
    return EXIT_OK
