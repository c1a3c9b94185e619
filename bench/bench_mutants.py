"""Benchmark the conformance suite and the fuzzer as bug finders: the mutation score and the time.

For each bundled spec: the time to generate the suite, the time to run it against the reference
driver (every test; the baseline), and per mutant of tests/mutants/ whether the suite kills it (and
with which test: the run stops at the first failing test) or, if it survives the suite, whether a
bounded fuzzing run with a fixed seed does. Prints figures and ratios only.

    python bench/bench_mutants.py            # from the repository root
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.mutants

from checker.testgen.conform import run_suite  # noqa: E402
from checker.drivers.executor import ReferenceDriver  # noqa: E402
from tests.mutants import FUZZ_BUDGET, MUTANTS, bundled_suite, kill  # noqa: E402


def main() -> None:
    reference: dict[str, float] = {}
    for spec in ("acl", "cupva"):
        t0 = time.perf_counter()
        suite = bundled_suite(spec)
        generated = time.perf_counter() - t0
        report = run_suite(suite.tests, ReferenceDriver)
        reference[spec] = report.seconds
        print(f"{spec:<6} suite: {len(suite.tests)} tests in {len(suite.configs)} configurations, generated in "
              f"{generated:.2f} s, run against the reference driver in {report.seconds:.2f} s "
              f"({report.seconds / max(len(suite.tests), 1) * 1000:.1f} ms/test): {report.count('pass')} passed, "
              f"{report.count('fail')} failed, {report.count('inconclusive')} inconclusive")
    print()
    print(f"{'mutant':<40} {'spec':<6} {'killed by':<10} {'seconds':>8}  {'vs. full suite':>14}  detail")
    killed = 0
    total = 0.0
    for spec, driver in MUTANTS:
        by, detail, seconds = kill(spec, driver)
        killed += by is not None
        total += seconds
        print(f"{driver.split(':')[1]:<40} {spec:<6} {by or 'SURVIVED':<10} {seconds:8.2f}  "
              f"{seconds / reference[spec]:13.2f}x  {detail}")
    print()
    print(f"mutation score: {killed}/{len(MUTANTS)} = {killed / len(MUTANTS):.1%} "
          f"(suite first, then fuzzing: {FUZZ_BUDGET}); {total:.1f} s for all mutants")


if __name__ == "__main__":
    main()
