"""`regcheck itf TRACE -o OUT.itf.json`: a trace and the model states along it, as ITF JSON."""

from __future__ import annotations

import io

from ..emit.itf import DEFAULT_MAX_ITF_BYTES, INT_MODES, TraceWalk, trace_meta, write_itf
from ..language.diagnostics import RegcheckError, escape_controls_in_json
from ..language.files import OutputFile, cannot_write
from .common import EXIT_OK, add_trace_limits, nonneg_int, render_all


def register(sub) -> None:
    p = sub.add_parser(
        "itf", help="export a trace with its model states as ITF (Informal Trace Format) JSON",
        description="Replay a trace and write it, with the model state after every event, in the Informal "
                    "Trace Format that Quint and Apalache tools read (docs/integrations.md). Exit 0: written "
                    "(whatever the trace's verdict: it is in #meta.verdict); 2: input error (nothing is "
                    "written to OUT then).")
    p.add_argument("trace", metavar="TRACE", help="trace file (format v1; '-': standard input; gzip, xz and zstd "
                                                  "traces are read as they are)")
    add_trace_limits(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")
    p.add_argument("--spec", help="spec name or file to use instead of the one the header names")
    p.add_argument("--ints", choices=INT_MODES, default="bigint",
                   help='integers as {"#bigint": "..."} always (default, as Quint writes them) or as JSON '
                        "numbers when they fit in 53 bits (auto)")
    p.add_argument("--max-events", type=nonneg_int, metavar="N",
                   help="stop after N events (#meta.truncated then says so)")
    p.add_argument("--max-bytes", type=nonneg_int, metavar="N", default=DEFAULT_MAX_ITF_BYTES,
                   help="stop with error E0605 when the output would pass N bytes (default: 268435456, 256 MiB; "
                        "every state holds every live table entry, so the output grows with events x entries)")
    p.set_defaults(run=run)


def run(args, out) -> int:
    walk = TraceWalk(args.trace, args.spec, args.max_events)
    if walk.notes:
        out.err(render_all(walk.notes))
    sem = walk.sem
    if args.output is None:
        # Buffered, so that an input error part-way leaves no half document on standard output.
        buf = io.BytesIO()
        write_itf(buf, sem.spec, sem.config, walk, lambda: trace_meta(walk), args.ints, args.max_bytes)
        out.stdout.write(escape_controls_in_json(buf.getvalue().decode()))
        return EXIT_OK
    try:
        target = OutputFile(args.output)  # atomic for a regular file; a device or FIFO is written in place
    except RegcheckError:
        walk.close()
        raise
    try:
        n = write_itf(target.file, sem.spec, sem.config, walk, lambda: trace_meta(walk), args.ints, args.max_bytes)
    except OSError as exc:
        target.abort()
        raise cannot_write(args.output, exc) from None
    except BaseException:
        target.abort()
        raise
    target.commit()
    out.err(f"{args.output}: {n} states ({walk.events} events; the trace {walk.verdict})")
    return EXIT_OK
