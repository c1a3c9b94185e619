"""Replaying a corpus of traces: one at a time, on N local processes, or on a Dask cluster.

Each trace is replayed on its own by the same code (`replay_one`), so the result of a trace does not
depend on where it ran; `replay_corpus` returns the outcomes in the order the traces were given
and `CorpusReport` aggregates them (verdicts, events, findings by rule ID).

  jobs=1           in this process
  jobs=N (N > 1)   a `concurrent.futures.ProcessPoolExecutor` of N worker processes
  dask_address     `dask.distributed.Client(address)`: the cluster's workers must have regcheck
                   installed and see the traces at the same absolute paths (a shared file system);
                   the client sends absolute paths and gets the reports back

Environment error codes (X08xx):
  X0820 --dask given but dask.distributed is not installed (pip install 'regcheck[dask]')
  X0821 the Dask scheduler at the address cannot be reached
  X0822 the Dask cluster stopped replaying: no worker for DASK_NO_WORKERS_S seconds, or a trace's
        worker died on it repeatedly (the message names the traces not replayed)
  X0823 a worker process of `-j N` died (killed, out of memory): the message names the traces not
        replayed
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ..language.diagnostics import Diagnostic, RegcheckError, error
from ..language.load import load_spec
from ..language.files import STDIN
from ..fast.fastpath import precompile
from ..trace.reader import header_spec_ref, read_trace
from .replay import ReplayReport, replay_events, semantics_for, spec_notes

DASK_CONNECT_TIMEOUT_S = 10
DASK_NO_WORKERS_S = 60  # how long a corpus waits for a cluster that has no worker left
DASK_POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class TraceOutcome:
    """What replaying one trace gave: a report, or the input error that stopped it."""

    path: str
    report: ReplayReport | None
    diagnostics: tuple[Diagnostic, ...] = ()
    spec_ref: str | None = None  # the spec the trace was checked against, as named (load_spec takes it)

    @property
    def verdict(self) -> str:
        return "error" if self.report is None else self.report.verdict


def replay_one(path: str, spec_name: str | None = None, max_findings: int | None = None,
               display: str | None = None, on_events: Callable[[int], None] | None = None,
               spec_display: str | None = None) -> TraceOutcome:
    """Replay one trace file; input errors become the outcome's diagnostics instead of raising.

    `display` is the name used in the report and diagnostics (default: `path`): a remote worker
    opens an absolute path but reports the path the user gave. `spec_display` likewise for a
    `spec_name` that names a file (default: `spec_name`); a spec file the header names is shown by
    its path from `display`, as `-j 1` shows it. Every diagnostic is made with the names shown
    (the reader, the spec loader and the replayer are given them), never renamed afterwards.
    `on_events`: see `replay_events`."""
    shown = display or path
    try:
        header, events = read_trace(path, shown)
    except RegcheckError as exc:
        return TraceOutcome(shown, None, exc.diagnostics)
    opened = spec_name or header_spec_ref(header, path)
    spec_shown = _spec_shown(header, opened, spec_display or spec_name, path, shown)
    try:
        sem = semantics_for(header, spec_name, path, spec_shown, shown)
        report = replay_events(sem, events, shown, max_findings, on_events)
        report = replace(report, notes=spec_notes(header, spec_name, path, spec_shown, shown))
    except RegcheckError as exc:
        return TraceOutcome(shown, None, exc.diagnostics)
    finally:
        close = getattr(events, "close", None)
        if close:
            close()
    return TraceOutcome(shown, report, (), spec_shown)


def _spec_shown(header, opened: str, spec_name: str | None, path: str, shown: str) -> str:
    """How `-j 1`, run where the user runs it, names the trace's spec `opened` (the spec given, else
    `header_spec_ref` from `path`): `spec_name` as given, else the header's spec from the trace's
    shown path. A worker opens `path`, the absolute one, and may run in another directory: where the
    spec is the file beside the trace, its shown path is worked out from `shown` here rather than by
    looking for files."""
    if spec_name is not None:
        return spec_name
    if path == shown or opened == header.spec:  # a bundled name, an absolute path, a file from here
        return opened
    folder = os.path.dirname(shown)
    return os.path.normpath(os.path.join(folder, header.spec)) if folder else header.spec


def replay_corpus(paths: Sequence[str], spec_name: str | None = None, max_findings: int | None = None, *,
                  jobs: int = 1, dask_address: str | None = None,
                  on_done: Callable[[TraceOutcome], None] | None = None) -> list[TraceOutcome]:
    """Replay every trace; outcomes in the order of `paths`. `on_done` is called as each trace
    finishes (in completion order), e.g. to advance a progress bar. Raises ValueError for jobs < 1
    and RegcheckError (X0820, X0821) when the Dask cluster cannot be used."""
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    done = on_done or (lambda outcome: None)
    # Standard input is this process's: a worker (a pool process, a Dask worker) cannot read it.
    here = [p for p in paths if p == STDIN]
    away = [p for p in paths if p != STDIN]
    local = {p: replay_one(p, spec_name, max_findings) for p in here[:1]}
    for p in here:
        done(local[p])
    if dask_address is not None and away:
        elsewhere = _on_dask(away, spec_name, max_findings, dask_address, done)
    elif jobs == 1 or len(away) <= 1:
        elsewhere = []
        for p in away:
            elsewhere.append(replay_one(p, spec_name, max_findings))
            done(elsewhere[-1])
    else:
        elsewhere = _on_processes(away, spec_name, max_findings, jobs, done)
    remote = iter(elsewhere)
    return [local[p] if p == STDIN else next(remote) for p in paths]


def _on_processes(paths: Sequence[str], spec_name: str | None, max_findings: int | None, jobs: int,
                  done: Callable[[TraceOutcome], None]) -> list[TraceOutcome]:
    # Imported here: a run of one process (most runs) need not pay for the pool's imports.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    results: list[TraceOutcome | None] = [None] * len(paths)
    # fork where there is one: the workers start with the specs already parsed and cost nothing to
    # start (spawning one costs about a second of imports, as much as replaying a 300k-event trace).
    # Absolute paths all the same, so a start method that does not keep the working directory works.
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    spec_arg = _absolute_spec(spec_name)
    if context is not None:
        _preload(paths, spec_arg, spec_name)
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths)), mp_context=context) as pool:
        try:  # (a worker that dies while traces are still being handed out breaks `submit` too)
            futures = {pool.submit(replay_one, os.path.abspath(p), spec_arg, max_findings, p, None, spec_name): i
                       for i, p in enumerate(paths)}
            for fut in as_completed(futures):
                outcome = fut.result()  # a worker's bug re-raises here, with its traceback
                results[futures[fut]] = outcome
                done(outcome)
        except BrokenProcessPool:  # a worker died: every trace not done yet is lost with the pool
            missing = [p for p, r in zip(paths, results) if r is None]
            named = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            message = (f"a worker process of -j {jobs} died (killed, or out of memory); {len(missing)} of "
                       f"{len(paths)} traces not replayed: {named}")
            raise RegcheckError([error("X0823", message)]) from None
    return results  # type: ignore[return-value]


def _on_dask(paths: Sequence[str], spec_name: str | None, max_findings: int | None, address: str,
             done: Callable[[TraceOutcome], None]) -> list[TraceOutcome]:
    try:
        from dask.distributed import Client, as_completed as dask_completed
        from distributed.scheduler import KilledWorker
    except ImportError:
        raise RegcheckError([error("X0820", "--dask needs the dask.distributed package: "
                                   "pip install 'regcheck[dask]'")]) from None
    # The workers may run elsewhere: send absolute paths (the display name stays as given).
    spec_arg = _absolute_spec(spec_name)
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise RegcheckError([error("X0821", f"cannot reach the Dask scheduler at {address}: {exc}")]) from None
    try:
        futures = [client.submit(replay_one, os.path.abspath(p), spec_arg, max_findings, p, None, spec_name, pure=False)
                   for p in paths]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[TraceOutcome | None] = [None] * len(paths)
        completed = dask_completed(futures, loop=client.loop)
        left = len(futures)
        idle_since: float | None = None
        while left:
            finished = completed.next_batch(block=False)
            if not finished:
                time.sleep(DASK_POLL_S)
            left -= len(finished)
            for fut in finished:
                try:
                    outcome = fut.result()
                except KilledWorker as exc:
                    raise _stalled(paths, results, f"a worker died replaying it repeatedly ({exc})") from None
                results[index[fut.key]] = outcome
                done(outcome)
            if finished or _workers(client):
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > DASK_NO_WORKERS_S:
                raise _stalled(paths, results, f"the cluster at {address} has had no worker for "
                                               f"{DASK_NO_WORKERS_S} s")
        return results  # type: ignore[return-value]
    finally:
        client.close()


def _workers(client) -> int:
    try:
        return len(client.scheduler_info().get("workers", {}))
    except (OSError, TimeoutError):
        return 0


def _stalled(paths: Sequence[str], results: Sequence[TraceOutcome | None], why: str) -> RegcheckError:
    missing = [p for p, r in zip(paths, results) if r is None]
    shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    return RegcheckError([error("X0822", f"replay on Dask stopped: {why}; {len(missing)} of {len(paths)} traces "
                                         f"not replayed: {shown}")])


PRELOAD_MAX_CONFIGS = 16  # distinct (spec, configuration) pairs compiled before forking, at most


def _preload(paths: Sequence[str], spec_name: str | None, spec_display: str | None = None) -> None:
    """Compile the semantics and fast path of each (spec, configuration) the traces' headers name
    (up to PRELOAD_MAX_CONFIGS) before forking, so that every worker inherits them instead of each
    compiling them again (both are cached per process). The specs are read as the workers read
    them (`replay_one`'s arguments), or the workers would not find them in their cache. Reading a
    header is one short read; errors are left to the replay itself."""
    seen: set = set()
    for shown in paths:
        path = os.path.abspath(shown)
        try:
            header, events = read_trace(path, shown)
            getattr(events, "close", lambda: None)()
            opened = spec_name or header_spec_ref(header, path)
            spec_shown = _spec_shown(header, opened, spec_display or spec_name, path, shown)
            key = (opened, spec_shown, repr(sorted(header.env.items())))
            if key in seen:
                continue
            seen.add(key)
            precompile(semantics_for(header, spec_name, path, spec_shown, shown))
        except RegcheckError:
            continue
        if len(seen) >= PRELOAD_MAX_CONFIGS:
            break


def _absolute_spec(spec_name: str | None) -> str | None:
    """A --spec that names a file, made absolute for workers with another working directory (a
    bundled name stays a name). The workers show it as the user named it (`replay_one`)."""
    if spec_name and ("/" in spec_name or spec_name.endswith(".spec")) and os.path.isfile(spec_name):
        return os.path.abspath(spec_name)
    return spec_name


# ---------------------------------------------------------------- the aggregate report


@dataclass(frozen=True, slots=True)
class RuleCount:
    rule: str
    kind: str  # the finding kind: usage | conformance | unspecified
    findings: int
    traces: int

    def to_json(self) -> dict:
        return {"rule": self.rule, "kind": self.kind, "findings": self.findings, "traces": self.traces}


@dataclass(frozen=True, slots=True)
class CorpusReport:
    """Per-trace outcomes and their aggregate."""

    outcomes: tuple[TraceOutcome, ...]

    @property
    def reports(self) -> list[ReplayReport]:
        return [o.report for o in self.outcomes if o.report is not None]

    @property
    def errors(self) -> list[TraceOutcome]:
        return [o for o in self.outcomes if o.report is None]

    @property
    def verdict(self) -> str:
        if self.errors:
            return "error"
        return "violates" if any(r.verdict == "violates" for r in self.reports) else "conforms"

    def counts(self) -> dict[str, int]:
        verdicts = Counter(o.verdict for o in self.outcomes)
        return {"traces": len(self.outcomes), "conform": verdicts["conforms"], "violate": verdicts["violates"],
                "unreadable": verdicts["error"], "events": sum(r.events for r in self.reports)}

    def by_rule(self) -> list[RuleCount]:
        """Findings counted by (rule ID, finding kind): most findings first, then by rule ID."""
        findings: Counter = Counter()
        traces: Counter = Counter()
        for r in self.reports:
            seen = set()
            for f in r.findings:
                findings[(f.rule, f.kind)] += 1
                seen.add((f.rule, f.kind))
            traces.update(seen)
        return [RuleCount(rule, kind, n, traces[(rule, kind)])
                for (rule, kind), n in sorted(findings.items(), key=lambda kv: (-kv[1], kv[0]))]

    def to_json(self) -> dict:
        """The aggregate: counts and findings by rule (the per-trace reports are the caller's to add)."""
        return {"summary": self.counts(), "findings_by_rule": [c.to_json() for c in self.by_rule()]}
