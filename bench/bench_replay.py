"""Replay throughput and memory, against parsing alone as the baseline in the same run.

    python bench/bench_replay.py            # 1M events for speed; 1M vs 10M events for memory
    python bench/bench_replay.py --quick    # 200k events; 200k vs 1M for memory
    python bench/bench_replay.py --only live-100k   # one workload of the table below, nothing else

Times are CPU time of this process (time.process_time), which shared, busy machines disturb less
than wall-clock time. Prints replay time and events/s (target >= 300,000 events/s), then the
replay/parse ratio (target <= 3x) against three parse-only baselines, since "parsing the file" can
mean three things here:
- the project's trace reader (checker.trace.events.read_trace: orjson plus the checks of every field,
  giving TraceEvents), which is what the replayer's general path reads with;
- orjson.loads of every event line alone (the JSON decoding under that reader), no checks;
- msgspec decoding of every event line into the fast path's structs alone (the JSON decoding the
  replayer's fast path does), no further checks.
Then the same replay without the optional C module (a child process with REGCHECK_PURE_PYTHON=1),
for the pure-Python figure; then the peak RSS of a replay of the small and the large trace, each in
a fresh process (target: within 10%).

Then the other legal workloads of bench/gen_mixes.py (register-heavy, cuPVA with tid/t0/t1,
hex strings and flag names, 100,000 live registrations): for each, replay events/s and the ratio of
replay to msgspec decoding of the same lines into Python objects (`msgspec.json.decode`, the
decoding alone) and to orjson.loads, with the C module (target <= 3x msgspec) and without it
(target <= 8x), and the peak RSS of the 100,000-live replay, with the C module and without it (target
< 150 MiB).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from gen_trace import generate  # noqa: E402
from gen_mixes import MIXES  # noqa: E402


def parse_only(path: str) -> tuple[int, float]:
    from checker.trace.reader import read_trace
    t = time.process_time()
    _, events = read_trace(path)
    n = sum(1 for _ in events)
    return n, time.process_time() - t


def decode_only(path: str) -> tuple[int, float]:
    """JSON decoding alone: each event line through orjson.loads (the general path's decoder), no checks."""
    import orjson
    return _each_event_line(path, orjson.loads)


def fast_decode_only(path: str) -> tuple[int, float]:
    """The fast path's decoding alone: each event line into its msgspec struct, no checks."""
    from checker.fast.fastpath import fast_path
    from checker.engines.replay import semantics_for
    from checker.trace.reader import read_trace
    header, events = read_trace(path)
    events.close()
    sem = semantics_for(header, None, path)
    return _each_event_line(path, fast_path(sem, sem.initial_state(), lambda line, call: None).decode)


def _each_event_line(path: str, decode) -> tuple[int, float]:
    """(lines, CPU seconds) of `decode` over every line after the header."""
    t = time.process_time()
    with open(path, "rb") as f:
        next(f)
        n = 0
        for raw in f:
            decode(raw)
            n += 1
    return n, time.process_time() - t


def generic_msgspec_only(path: str) -> tuple[int, float]:
    """msgspec decoding of every event line into Python objects, no checks: the baseline for lines
    of any style (the fast path's structs take only some)."""
    import msgspec
    return _each_event_line(path, msgspec.json.Decoder().decode)


def replay_only(path: str) -> tuple[int, float, str]:
    from checker.engines.replay import replay_trace
    t = time.process_time()
    report = replay_trace(path)
    return report.events, time.process_time() - t, report.verdict


def pure_python_replay(path: str, repeat: int) -> tuple[int, float]:
    """(events, best CPU seconds) of a replay in a child process without checker._native."""
    code = ("import sys, time; from checker.engines.replay import replay_trace; from checker.model.state import NATIVE\n"
            "assert NATIVE is None\nbest = None\nfor _ in range(int(sys.argv[2])):\n"
            "    t = time.process_time(); r = replay_trace(sys.argv[1]); t = time.process_time() - t\n"
            "    best = t if best is None else min(best, t)\nprint(r.events, best)")
    env = dict(os.environ, REGCHECK_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code, path, str(repeat)], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(HERE), env=env).stdout.split()
    return int(out[0]), float(out[1])


# The child's own peak: VmHWM, of the memory the child mapped since it started. (Not ru_maxrss: Linux
# carries the parent's peak over into its child's, through the fork or vfork and the exec, so every
# child of this process read at least this process's own peak, which the replays above had raised.)
PEAK_RSS_CODE = """
import sys
from checker.engines.replay import replay_trace
r = replay_trace(sys.argv[1])
try:
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
except (OSError, StopIteration):  # not Linux: ru_maxrss, in KiB on Linux and the BSDs, bytes on macOS
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // (1024 if sys.platform == "darwin" else 1)
print(peak, r.events, r.verdict)
"""


def peak_rss_kib(path: str, pure: bool = False) -> int:
    """Peak RSS (KiB) of a replay in a fresh process; `pure`: without the C module."""
    code = PEAK_RSS_CODE
    env = dict(os.environ, REGCHECK_PURE_PYTHON="1") if pure else None
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(HERE), env=env).stdout.split()
    return int(out[0])


