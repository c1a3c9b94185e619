"""Buggy drivers for mutation testing of the conformance suite and the fuzzer.

Each mutant is a thin wrapper over `checker.drivers.executor.ReferenceDriver` that injects one realistic bug;
its docstring names the bug and the rule that should catch it. `MUTANTS` lists them all as
(spec, "module:Class") in a stable order; `tests/test_mutants.py` asserts each is killed and
`bench/bench_mutants.py` prints the mutation score.
"""

from . import acl, cuda, cupva, hip

MUTANTS: tuple[tuple[str, str], ...] = tuple(
    [("acl", f"tests.mutants.acl:{name}") for name in acl.__all__]
    + [("cupva", f"tests.mutants.cupva:{name}") for name in cupva.__all__]
    + [("cuda", f"tests.mutants.cuda:{name}") for name in cuda.__all__]
    + [("hip", f"tests.mutants.hip:{name}") for name in hip.__all__]
)


_SUITES: dict = {}


def bundled_suite(spec: str):
    """The generated conformance suite of a bundled spec, computed once per test session."""
    if spec not in _SUITES:
        from checker.testgen.generate import generate_suite

        _SUITES[spec] = generate_suite(spec)
    return _SUITES[spec]


# The bounded fuzzing run a mutant the suite misses gets (fixed seed: the result is reproducible).
FUZZ_BUDGET = dict(max_examples=100, steps=40, seed=0)


def kill(spec: str, driver: str):
    """(killed by "suite" | "fuzz" | None, detail, seconds): the suite first (stopping at the first
    failing test), then, if it survives, a bounded fuzzing run."""
    import time

    from checker.testgen.conform import run_suite
    from checker.testgen.fuzz import FuzzOptions, fuzz

    t0 = time.perf_counter()
    report = run_suite(bundled_suite(spec).tests, driver, stop_on_failure=True)
    failed = [r for r in report.results if r.status == "fail"]
    if failed:
        return "suite", f"{failed[0].name} [{failed[0].problems[0].rule}]", time.perf_counter() - t0
    result = fuzz(spec, driver, FuzzOptions(**FUZZ_BUDGET, shrink="none"))
    if result.failure is not None:
        return "fuzz", f"{len(result.failure.events)} calls [{result.failure.rule}]", time.perf_counter() - t0
    return None, "survived", time.perf_counter() - t0
