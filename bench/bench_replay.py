"""Replay throughput and memory, against the project's own parser as the baseline in the same run.

    python bench/bench_replay.py            # 1M events for speed; 1M vs 10M events for memory
    python bench/bench_replay.py --quick    # 200k events; 200k vs 1M for memory

Times are CPU time of this process (time.process_time), which shared, busy machines disturb less
than wall-clock time. Prints: parse-only time (checker.trace.read_trace, the project's JSON parser), replay time, events/s,
the replay/parse ratio (target <= 3x) and throughput (target >= 300,000 events/s); then peak RSS of
a replay of the small and the large trace, each in a fresh process (target: within 10%).
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


def parse_only(path: str) -> tuple[int, float]:
    from checker.trace import read_trace
    t = time.process_time()
    _, events = read_trace(path)
    n = sum(1 for _ in events)
    return n, time.process_time() - t


def replay_only(path: str) -> tuple[int, float, str]:
    from checker.replay import replay_trace
    t = time.process_time()
    report = replay_trace(path)
    return report.events, time.process_time() - t, report.verdict


def peak_rss_kib(path: str) -> int:
    code = ("import resource, sys; from checker.replay import replay_trace; r = replay_trace(sys.argv[1]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r.events, r.verdict)")
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(HERE)).stdout.split()
    return int(out[0])


def best_of(fn, path: str, repeat: int):
    runs = [fn(path) for _ in range(repeat)]
    return min(runs, key=lambda r: r[1])


def main() -> None:
    p = argparse.ArgumentParser(description="replay throughput and memory benchmark")
    p.add_argument("--quick", action="store_true", help="smaller traces (for a fast look)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept")
    p.add_argument("--dir", help="where to keep the generated traces (default: a temporary directory)")
    a = p.parse_args()
    speed_n = 200_000 if a.quick else 1_000_000
    big_n = 1_000_000 if a.quick else 10_000_000
    work = a.dir or tempfile.mkdtemp(prefix="regcheck-bench-")
    os.makedirs(work, exist_ok=True)
    small, big = os.path.join(work, f"acl-{speed_n}.jsonl"), os.path.join(work, f"acl-{big_n}.jsonl")
    for path, n in ((small, speed_n), (big, big_n)):
        if not os.path.exists(path):
            print(f"generating {n:,} events -> {path}", flush=True)
            generate(path, n)

    n, t_parse = best_of(parse_only, small, a.repeat)
    n2, t_replay, verdict = best_of(replay_only, small, a.repeat)
    assert n == n2, (n, n2)
    print(f"trace: {n:,} events ({os.path.getsize(small) / 1e6:.0f} MB), verdict {verdict}")
    print(f"parse only (checker.trace, orjson): {t_parse:.3f} s  {n / t_parse:,.0f} events/s")
    print(f"replay (parse + check):             {t_replay:.3f} s  {n / t_replay:,.0f} events/s"
          f"   [target >= 300,000 events/s: {'met' if n / t_replay >= 300_000 else 'NOT met'}]")
    ratio = t_replay / t_parse
    print(f"replay / parse ratio:               {ratio:.2f}x   [target <= 3x: {'met' if ratio <= 3 else 'NOT met'}]")

    rss_small, rss_big = peak_rss_kib(small), peak_rss_kib(big)
    growth = rss_big / rss_small - 1
    print(f"peak RSS, {speed_n:,} events: {rss_small / 1024:.1f} MiB; {big_n:,} events: {rss_big / 1024:.1f} MiB;"
          f" growth {growth * 100:+.1f}%   [target within 10%: {'met' if growth <= 0.10 else 'NOT met'}]")


if __name__ == "__main__":
    main()
