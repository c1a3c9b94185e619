"""Mutation testing: the generated suite plus a bounded fuzzing run must kill the buggy drivers.

Each mutant in tests/mutants/ injects one realistic bug into the reference driver. A mutant is killed
when a suite test fails against it (its first failing test, the run stops there), or, when the whole
suite passes, when a fuzzing run with a fixed seed and budget (tests.mutants.FUZZ_BUDGET) finds a
failure. bench/bench_mutants.py prints the same table with timings.
"""

from __future__ import annotations

import pytest

from tests.mutants import MUTANTS, kill

pytestmark = pytest.mark.usefixtures("real_pinning")  # conftest.py: skips where pinning is not permitted

# Mutants whose bug lies deeper than any generated prefix: only the fuzzer can reach them.
FUZZ_ONLY = {"tests.mutants.acl:RegistrationTableOfThree"}

_results: dict[str, str | None] = {}


def test_there_are_at_least_twelve_mutants_each_documented():
    assert len(MUTANTS) >= 12
    import importlib
    for _, path in MUTANTS:
        module, _, name = path.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert cls.__doc__ and "Caught by" in cls.__doc__, path  # names the bug and what catches it


@pytest.mark.slow
@pytest.mark.parametrize("spec, driver", MUTANTS, ids=[d.split(":")[1] for _, d in MUTANTS])
def test_each_mutant_is_killed(spec, driver):
    by, detail, _ = kill(spec, driver)
    _results[driver] = by
    assert by is not None, f"{driver} survived the suite and {detail}"
    if driver in FUZZ_ONLY:
        assert by == "fuzz", detail  # the suite cannot reach it: if it did, the suite grew deeper
    else:
        assert by == "suite", detail


@pytest.mark.slow
def test_mutation_score_is_at_least_90_percent():
    missing = [d for _, d in MUTANTS if d not in _results]
    for spec, driver in MUTANTS:
        if driver in missing:
            _results[driver] = kill(spec, driver)[0]
    killed = sum(by is not None for by in _results.values())
    assert killed / len(MUTANTS) >= 0.9, _results
