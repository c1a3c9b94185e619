"""Per-trace overhead of corpus replay: many small traces against the same events in one trace.

    python bench/bench_corpus.py                      # 1,000 traces x 100 events
    python bench/bench_corpus.py --traces 200 --events 500 --jobs 2

Writes N traces of K events (bench/gen_trace.py's mix, a different seed per trace) and one trace
of the N*K events those make together (the same generator, one seed), then times
`checker.engines.parallel.replay_corpus` (what `regcheck replay DIR -j N` runs) on both, best of
--repeat alternating rounds. The overhead per trace is (corpus time - single-trace time) / N: what
opening, reading the header, finding the compiled spec and reporting cost each trace beyond its
events. The target in issue 14 is at most 5 ms. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_parallel import run_once as timed  # noqa: E402  (seconds, events, verdict) of one corpus replay
from gen_trace import generate  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--traces", type=int, default=1000)
    p.add_argument("--events", type=int, default=100)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        corpus = []
        for i in range(a.traces):
            path = os.path.join(d, f"t{i:05d}.jsonl")
            generate(path, a.events, live=30, seed=i + 1)
            corpus.append(path)
        single = os.path.join(d, "single.jsonl")
        generate(single, a.traces * a.events, live=30, seed=1)
        best: dict[str, tuple[float, int, str]] = {}
        for _ in range(a.repeat):  # alternating, so a burst of load elsewhere hits both alike
            for name, paths in (("corpus", corpus), ("single", [single])):
                result = timed(paths, a.jobs)
                if name not in best or result[0] < best[name][0]:
                    best[name] = result
    (ct, ce, cv), (st, se, sv) = best["corpus"], best["single"]
    print(f"corpus: {a.traces} traces x {a.events} events, -j {a.jobs}: {ct:.3f} s, {ce} events ({cv})")
    print(f"single: 1 trace of {se} events, -j {a.jobs}: {st:.3f} s ({sv})")
    print(f"overhead per trace: {(ct - st) / a.traces * 1000:.2f} ms (target: at most 5 ms); "
          f"corpus {ct / a.traces * 1000:.2f} ms per trace in all")
    print(f"load average after the runs: {os.getloadavg()[0]:.2f} (other work on the machine skews the figures)")


if __name__ == "__main__":
    main()