def main() -> None:
    p = argparse.ArgumentParser(description="replay throughput and memory benchmark")
    p.add_argument("--quick", action="store_true", help="smaller traces (for a fast look)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept")
    p.add_argument("--dir", help="where to keep the generated traces (default: a temporary directory)")
    p.add_argument("--no-mixes", action="store_true", help="only the gen_trace mix, not the other workloads")
    p.add_argument("--only", choices=sorted(MIXES), help="only this workload's row (and its peak RSS for live-100k)")
    a = p.parse_args()
    speed_n = 200_000 if a.quick else 1_000_000
    big_n = 1_000_000 if a.quick else 10_000_000
    work = a.dir or tempfile.mkdtemp(prefix="regcheck-bench-")
    os.makedirs(work, exist_ok=True)
    if a.only:
        other_mixes(work, speed_n, a.repeat, None, a.only)
        return
    small, big = os.path.join(work, f"acl-{speed_n}.jsonl"), os.path.join(work, f"acl-{big_n}.jsonl")
    for path, n in ((small, speed_n), (big, big_n)):
        if not os.path.exists(path):
            print(f"generating {n:,} events -> {path}", flush=True)
            generate(path, n)

    # Rounds of all four, the best of each kept: a slow spell of this shared machine then hits
    # a baseline and the replay alike, instead of only whichever ran during it.
    best: dict = {}
    for _ in range(a.repeat):
        for fn in (parse_only, decode_only, fast_decode_only, replay_only):
            run = fn(small)
            if fn not in best or run[1] < best[fn][1]:
                best[fn] = run
    (n, t_parse), (n1, t_orjson), (n2, t_msgspec) = best[parse_only], best[decode_only], best[fast_decode_only]
    n3, t_replay, verdict = best[replay_only]
    n4, t_pure = pure_python_replay(small, a.repeat)
    assert n == n1 == n2 == n3 == n4, (n, n1, n2, n3, n4)
    from checker.model.state import NATIVE
    print(f"trace: {n:,} events ({os.path.getsize(small) / 1e6:.0f} MB), verdict {verdict};"
          f" C module checker._native: {'in use' if NATIVE is not None else 'NOT built (pure Python)'}")
    print(f"replay (parse + check):             {t_replay:.3f} s  {n / t_replay:,.0f} events/s"
          f"   [target >= 300,000 events/s: {'met' if n / t_replay >= 300_000 else 'NOT met'}]")
    for what, t in (("trace reader (checker.trace.events)", t_parse), ("orjson.loads alone", t_orjson),
                    ("msgspec into structs alone", t_msgspec)):
        ratio = t_replay / t
        print(f"parse only, {what + ':':29s} {t:.3f} s  {n / t:,.0f} events/s;  replay / parse {ratio:.2f}x"
              f"   [target <= 3x: {'met' if ratio <= 3 else 'NOT met'}]")
    print(f"replay without the C module:        {t_pure:.3f} s  {n / t_pure:,.0f} events/s;"
          f"  with it {t_pure / t_replay:.2f}x as fast;  without it, replay / parse:"
          f" {t_pure / t_orjson:.2f}x orjson, {t_pure / t_msgspec:.2f}x msgspec")

    rss_small, rss_big = peak_rss_kib(small), peak_rss_kib(big)
    growth = rss_big / rss_small - 1
    print(f"peak RSS, {speed_n:,} events: {rss_small / 1024:.1f} MiB; {big_n:,} events: {rss_big / 1024:.1f} MiB;"
          f" growth {growth * 100:+.1f}%   [target within 10%: {'met' if growth <= 0.10 else 'NOT met'}]")
    if not a.no_mixes:
        other_mixes(work, speed_n, a.repeat, small)


def other_mixes(work: str, n: int, repeat: int, main_mix: str | None, only: str | None = None) -> None:
    """Each workload (or `only` that one, without the main mix): replay with and without the C module
    against msgspec and orjson decoding."""
    print()
    # ÷msgspec is the best replay over the best decoding; `each round` is the same ratio within each
    # round in turn (a decoding and a replay run back to back): how much the machine's noise moves it.
    print(f"{'workload':15s} {'events':>9s} {'replay ev/s':>12s} {'÷msgspec':>9s} {'each round':>14s} {'÷orjson':>8s}"
          f" {'pure ev/s':>10s} {'pure÷msgspec':>13s}   targets: <= 3x, pure <= 8x")
    paths = [("gen_trace mix", main_mix)] if only is None else []
    for name, make in MIXES.items():
        if only is not None and name != only:
            continue
        path = os.path.join(work, f"{name}-{n}.jsonl")
        if not os.path.exists(path):
            make(path, n)
        paths.append((name, path))
    for name, path in paths:
        best: dict = {}
        rounds = []
        for _ in range(repeat):
            this = {}
            for fn in (generic_msgspec_only, decode_only, replay_only):
                run = this[fn] = fn(path)
                if fn not in best or run[1] < best[fn][1]:
                    best[fn] = run
            rounds.append(this[replay_only][1] / this[generic_msgspec_only][1])
        (events, t_msgspec), (_, t_orjson) = best[generic_msgspec_only], best[decode_only]
        _, t_replay, verdict = best[replay_only]
        _, t_pure = pure_python_replay(path, repeat)
        fast, pure = t_replay / t_msgspec, t_pure / t_msgspec
        spread = "/".join(f"{r:.2f}" for r in rounds)
        print(f"{name:15s} {events:9,d} {events / t_replay:12,.0f} {fast:8.2f}x {spread:>14s} {t_replay / t_orjson:7.2f}x"
              f" {events / t_pure:10,.0f} {pure:12.2f}x   [{'met' if fast <= 3 else 'NOT met'},"
              f" {'met' if pure <= 8 else 'NOT met'}]{'' if verdict == 'conforms' else '  verdict: ' + verdict}")
    live = dict(paths).get("live-100k")
    for pure in (False, True) if live is not None else ():
        rss = peak_rss_kib(live, pure) / 1024
        print(f"peak RSS, replay of live-100k{' without the C module' if pure else ''}: {rss:.1f} MiB"
              f"   [target < 150 MiB: {'met' if rss < 150 else 'NOT met'}]")


if __name__ == "__main__":
    main()
