"""Differential fuzzing of a driver against a spec with Hypothesis' stateful testing (`regcheck fuzz`).

`from_spec(spec, driver_factory)` builds a `hypothesis.stateful.RuleBasedStateMachine` from the
spec's calls: an `initialize` rule draws a configuration and starts a fresh driver, and every call
and environment event of the spec is a rule (enabled once it can take an address: an allocation
exists). A rule draws its arguments from the pool the generator uses
(`checker.testgen.generate.ArgumentPool`: allocation bases and their neighbours, boundary sizes, every
flag combination), sorted by the spec's semantics in the current state into successes, documented
failures, calls that break an obligation whose outcome stays determinate (usage rules, plain
`requires`) and calls that break an `undefined` one. It mostly keeps the caller's obligations and
breaks one on purpose with probability `break_rate` (an `undefined` one a tenth as often: only a
crash can be judged there, and the rest of that sequence is not judged, since the driver may then
be in any state).

Each drawn call runs through `checker.drivers.execute.Execution`: relocation into the driver's memory, the
driver's result judged against the spec in the state that follows the driver's results, the page
locks compared with the kernel's. The oracle is the spec's allowed outcome set at each step and
nothing else. A step the spec does not allow raises `FuzzFailed` inside the example.

Shrinking: by default (`shrink="calls"`) Hypothesis finds a failing sequence and regcheck shrinks
it by delta debugging (`checker.engines.shrink.ddmin`) with the same oracle, re-running the driver on each
candidate subsequence: bounded, typically a few seconds. `shrink="hypothesis"` uses Hypothesis'
own shrinker instead (smaller arguments too, but it re-runs the driver thousands of times and can
take many minutes); `shrink="none"` reports the sequence as found. The result is a `FuzzFailure`: a
trace file of what the driver did (which `regcheck replay` and `regcheck execute` accept) and a
conformance test with the spec's expectation at each step, printable as a pytest function.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Mapping, Sequence

from ..drivers.execute import EXEC_DRIVER_ERROR, DriverRaised, Execution
from ..drivers.executor import load_factory
from ..drivers.protocol import Driver
from ..engines.replay import Finding, replay_events
from ..engines.runs import semantics_for
from ..engines.shrink import ddmin
from ..language.analysis import identifier, memory_shape
from ..language.diagnostics import RegcheckError
from ..language.load import load_spec
from ..trace.events import TraceEvent, TraceHeader
from ..trace.reader import header_written_to
from ..trace.writer import format_trace
from .configs import configurations
from .conform import ObservedDriver, factory_name
from .model import ALLOC_SIZE, ALLOC_STRIDE, PAGE, ConformanceTest, Expectation, Node, expectation_of
from .pool import ArgumentPool, json_arg, representative_status

MAX_FUZZ_ALLOCS = 4
SHRINK_MODES = ("calls", "hypothesis", "none")


@dataclass(frozen=True, slots=True)
class FuzzOptions:
    max_examples: int = 100
    steps: int = 30  # calls per example (Hypothesis' stateful_step_count)
    seed: int = 0
    env: Mapping[str, Any] | None = None  # a fixed configuration; None: drawn per example
    break_rate: float = 0.1  # how often a call breaks a caller obligation on purpose
    shrink: str = "calls"  # "calls" (delta debugging, bounded), "hypothesis", "none"


@dataclass(frozen=True, slots=True)
class FuzzFailure:
    """A failing run: what the driver did, and the same run as a conformance test."""

    spec: str
    env: Mapping[str, Any]
    rule: str
    message: str
    events: tuple[TraceEvent, ...]  # the driver's own results, allocations at their recorded addresses
    test: ConformanceTest  # the run with the spec's expectation at each step
    found_calls: int = 0  # calls in the sequence as Hypothesis found it, before shrinking
    repeats: bool = True  # False: the same calls on a fresh driver did not fail again (see NOT_REPEATED)

    def header(self) -> TraceHeader:
        return TraceHeader(spec=self.spec, env=dict(self.env),
                           meta={"generator": "regcheck fuzz", "rule": self.rule, "message": self.message})

    def trace_text(self, path: str | None = None) -> str:
        """The failing run as a trace; written to `path`, its header names a spec file given by a
        relative path relative to the trace's directory (as `Run.write` does)."""
        header = self.header() if path is None else header_written_to(self.header(), path)
        return format_trace(header, self.events).decode("utf-8")

    def replay_shows(self) -> bool:
        """Whether `regcheck replay` of the trace shows this failure: it does for a result the spec
        does not allow, not for what only running the driver shows (page locks, an exception)."""
        report = replay_events(semantics_for(load_spec(self.spec), dict(self.env)), self.events)
        return any(f.rule == self.rule and f.kind != "unspecified" for f in report.findings)

    def pytest_function(self, driver: str) -> str:
        """A test function to paste into a pytest module: it fails while the driver has the bug."""
        from .suite import format_test

        name = f"test_fuzz_{identifier(self.spec)}_{identifier(self.rule)}"
        doc = self.message.replace("\\", "\\\\").replace('"""', "'''")
        lines = [f"def {name}():", f'    """Found by `regcheck fuzz`: {doc}"""',
                 "    from checker.testgen.conform import assert_conforms", "", "    trace = ("]
        for line in format_test(self.test).splitlines():
            lines.append(f"        {line + chr(10)!r}")
        lines += ["    )", f"    assert_conforms(trace, {driver!r})", ""]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class FuzzResult:
    spec: str
    driver: str
    options: FuzzOptions
    failure: FuzzFailure | None
    seconds: float
    calls: int = 0  # calls made to the driver, all examples and shrinking included
    # Why the search stopped early without a failure, where the driver's results differed between
    # runs of the same calls (Hypothesis' Flaky: NOT_DETERMINISTIC, then what Hypothesis saw); else None.
    nondeterministic: str | None = None

    @property
    def passed(self) -> bool:
        """No failure found, and the search ran to its end."""
        return self.failure is None and self.nondeterministic is None


