"""`regcheck replay TRACE...`: check recorded traces against their specs (the main job).

A corpus (several files, a directory, a glob) can be replayed on N local processes (`-j N`) or on a
Dask cluster (`--dask ADDRESS`); the report is the same as one at a time. `--format sarif` writes
SARIF 2.1.0 for code-scanning dashboards; `--timeline OUT.html` draws one trace's address space.

Input error codes (in addition to the trace and replay codes):
  T0740 a directory or glob pattern names no trace file
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager, nullcontext
from dataclasses import replace

from ..engines.parallel import CorpusReport, TraceOutcome, replay_corpus, replay_one
from ..engines.replay import ReplayReport
from ..language.diagnostics import RegcheckError, error
from ..language.files import MAGIC_BYTES, compression_of, require_writable, write_output
from ..language.load import load_spec
from .common import (EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, add_format, add_trace_limits, add_verbosity, plain,
                     positive_int, render_all)
from .progress import is_terminal, progress_bar


def register(sub) -> None:
    p = sub.add_parser(
        "replay", help="replay recorded traces against the specs",
        description="Replay trace files (format v1, docs/trace-format.md) against the spec named in their header. "
                    "Exit 0: every trace conforms (unspecified findings alone still conform); 1: a trace "
                    "violates the spec; 2: input error (unreadable or malformed trace, unknown spec or call).")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="trace file ('-': standard input; gzip, xz and zstd traces are read as they are), a "
                        "directory (its *.jsonl files) or a glob pattern such as 'runs/**/*.jsonl'")
    p.add_argument("--spec", help="spec name or file to use instead of the one the header names (a warning, T0737, "
                                  "says so when they differ)")
    add_trace_limits(p)
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when a trace violates the spec (input errors still exit 2)")
    p.add_argument("--max-findings", type=positive_int, metavar="N",
                   help="stop a trace after N usage/conformance findings (N >= 1)")
    p.add_argument("--ignore-rejected", action="store_true",
                   help="leave out usage findings on calls the runtime rejected with a documented error "
                        "(for programs that probe the documented errors on purpose)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-j", "--jobs", type=positive_int, default=1, metavar="N",
                       help="replay N traces at a time on local worker processes (default: 1)")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="replay on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786); "
                            "its workers need regcheck and must see the traces at the same absolute paths")
    p.add_argument("--timeline", metavar="OUT.html",
                   help="also write a self-contained HTML page of the trace's address space over time (one trace)")
    add_verbosity(p)  # -q: only each trace's verdict line (one trace) or the corpus total; -v: findings by rule too
    add_format(p, ("text", "json", "sarif"))
    p.set_defaults(run=run)


def report_text(report: ReplayReport, paint=plain) -> list[str]:
    """The notes, the findings and the verdict line; `paint(text, role)` colours kinds, rule IDs, verdicts."""
    out = [f"{report.path}:{d.span.line}: {d.severity.value}[{d.code}]: {d.message}" for d in report.notes]
    for f in report.findings:
        out.append(f"{report.path}:{f.line}: {paint(f.kind, f.kind)}[{paint(f.rule, 'rule')}]: {f.message}")
        out.extend(f"  note: {n}" for n in f.notes)
    kinds = dict.fromkeys(["usage", "conformance", "unspecified"] + [f.kind for f in report.findings])
    counts = {k: sum(f.kind == k for f in report.findings) for k in kinds}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no findings"
    more = " (stopped early: --max-findings)" if report.truncated else ""
    out.append(f"{report.path}: {paint(report.verdict, report.verdict)}: {report.events} events, {summary}{more}")
    return out


def expand_traces(paths: list[str]) -> list[str]:
    """Trace files as given; a directory stands for its *.jsonl files, sorted by name; a pattern
    with *, ? or [ that names no existing file stands for the files it matches (** recurses),
    sorted. A directory or pattern that yields nothing is an input error (T0740). A trace named
    twice (standard input `-`, or one file by two names, a directory and a pattern say) counts once,
    where it is first named."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = [os.path.join(p, name) for name in sorted(os.listdir(p)) if name.endswith(".jsonl")]
            what = f"directory {p} has no *.jsonl trace files"
        elif not os.path.exists(p) and glob.has_magic(p):
            found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            what = f"no trace file matches {p!r}"
        else:
            out.append(p)
            continue
        if not found:
            raise RegcheckError([error("T0740", what)])
        out.extend(found)
    seen: set[str] = set()
    unique = []
    for p in out:
        key = _identity(p)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def _identity(path: str) -> str:
    """What makes two names one trace: "-" itself, else the file it resolves to."""
    return path if path == "-" else os.path.realpath(path)


def run(args, out) -> int:
    args.traces = expand_traces(args.traces)
    if args.timeline and len(args.traces) != 1:
        out.err(f"regcheck replay: error: --timeline draws one trace, but {len(args.traces)} were given")
        return EXIT_INPUT
    if args.timeline:
        require_writable(args.timeline)  # now, not after the whole trace has been replayed
    # The timeline reads its trace a second time, and a pipe can be read only once.
    with rereadable_stdin() if args.timeline and args.traces[0] == "-" else nullcontext(lambda: None) as rewind:
        return _run(args, out, rewind)


@contextmanager
def rereadable_stdin():
    """Standard input copied into an unnamed temporary file that takes its place as descriptor 0, so
    that the replay and the timeline each read "-" from its start (call the value to rewind); the
    real standard input is put back afterwards."""
    saved = os.dup(0)
    try:
        with tempfile.TemporaryFile(prefix="regcheck-stdin-") as spool:
            with os.fdopen(os.dup(saved), "rb") as source:
                shutil.copyfileobj(source, spool, 1 << 20)
            spool.flush()
            os.dup2(spool.fileno(), 0)
            yield lambda: os.lseek(0, 0, os.SEEK_SET)
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def _run(args, out, rewind) -> int:
    rewind()
    many = len(args.traces) > 1
    if not many and args.dask is None and is_terminal(out.stderr):
        outcomes = [_replay_with_progress(args.traces[0], args.spec, args.max_findings, out.stderr)]
    else:
        with progress_bar(out.stderr if many else None, len(args.traces), "replaying") as bar:
            outcomes = replay_corpus(args.traces, args.spec, args.max_findings, jobs=args.jobs,
                                     dask_address=args.dask, on_done=lambda _: bar.advance())
    if args.ignore_rejected:
        outcomes = [replace(o, report=o.report.without_rejected()) if o.report is not None else o for o in outcomes]
    corpus = CorpusReport(tuple(outcomes))
    reports = corpus.reports
    errors = corpus.errors
    violated = any(r.verdict == "violates" for r in reports)
    code = EXIT_INPUT if errors else (EXIT_FINDINGS if violated and not args.exit_zero else EXIT_OK)
    if args.timeline and reports:
        rewind()
        _write_timeline(args.traces[0], args.spec, args.timeline)
    if args.format == "sarif":
        out.json(sarif_report(corpus))
        return code
    if args.format == "json":
        if not many:
            if errors:
                out.json({"error": {"trace": errors[0].path, "diagnostics": [d.to_json() for d in errors[0].diagnostics]}})
            else:
                out.json({"trace": reports[0].path, "spec": reports[0].spec, **reports[0].to_json()})
            return code
        out.json({
            "verdict": corpus.verdict,
            "traces": [{"trace": r.path, "spec": r.spec, **r.to_json()} for r in reports],
            "errors": [{"trace": o.path, "diagnostics": [d.to_json() for d in o.diagnostics]} for o in errors],
            **corpus.to_json(),
        })
        return code
    for r in reports:
        lines = report_text(r, out.paint)
        shown = lines if not args.quiet else [] if many else lines[-1:]  # quiet: the verdict lines only
        for line in shown:
            out.out(line)
    for o in errors:
        out.err(render_all(o.diagnostics))
    if (many and not args.quiet) or (args.verbose and not many):
        for line in by_rule_text(corpus):
            out.out(line)
    if many:
        violating = sum(r.verdict == "violates" for r in reports)
        out.out(f"{len(args.traces)} traces: {len(reports) - violating} conform, {violating} violate"
                + (f", {len(errors)} unreadable" if errors else ""))
    return code


def _replay_with_progress(path: str, spec: str | None, max_findings: int | None, stream) -> TraceOutcome:
    """One trace, in this process, with a bar of its events (advanced every 65,536 events)."""
    with progress_bar(stream, _count_events(path), f"replaying {os.path.basename(path)}") as bar:
        return replay_one(path, spec, max_findings, on_events=bar.advance)


def _count_events(path: str) -> int | None:
    """The number of event lines (the bar's total): one cheap pass over the file's bytes."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO or device: never opened here (the replay refuses it)
        with open(path, "rb") as f:
            if compression_of(f.read(MAGIC_BYTES)) is not None:
                return None  # counting its lines would cost a second decompression
            f.seek(0)
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except (OSError, ValueError):
        return None  # the replay reports it
    return max(lines - 1, 0)


def by_rule_text(corpus: CorpusReport) -> list[str]:
    """The findings of a corpus counted by rule ID (nothing when there are none)."""
    counts = corpus.by_rule()
    if not counts:
        return []
    width = max(len(c.rule) for c in counts)
    lines = ["findings by rule:"]
    for c in counts:
        lines.append(f"  {c.rule:<{width}}  {c.kind:<11}  {c.findings} finding{'s' if c.findings != 1 else ''} "
                     f"in {c.traces} trace{'s' if c.traces != 1 else ''}")
    return lines


def sarif_report(corpus: CorpusReport) -> dict:
    """One SARIF run per spec (a rule ID may mean different things in two specs); traces that could
    not be read become tool notifications of the first run."""
    from ..emit.sarif import (notifications_of, replay_results, run_category,  # only SARIF needs them
                              sarif_log_of_runs, sarif_run)

    by_spec: dict[str, list[TraceOutcome]] = {}
    for o in corpus.outcomes:
        if o.report is not None:
            by_spec.setdefault(o.spec_ref or o.report.spec, []).append(o)
    notes = [n for o in corpus.errors for n in notifications_of(o.diagnostics, o.path)]
    runs = []
    for ref, outcomes in by_spec.items():
        spec = load_spec(ref)
        results = [res for o in outcomes for res in replay_results(o.report, spec)]
        runs.append(sarif_run(spec.rules.values(), results, category=run_category("replay", spec.name, ref),
                              notifications=notes if not runs else (),
                              properties={"spec": spec.name, "traces": len(outcomes)}))
    if not runs:
        runs.append(sarif_run((), (), category="regcheck/replay/", notifications=notes))
    return sarif_log_of_runs(runs)


def _write_timeline(path: str, spec: str | None, target: str) -> None:
    from ..emit.timeline import build_timeline, render_html

    page = render_html(build_timeline(path, spec))
    write_output(target, page)
