"""A thin layer over Z3: timeouts, a deterministic seed, and sat/unsat/unknown mapped to a verdict once.

Only this module and `checker.symbolic.encode` import z3. A validity question ("do the hypotheses imply the
goal?") is answered PROVED (hypotheses and not goal: unsat), REFUTED (sat, with the model) or
UNKNOWN (with Z3's `reason_unknown()`, e.g. "timeout" or "incomplete quantifiers"); UNKNOWN is
never turned into PROVED anywhere. A satisfiability question ("is there a witness?") is answered
FOUND / NONE / UNKNOWN by the same mapping.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Iterator

import z3


class Verdict(Enum):
    PROVED = "PROVED"
    REFUTED = "REFUTED"
    UNKNOWN = "UNKNOWN"


class Witness(Enum):
    FOUND = "FOUND"
    NONE = "NONE"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class SolverOptions:
    """Per-query timeout (milliseconds), the seed every solver starts from, and how many more
    times a query that timed out is asked, each time with the next seed.

    Why retry: Z3's time on a few of our queries depends heavily on its random choices (and on the
    order in which the terms were built): one that takes milliseconds can, rarely, run past the
    timeout. Asking again with another seed is the usual cure for such heavy tails; the verdict
    is UNKNOWN only when every attempt times out."""

    timeout_ms: int = 5000
    seed: int = 0
    retries: int = 2
    rlimit: int = 0  # Z3 resource units per query (0: none); see below

    # Why a resource limit: a timeout makes the answer depend on how busy the machine is, so two runs
    # of `regcheck generate` could write different suites. Z3's resource count is the same on every
    # machine for the same query, so a query cut by `rlimit` is cut the same way everywhere; the
    # generator sets it and keeps the timeout only as a backstop far above it.


@dataclass(frozen=True, slots=True)
class Answer:
    """One solver answer: the verdict, Z3's reason when unknown, the model when sat, the time."""

    verdict: Verdict
    reason: str
    model: z3.ModelRef | None
    seconds: float

    @property
    def witness(self) -> Witness:
        return _WITNESS[self.verdict]


_WITNESS = {Verdict.REFUTED: Witness.FOUND, Verdict.PROVED: Witness.NONE, Verdict.UNKNOWN: Witness.UNKNOWN}


_TIMED_OUT = frozenset({"canceled", "timeout"})  # Z3's reasons when the timer stopped a query


def _verdict(result: z3.CheckSatResult) -> Verdict:
    """The one place sat/unsat/unknown become verdicts (of "hypotheses and not goal")."""
    if result == z3.unsat:
        return Verdict.PROVED
    if result == z3.sat:
        return Verdict.REFUTED
    return Verdict.UNKNOWN


class Session:
    """An incremental solver: shared hypotheses, then one query per `prove`/`find` in its own frame."""

    def __init__(self, options: SolverOptions = SolverOptions(), hypotheses: Iterable = ()):
        self.options = options
        self._s = z3.Solver()
        self._s.set("ctrl_c", False)  # Z3 would take SIGINT during a check; `interruptible_check` handles it
        self._seed(options.seed)
        self._s.set("timeout", max(1, int(options.timeout_ms)))
        if options.rlimit > 0:
            self._s.set("rlimit", int(options.rlimit))  # per check, not cumulative
        for h in hypotheses:
            self._s.add(h)

    def add(self, *facts) -> None:
        for f in facts:
            self._s.add(f)

    @contextmanager
    def frame(self) -> Iterator["Session"]:
        self._s.push()
        try:
            yield self
        finally:
            self._s.pop()

    def _check(self, facts) -> Answer:
        answer = self._check_once(facts)
        attempt = 0
        while answer.verdict is Verdict.UNKNOWN and answer.reason in _TIMED_OUT and attempt < self.options.retries:
            attempt += 1
            self._seed(self.options.seed + attempt)
            try:
                again = self._check_once(facts)
            finally:
                self._seed(self.options.seed)
            answer = Answer(again.verdict, again.reason, again.model, answer.seconds + again.seconds)
        return answer

    def _seed(self, seed: int) -> None:
        self._s.set("random_seed", seed)
        self._s.set("smt.random_seed", seed)

    def _check_once(self, facts) -> Answer:
        t0 = time.perf_counter()
        with self.frame():
            for f in facts:
                self._s.add(f)
            try:
                result = interruptible_check(self._s)
            except z3.Z3Exception as exc:  # e.g. interrupted: never a proof
                return Answer(Verdict.UNKNOWN, f"solver error: {exc}", None, time.perf_counter() - t0)
            verdict = _verdict(result)
            model = self._s.model() if verdict is Verdict.REFUTED else None
            reason = self._s.reason_unknown() if verdict is Verdict.UNKNOWN else ""
        return Answer(verdict, reason or ("unknown" if verdict is Verdict.UNKNOWN else ""), model,
                      time.perf_counter() - t0)

    def prove(self, goal) -> Answer:
        """Do the hypotheses imply goal? PROVED / REFUTED (model: a counterexample) / UNKNOWN."""
        return self._check([z3.Not(goal)])

    def find(self, *conditions) -> Answer:
        """Is there a model of the hypotheses and conditions? `.witness` FOUND (with model) / NONE / UNKNOWN."""
        return self._check(conditions)


