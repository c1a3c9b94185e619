"""Run conformance tests against a driver (`regcheck conform`): pass, fail or inconclusive, as data.

Each test runs on a fresh driver through `checker.drivers.execute.Execution`, the executor's own machinery:
the test's allocations are relocated into memory the driver hands out, the driver's result for each
event is judged against the spec in the state that follows the driver's results, and after every
event the pages the kernel reports locked are compared with the pages the spec's `pinned`
declarations predict. On top of that, each API call's result is compared with the test's
expectation (the `expect` of its event).

A test

  fails          when a result is not an outcome the spec allows, when it differs from the
                 expectation in a way the spec does not allow, when the page locks differ from the
                 model's, or when the driver raises;
  is inconclusive when a result differs from the expectation but the spec allows it as an
                 environmental failure (a `may fail` clause other than the one the test checks): the
                 branch the test is about was not exercised; also when the executor could not make a
                 call (an address that no longer relocates after such a failure);
  passes         otherwise.

Page locks are read from this process's /proc/self/smaps, restricted to the memory the driver's
allocation calls returned (`ObservedDriver`): every driver that runs in this process is checked the
same way, whether or not it reports its own locks, except a driver that reports them with the
reference driver's own methods, which a test reads as `regcheck execute` does (`ObservedDriver`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..drivers.execute import DriverRaised, Execution
from ..drivers.executor import load_factory
from ..drivers.observed import ObservedDriver
from ..drivers.protocol import Driver
from ..engines.replay import closest_name
from ..engines.runs import semantics_for
from ..language.analysis import memory_shape
from ..language.diagnostics import RegcheckError, error
from ..language.load import load_spec
from ..language.source import Span
from ..trace.events import TraceEvent
from .model import ConformanceTest, Expectation

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
DRIVER_ENV = "REGCHECK_DRIVER"  # MODULE:FACTORY for tests emitted by `regcheck generate --pytest`


@dataclass(frozen=True, slots=True)
class Problem:
    """Why one event of a test did not pass."""

    event: int  # 1-based position of the event in the test (its trace line is event + 1)
    call: str
    kind: str  # "expectation", "executor", "pinning", "inconclusive", "driver error"
    rule: str
    expected: str
    actual: str
    message: str

    def to_json(self) -> dict:
        return {"event": self.event, "call": self.call, "kind": self.kind, "rule": self.rule,
                "expected": self.expected, "actual": self.actual, "message": self.message}


@dataclass(frozen=True, slots=True)
class TestResult:
    name: str
    rule: str
    status: str  # pass | fail | inconclusive
    problems: tuple[Problem, ...] = ()
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def explain(self) -> str:
        if self.passed:
            return f"{self.name}: pass"
        lines = [f"{self.name} [{self.rule}]: {self.status}"]
        for p in self.problems:
            lines.append(f"  event {p.event} {p.call}: {p.kind} [{p.rule}]: expected {p.expected}; got {p.actual}")
            if p.message:
                lines.append(f"    {p.message}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"test": self.name, "rule": self.rule, "status": self.status, "seconds": round(self.seconds, 4),
                "problems": [p.to_json() for p in self.problems]}


@dataclass(frozen=True, slots=True)
class ConformReport:
    spec: str
    driver: str
    results: tuple[TestResult, ...]
    seconds: float
    stopped_early: bool = False

    @property
    def tests(self) -> int:
        return len(self.results)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def ok(self) -> bool:
        return all(r.passed for r in self.results)

    def to_json(self) -> dict:
        failures = [r.to_json() for r in self.results if not r.passed]
        out = {"tests": self.tests, "passed": self.count(PASS), "failed": self.count(FAIL),
               "inconclusive": self.count(INCONCLUSIVE), "failures": failures, "spec": self.spec,
               "driver": self.driver, "seconds": round(self.seconds, 3)}
        if self.stopped_early:
            out["stopped_early"] = True
        return out


# ---------------------------------------------------------------- drivers


def factory_name(factory: Callable) -> str:
    return f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', repr(factory))}"


# ---------------------------------------------------------------- one test


def check_expectations(test: ConformanceTest, spec, path: str | None = None) -> None:
    """T0733 at the event (in `path`, else the test's name) for an `expect` naming a rule the spec
    does not have or a status the spec's status type does not hold: a slip in a written test, which
    would otherwise fail every driver."""
    for ev, exp in zip(test.events, test.expectations):
        problem = _expectation_problem(exp, spec) if exp is not None else None
        if problem is not None:
            raise RegcheckError([error("T0733", f"{ev.call}: expect: {problem}", Span(path or test.name, ev.line, 1))])


def _expectation_problem(exp: Expectation, spec) -> str | None:
    if exp.rule not in spec.rules:
        close = closest_name(exp.rule, spec.rules)
        return f"rule {exp.rule!r} is not a rule of spec {spec.name}" + (f" (did you mean {close}?)" if close else "")
    status = spec.status_type
    names = spec.enums.get(status.name, ()) if status.kind == "enum" else ()
    for code in (exp.codes or ()) + exp.excluded:
        if status.kind == "enum" and code not in names:
            close = closest_name(str(code), names)
            return (f"{code!r} is not a status of spec {spec.name}" +
                    (f" (did you mean {close}?)" if close else f" (its {status} names: {', '.join(names)})"))
        if status.kind == "int" and type(code) is not int:
            return f"status {code!r} is not an integer status (spec {spec.name} records integers)"
    return None


def run_test(test: ConformanceTest | str, driver_factory: Callable[[], Driver] | str | None = None, *,
             check_locks: bool = True) -> TestResult:
    """Run one test (a `ConformanceTest`, or the text of its trace file) on a fresh driver."""
    if isinstance(test, str):
        from .suite import parse_test

        test = parse_test(test)
    factory = driver_factory if callable(driver_factory) else load_factory(driver_factory)
    t0 = time.perf_counter()
    spec = load_spec(test.spec)
    check_expectations(test, spec)
    sem = semantics_for(spec, dict(test.env))
    problems: list[Problem] = []
    inconclusive = False
    try:
        driver = factory()
    except RegcheckError:
        raise
    except Exception as exc:  # noqa: BLE001 - a factory that cannot make a driver fails the test
        problems.append(Problem(0, "factory", "driver error", test.rule, "the factory to return a driver",
                                type(exc).__name__, str(exc)))
        return TestResult(test.name, test.rule, FAIL, tuple(problems), time.perf_counter() - t0)
    try:
        try:
            driver.start(test.spec, dict(test.env))
        except RegcheckError:
            raise  # the driver does not implement this spec or configuration: an input error
        except Exception as exc:  # noqa: BLE001 - a driver that cannot start fails the test
            problems.append(Problem(0, "start", "driver error", test.rule, "start() to succeed", type(exc).__name__,
                                    str(exc)))
            return TestResult(test.name, test.rule, FAIL, tuple(problems), time.perf_counter() - t0)
        observed = ObservedDriver(driver, memory_shape(sem.spec, computed_sizes=True).allocators, check_locks,
                                  event_by_event=True)  # (mmap: its pages are the driver's too)
        run = Execution(sem, observed, test.name)
        for i, (ev, exp) in enumerate(zip(test.events, test.expectations), 1):
            ev = TraceEvent(i + 1, ev.call, ev.args, ev.ret, ev.out, ev.tid, ev.t0, ev.t1)
            _, args, _, _ = run.replayer.normalise(ev)
            before = sem.allowed(run.driver_state, ev.call, args) if exp is not None else None
            observed.last = None
            try:
                findings = run.step(ev, last=i == len(test.events))
            except DriverRaised as exc:
                problems.append(Problem(i, ev.call, "driver error", exp.rule if exp else "", _expected(exp, sem),
                                        "an exception", str(exc)))
                break
            except RegcheckError as exc:
                problems.append(Problem(i, ev.call, "driver error", exp.rule if exp else "", _expected(exp, sem),
                                        "an error", "; ".join(d.message for d in exc.diagnostics)))
                break
            result = observed.last
            for f in findings:
                if f.kind in ("executor", "pinning"):
                    actual = repr(result.ret) if result is not None and f.kind == "executor" else "see message"
                    problems.append(Problem(i, ev.call, f.kind, f.rule, _expected(exp, sem), actual, f.message))
            if exp is None:
                continue
            if result is None:
                inconclusive = True
                problems.append(Problem(i, ev.call, INCONCLUSIVE, exp.rule, _expected(exp, sem), "no call",
                                        "the executor could not make this call (an address no longer relocates, "
                                        "after an earlier environmental failure)"))
                continue
            if exp.accepts(result.ret, sem.success):
                continue
            allowed_here = before.allows_status(result.ret, sem.success)
            if allowed_here and any(p.event < i for p in problems):
                continue  # the driver left the test's path earlier (reported there); here it is consistent
            env_rules = [e.rule for e in before.env_errors if e.allows(result.ret)] if not before.open else []
            if allowed_here and env_rules:
                if exp.rule in env_rules:
                    continue  # the test's own `may fail` branch
                inconclusive = True
                problems.append(Problem(i, ev.call, INCONCLUSIVE, exp.rule, _expected(exp, sem), repr(result.ret),
                                        f"allowed only as an environmental failure ({', '.join(env_rules)}); the "
                                        "branch under test was not exercised"))
            elif not any(p.event == i and p.kind == "executor" for p in problems):
                problems.append(Problem(i, ev.call, "expectation", exp.rule, _expected(exp, sem), repr(result.ret),
                                        "the result differs from the test's expectation"))
            else:  # name the expectation in the executor's finding
                k = next(j for j, p in enumerate(problems) if p.event == i and p.kind == "executor")
                p = problems[k]
                problems[k] = Problem(p.event, p.call, "expectation", exp.rule, p.expected, p.actual, p.message)
    finally:
        try:
            driver.close()
        except Exception as exc:  # noqa: BLE001 - a driver that cannot close fails its test
            problems.append(Problem(0, "close", "driver error", "", "close() to succeed", type(exc).__name__, str(exc)))
    failed = any(p.kind != INCONCLUSIVE for p in problems)
    status = FAIL if failed else INCONCLUSIVE if inconclusive else PASS
    return TestResult(test.name, test.rule, status, tuple(problems), time.perf_counter() - t0)


def _expected(exp: Expectation | None, sem) -> str:
    return exp.describe(sem.success) if exp is not None else "an outcome the spec allows"


def run_suite(tests: Sequence[ConformanceTest], driver_factory: Callable[[], Driver] | str | None = None, *,
              spec: str = "", check_locks: bool = True, stop_on_failure: bool = False,
              progress: Callable[[TestResult], None] | None = None) -> ConformReport:
    """Run every test on a fresh driver each; `stop_on_failure` ends at the first failing test."""
    factory = driver_factory if callable(driver_factory) else load_factory(driver_factory)
    t0 = time.perf_counter()
    results = []
    stopped = False
    for t in tests:
        r = run_test(t, factory, check_locks=check_locks)
        results.append(r)
        if progress is not None:
            progress(r)
        if stop_on_failure and r.status == FAIL:
            stopped = len(results) < len(tests)
            break
    return ConformReport(spec or (tests[0].spec if tests else ""), factory_name(factory), tuple(results),
                         time.perf_counter() - t0, stopped)


def driver_from_env(default: str | None = None) -> str | None:
    """The driver factory a generated pytest module uses: $REGCHECK_DRIVER, else `default`."""
    return os.environ.get(DRIVER_ENV) or default


def assert_conforms(test: ConformanceTest | str, driver: Callable[[], Driver] | str | None = None) -> None:
    """Run one test; raise AssertionError with the explanation unless it passes (pasteable tests)."""
    result = run_test(test, driver if driver is not None else driver_from_env())
    if not result.passed:
        raise AssertionError(result.explain())