@dataclass(frozen=True, slots=True)
class Drawn:
    """One drawn call: arguments in recorded addresses, and for an allocation its recorded address."""

    call: str
    args: Mapping[str, Any]
    alloc_at: int | None = None


NOT_REPEATED = "did not fail again when the same calls were re-run: the driver is not deterministic"
NOT_DETERMINISTIC = ("the same calls gave other results in another run, so the search stopped (fuzzing needs a "
                     "driver whose results depend only on the calls made to it)")


class FuzzFailed(AssertionError):
    """A step whose result the spec does not allow (raised inside a Hypothesis example). `events`
    and `expectations`: the run up to that step as it happened, kept because a driver that is not
    deterministic may not fail again when the calls are re-run."""

    def __init__(self, env: Mapping, drawn: Sequence[Drawn], findings: Sequence[Finding],
                 events: Sequence[TraceEvent] = (), expectations: Sequence[Expectation | None] = ()):
        first = findings[0]
        super().__init__(f"{first.rule}: {first.message}")
        self.env = dict(env)
        self.drawn = tuple(drawn)
        self.findings = tuple(findings)
        self.events = tuple(events)
        self.expectations = tuple(expectations)


# ---------------------------------------------------------------- one run against a driver


class _Runner:
    """A fresh driver under `Execution`, fed drawn calls one at a time; keeps what happened."""

    def __init__(self, spec_name: str, spec, pool: ArgumentPool, env: Mapping, factory: Callable[[], Driver],
                 counter: list | None):
        self.spec, self.pool, self.env, self.counter = spec, pool, dict(env), counter
        self.sem = semantics_for(spec, self.env)
        self.driver = None
        try:
            self.driver = factory()
            self.driver.start(spec_name, dict(env))
        except RegcheckError:
            raise  # the driver does not implement this spec or configuration: an input error
        except Exception as exc:  # noqa: BLE001 - a driver that cannot be made or started is a finding
            what = "the driver's start()" if self.driver is not None else "the driver factory"
            raise FuzzFailed(env, [], [Finding(1, "executor", EXEC_DRIVER_ERROR, "start",
                                               f"{what} raised {type(exc).__name__}: {exc}")]) from exc
        # A driver whose lock reports are the reference driver's own is read event by event; what
        # only the whole reading sees comes at the run's end (`findings_at_the_end`).
        self.observed = ObservedDriver(self.driver, memory_shape(self.sem.spec, computed_sizes=True).allocators,
                                      event_by_event=True)
        self.run = Execution(self.sem, self.observed, "<fuzz>")
        self.events: list[TraceEvent] = []
        self.expectations: list[Expectation | None] = []
        self.drawn: list[Drawn] = []
        self.allocs: list[tuple[int, int]] = []
        self.tainted = False  # after a call that leaves the rest unjudgeable (`_taints`)
        self.failed = False  # a call's findings failed the run

    def failed_with(self, findings: Sequence[Finding]) -> FuzzFailed:
        """The failure of this run at its last call (or at its end), with the run as it happened."""
        return FuzzFailed(self.env, self.drawn, findings, self.events, self.expectations)

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()
            self.driver = None

    def findings_at_the_end(self) -> list[Finding]:
        """After the run's last call, when it failed on none: the page locks compared whole (see
        ObservedDriver), unless nothing was judged (no call, or an `undefined` obligation broken)."""
        if self.tainted or not self.events or self.observed.take_changed_spans is None:
            return []  # (a driver read whole after every event was read so after the last one too)
        return self.run.lock_check_at_the_end(self.events[-1])

    def node(self) -> Node:
        return Node(self.run.driver_state, (), tuple(self.allocs))

    def next_alloc(self) -> int:
        return ALLOC_STRIDE * (len(self.allocs) + 1)

    def call(self, d: Drawn) -> list[Finding]:
        """Make one call; the findings that fail the run (empty when it is fine or not judged)."""
        spec, sem, pool = self.spec, self.sem, self.pool
        info = spec.calls[d.call]
        is_api = info.decl.kind == "call"
        node = self.node()
        al = sem.allowed(node.state, d.call, d.args)
        exp = expectation_of(sem, al) if is_api else None
        alloc = pool.allocators.get(d.call)
        outputs = pool.outputs(sem, node, d.call, d.args) if al.success or al.open else None
        if alloc is not None and outputs is not None:
            outputs = {**outputs, alloc.output: d.alloc_at if d.alloc_at is not None else self.next_alloc()}
        if outputs is not None:
            status = sem.success
        elif is_api and exp is not None and exp.outcome == "failure":
            status = representative_status(spec, exp)
        elif is_api and al.env_errors:
            env_error = al.env_errors[0]
            status = representative_status(spec, Expectation("", "failure", env_error.codes, tuple(env_error.excluded)))
        else:
            return []  # no outcome a recording could show (an event whose promises cannot be kept)
        drawn = Drawn(d.call, dict(d.args), outputs[alloc.output] if alloc is not None and outputs else None)
        args = {n: json_arg(spec, t, d.args[n]) for n, t in info.params}
        line = len(self.events) + 2
        outs = {n: json_arg(spec, t, outputs[n]) for n, t in info.outputs} if status == sem.success else {}
        ev = TraceEvent(line, d.call, args, status if is_api else None, outs)
        self.observed.last = None
        if self.counter is not None:
            self.counter[0] += 1
        displaced = self.run.relocator.displaced
        try:
            findings = self.run.step(ev)
        except DriverRaised as exc:
            return self._failed(drawn, ev, exp, f"the driver raised: {exc}")
        except RegcheckError as exc:
            return self._failed(drawn, ev, exp, "the driver reported an error: " +
                                "; ".join(d.message for d in exc.diagnostics))
        result = self.observed.last
        if result is None:
            return []  # the executor refused the call (an address that does not relocate): nothing happened
        recorded_out = {}
        if result.ret == sem.success:
            if d.call in self.run.shape.allocators:  # (every allocator of this pool is one of them)
                # The recorded allocation, which the executor relocated onto the driver's (an mmap
                # too, which this pool does not place): the model holds it there, and so must the
                # trace, for a replay to meet the same state.
                recorded_out = dict(ev.out)
                if alloc is not None and outputs is not None:
                    self.allocs.append((outputs[alloc.output], d.args[alloc.size_param]))
            else:
                recorded_out = {n: json_arg(spec, t, result.out[n]) for n, t in info.outputs if n in result.out}
        self.events.append(TraceEvent(line, d.call, args, result.ret if is_api else None, recorded_out))
        self.expectations.append(exp)
        self.drawn.append(drawn)
        if self._taints(d.call, al, displaced):
            self.tainted = True
            return []
        return [f for f in findings if f.kind in ("executor", "pinning")]

    def _taints(self, call: str, al, displaced_before: int) -> bool:
        """Whether nothing after this call can be judged: after an `undefined` obligation any
        outcome and any driver state follow; after memory was released against an obligation
        (unmapped or freed while registered, which the specs hold the caller's bug and whose
        registration they keep), the model's entries still name addresses whose memory the driver
        has given back, and a later allocation the executor relocates there (the recording reuses
        an address, the driver hands out another) meets the driver's state elsewhere; after an
        allocation whose recorded range covered a live one's (`Relocator.displaced` grew past
        `displaced_before`), the model keeps a device's and the host's memory apart, and the one
        relocation cannot."""
        return (al.undefined or bool(al.broken) and call in self.run.shape.releases
                or self.run.relocator.displaced != displaced_before)

    def _failed(self, drawn: Drawn, ev: TraceEvent, exp, message: str) -> list[Finding]:
        self.events.append(ev)
        self.expectations.append(exp)
        self.drawn.append(drawn)
        return [Finding(ev.line, "executor", exp.rule if exp is not None else ev.call, ev.call, message)]


