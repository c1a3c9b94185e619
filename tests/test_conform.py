"""`checker.testgen.conform` / `regcheck conform`: a suite against a driver; pass, fail, inconclusive; JUnit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker.testgen.conform import FAIL, INCONCLUSIVE, PASS, assert_conforms, run_suite, run_test
from checker.emit.pytest_module import render_pytest
from checker.drivers.executor import ReferenceDriver
from checker.drivers.protocol import Result
from checker.testgen.model import Suite
from checker.drivers.pinning import vmlck_bytes
from checker.testgen.suite import format_test, write_suite
from checker.language.diagnostics import RegcheckError
from tests.helpers import run_cli
from tests.mutants import bundled_suite

pytestmark = pytest.mark.usefixtures("real_pinning")  # conftest.py: skips where pinning is not permitted

ROOT = Path(__file__).resolve().parent.parent


def named(spec: str, name: str):
    return bundled_suite(spec).test(name)


def first_covering(spec: str, fragment: str):
    return next(t for t in bundled_suite(spec).tests if any(fragment in c for c in t.covers))


# ---------------------------------------------------------------- the reference driver


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["acl", "cupva"])
def test_the_reference_driver_passes_the_whole_suite(spec):
    baseline = vmlck_bytes()
    report = run_suite(bundled_suite(spec).tests, ReferenceDriver)
    assert report.tests == len(bundled_suite(spec).tests)
    assert report.count(PASS) == report.tests, [r.explain() for r in report.results if not r.passed][:3]
    assert vmlck_bytes() == baseline  # every driver closed, every lock released


@pytest.mark.slow
@pytest.mark.parametrize("driver", ["HandsOutMallocMemory", "Misaligned"])
def test_the_acl_suite_fails_an_allocator_breaking_its_fresh_memory_promise(driver):
    """aclrtMallocHost handing out a live malloc block (or a pointer 32 bytes into its own block)
    breaks ACL-MALLOCHOST-FRESH; the suite has a test where a malloc block is live when it is called.
    The third-party driver's other failures (it checks little) are there with Plain too."""
    from tests.drivers import thirdparty

    def fresh_failures(factory):
        report = run_suite(bundled_suite("acl").tests, factory, check_locks=False)
        return [r.name for r in report.results for p in r.problems if p.rule == "ACL-MALLOCHOST-FRESH"]

    assert fresh_failures(thirdparty.Plain) == []
    assert fresh_failures(getattr(thirdparty, driver))


# ---------------------------------------------------------------- verdicts


class EnvironmentFailingDriver(ReferenceDriver):
    """Every registration fails as the machine would when it cannot lock memory (207001)."""

    def call(self, name, args):
        if name == "aclrtHostRegisterV2":
            return Result(207001)
        return super().call(name, args)


class RaisingDriver(ReferenceDriver):
    def call(self, name, args):
        if name == "aclrtHostUnregister":
            raise ValueError("boom")
        return super().call(name, args)


class PinningViaComposition:
    """A driver that is not a ReferenceDriver subclass and reports no locks of its own: it wraps one and
    unlocks what PINNED locked. The page-lock check still sees it (this process's smaps)."""

    def __init__(self):
        self.inner = ReferenceDriver()

    def start(self, spec, env):
        self.inner.start(spec, env)

    def call(self, name, args):
        result = self.inner.call(name, args)
        if name == "aclrtHostRegisterV2" and result.ret == 0 and args["flag"] & 0x10000000:
            self.inner.arena.unlock(args["ptr"], args["size"])
        return result

    def close(self):
        self.inner.close()


def test_a_wrong_code_fails_with_expected_actual_and_rule():
    result = run_test(first_covering("acl", "ACL-REG-OVERLAP: fails"), "tests.drivers.sloppy:WrongOverlapCode")
    assert result.status == FAIL
    (p,) = [p for p in result.problems if p.kind != INCONCLUSIVE]
    assert (p.kind, p.rule, p.actual) == ("expectation", "ACL-REG-OVERLAP", "507911")
    assert "507910" in p.expected
    assert "ACL-REG-OVERLAP" in result.explain()


def test_an_allowed_environmental_failure_is_inconclusive_not_a_failure():
    result = run_test(first_covering("acl", "ACL-REG-OVERLAP: fails"), EnvironmentFailingDriver)
    assert result.status == INCONCLUSIVE
    assert all(p.kind == INCONCLUSIVE for p in result.problems)
    assert "ACL-REG-ENV" in result.problems[0].message


