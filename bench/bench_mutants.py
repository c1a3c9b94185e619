"""Benchmark the conformance suite and the fuzzer as bug finders: the mutation score and the time.

For each bundled spec: the time to generate the suite, the time to run it against the reference
driver (every test; the baseline), and per mutant of tests/mutants/ whether the suite kills it (and
with which test: the run stops at the first failing test) or, if it survives the suite, whether a
bounded fuzzing run with a fixed seed does. Then the same suites against mutants derived from the
specs themselves (checker.testgen.specdriver: one change to the spec each, answered by a SpecDriver
that shows the change wherever it can): how many were derived, how many are equivalent for the suite
(same outcome sets on every test), how many refine it (allow fewer outcomes, none the spec forbids:
a driver behaving so conforms, each listed with the reason), killed and survived (each survivor
listed), the kill rate over the rest, and the time taken.
Prints figures and ratios only.

    python bench/bench_mutants.py            # from the repository root
    python bench/bench_mutants.py --quick    # at most QUICK_LIMIT spec mutants per spec
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.mutants

from checker.testgen.conform import run_suite  # noqa: E402
from checker.drivers.executor import ReferenceDriver  # noqa: E402
from checker.language.load import load_spec  # noqa: E402
from checker.testgen.specdriver import (EQUIVALENT, KILLED, REFINES, SURVIVED, SpecDriver, score_mutant,  # noqa: E402
                                        spec_mutants)
from tests.mutants import FUZZ_BUDGET, MUTANTS, bundled_suite, kill  # noqa: E402

QUICK_LIMIT = 40  # spec mutants per spec under --quick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"at most {QUICK_LIMIT} spec mutants per spec")
    quick = parser.parse_args().quick
    hand_written_mutants()
    print()
    for spec in ("acl", "cupva", "cuda", "hip"):
        spec_mutation_score(spec, QUICK_LIMIT if quick else None)


def spec_mutation_score(spec: str, limit: int | None) -> None:
    t0 = time.perf_counter()
    checked = load_spec(spec)
    suite = bundled_suite(spec)
    mutants, rejected = spec_mutants(checked, limit)
    derived = time.perf_counter() - t0
    # A kill counts only on a test the spec's own spec driver passes: a test it fails would "kill" every mutant.
    own = run_suite(suite.tests, lambda: SpecDriver(checked, contrast=checked), check_locks=False)
    tests = [t for t, r in zip(suite.tests, own.results) if r.status == "pass"]
    if len(tests) < len(suite.tests):
        print(f"{spec:<6} WARNING: the unchanged spec's driver fails {len(suite.tests) - len(tests)} of "
              f"{len(suite.tests)} tests (left out of the scoring): "
              + ", ".join(r.name for r in own.results if r.status != "pass")[:300])
    scores = [score_mutant(m, checked, tests) for m in mutants]
    seconds = time.perf_counter() - t0
    counts = {v: sum(s.verdict == v for s in scores) for v in (KILLED, EQUIVALENT, REFINES, SURVIVED)}
    scored = counts[KILLED] + counts[SURVIVED]
    rate = f"{counts[KILLED] / scored:.1%}" if scored else "n/a"
    print(f"{spec:<6} spec mutants: {len(mutants)} derived{' (--quick)' if limit else ''} "
          f"({rejected} more did not check), {counts[EQUIVALENT]} equivalent for the suite, "
          f"{counts[REFINES]} refining it (they allow nothing the spec forbids), "
          f"{counts[KILLED]} killed, {counts[SURVIVED]} survived: kill rate {counts[KILLED]}/{scored} = {rate}; "
          f"{seconds:.1f} s ({derived:.1f} s to derive and check them)")
    for s in scores:
        if s.verdict == SURVIVED:
            print(f"  survived: {s.description} ({s.detail})")
    for s in scores:
        if s.verdict == REFINES:
            print(f"  refines (not a bug a suite can show): {s.description}: {s.detail}")


def hand_written_mutants() -> None:
    reference: dict[str, float] = {}
    for spec in dict.fromkeys(spec for spec, _ in MUTANTS):  # every spec with hand-written mutants
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