# ---------------------------------------------------------------- the state machine


def from_spec(spec_name: str, driver_factory: Callable[[], Driver], *, env: Mapping[str, Any] | None = None,
              break_rate: float = 0.1, counter: list | None = None, failures: list | None = None):
    """A RuleBasedStateMachine class for `spec_name` (a bundled name or a path) against a driver.

    One rule per call and environment event of the spec, plus an `initialize` rule that draws the
    configuration (or takes `env`) and starts the driver; `teardown` closes it. `counter`, when
    given, has its first element incremented per driver call; `failures`, when given, has every
    `FuzzFailed` the examples raise appended to it.
    """
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

    spec = load_spec(spec_name)
    pool = ArgumentPool(spec, computed_sizes=False)
    configs = [dict(env)] if env is not None else [dict(c) for c in configurations(spec)]
    cache: dict = {}

    class SpecMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.runner: _Runner | None = None

        @initialize(config=st.sampled_from(configs))
        def start(self, config):
            try:
                self.runner = _Runner(spec_name, spec, pool, config, driver_factory, counter)
            except FuzzFailed as failed:  # (its start failed)
                if failures is not None:
                    failures.append(failed)
                raise
            self.env_key = tuple(sorted(config.items()))

        def teardown(self):
            runner, self.runner = self.runner, None
            if runner is None:
                return
            try:
                bad = [] if runner.failed else runner.findings_at_the_end()
            finally:
                runner.close()
            if bad:
                self._fail(runner, bad)

        def _fail(self, runner: _Runner, bad: list[Finding]) -> None:
            # Kept outside Hypothesis too: when the example does not fail again on Hypothesis'
            # replay, Hypothesis raises its own Flaky error and this is all that is left of it.
            failed = runner.failed_with(bad)
            if failures is not None:
                failures.append(failed)
            raise failed

        def step(self, call: str, data) -> None:
            runner = self.runner
            if runner.tainted:
                return
            node = runner.node()
            full = pool.facts[call].is_api and data.draw(st.integers(0, 4), label="boundary arguments") == 4
            kinds = self._kinds(node, call, full)
            roll = data.draw(st.integers(0, 999), label="kind of call")
            wanted = ("success" if roll < 600 * (1 - break_rate) else "failure" if roll < 1000 * (1 - break_rate)
                      else "broken" if roll < 1000 - 100 * break_rate else "undefined")
            order = [wanted] + [k for k in ("success", "failure", "broken") if k != wanted]
            pick = next((kinds[k] for k in order if kinds[k]), None)
            if pick is None:
                return
            args = data.draw(st.sampled_from(pick), label=f"{call} arguments")
            bad = runner.call(Drawn(call, args))
            if bad:
                runner.failed = True  # (teardown then adds no check of its own to this failure)
                self._fail(runner, bad)

        def _kinds(self, node: Node, call: str, full: bool) -> dict[str, list]:
            """The candidate arguments by what the spec says they do in this state: "success",
            "failure" (documented), "broken" (an obligation broken, outcome still determinate),
            "undefined". Cached per state: examples revisit the same states."""
            key = (self.env_key, node.state.snapshot(), pool.live(node), call, full)
            hit = cache.get(key)
            if hit is not None:
                return hit
            alloc = pool.allocators.get(call)
            if pool.facts[call].is_api:
                candidates = list(pool.candidates(node, call, full))
            elif alloc is not None:  # environment allocations: sizes a machine can give
                candidates = [{alloc.size_param: s} for s in (ALLOC_SIZE, 0, PAGE)]
            else:  # other environment events: valid ones, and addresses that break their obligations
                candidates = list(pool.transitions(node, call))
                candidates += [a for a in pool.candidates(node, call, False) if a not in candidates]
            kinds: dict[str, list] = {"success": [], "failure": [], "broken": [], "undefined": []}
            sem = self.runner.sem
            for a in candidates:
                al = sem.allowed(node.state, call, a)
                kind = ("undefined" if al.undefined else "broken" if al.broken
                        else "success" if al.success and not al.unspecified else "failure")
                kinds[kind].append(a)
            if len(cache) > 20000:
                cache.clear()
            cache[key] = kinds
            return kinds

    def enabled(call: str):
        """Allocations only below the cap; calls that take an address only once something is
        allocated (before that, every address they could take is null)."""
        alloc = pool.allocators.get(call)
        takes_address = any(t.kind == "int" and t.name == "addr" for _, t in spec.calls[call].params)

        def check(self) -> bool:
            if self.runner is None:
                return True
            if alloc is not None:
                return len(self.runner.allocs) < MAX_FUZZ_ALLOCS
            return bool(self.runner.allocs) or not takes_address
        return check

    for call in spec.calls:
        def make(call=call):
            def call_rule(self, data):
                self.step(call, data)
            call_rule.__name__ = f"call_{identifier(call)}"
            return precondition(enabled(call))(rule(data=st.data())(call_rule))
        setattr(SpecMachine, f"call_{identifier(call)}", make())
    SpecMachine.__name__ = SpecMachine.__qualname__ = f"{identifier(spec.name).capitalize()}Machine"
    return SpecMachine


