"""`checker.testgen.fuzz` / `regcheck fuzz`: Hypothesis stateful differential testing of drivers."""

from __future__ import annotations

import json

import pytest

from checker.testgen.conform import run_test
from checker.drivers.executor import ReferenceDriver
from checker.drivers.protocol import Result
from checker.testgen.fuzz import NOT_DETERMINISTIC, FuzzOptions, from_spec, fuzz
from checker.engines.replay import replay_trace
from tests.helpers import run_cli

pytestmark = pytest.mark.usefixtures("real_pinning")  # conftest.py: skips where pinning is not permitted


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["acl", "cupva", "cuda", "hip"])
def test_the_reference_driver_survives_fuzzing(spec):
    # (seed 3 failed cuda and hip before stop 43: an mmap placed where the next allocation went,
    # a null pointer's huge range answered 712, memory unmapped while registered then reused,
    # a device allocation covering a mapping; see `_Runner._taints` and `Relocator.displaced`)
    result = fuzz(spec, ReferenceDriver, FuzzOptions(max_examples=60, steps=30, seed=3))
    assert result.failure is None, result.failure and result.failure.trace_text()
    assert result.calls > 500  # it really called the driver


def test_from_spec_is_a_state_machine_hypothesis_can_run():
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

    machine = from_spec("cupva", ReferenceDriver)
    assert issubclass(machine, RuleBasedStateMachine)
    assert {"call_cupva__mem__Register", "call_vm_state", "call_cudaMalloc"} <= set(dir(machine))
    run_state_machine_as_test(machine, settings=settings(max_examples=5, stateful_step_count=10, deadline=None,
                                                         database=None, suppress_health_check=list(HealthCheck)))


def test_a_failure_is_shrunk_saved_replayable_and_pasteable():
    driver = "tests.mutants.acl:ZeroSizeRegistered"
    result = fuzz("acl", driver, FuzzOptions(max_examples=50, steps=30, seed=0))
    failure = result.failure
    assert failure is not None and failure.rule == "ACL-REG-SIZE-ZERO"
    assert len(failure.events) <= min(2, failure.found_calls)  # shrunk, to at most two calls
    calls = [ev.call for ev in failure.events]
    assert calls[-1] == "aclrtHostRegisterV2" and failure.events[-1].args["size"] == 0
    # the saved trace: replay shows the finding at the failing line
    namespace: dict = {}
    exec(failure.pytest_function(driver), namespace)
    (test_fn,) = [f for n, f in namespace.items() if n.startswith("test_fuzz_")]
    with pytest.raises(AssertionError, match="ACL-REG-SIZE-ZERO"):
        test_fn()
    namespace = {}
    exec(failure.pytest_function("checker.drivers.executor:ReferenceDriver"), namespace)
    [f for n, f in namespace.items() if n.startswith("test_fuzz_")][0]()  # the reference passes it
    assert not run_test(failure.test, driver).passed and run_test(failure.test, ReferenceDriver).passed


class MallocHostAnswersNotRegistered(ReferenceDriver):
    """Every aclrtMallocHost fails with 507911: found at once, whatever the sequence."""

    def call(self, name, args):
        if name == "aclrtMallocHost":
            return Result(507911)
        return super().call(name, args)


def test_a_failure_after_an_mmap_is_saved_where_the_model_placed_the_mapping():
    # The executor relocates an mmap's recorded address onto the driver's mapping, as an
    # allocation's; the saved trace records that address (the model's), not the driver's, so the
    # registration in it lies in the mapping and the saved test fails the driver as the run did.
    driver = "tests.mutants.cuda:CudaMappingNotRegistrable"
    failure = fuzz("cuda", driver, FuzzOptions(max_examples=100, steps=30, seed=1)).failure
    assert failure is not None and failure.rule == "CUDA-REG-EFFECT"
    mapped, registered = failure.events[0], failure.events[-1]
    assert mapped.call == "mmap" and registered.call == "cudaHostRegister"
    assert registered.args["ptr"] == mapped.out["addr"]
    assert not run_test(failure.test, driver).passed and run_test(failure.test, ReferenceDriver).passed


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["hypothesis", "none"])
def test_other_shrink_modes(mode):
    # Hypothesis' own shrinker re-runs the driver thousands of times on deep failures (minutes): it is
    # an option, tested here on a failure that needs one call.
    result = fuzz("acl", MallocHostAnswersNotRegistered, FuzzOptions(max_examples=20, steps=10, seed=0, shrink=mode))
    assert result.failure is not None and result.failure.rule.startswith("ACL-MALLOCHOST-")
    assert [ev.call for ev in result.failure.events][-1] == "aclrtMallocHost"
    if mode == "hypothesis":
        assert len(result.failure.events) == 1


@pytest.mark.slow
def test_the_fuzzer_finds_what_the_suite_cannot_reach():
    """Four live registrations are needed: deeper than any generated prefix."""
    result = fuzz("acl", "tests.mutants.acl:RegistrationTableOfThree",
                  FuzzOptions(max_examples=100, steps=40, seed=0))
    assert result.failure is not None
    registrations = [ev for ev in result.failure.events if ev.call == "aclrtHostRegisterV2" and ev.ret == 0]
    assert len(registrations) >= 4


