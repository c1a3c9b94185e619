"""Benchmark `regcheck simulate`: steps per CPU-second of the fast and the pure walk, per bundled spec.

Per spec and walk: steps per CPU-second (time.process_time) of a run that compiled nothing (the
same simulation once before it compiles every configuration's semantics and fast path, which a
process keeps), the best of `--repeat` such runs (a run is half a CPU-second: one slow spell of a
shared machine moved a single run by 25%), and of that first, cold run; then the ratio fast / pure and, for the fast walk,
the figure with the fast path's generated Python steps instead of the C step machine
(`fastpath.MACHINE_STEPS = False`; the same walk, step for step). Baseline measured in the same
run: bare `Semantics.allowed` queries per CPU-second on the same kind of inputs (what a pure step
pays at least once). The target of issue 14, `simulate acl` at 70,000 steps per CPU-second, is
printed with the fast walk's figure. Figures only.

    python bench/bench_simulate.py [--runs N] [--steps K] [--seed S] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import time

from checker.engines.runs import semantics_for
from checker.engines.simulate import ADDRESSES, SIZES, SimulationOptions, SimulationResult, simulate
from checker.fast import fastpath
from checker.language.load import load_spec
from checker.model.state import NATIVE

SPECS = ("acl", "cupva", "cuda", "hip")
TARGET = ("acl", 70_000)  # issue 14: steps per CPU-second of the fast walk


def allowed_per_cpu_second(name: str, n: int = 20000) -> float:
    spec = load_spec(name)
    sem = semantics_for(spec, {})
    st = sem.initial_state()
    rng = random.Random(0)
    calls = [c for c in spec.calls if all(t.kind == "int" for _, t in spec.calls[c].params)]
    t0 = time.process_time()
    for _ in range(n):
        call = rng.choice(calls)
        args = {p: rng.choice(ADDRESSES if t.name == "addr" else SIZES) for p, t in spec.calls[call].params}
        sem.allowed(st, call, args)
    return n / (time.process_time() - t0)


def cold_and_warm(name: str, options: SimulationOptions, repeat: int = 1) -> tuple[SimulationResult, SimulationResult]:
    """The cold run, and the fastest of `repeat` warm runs (the same walk each time)."""
    spec = load_spec(name)
    cold = simulate(spec, name, options)
    warm = max((simulate(spec, name, options) for _ in range(repeat)), key=lambda r: r.steps_per_cpu_second)
    return cold, warm


def on_python_steps(name: str, options: SimulationOptions, repeat: int = 1) -> SimulationResult:
    saved = fastpath.MACHINE_STEPS
    fastpath.MACHINE_STEPS = False
    try:
        return cold_and_warm(name, options, repeat)[1]
    finally:
        fastpath.MACHINE_STEPS = saved


def describe(label: str, cold: SimulationResult, warm: SimulationResult) -> str:
    return (f"  {label:<5} {warm.steps:7d} steps ({warm.successes} successes, {warm.fast_successes} on the fast path) "
            f"in {warm.cpu_seconds:.2f} CPU-s: {warm.steps_per_cpu_second:9,.0f} steps/CPU-s "
            f"(cold run {cold.steps_per_cpu_second:9,.0f}); violation: {warm.violation is not None}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="warm runs per figure; the best is printed")
    args = ap.parse_args()
    print(f"C step machine built: {NATIVE is not None}")
    for name in SPECS:
        cold_fast, fast = cold_and_warm(name, SimulationOptions(args.runs, args.steps, seed=args.seed), args.repeat)
        cold_pure, pure = cold_and_warm(name, SimulationOptions(args.runs, args.steps, seed=args.seed, fast=False),
                                        args.repeat)
        python = on_python_steps(name, SimulationOptions(args.runs, args.steps, seed=args.seed), args.repeat)
        base = max(allowed_per_cpu_second(name) for _ in range(args.repeat))
        print(f"{name}:")
        print(describe("fast", cold_fast, fast))
        print(describe("pure", cold_pure, pure))
        print(f"  fast / pure {fast.steps_per_cpu_second / pure.steps_per_cpu_second:.2f}; "
              f"fast walk on the Python steps {python.steps_per_cpu_second:9,.0f} steps/CPU-s; "
              f"baseline Semantics.allowed {base:9,.0f} /CPU-s")
        if name == TARGET[0]:
            print(f"  target: {TARGET[1]:,} steps/CPU-s for `simulate {name}`: "
                  f"ratio {fast.steps_per_cpu_second / TARGET[1]:.2f}")


if __name__ == "__main__":
    main()
