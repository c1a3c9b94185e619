"""What the single-trace progress hook costs the replay loop: `replay_events` without a callback
against the same replay with one (`on_events`, called every PROGRESS_EVERY events, as the bar of
`regcheck replay TRACE` on a terminal uses it).

    python bench/bench_progress.py            # 1M events
    python bench/bench_progress.py --quick    # 200k events

CPU time of this process (time.process_time), best of --repeat runs of each side, interleaved and
alternating which side goes first, so drift in a shared machine's speed hits both alike. Prints
both times, events/s, the ratio (target: within 2%) and, as the yardstick, how far the median
run without a callback lies from the best one (the noise of this machine).
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


def replay(path: str, with_callback: bool) -> tuple[float, int, int]:
    from checker.engines.replay import replay_events, semantics_for
    from checker.trace.reader import read_trace

    calls = []
    header, events = read_trace(path)
    sem = semantics_for(header, None, path)
    t = time.process_time()
    report = replay_events(sem, events, path, None, calls.append if with_callback else None)
    return time.process_time() - t, report.events, len(calls)


def main() -> None:
    p = argparse.ArgumentParser(description="cost of the replay progress callback")
    p.add_argument("--quick", action="store_true", help="200k events instead of 1M")
    p.add_argument("--repeat", type=int, default=5, help="runs per side; the best is kept")
    args = p.parse_args()
    n = 200_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.jsonl")
        generate(path, n)
        runs: dict[bool, list[float]] = {False: [], True: []}
        calls = 0
        for i in range(args.repeat):
            for side in ((False, True) if i % 2 == 0 else (True, False)):
                seconds, events, k = replay(path, side)
                runs[side].append(seconds)
                calls = k if side else calls
    plain, hooked = min(runs[False]), min(runs[True])
    median = sorted(runs[False])[len(runs[False]) // 2]
    print(f"events: {events:,}")
    print(f"no callback:   {plain:6.2f} s CPU  {events / plain:10,.0f} events/s")
    print(f"with callback: {hooked:6.2f} s CPU  {events / hooked:10,.0f} events/s  ({calls} callbacks)")
    print(f"ratio with/without: {hooked / plain:.3f} (target <= 1.02)")
    print(f"noise: the median run without a callback is {median / plain:.3f}x the best one")


if __name__ == "__main__":
    main()