def test_cli_fuzz(tmp_path):
    path = tmp_path / "failure.jsonl"
    code, out, _ = run_cli("fuzz", "acl", "--driver", "tests.mutants.acl:ZeroSizeRegistered", "--max-examples", "50",
                           "--seed", "0", "-o", str(path))
    assert code == 1 and "FAILURE [ACL-REG-SIZE-ZERO]" in out and "def test_fuzz_acl_ACL_REG_SIZE_ZERO():" in out
    report = replay_trace(str(path))
    assert report.verdict == "violates" and report.findings[-1].rule == "ACL-REG-SIZE-ZERO"
    assert f"`regcheck replay {path}` shows the finding" in out  # (a result the spec does not allow)
    code, out, _ = run_cli("fuzz", "cupva", "--max-examples", "10", "--seed", "3", "--env", "driver_version=2005",
                           "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["failure"] is None and doc["calls"] > 0
    assert run_cli("fuzz", "cupva", "--env", "driver=1")[0] == 2
    assert run_cli("fuzz", "cupva", "--break-rate", "2")[0] == 2


class StartFails(ReferenceDriver):
    def start(self, spec, env):
        raise OSError("no device")


def test_a_driver_that_cannot_start_is_reported():
    result = fuzz("acl", StartFails, FuzzOptions(max_examples=5))
    assert result.failure is not None and result.failure.rule == "EXEC-DRIVER-ERROR"
    assert "OSError: no device" in result.failure.message and result.failure.events == ()


def test_a_factory_that_raises_is_reported():
    """Found by testing: a factory's exception was a traceback (exit 3)."""
    from tests.drivers.sloppy import no_driver
    result = fuzz("acl", no_driver, FuzzOptions(max_examples=5))
    assert result.failure is not None and result.failure.rule == "EXEC-DRIVER-ERROR"
    assert "the driver factory raised RuntimeError: no device" in result.failure.message


def test_a_seed_gives_the_same_run_whether_the_spec_was_parsed_or_read_from_the_cache(tmp_path):
    """Hypothesis draws constants from the source of this project's loaded modules; the parser is
    loaded only on a cache miss, so without care the first run and the next would differ."""
    import os
    import re
    import subprocess
    import sys

    env = dict(os.environ, REGCHECK_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, "-m", "checker", "fuzz", "cupva", "--max-examples", "30", "--seed", "1"]

    def run() -> str:
        out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path).stdout
        return re.sub(r"\d+\.\d+ s", "<time>", out)

    first = run()  # parses the spec, and caches it
    assert list((tmp_path / "cache").glob("spec-ast-*.pickle"))
    assert "driver calls" in first and run() == first


class LocksBehindItsArena(ReferenceDriver):
    """Locks the first page of its first host buffer itself, at a later call that changes nothing of
    that buffer: its arena never hears of it, so the event-by-event reading (its lock reports are
    the reference driver's own) misses it, and only the whole reading at the run's end sees it."""

    def __init__(self):
        super().__init__()
        self.first: int | None = None

    def call(self, name, args):
        from checker.drivers.pinning import PAGE_SIZE, libc_calls

        result = super().call(name, args)
        if name == "malloc" and self.first is None and result.out.get("ptr"):
            self.first = result.out["ptr"]
        elif self.first is not None and name not in ("malloc", "free"):
            libc_calls().mlock(self.first, PAGE_SIZE)  # (once the buffer is freed this locks nothing)
        return result


def test_a_lock_taken_behind_the_arena_is_found_at_the_end_of_a_run():
    result = fuzz("acl", LocksBehindItsArena, FuzzOptions(max_examples=30, steps=8, seed=0))
    assert result.failure is not None and result.failure.rule == "EXEC-LOCK-EXTRA", result.failure
    events = result.failure.events
    assert events and "locked that the spec does not predict" in result.failure.message
    # the saved trace, re-run on a fresh driver, fails the same way (the end-of-run check included)
    assert run_test(result.failure.test, LocksBehindItsArena).status == "fail"


class WrongOnlyAtFirst(ReferenceDriver):
    """Answers the first `left` aclrtMallocHost calls, over all its instances, with a wrong code:
    not deterministic, as a race would be; the same calls on a fresh driver then pass."""

    left = 0

    def call(self, name, args):
        if name == "aclrtMallocHost" and WrongOnlyAtFirst.left > 0:
            WrongOnlyAtFirst.left -= 1
            return Result(507911)
        return super().call(name, args)