def test_a_driver_that_raises_fails_its_test():
    result = run_test(first_covering("acl", "ACL-UNREG-EFFECT: success"), RaisingDriver)
    assert result.status == FAIL and result.problems[-1].kind == "driver error"
    assert "ValueError: boom" in result.problems[-1].message


def test_page_locks_are_checked_for_drivers_without_a_lock_view():
    test = first_covering("acl", "ACL-PIN-REGISTERED: locked")
    assert run_test(test, ReferenceDriver).passed
    result = run_test(test, PinningViaComposition)
    assert result.status == FAIL and {p.kind for p in result.problems} == {"pinning"}
    assert result.problems[0].rule == "ACL-PIN-REGISTERED"
    assert run_test(test, PinningViaComposition, check_locks=False).passed  # the switch works


class UnpinsThroughItsArena(ReferenceDriver):
    """Unlocks what PINNED locked, through its own arena: its lock reports (the reference driver's
    own methods) say so, so the runner reads its locks event by event, as `regcheck execute` does."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "aclrtHostRegisterV2" and result.ret == 0 and args["flag"] & 0x10000000:
            self.arena.unlock(args["ptr"], args["size"])
        return result


class ReportsItsOwnView(ReferenceDriver):
    def kernel_locked_pages(self):  # overridden: not the reference driver's own report any more
        return super().kernel_locked_pages()


@pytest.fixture
def smaps_readings(monkeypatch) -> list:
    from checker.drivers import pinning
    readings: list = []
    real = pinning._smaps_vmas
    monkeypatch.setattr(pinning, "_smaps_vmas", lambda: readings.append(1) or real())
    return readings


def pinned_registration_then_more():
    test = first_covering("acl", "ACL-PIN-REGISTERED: locked")
    assert len(test.events) >= 3 and test.events[1].call == "aclrtHostRegisterV2", test.name
    return test


def test_a_driver_reporting_its_locks_as_the_reference_does_is_read_event_by_event(smaps_readings):
    test = pinned_registration_then_more()
    assert run_test(test, ReferenceDriver).passed
    assert len(smaps_readings) == 1  # the whole reading at the last event; the others probed the changed spans
    smaps_readings.clear()
    result = run_test(test, UnpinsThroughItsArena)
    assert result.status == FAIL and len(smaps_readings) == 1
    first = result.problems[0]
    assert (first.kind, first.rule, first.event) == ("pinning", "ACL-PIN-REGISTERED", 2)  # where it happened


def test_a_driver_with_a_lock_report_of_its_own_is_read_whole_after_every_event(smaps_readings):
    test = pinned_registration_then_more()
    assert run_test(test, ReportsItsOwnView).passed
    assert len(smaps_readings) >= 2
    smaps_readings.clear()
    result = run_test(test, PinningViaComposition)  # no lock report at all: the same
    assert result.status == FAIL and result.problems[0].event == 2 and len(smaps_readings) >= 2


def test_a_driver_that_does_not_unpin_fails():
    test = first_covering("acl", "ACL-PIN-REGISTERED: released")
    result = run_test(test, "tests.drivers.sloppy:UnregisterKeepsLock")
    assert result.status == FAIL and any(p.rule == "EXEC-LOCK-EXTRA" for p in result.problems)


def test_a_test_runs_from_its_trace_text_and_assert_conforms_explains():
    test = first_covering("acl", "ACL-REG-OVERLAP: fails")
    assert run_test(format_test(test)).passed
    with pytest.raises(AssertionError, match="ACL-REG-OVERLAP"):
        assert_conforms(format_test(test), "tests.drivers.sloppy:WrongOverlapCode")


def test_stop_on_failure_ends_the_run():
    tests = bundled_suite("acl").tests
    report = run_suite(tests, "tests.drivers.sloppy:WrongOverlapCode", stop_on_failure=True)
    assert report.stopped_early and report.count(FAIL) == 1 and report.tests < len(tests)


# ---------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory):
    """A few acl tests (one per rule kind) written as a suite directory."""
    full = bundled_suite("acl")
    keep = {}
    for t in full.tests:
        keep.setdefault(t.rule, t)
    suite = Suite(full.spec, tuple(keep.values()), full.coverage, full.configs, full.stats)
    path = tmp_path_factory.mktemp("suite")
    write_suite(path, suite)
    return path, suite


def test_cli_json_report(small_suite):
    path, suite = small_suite
    code, out, _ = run_cli("conform", "acl", "--suite", str(path), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and (doc["tests"], doc["passed"], doc["failed"]) == (len(suite.tests), len(suite.tests), 0)
    assert doc["failures"] == []
    code, out, _ = run_cli("conform", "acl", "--driver", "tests.drivers.sloppy:WrongOverlapCode", "--suite", str(path),
                           "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["failed"] >= 1 and doc["passed"] + doc["failed"] + doc["inconclusive"] == doc["tests"]
    failure = doc["failures"][0]
    assert failure["rule"] == "ACL-REG-OVERLAP" and failure["status"] == "fail"
    problem = failure["problems"][0]
    assert problem["actual"] == "507911" and "507910" in problem["expected"] and problem["rule"] == "ACL-REG-OVERLAP"


def test_cli_junit_and_text(small_suite):
    path, suite = small_suite
    code, out, _ = run_cli("conform", "acl", "--driver", "tests.drivers.sloppy:WrongOverlapCode", "--suite", str(path),
                           "--format", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    cases = root.findall("./testsuite/testcase")
    assert code == 1 and len(cases) == len(suite.tests)
    failed = [c for c in cases if c.find("failure") is not None]
    assert failed and failed[0].get("classname") == "regcheck.acl.ACL-REG-OVERLAP"
    assert "expected 507910" in failed[0].find("failure").get("message")
    code, out, _ = run_cli("conform", "acl", "--suite", str(path))
    assert code == 0 and out.count("\npass ") + out.startswith("pass ") == len(suite.tests)
    assert f"{len(suite.tests)} tests: {len(suite.tests)} passed, 0 failed, 0 inconclusive" in out


def test_cli_junit_is_well_formed_when_a_driver_error_holds_control_characters(small_suite):
    """Found by testing: a driver exception message with `\\x01` or `\\x00` went into the report raw,
    and a JUnit reader rejected the whole file."""
    path, _ = small_suite
    code, out, _ = run_cli("conform", "acl", "--driver", "tests.drivers.sloppy:RegisterRaisesControlCharacters",
                           "--suite", str(path), "--format", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    failures = [f for f in root.iter("failure") if "RuntimeError" in f.text]
    assert code == 1 and failures
    assert "boom\\x01\\x1b[31m\\x00\\ufffe end" in failures[0].text


def test_cli_junit_escapes_what_the_text_output_escapes(small_suite):
    """\\r, DEL, the 8-bit ESC [ and U+202E are XML characters, so a driver's message held them raw in
    the report, which goes to the terminal (or a dashboard) like the text output, where they are
    escapes: \\r overwrote the line and U+202E reordered it."""
    path, _ = small_suite
    code, out, _ = run_cli("conform", "acl", "--driver", "tests.drivers.sloppy:RegisterRaisesTerminalControls",
                           "--suite", str(path), "--format", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    failures = [f for f in root.iter("failure") if "RuntimeError" in f.text]
    assert code == 1 and failures
    assert "boom\\x0d\\x7f\\x9b2J\\u202e end" in failures[0].text
    assert not any(c in out for c in "\r\x7f\x9b\u202e")


@pytest.mark.parametrize("colour", ["0", "1"])
def test_cli_text_escapes_control_characters_of_a_driver_error(small_suite, colour, monkeypatch):
    """Found by testing: a driver exception message went to the terminal raw, so `\\x1b[2J` cleared
    it and `\\x1b]0;...\\x07` retitled it. Only regcheck's own colour is written as ANSI codes."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", colour)
    path, _ = small_suite
    code, out, _ = run_cli("conform", "acl", "--driver", "tests.drivers.sloppy:RegisterRaisesControlCharacters",
                           "--suite", str(path))
    assert code == 1 and "boom\\x01\\x1b[31m\\x00\ufffe end" in out, out
    assert "\x00" not in out and "\x01" not in out and "\x1b[31m\x00" not in out
    assert ("\x1b[" in out) == (colour == "1")  # regcheck's own colour


def test_cli_conform_generates_when_no_suite_is_given():
    code, out, _ = run_cli("conform", "cupva", "--driver", "tests.mutants.cupva:ForceDisableAfterUse",
                           "--stop-on-failure", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["failed"] == 1 and doc["failures"][0]["rule"] == "PVA-DISABLE-AFTER-USE"


def test_cli_conform_input_errors(small_suite, tmp_path):
    path, _ = small_suite
    assert run_cli("conform", "acl", "--driver", "no_such_module:f", "--suite", str(path))[0] == 2
    assert run_cli("conform", "acl", "--suite", str(tmp_path))[0] == 2
    code, _, err = run_cli("conform", "cupva", "--suite", str(path))
    assert code == 2 and "T0736" in err


@pytest.mark.slow
def test_emitted_pytest_module_runs_against_a_driver(small_suite, tmp_path):
    _, suite = small_suite
    module = tmp_path / "test_acl_conformance.py"
    module.write_text(render_pytest(suite))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)], cwd=ROOT,
                        env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout[-2000:]
    assert f"{len(suite.tests)} passed" in ok.stdout
    env["REGCHECK_DRIVER"] = "tests.drivers.sloppy:WrongOverlapCode"
    bad = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)], cwd=ROOT,
                         env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "FAILED" in bad.stdout and "test_ACL_REG_OVERLAP_1" in bad.stdout


