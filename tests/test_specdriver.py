"""The spec driver and the spec mutants: a driver built from the acl spec conforms to the acl suite, and
one built from a mutant that forgets a `fails` clause does not."""

from __future__ import annotations

import functools

import pytest

from checker.drivers.protocol import Driver
from checker.language.load import load_spec
from checker.testgen.conform import run_suite
from checker.testgen.generate import generate_suite
from checker.testgen.model import GenerateOptions
from checker.testgen.specdriver import (EQUIVALENT, KILLED, SpecDriver, candidate_mutations, first_difference,
                                        score_mutant, SpecMutant, spec_mutants)
from checker.language.printer import print_spec
from checker.language.load import check_source
from checker.language.source import SourceFile

CONFIG = {"product": "AtlasA2", "os_kernel": "6.6"}


@functools.lru_cache(maxsize=1)
def acl_suite():
    return generate_suite("acl", GenerateOptions(bmc_depth=0, configs=(CONFIG,)), spec=load_spec("acl"))


def acl_mutant(description_end: str) -> SpecMutant:
    """The one candidate mutation of acl whose description ends so, printed and checked."""
    candidates = candidate_mutations(load_spec("acl").ast)
    description, tree = next((d, t) for d, t in candidates if d.endswith(description_end))
    text = print_spec(tree)
    return SpecMutant(description, text, check_source(SourceFile.of("<mutant>", text)))


def drop_fails(rule: str) -> SpecMutant:
    return acl_mutant(f"drop fails {rule}")


def test_the_spec_driver_of_the_unmutated_spec_passes_the_suite():
    tests = acl_suite().tests
    assert len(tests) >= 5
    checked = load_spec("acl")
    report = run_suite(tests, lambda: SpecDriver(checked), check_locks=False)
    assert report.count("pass") == len(tests), [r.explain() for r in report.results if not r.passed][:3]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["acl", "cupva", "cuda", "hip"])
def test_the_spec_driver_of_each_bundled_spec_passes_its_whole_suite(name):
    """The mutation score counts a failing test as a kill: a test the spec's own driver fails would
    kill every mutant. The driver must be able to keep each promise the tests record (cudaHostGetFlags
    reporting a registration's flags with Mapped added, say)."""
    from tests.mutants import bundled_suite
    checked = load_spec(name)
    tests = bundled_suite(name).tests
    report = run_suite(tests, lambda: SpecDriver(checked, contrast=checked), check_locks=False)
    assert report.count("pass") == len(tests), [r.explain() for r in report.results if not r.passed][:3]


def test_the_spec_driver_is_a_driver_that_hands_out_disjoint_memory():
    driver = SpecDriver(load_spec("acl"))
    assert isinstance(driver, Driver)
    driver.start("acl", CONFIG)
    a = driver.call("aclrtMallocHost", {"size": 5000}).out["hostPtr"]
    b = driver.call("malloc", {"size": 1}).out["ptr"]
    assert driver.owns(a, 5000) and driver.owns(b, 1) and not driver.owns(a + 5000, 1)
    assert driver.call("aclrtMallocHost", {"size": 0}).ret == 100000  # the first code the spec allows
    assert driver.call("aclrtFreeHost", {"hostPtr": a}).ret == 0 and not driver.owns(a, 1)
    assert driver.expected_locked_pages() == frozenset()
    driver.close()


def test_the_spec_driver_accepts_the_spec_as_text():
    text = print_spec(load_spec("acl").ast)
    report = run_suite(acl_suite().tests[:5], lambda: SpecDriver(text), check_locks=False)
    assert report.ok


def test_a_mutant_that_drops_a_fails_clause_fails_a_test():
    mutant = drop_fails("ACL-REG-NULL")
    report = run_suite(acl_suite().tests, lambda: SpecDriver(mutant.spec), check_locks=False)
    assert report.count("fail") >= 1
    assert score_mutant(mutant, load_spec("acl"), acl_suite().tests).verdict == KILLED


