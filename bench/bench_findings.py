"""Replay of traces that violate their spec: what each finding costs, against msgspec decoding.

    python bench/bench_findings.py [--events N] [--every 0,100,10,2] [--repeat R] [--pure]

Each trace is bench/gen_mixes.py's register-heavy churn (about 4,000 live registrations) with a
bug: every Nth unregister is made a second time (the runtime answers 507911), so each such event
is a finding (ACL-UNREG-REGISTERED) whose related line is the first unregister, which the replay
finds among the removals it remembers. N = 0 is the same churn without the bug. A finding takes the
general path (the event read again, every clause evaluated, the finding explained); this shows
what that costs per finding and how the whole replay compares with decoding the same lines.

Prints, for each N: the events and findings, replay events/s and the replay time over msgspec
decoding of the same lines (best of R rounds, rounds alternating between the traces; the clean
row is the baseline the others compare with). With --pure, the same without the C module (a child
process with REGCHECK_PURE_PYTHON=1). CPU time. Figures only: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_replay import generic_msgspec_only, pure_python_replay  # noqa: E402
from gen_mixes import double_unregister  # noqa: E402


def rates(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def replay_counting(path: str) -> tuple[int, float, int]:
    """(events, CPU seconds, findings) of one in-process replay."""
    import time
    from checker.engines.replay import replay_trace
    t = time.process_time()
    report = replay_trace(path)
    return report.events, time.process_time() - t, len(report.findings)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--every", type=rates, default=[0, 100, 10, 2],
                    help="the bug's period in unregisters, comma-separated (0: no bug)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pure", action="store_true", help="also without the C module")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="regcheck-bench-findings-") as work:
        paths = {}
        for every in args.every:
            paths[every] = os.path.join(work, f"double-unregister-{every}.jsonl")
            double_unregister(paths[every], args.events, every=every)
        measure(paths, args.repeat, args.pure)


def measure(paths: dict[int, str], repeat: int, pure: bool) -> None:
    best: dict[int, tuple[float, float]] = {}
    counts: dict[int, tuple[int, int]] = {}
    for _ in range(repeat):
        for every, path in paths.items():
            events, t_msgspec = generic_msgspec_only(path)
            _, t_replay, found = replay_counting(path)
            counts[every] = (events, found)
            m, r = best.get(every, (t_msgspec, t_replay))
            best[every] = (min(m, t_msgspec), min(r, t_replay))
    print(f"{'every':>6s} {'events':>9s} {'findings':>9s} {'replay ev/s':>12s} {'÷msgspec':>9s}"
          + (f" {'pure ev/s':>10s} {'pure÷msgspec':>13s}" if pure else ""))
    for every, path in paths.items():
        (events, found), (t_msgspec, t_replay) = counts[every], best[every]
        line = f"{every or '-':>6} {events:9,d} {found:9,d} {events / t_replay:12,.0f} {t_replay / t_msgspec:8.2f}x"
        if pure:
            _, t_pure = pure_python_replay(path, repeat)
            line += f" {events / t_pure:10,.0f} {t_pure / t_msgspec:12.2f}x"
        print(line)


if __name__ == "__main__":
    main()