class StartFails(ReferenceDriver):
    def start(self, spec, env):
        raise OSError("no device")


def test_a_driver_that_cannot_start_fails_every_test_without_a_traceback():
    result = run_test(bundled_suite("cupva").tests[0], StartFails)
    assert result.status == FAIL and result.problems[0].kind == "driver error" and "no device" in result.problems[0].message


def test_cli_conform_fuzz_phase_after_the_suite():
    # The registration table of three passes the suite (its prefixes are too short to fill it) and
    # the fuzz phase finds it; with the reference driver the phase finds nothing.
    code, out, _ = run_cli("conform", "acl", "--driver", "tests.mutants.acl:RegistrationTableOfThree",
                           "--fuzz", "100", "--fuzz-steps", "40", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["failed"] == 0 and doc["fuzz"]["failure"] is not None
    assert doc["fuzz"]["failure"]["trace"].startswith('{"regcheck":1,"spec":"acl"')
    assert doc["fuzz"]["failure"]["trace_file"] is None
    code, out, _ = run_cli("conform", "cupva", "--fuzz", "10")
    assert code == 0 and out.splitlines()[-1].startswith("fuzz: no failure in 10 sequences")
    code, _, err = run_cli("conform", "cupva", "--fuzz-output", "x.jsonl")
    assert code == 2 and "--fuzz-output needs --fuzz" in err


def junit_cases(out: str) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(out.split("\n", 1)[1])
    return root, root.findall("./testsuite/testcase")


TABLE3 = "tests.mutants.acl:RegistrationTableOfThree"  # passes the suite; the fuzz phase fails it


def test_cli_conform_junit_fuzz_phase_is_one_more_testcase(small_suite, tmp_path):
    path, suite = small_suite
    code, out, _ = run_cli("conform", "acl", "--suite", str(path), "--fuzz", "10", "--format", "junit")
    root, cases = junit_cases(out)
    assert code == 0 and len(cases) == len(suite.tests) + 1 and root.get("tests") == str(len(suite.tests) + 1)
    fuzz_case = cases[-1]
    assert (fuzz_case.get("classname"), fuzz_case.get("name")) == ("regcheck.acl.fuzz", "fuzz 10 sequences seed 0")
    assert list(fuzz_case) == [] and root.get("failures") == "0"
    # The registration table of three passes every test of the suite; the fuzz phase fails it.
    trace = tmp_path / "table3.jsonl"
    code, out, _ = run_cli("conform", "acl", "--suite", str(path), "--driver", TABLE3,
                           "--fuzz", "100", "--fuzz-steps", "40", "--fuzz-seed", "0", "--fuzz-output", str(trace),
                           "--format", "junit")
    root, cases = junit_cases(out)
    assert code == 1 and root.get("failures") == "1" and root.find("./testsuite").get("failures") == "1"
    assert [c.get("name") for c in cases if c.find("failure") is not None] == ["fuzz 100 sequences seed 0"]
    failure = cases[-1].find("failure")
    assert failure.get("type") == "fuzz" and failure.get("message").startswith("[ACL-GETDEV-EFFECT] ")
    lines = trace.read_text().splitlines()
    calls = len(lines) - 1  # the header, then one line per call
    assert f"after {calls} calls, seed 0" in failure.get("message")
    assert f"calls: {calls} in the shrunk run" in failure.text and f"trace: {trace}" in failure.text
    assert json.loads(lines[-1])["call"] == "aclrtHostGetDevicePointer"
    code, out, _ = run_cli("conform", "acl", "--suite", str(path), "--driver", TABLE3,
                           "--fuzz", "100", "--fuzz-steps", "40", "--format", "junit")
    _, cases = junit_cases(out)
    # Not written to a file: the failure carries the run itself, the same calls.
    assert code == 1 and [ln.strip() for ln in cases[-1].find("failure").text.splitlines()[-calls - 1:]] == lines


def test_a_factory_that_raises_fails_every_test_without_a_traceback():
    """Found by testing: a factory's exception was a traceback (exit 3)."""
    from tests.drivers.sloppy import no_driver
    result = run_test(bundled_suite("cupva").tests[0], no_driver)
    assert result.status == FAIL and result.problems[0].kind == "driver error"
    assert result.problems[0].call == "factory" and "no device" in result.problems[0].message


def test_a_driver_returning_no_result_fails_its_test():
    """Found by testing: a call returning a bare status was an AttributeError (exit 3)."""
    from tests.drivers.sloppy import RegisterReturnsText
    result = run_test(first_covering("acl", "ACL-UNREG-EFFECT: success"), RegisterReturnsText)
    assert result.status == FAIL and result.problems[-1].kind == "driver error"
    assert "TypeError: call() returned 0, not a checker.drivers.protocol.Result" in result.problems[-1].message


@pytest.mark.parametrize("field, bad, message", [
    ("codes", ["InvalidStat"], "expect: 'InvalidStat' is not a status of spec cupva (did you mean InvalidState?)"),
    ("rule", "PVA-DISABLE-AFTER-US", "expect: rule 'PVA-DISABLE-AFTER-US' is not a rule of spec cupva (did you mean "
                                     "PVA-DISABLE-AFTER-USE?)"),
])
def test_a_slip_in_a_written_expectation_is_an_input_error_not_a_failed_driver(tmp_path, field, bad, message):
    """Found by testing: a misspelt status in `expect` failed the reference driver (exit 1)."""
    suite = tmp_path / "suite"
    assert run_cli("generate", "cupva", "-o", str(suite))[0] == 0
    test = next(p for p in sorted(suite.glob("*.jsonl"))
                if any('"codes"' in line for line in p.read_text().splitlines()[1:]))
    lines = test.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"codes"' in line)
    event = json.loads(lines[at])
    event["expect"][field] = bad
    lines[at] = json.dumps(event)
    test.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli("conform", "cupva", "--suite", str(suite))
    assert code == 2 and f"{test}:{at + 1}:1: error[T0733]: {event['call']}: {message}" in err, err
    with pytest.raises(RegcheckError, match="T0733|not a"):
        run_test(test.read_text(), ReferenceDriver)


def test_a_suite_naming_two_tests_alike_is_e0611(tmp_path):
    """Found by testing: two tests of one name passed silently, and JUnit then repeated the name."""
    suite = tmp_path / "suite"
    assert run_cli("generate", "cupva", "-o", str(suite))[0] == 0
    index = json.loads((suite / "suite.json").read_text())
    index["tests"][1]["name"] = index["tests"][0]["name"]
    (suite / "suite.json").write_text(json.dumps(index))
    code, _, err = run_cli("conform", "cupva", "--suite", str(suite))
    assert code == 2 and "error[E0611]" in err and "two tests of the suite index are named" in err


def test_a_huge_depth_stops_where_the_states_run_out():
    """Found by testing: --depth 99999999999999999999 looped over empty levels (a hang)."""
    code, out, _ = run_cli("conform", "cupva", "--depth", "99999999999999999999")
    assert code == 0 and "failed" in out


def acl_test_text(name: str, *events: dict) -> str:
    header = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"},
              "meta": {"test": name, "rule": "ACL-MALLOCHOST-EFFECT"}}
    return "\n".join(json.dumps(x) for x in (header, *events)) + "\n"


def test_a_third_party_drivers_locks_are_never_read_from_an_earlier_tests_reading():
    """A reading of smaps taken in one test (one page locked) must not stand for a later test's
    (one page locked too, elsewhere): the driver's own mappings change where no arena sees them."""
    from tests.drivers.thirdparty import KeepsItsMappings
    malloc_host = {"call": "aclrtMallocHost", "args": {"size": 4096}, "ret": 0, "out": {"hostPtr": 0x200000},
                   "expect": {"rule": "ACL-MALLOCHOST-EFFECT", "outcome": "success"}}
    one = acl_test_text("one", malloc_host)
    two = acl_test_text("two", malloc_host, {"call": "malloc", "args": {"size": 4096}, "out": {"ptr": 0x400000}})
    for text in (one, two, one, two):
        result = run_test(text, KeepsItsMappings)
        assert result.passed, result.explain()