@pytest.mark.parametrize("wrong", [1, 2])
def test_a_failure_that_does_not_happen_again_is_reported_as_it_ran(monkeypatch, wrong):
    """Found by testing: Hypothesis' FlakyFailure (its replay passed: wrong=1) was a traceback,
    exit 3; and where only regcheck's re-run passed (wrong=2) the failure had no trace."""
    monkeypatch.setattr(WrongOnlyAtFirst, "left", wrong)
    result = fuzz("acl", WrongOnlyAtFirst, FuzzOptions(max_examples=20, steps=10, seed=0))
    failure = result.failure
    assert failure is not None and failure.rule.startswith("ACL-MALLOCHOST-") and not failure.repeats
    assert "the driver is not deterministic" in failure.message
    assert failure.events and failure.events[-1].call == "aclrtMallocHost" and failure.events[-1].ret == 507911
    assert len(failure.test.events) == len(failure.test.expectations) == len(failure.events)


def test_cli_fuzz_reports_a_driver_that_is_not_deterministic(monkeypatch, tmp_path):
    driver = f"{__name__}:WrongOnlyAtFirst"
    monkeypatch.setattr(WrongOnlyAtFirst, "left", 1)
    code, out, err = run_cli("fuzz", "acl", "--driver", driver, "--max-examples", "20", "--seed", "0",
                             "-o", str(tmp_path / "f.jsonl"))
    assert code == 1 and "Traceback" not in err and "did not fail again" in out and "not shrunk" in out
    assert replay_trace(str(tmp_path / "f.jsonl")).verdict == "violates"  # the run as it failed
    monkeypatch.setattr(WrongOnlyAtFirst, "left", 1)
    code, out, _ = run_cli("fuzz", "acl", "--driver", driver, "--max-examples", "20", "--seed", "0",
                           "-o", str(tmp_path / "g.jsonl"), "--format", "json")
    doc = json.loads(out)["failure"]
    assert code == 1 and doc["repeats"] is False and "the driver is not deterministic" in doc["message"]


class OutOfMemoryEveryOtherTime(ReferenceDriver):
    """Conforms (an environmental failure is allowed at any time), but every other aclrtMallocHost,
    over all its instances, fails with one: the same calls lead to other states run to run, so
    Hypothesis' draws differ and it raises FlakyStrategyDefinition though no example failed."""

    calls = 0

    def call(self, name, args):
        if name == "aclrtMallocHost":
            OutOfMemoryEveryOtherTime.calls += 1
            if OutOfMemoryEveryOtherTime.calls % 2:
                return Result(207001)
        return super().call(name, args)


def test_cli_fuzz_reports_a_driver_whose_passing_runs_differ(monkeypatch):
    """Found by testing: Hypothesis' Flaky with no failing example was re-raised: exit 3, an internal error."""
    driver = f"{__name__}:OutOfMemoryEveryOtherTime"
    monkeypatch.setattr(OutOfMemoryEveryOtherTime, "calls", 0)
    result = fuzz("acl", OutOfMemoryEveryOtherTime, FuzzOptions(max_examples=50, steps=10, seed=0))
    assert result.failure is None and result.nondeterministic.startswith(NOT_DETERMINISTIC)
    assert "Inconsistent data generation" in result.nondeterministic
    monkeypatch.setattr(OutOfMemoryEveryOtherTime, "calls", 0)
    code, out, err = run_cli("fuzz", "acl", "--driver", driver, "--max-examples", "50", "--steps", "10")
    assert (code, err) == (1, "") and out.startswith(f"DRIVER NOT DETERMINISTIC: {NOT_DETERMINISTIC}"), out
    monkeypatch.setattr(OutOfMemoryEveryOtherTime, "calls", 0)
    code, out, _ = run_cli("fuzz", "acl", "--driver", driver, "--max-examples", "50", "--steps", "10",
                           "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["failure"] is None and doc["nondeterministic"].startswith(NOT_DETERMINISTIC)
    monkeypatch.setattr(OutOfMemoryEveryOtherTime, "calls", 0)
    code, out, _ = run_cli("conform", "acl", "--driver", driver, "--fuzz", "50", "--fuzz-steps", "10", "-q")
    assert code == 1 and f"fuzz: DRIVER NOT DETERMINISTIC: {NOT_DETERMINISTIC}" in out, out


def test_cli_fuzz_names_the_command_that_shows_a_page_lock_finding(tmp_path):
    """Found by testing: for a page lock the driver left, fuzz said "`regcheck replay F` shows the
    finding"; replay runs no driver and finds the trace conforming. Only execute shows it."""
    driver, path = "tests.mutants.acl:UnregisterKeepsLock", str(tmp_path / "f.jsonl")
    code, out, _ = run_cli("fuzz", "acl", "--driver", driver, "--max-examples", "100", "--seed", "0", "-o", path)
    assert code == 1 and "FAILURE [EXEC-LOCK-EXTRA]" in out
    assert f"`regcheck execute --driver {driver} {path}` shows the finding" in out
    assert f"`regcheck replay {path}` shows" not in out
    assert replay_trace(path).verdict == "conforms"
    code, out, _ = run_cli("execute", "--driver", driver, path)
    assert code == 1 and "pinning[EXEC-LOCK-EXTRA]" in out
    code, out, _ = run_cli("fuzz", "acl", "--driver", driver, "--max-examples", "100", "--seed", "0", "-o", path,
                           "--format", "json")
    assert code == 1 and json.loads(out)["failure"]["replay_shows"] is False