_POLL_S = 0.05  # how often the waiting thread wakes while Z3 solves (a signal also wakes it at once)
_START_S = 1.0  # how long a started worker may take to run (a thread not running by then never started)


def interruptible_check(solver: z3.Solver) -> z3.CheckSatResult:
    """`solver.check()`, run in a worker thread while this thread waits, so that Ctrl-C and SIGTERM
    stop a query at once.

    Why: Z3's check runs in C, and Python runs signal handlers only in the main thread between
    bytecodes, so a handler waited until the query ended (minutes with a long timeout). Here the
    handler's exception (KeyboardInterrupt, or the CLI's Terminated) is raised in the wait; Z3 is
    interrupted (its check returns unknown, which nobody reads), the worker is waited for, so that
    no solver work outlives the query, and the exception goes on: an interrupted query is never
    a verdict, let alone PROVED."""
    box: dict = {}
    # (Events, not Thread.join/is_alive: an interrupted join can mark a running thread stopped)
    alive, done = threading.Event(), threading.Event()

    def work() -> None:
        try:
            alive.set()
            if not box.get("cancelled"):
                box["result"] = solver.check()
        except BaseException as exc:  # (handed to the waiting thread)
            box["error"] = exc
        finally:
            done.set()

    try:
        threading.Thread(target=work, name="regcheck-z3-check", daemon=True).start()
        while not done.wait(_POLL_S):
            pass
    except BaseException:
        _stop(box, alive, done, solver)
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def _stop(box: dict, alive: threading.Event, done: threading.Event, solver: z3.Solver) -> None:
    """Make sure no check runs on once this returns: returning while one runs would leave two
    threads in one Z3 context (a crash). The exception that stopped the wait may have come before
    the worker started, or inside `start` after it did: a worker that starts from now on skips its
    check; one that has started is interrupted until done. A second Ctrl-C meanwhile is dropped:
    the first exception is already on its way up."""
    box["cancelled"] = True
    deadline = time.monotonic() + _START_S
    while not alive.is_set() and time.monotonic() < deadline:
        try:
            alive.wait(_POLL_S)
        except BaseException:
            continue
    while alive.is_set() and not done.is_set():
        try:
            solver.ctx.interrupt()
            done.wait(_POLL_S)
        except BaseException:
            continue


@contextmanager
def isolated_context() -> Iterator[None]:
    """Build and solve every formula inside in a fresh Z3 context, then return to the one before.

    Z3 is deterministic for the same sequence of calls in a fresh context, but which of several
    models it returns depends on every term its context has built before (hash-consing ids steer
    its heuristics). Results a user keeps, like a generated suite, are computed inside this, so they
    are the same whatever ran earlier in the process. z3py has no public way to swap the context its
    constructors default to, so this sets its module's current-context variable; where that
    variable is missing (another z3py) it does nothing, and results stay correct, only not
    reproducible across runs in one process. Formulas built inside must not be used after it."""
    module = getattr(z3, "z3", None)
    if module is None or not hasattr(module, "_main_ctx"):
        yield
        return
    before = module._main_ctx
    module._main_ctx = z3.Context()
    try:
        yield
    finally:
        module._main_ctx = before


def prove(hypotheses: Iterable, goal, options: SolverOptions = SolverOptions()) -> Answer:
    return Session(options, hypotheses).prove(goal)


def find(constraints: Iterable, options: SolverOptions = SolverOptions()) -> Answer:
    return Session(options, constraints).find()