def test_the_spec_is_equivalent_to_itself_and_not_to_a_mutant():
    checked, tests = load_spec("acl"), acl_suite().tests
    again = check_source(SourceFile.of("<again>", print_spec(checked.ast)))
    assert first_difference(checked, again, tests) is None
    assert first_difference(checked, drop_fails("ACL-REG-NULL").spec, tests) is not None


def test_spec_mutants_keep_only_specs_that_check():
    mutants, rejected = spec_mutants(load_spec("cupva"), limit=5)
    assert len(mutants) + rejected == 5 and mutants
    assert all(m.spec.name == "cupva" and m.text == print_spec(m.spec.ast) for m in mutants)


def test_every_operator_contributes_and_every_candidate_differs_from_the_spec():
    checked = load_spec("acl")
    original = print_spec(checked.ast)
    candidates = list(candidate_mutations(checked.ast))
    kinds = {d.split(": ")[-1].split(" ")[0] for d, _ in candidates}
    assert {"drop", "negate", "delete", "codes"} <= kinds
    assert any("comparison" in d for d, _ in candidates)
    assert all(print_spec(tree) != original for _, tree in candidates)


def test_a_mutant_no_test_can_tell_apart_is_equivalent():
    # free's effect: the acl suite never frees malloc'd memory in this configuration
    checked, tests = load_spec("acl"), acl_suite().tests
    if any(ev.call == "free" for t in tests for ev in t.events):
        pytest.skip("the suite frees memory now: this mutant is no longer equivalent for it")
    mutant = acl_mutant("ENV-FREE-EFFECT: delete statement 2 (delete)")
    assert score_mutant(mutant, checked, tests).verdict == EQUIVALENT


def test_the_new_operators_wrong_key_weakened_condition_and_dropped_promise():
    candidates = [d for d, _ in candidate_mutations(load_spec("acl").ast)]
    assert any("ACL-REG-EFFECT: statement on regs[...] applied to the key + 0x1000" in d for d in candidates)
    assert any("reduced to its left operand" in d for d in candidates)
    assert any(d.endswith("drop ensures ACL-GETDEV-STABLE") for d in candidates)


def test_a_registration_filed_under_the_wrong_key_is_killed():
    mutant = acl_mutant("ACL-REG-EFFECT: statement on regs[...] applied to the key + 0x1000")
    assert score_mutant(mutant, load_spec("acl"), acl_suite().tests).verdict == KILLED


def test_a_mutant_driver_shows_its_difference_where_it_can():
    """Given the original as contrast, the mutant's driver answers with an outcome the original
    forbids where there is one (here: a getdev check that forgets its pHost != 0 guard answers a
    null pointer with a code the original does not allow), where the plain one need not."""
    from checker.engines.runs import semantics_for
    mutant = acl_mutant("ACL-GETDEV-UNMAPPED: and 2 reduced to its right operand")
    plain, telling = SpecDriver(mutant.spec), SpecDriver(mutant.spec, contrast=load_spec("acl"))
    for d in (plain, telling):
        d.start("acl", CONFIG)
    args = {"pHost": 0, "flag": 0}
    sem = semantics_for(load_spec("acl"), CONFIG)
    allowed = sem.allowed(sem.initial_state(), "aclrtHostGetDevicePointer", args)
    assert allowed.allows_status(plain.call("aclrtHostGetDevicePointer", args).ret, sem.success)
    assert not allowed.allows_status(telling.call("aclrtHostGetDevicePointer", args).ret, sem.success)
    assert telling.call("aclrtFreeHost", {"hostPtr": 0}).ret == 100000  # no difference there: as the spec


def test_a_mutant_that_only_narrows_what_is_allowed_refines_the_spec():
    """A documented code replaced by one the spec allows as an environmental failure anyway: every
    driver that behaves so conforms, so no suite can kill it; it is reported as refining, not as a survivor."""
    from checker.testgen.specdriver import REFINES
    mutant = acl_mutant("ACL-REG-NULL: codes -> ACL_ERROR_RT_FEATURE_NOT_SUPPORT")
    score = score_mutant(mutant, load_spec("acl"), acl_suite().tests)
    assert score.verdict == REFINES and "none it forbids" in score.detail