# ---------------------------------------------------------------- running it


def fuzz(spec_name: str, driver: Callable[[], Driver] | str | None = None,
         options: FuzzOptions = FuzzOptions()) -> FuzzResult:
    """Run the stateful differential test; a failure comes back shrunk, as data (nothing printed).

    A failure that does not happen again when its calls are re-run (a driver that is not
    deterministic) comes back as the run that failed, not shrunk, with `repeats` False."""
    from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
    from hypothesis.errors import Flaky
    from hypothesis.stateful import get_state_machine_test

    # Hypothesis also draws constants found in the source of the loaded modules of this project:
    # the spec parser is loaded only when a spec is not read from the parse cache, so it is loaded
    # here, or the same seed would give other runs depending on the cache.
    import_module("checker.language.parser")
    if options.shrink not in SHRINK_MODES:
        raise ValueError(f"shrink must be one of {SHRINK_MODES}")
    factory = driver if callable(driver) else load_factory(driver)
    counter = [0]
    failures: list[FuzzFailed] = []
    machine = from_spec(spec_name, factory, env=options.env, break_rate=options.break_rate, counter=counter,
                        failures=failures)
    phases = tuple(Phase) if options.shrink == "hypothesis" else tuple(p for p in Phase if p is not Phase.shrink)
    config = settings(max_examples=options.max_examples, stateful_step_count=options.steps, deadline=None,
                      database=None, verbosity=Verbosity.quiet, report_multiple_bugs=False,
                      suppress_health_check=list(HealthCheck), print_blob=False, phases=phases,
                      derandomize=False)  # the run is the seed's, whatever profile the caller has loaded
    test = seed(options.seed)(get_state_machine_test(machine, settings=config))
    t0 = time.perf_counter()
    failure = nondeterministic = None
    try:
        test()
    except FuzzFailed as exc:
        failure = _shrunk(spec_name, factory, exc, options, counter)
    except Flaky as exc:
        # Hypothesis re-ran a failing example and it did not fail again (FlakyFailure), or the
        # driver's other results led the calls elsewhere (FlakyStrategyDefinition), which needs no
        # failing example: a driver that conforms but answers differently run to run.
        if failures:
            failure = _as_it_happened(spec_name, failures[0], repeats=False)
        else:
            nondeterministic = f"{NOT_DETERMINISTIC} (Hypothesis: {_first_line(exc)})"
    return FuzzResult(spec_name, factory_name(factory), options, failure, time.perf_counter() - t0, counter[0],
                      nondeterministic)


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _shrunk(spec_name: str, factory, exc: FuzzFailed, options: FuzzOptions, counter) -> FuzzFailure:
    """The failure re-run on a fresh driver, shrunk as `options.shrink` says; as it happened where
    the driver failed before any call, or where the calls do not fail again."""
    if not exc.drawn:  # the driver failed before any call (its start raised)
        return _as_it_happened(spec_name, exc)
    drawn = list(exc.drawn)
    if options.shrink == "calls":
        drawn = _shrink(spec_name, factory, exc.env, drawn, exc.findings[0].rule, counter)
    return (_failure(spec_name, factory, exc.env, drawn, len(exc.drawn), counter)
            or _as_it_happened(spec_name, exc, repeats=False))


