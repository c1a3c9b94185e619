"""Replay against msgspec decoding as the number of live registrations grows, all else the same.

    python bench/bench_live_sweep.py [--events N] [--live 2000,20000,100000] [--repeat R] [--pure] [--large BYTES]

Each trace is bench/gen_mixes.py's live-100k workload with another number of live registrations:
`live` allocations made and registered, then the same churn (unregister one, register another,
look up MAPPED ones 60% of the time) for N more events. The line styles, the calls and their
shares are the same for every size, so what changes between the rows is only how large the
tables are, and so how many of an event's reads miss the processor's caches.

Prints, for each size: the events (setup plus churn), and the replay time over msgspec decoding
of the same lines (the ratio bench_replay.py's targets use: at most 3x with the C module, 8x
without), best of R rounds and each round in turn, rounds alternating between the sizes. With
--pure, the same without the C module (a child process with REGCHECK_PURE_PYTHON=1). With --large, each size
again with one more registration of that many bytes (1 GiB: 1073741824) made first, below all the
others: the largest entry is then that large, which widened every probe's window to the whole
table before the probes of separated tables (checker/model/state.py). CPU time of this process.
Figures only: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_replay import generic_msgspec_only, pure_python_replay, replay_only  # noqa: E402
from gen_mixes import live_churn  # noqa: E402


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=600_000, help="churn events after the setup (default 600,000)")
    ap.add_argument("--live", type=sizes, default=[2_000, 20_000, 100_000], help="live registrations, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pure", action="store_true", help="also without the C module")
    ap.add_argument("--large", type=int, default=0, help="also each size with one registration of this many bytes")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="regcheck-bench-sweep-") as work:
        paths = {}
        for live in args.live:
            for large in ([0, args.large] if args.large else [0]):
                path = paths[(live, large)] = os.path.join(work, f"live-{live}-{large}.jsonl")
                live_churn(path, args.events + 2 * live, live, large=large)  # setup: a malloc and a register each
        sweep(paths, args.repeat, args.pure)


def sweep(paths: dict[tuple[int, int], str], repeat: int, pure: bool) -> None:
    """Print each size's ratios, the rounds alternating between the sizes."""
    rounds: dict[tuple[int, int], list[float]] = {live: [] for live in paths}
    best: dict[tuple[int, int], tuple[float, float]] = {}
    events: dict[tuple[int, int], int] = {}
    verdicts: dict[tuple[int, int], str] = {}
    for _ in range(repeat):
        for live, path in paths.items():
            events[live], t_msgspec = generic_msgspec_only(path)
            _, t_replay, verdicts[live] = replay_only(path)
            rounds[live].append(t_replay / t_msgspec)
            m, r = best.get(live, (t_msgspec, t_replay))
            best[live] = (min(m, t_msgspec), min(r, t_replay))
    print(f"{'live':>8s} {'large':>13s} {'events':>9s} {'÷msgspec':>9s} {'each round':>16s}"
          + (f" {'pure÷msgspec':>13s}" if pure else ""))
    for live in paths:
        t_msgspec, t_replay = best[live]
        line = (f"{live[0]:8,d} {live[1] or '-':>13} {events[live]:9,d} {t_replay / t_msgspec:8.2f}x"
                f" {'/'.join(f'{r:.2f}' for r in rounds[live]):>16s}")
        if pure:
            _, t_pure = pure_python_replay(paths[live], repeat)
            line += f" {t_pure / t_msgspec:12.2f}x"
        print(line + ("" if verdicts[live] == "conforms" else f"  verdict: {verdicts[live]}"))


if __name__ == "__main__":
    main()
