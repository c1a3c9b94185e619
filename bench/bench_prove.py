"""Benchmark `regcheck prove` on both bundled specs, consistency checks included.

Target (issue 4): both specs, consistency included, under 10 s on the 2-core CI machine. Prints
every solver obligation's time (slowest first), the time per phase and per spec, the total with
its ratio to the target, and, as a baseline measured in the same run, the induction obligations
alone (no guards, no consistency). Figures only: nothing here asserts a time.

    python bench/bench_prove.py [--repeat N] [--all]
"""

from __future__ import annotations

import argparse
import statistics
import time

from checker.language.load import load_spec
from checker.engines.prover import prove
from checker.engines.proof import ProveOptions
from checker.symbolic.solver import Verdict

TARGET_SECONDS = 10.0
SPECS = ("acl", "cupva")


def once(options: ProveOptions):
    t0 = time.perf_counter()
    reports = []
    for name in SPECS:
        load_spec.cache_clear()
        reports.append(prove(load_spec(name), name, options))
    return time.perf_counter() - t0, reports


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--all", action="store_true", help="print every solver obligation, not only the 15 slowest")
    args = ap.parse_args()
    full, base = [], []
    reports = []
    for _ in range(args.repeat):
        seconds, reports = once(ProveOptions())
        full.append(seconds)
        base.append(once(ProveOptions(consistency=False, guards=False))[0])
    print("per-obligation solver times (last run, slowest first):")
    rows = [(o.seconds, r.name, o) for r in reports for o in r.obligations if o.how == "solver"]
    rows.sort(key=lambda x: -x[0])
    for seconds, name, o in rows if args.all else rows[:15]:
        where = "init" if o.call is None else f"{o.call} {o.branch}"
        print(f"  {seconds * 1000:8.1f} ms  {o.verdict.value:<8} {name:<6} {o.property:<30} {where}")
    if not args.all:
        print(f"  ... {len(rows) - 15} more (--all)")
    print("per spec (last run):")
    for r in reports:
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in r.phase_seconds.items())
        verdicts = sum(o.verdict is Verdict.PROVED for o in r.obligations)
        print(f"  {r.name:<6} {r.seconds:6.2f} s  ({phases}); {verdicts}/{len(r.obligations)} PROVED, "
              f"consistent: {r.consistent}")
    best, med = min(full), statistics.median(full)
    print(f"both specs, consistency included: best {best:.2f} s, median {med:.2f} s over {args.repeat} runs; "
          f"target {TARGET_SECONDS:.0f} s: ratio {med / TARGET_SECONDS:.2f}")
    bmed = statistics.median(base)
    print(f"baseline (induction only, same run): median {bmed:.2f} s; full / baseline = {med / bmed:.1f}x")


if __name__ == "__main__":
    main()
