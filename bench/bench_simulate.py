"""Benchmark `regcheck simulate`: steps per second on both bundled specs.

Baseline measured in the same run: bare `Semantics.allowed` queries per second on the same
kind of inputs (the floor every simulation step pays at least once). Figures only.

    python bench/bench_simulate.py [--runs N] [--steps K]
"""

from __future__ import annotations

import argparse
import random
import time

from checker.language.load import load_spec
from checker.engines.runs import semantics_for
from checker.engines.simulate import ADDRESSES, SIZES, SimulationOptions, simulate


def allowed_per_second(name: str, n: int = 20000) -> float:
    spec = load_spec(name)
    sem = semantics_for(spec, {})
    st = sem.initial_state()
    rng = random.Random(0)
    calls = [c for c in spec.calls if all(t.kind == "int" for _, t in spec.calls[c].params)]
    t0 = time.perf_counter()
    for _ in range(n):
        call = rng.choice(calls)
        args = {p: rng.choice(ADDRESSES if t.name == "addr" else SIZES) for p, t in spec.calls[call].params}
        sem.allowed(st, call, args)
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    for name in ("acl", "cupva"):
        spec = load_spec(name)
        result = simulate(spec, name, SimulationOptions(args.runs, args.steps, seed=0))
        base = allowed_per_second(name)
        print(f"{name:<6} {result.steps:7d} steps ({result.successes} successes) in {result.seconds:.2f} s: "
              f"{result.steps_per_second:9,.0f} steps/s; baseline Semantics.allowed {base:9,.0f} /s; "
              f"ratio {result.steps_per_second / base:.2f}; violation: {result.violation is not None}")


if __name__ == "__main__":
    main()
