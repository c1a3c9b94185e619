"""`regcheck execute` throughput on the replay benchmark's Ascend mix, with real pinning.

    python bench/bench_execute.py [--events N] [--repeat R]

Prints, for a trace of bench/gen_trace.py's mix (default 20,000 events; CPU time of this process,
best of --repeat runs):
- execute with the reference driver, page locks checked event by event (checker.drivers.lockcheck):
  events/s (issue 14's target: at least 50,000), the mlock/munlock calls it made and their time,
  and the kernel readings (madvise probes) the lock check made; whether the check's set work
  (checker.drivers.lockcheck's `sync_pages`, `predict_pages`) and the arena's reading loop
  (`PinnedArena.kernel_locked_in` over its lock segments) ran in C (checker._native) or in Python;
- the same with the page-lock check off, and with the whole comparison after every event (the
  check before the event-by-event one: every pinned entry, smaps read whole) on the first 2,000
  events, for what the check costs;
- baselines in the same run: `regcheck replay` of the same trace (fast path, which execute also
  takes for the recording's lines it finds nothing in) and the replayer's general path (what
  execute runs for the recording on the lines the fast steps decline);
- where an event's time goes by call: events, share of the time and microseconds per event for
  each call of the trace (one more run, each event timed; the timing adds its own cost).
Needs Linux with mlock permitted (RLIMIT_MEMLOCK of at least a few MiB). Figures only.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from gen_trace import generate  # noqa: E402

from checker.drivers import execute as execute_module  # noqa: E402
from checker.drivers import lockcheck, pinning  # noqa: E402
from checker.drivers.executor import ReferenceDriver  # noqa: E402
from checker.engines.replay import replay_events, replay_trace, semantics_for  # noqa: E402
from checker.trace.reader import read_trace  # noqa: E402

TARGET = 50_000


class Counted:
    """mlock/munlock and the madvise probe, counted and timed."""

    def __init__(self) -> None:
        self.calls = {"mlock": 0, "munlock": 0, "probe": 0}
        self.seconds = {"mlock": 0.0, "munlock": 0.0, "probe": 0.0}
        libc = pinning.libc_calls()
        self.lock_calls = pinning.LockCalls(self._timed("mlock", libc.mlock), self._timed("munlock", libc.munlock))

    def _timed(self, name, fn):
        def run(*args):
            t = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1
        return run

    def count_probes(self):
        probe = pinning.kernel_lock_probe()
        if probe is not None:
            pinning._LOCK_PROBE = self._timed("probe", probe)


def cpu(fn, repeat: int):
    best, out = None, None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        dt = time.process_time() - t
        best = dt if best is None else min(best, dt)
    return best, out


def head(path: str, n: int, out: str) -> str:
    with open(path, "rb") as src, open(out, "wb") as dst:
        for i, line in enumerate(src):
            if i > n:
                break
            dst.write(line)
    return out


def by_call(path: str) -> dict[str, tuple[int, float]]:
    """(events, seconds) per call name over one execution, each event's step timed."""
    totals: dict[str, list] = {}
    plain, checked = execute_module.Execution.step, execute_module.Execution.step_checked

    def timed(fn, name_of):
        def run(self, ev, *rest, **kw):
            t = time.process_time()
            try:
                return fn(self, ev, *rest, **kw)
            finally:
                entry = totals.setdefault(name_of(ev), [0, 0.0])
                entry[0] += 1
                entry[1] += time.process_time() - t
        return run
    execute_module.Execution.step = timed(plain, lambda ev: getattr(ev, "call", "?"))
    execute_module.Execution.step_checked = timed(checked, lambda at: at.call)
    try:
        execute_module.execute_trace(path)
    finally:
        execute_module.Execution.step, execute_module.Execution.step_checked = plain, checked
    return {name: (n, secs) for name, (n, secs) in totals.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    ok, why = pinning.pinning_permitted()
    if not ok:
        print(f"real pinning is not permitted here: {why}")
        return
    work = tempfile.mkdtemp(prefix="regcheck-bench-execute-")
    path = os.path.join(work, "mix.jsonl")
    n = generate(path, a.events)
    small = head(path, 2000, os.path.join(work, "mix-2000.jsonl"))

    sets_in_c = lockcheck.NATIVE_SYNC is not None and lockcheck.NATIVE_PREDICT is not None
    probe = pinning.kernel_lock_probe()
    loop_in_c = probe is not None and pinning.segment_loop(probe) is not None
    counted = Counted()
    t_exec, report = cpu(lambda: execute_module.execute_trace(path, lambda: ReferenceDriver(lock_calls=counted.lock_calls)),
                         a.repeat)
    runs = a.repeat
    per_run = {k: v / runs for k, v in counted.calls.items()}
    secs = {k: v / runs for k, v in counted.seconds.items()}
    # The probes are counted in a run of their own: a counting probe is called from Python for every
    # question, where the timed runs' probe loops run in C (pinning.probe_loops) when it is built.
    counted.count_probes()
    try:
        execute_module.execute_trace(path)
    finally:
        pinning._LOCK_PROBE = probe
    per_run["probe"], secs["probe"] = counted.calls["probe"], counted.seconds["probe"]

    checks = execute_module.Execution.__init__

    def without_lock_check(self, *args, **kw):
        checks(self, *args, **kw)
        self.locks = None
    execute_module.Execution.__init__ = without_lock_check
    try:
        t_nolocks, _ = cpu(lambda: execute_module.execute_trace(path), a.repeat)
    finally:
        execute_module.Execution.__init__ = checks

    class Whole(ReferenceDriver):
        take_changed_spans = kernel_locked_in = tracks = None
    t_whole, whole = cpu(lambda: execute_module.execute_trace(small, Whole), 1)
    t_incr, incr = cpu(lambda: execute_module.execute_trace(small), a.repeat)

    t_replay, _ = cpu(lambda: replay_trace(path), a.repeat)

    def general():
        header, events = read_trace(path)
        return replay_events(semantics_for(header, None, path), events, path, fast=False)
    t_general, _ = cpu(general, a.repeat)

    rate = n / t_exec
    print(f"trace: {n:,} events of bench/gen_trace.py's mix; verdict {report.verdict}, {len(report.findings)} findings")
    print(f"execute, page locks checked event by event: {t_exec:.3f} s  {rate:,.0f} events/s"
          f"   [target >= {TARGET:,}: {'met' if rate >= TARGET else 'NOT met'} ({rate / TARGET:.2f})]")
    print(f"  of which mlock {per_run['mlock']:,.0f} calls {secs['mlock']:.3f} s, munlock {per_run['munlock']:,.0f} calls"
          f" {secs['munlock']:.3f} s; kernel lock readings (madvise probes) {per_run['probe']:,.0f} calls"
          f" {secs['probe']:.3f} s (wall time inside the calls)")
    print(f"  the check's set work in {'C' if sets_in_c else 'Python'} (lockcheck.sync_pages, predict_pages),"
          f" the arena's reading loop in {'C' if loop_in_c else 'Python'} (PinnedArena.kernel_locked_in)")
    print(f"execute, page-lock check off:              {t_nolocks:.3f} s  {n / t_nolocks:,.0f} events/s;"
          f"  the check costs {(t_exec - t_nolocks) / n * 1e6:.1f} us per event")
    same = [(f.line, f.rule) for f in whole.findings] == [(f.line, f.rule) for f in incr.findings]
    print(f"first 2,000 events: whole comparison after every event {t_whole:.3f} s ({2000 / t_whole:,.0f} events/s),"
          f" event by event {t_incr:.3f} s ({2000 / t_incr:,.0f} events/s): {t_whole / t_incr:.0f}x;"
          f" findings {'the same' if same else 'DIFFERENT'}")
    print(f"baseline, replay of the same trace (fast path): {t_replay:.3f} s  {n / t_replay:,.0f} events/s;"
          f" execute / replay {t_exec / t_replay:.1f}x")
    print(f"baseline, the replayer's general path:          {t_general:.3f} s  {n / t_general:,.0f} events/s;"
          f" execute / general path {t_exec / t_general:.2f}x")
    calls = by_call(path)
    whole = sum(secs for _, secs in calls.values())
    print("by call (one run, each event timed):")
    for name, (count, secs) in sorted(calls.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:28s} {count:7,d} events  {secs / whole:6.1%} of the time  {secs / count * 1e6:8.1f} us per event")


if __name__ == "__main__":
    main()