def _as_it_happened(spec_name: str, exc: FuzzFailed, repeats: bool = True) -> FuzzFailure:
    """The failing run as the example ran it, not re-run nor shrunk."""
    first = exc.findings[0]
    message = first.message if repeats else f"{first.message} ({NOT_REPEATED})"
    test = ConformanceTest(f"fuzz-{first.rule}", first.rule, spec_name, exc.env, exc.events, exc.expectations, (),
                           "fuzz", f"found by regcheck fuzz: {message}")
    return FuzzFailure(spec_name, exc.env, first.rule, message, exc.events, test, len(exc.drawn), repeats)


def _replay(spec_name: str, factory, env: Mapping, drawn: Sequence[Drawn], counter) -> tuple[_Runner, list[Finding]]:
    """Re-run drawn calls on a fresh driver, up to the first failing step."""
    spec = load_spec(spec_name)
    runner = _Runner(spec_name, spec, ArgumentPool(spec, computed_sizes=False), env, factory, counter)
    try:
        for d in drawn:
            if runner.tainted:
                break
            bad = runner.call(d)
            if bad:
                return runner, bad
        return runner, runner.findings_at_the_end()
    finally:
        runner.close()


def _shrink(spec_name: str, factory, env: Mapping, drawn: list[Drawn], rule: str, counter) -> list[Drawn]:
    """A 1-minimal subsequence of the calls that still fails the same rule (delta debugging)."""
    def keeps(candidate: list) -> bool:
        _, bad = _replay(spec_name, factory, env, candidate, counter)
        return bool(bad) and bad[0].rule == rule

    return ddmin(drawn, keeps) if keeps(drawn) else drawn


def _failure(spec_name: str, factory, env: Mapping, drawn: Sequence[Drawn], found: int,
             counter) -> FuzzFailure | None:
    runner, bad = _replay(spec_name, factory, env, drawn, counter)
    if not bad:
        return None
    first = bad[0]
    n = len(runner.events)
    test = ConformanceTest(f"fuzz-{first.rule}", first.rule, spec_name, dict(env), tuple(runner.events[:n]),
                           tuple(runner.expectations[:n]), (), "fuzz", f"found by regcheck fuzz: {first.message}")
    return FuzzFailure(spec_name, dict(env), first.rule, first.message, tuple(runner.events[:n]), test, found)
