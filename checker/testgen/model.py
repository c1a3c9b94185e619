"""A conformance suite as data: its tests, their expectations, the coverage of each rule, the options of a
run, and the search's states."""

from __future__ import annotations

import mmap

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..engines.runs import Step
from ..language.analysis import identifier
from ..model.outcomes import Allowed
from ..model.semantics import Semantics
from ..model.state import State
from ..trace.events import TraceEvent, TraceHeader, parse_int


PAGE = mmap.PAGESIZE  # the machine's page, as checker.drivers.pinning's PAGE_SIZE (relocation keeps page offsets)
ALLOC_STRIDE = 0x100000  # recorded allocation k (1-based) starts at k * ALLOC_STRIDE
ALLOC_SIZE = 4 * PAGE  # what a prefix allocates: room for adjacent, inner and enclosing ranges
MAX_ALLOCS = 2  # allocations per prefix in the enumeration
DEVICE_BASE = 0x12C0000000  # recorded outputs that are not allocations (device addresses)
NULL_SIZE_LIMIT = 1 << 16  # a range at address 0 no longer than this reaches no mappable page
HUGE_ALLOCATION = 1 << 40  # an allocation no test machine can give: only an environmental failure is expected
U64 = 1 << 64

TESTED, ALLOWED, NOT_TESTABLE, NOT_REACHED, MODEL, ENVIRONMENT = (
    "tested", "allowed, not forced", "not testable", "not reached", "model invariant", "environment")


# ---------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Expectation:
    """The outcome a test expects of one call: success, or a failure with one of `codes` (None: any
    failure status except those in `excluded`). `rule` is the rule ID that decides it."""

    rule: str
    outcome: str  # "success" | "failure"
    codes: tuple | None = None
    excluded: tuple = ()

    def accepts(self, status, success) -> bool:
        if self.outcome == "success":
            return status == success
        if status == success:
            return False
        return status in self.codes if self.codes is not None else status not in self.excluded

    def to_json(self) -> dict:
        obj: dict = {"rule": self.rule, "outcome": self.outcome}
        if self.outcome == "failure":
            if self.codes is not None:
                obj["codes"] = list(self.codes)
            elif self.excluded:
                obj["except"] = list(self.excluded)
        return obj

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Expectation":
        """From a trace event's `expect` object (already checked by the trace reader)."""
        def status(v):
            return parse_int(v, what="expect") if isinstance(v, str) and v[:1] in "0123456789-" else v
        codes = obj.get("codes")
        return cls(obj["rule"], obj["outcome"], tuple(status(c) for c in codes) if codes is not None else None,
                   tuple(status(c) for c in obj.get("except", ())))

    def describe(self, success) -> str:
        if self.outcome == "success":
            return f"success ({success!r}) [{self.rule}]"
        if self.codes is not None:
            return " or ".join(repr(c) for c in self.codes) + f" [{self.rule}]"
        if self.excluded:
            return "any failure except " + ", ".join(repr(c) for c in self.excluded) + f" [{self.rule}]"
        return f"any failure [{self.rule}]"


def expectation_of(sem: Semantics, al: Allowed) -> Expectation | None:
    """What the spec expects of a call given its `Allowed`, ignoring environmental failures (`may
    fail`); None when every outcome is allowed (an undefined obligation broken, or unspecified)."""
    if al.open:
        return None
    if not al.errors:
        cc = sem.calls[al.call]
        return Expectation(cc.effect_rule or al.call, "success")
    if all(e.codes is not None for e in al.errors):
        codes = sorted({c for e in al.errors for c in e.codes}, key=_status_key)
        return Expectation(al.errors[0].rule, "failure", tuple(codes))
    explicit = {c for e in al.errors if e.codes is not None for c in e.codes}
    anys = [e.excluded for e in al.errors if e.codes is None]
    excluded = frozenset.intersection(*anys) - explicit
    return Expectation(al.errors[0].rule, "failure", None, tuple(sorted(excluded, key=_status_key)))


def _status_key(v):
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


@dataclass(frozen=True, slots=True)
class ConformanceTest:
    """One test as data: a trace whose API calls carry the outcomes the spec expects.

    `events` are as a recording would have them (`ret` a representative expected status, `out` the
    recorded outputs); `expectations[i]` is what event i must return (None for environment events).
    `covers` lists the coverage items ("RULE: item") this test was kept for.
    """

    name: str
    rule: str
    spec: str
    env: Mapping[str, Any]
    events: tuple[TraceEvent, ...]
    expectations: tuple[Expectation | None, ...]
    covers: tuple[str, ...] = ()
    method: str = "enumeration"
    description: str = ""

    @property
    def pytest_name(self) -> str:
        return "test_" + identifier(self.name)

    def header(self) -> TraceHeader:
        meta = {"test": self.name, "rule": self.rule, "method": self.method,
                "generator": "regcheck fuzz" if self.method == "fuzz" else "regcheck generate"}
        if self.description:
            meta["description"] = self.description
        if self.covers:
            meta["covers"] = list(self.covers)
        return TraceHeader(spec=self.spec, env=dict(self.env), meta=meta)

    def trace_events(self) -> list[TraceEvent]:
        """The events with their `expect` objects, as a suite's trace file holds them."""
        out = []
        for ev, exp in zip(self.events, self.expectations):
            out.append(TraceEvent(ev.line, ev.call, ev.args, ev.ret, ev.out, ev.tid, ev.t0, ev.t1,
                                  exp.to_json() if exp is not None else None))
        return out


LIVE_ENTRY = "checked with a live"  # the label prefix of a promise judged with an entry of some origin live


def live_entry_label(table: str, origin: str) -> str:
    """The coverage-item label of an allocation's promise judged while an entry of `table` that the
    call `origin` made is live: "RULE: checked with a live host_allocs entry from malloc"."""
    return f"{LIVE_ENTRY} {table} entry from {origin}"


@dataclass(frozen=True, slots=True)
class OriginCoverage:
    """An allocation's promise about the live entries of `table` judged while an entry that the call
    `origin` made is live: the tests that show it; none: why no test can (the origin unreachable)."""

    table: str
    origin: str
    tests: tuple[str, ...] = ()
    why: str = ""

    @property
    def label(self) -> str:
        return live_entry_label(self.table, self.origin)

    def to_json(self) -> dict:
        out = {"table": self.table, "origin": self.origin, "covered": bool(self.tests), "tests": list(self.tests)}
        if not self.tests:
            out["why"] = self.why
        return out


@dataclass(frozen=True, slots=True)
class RuleCoverage:
    """How one rule ID is covered: a status (`tested`, `allowed, not forced`, `not testable`, `not
    reached`, `model invariant`, `environment`), why, and per branch the tests that show it. An
    allocation's promise about live entries also has, per origin of those entries, the tests that
    judge it with one live (`origins`)."""

    rule: str
    kind: str
    call: str | None
    status: str
    note: str
    branches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    boundaries: int = 0  # boundary items (geometry, argument classes, state values) covered
    origins: tuple[OriginCoverage, ...] = ()

    @property
    def origins_missed(self) -> tuple[OriginCoverage, ...]:
        return tuple(o for o in self.origins if not o.tests)

    def to_json(self) -> dict:
        out = {"rule": self.rule, "kind": self.kind, "call": self.call, "status": self.status, "note": self.note,
               "branches": {b: list(t) for b, t in self.branches}, "boundary_items": self.boundaries}
        if self.origins:
            out["origins"] = [o.to_json() for o in self.origins]
        return out


TRANSITION = "transition"  # the coverage-item label prefix of a transition: "RULE: transition: W-RULE success -> branch"


@dataclass(frozen=True, slots=True)
class TransitionCoverage:
    """A history-dependent case: the call `call` showing its outcome branch `branch` of `rule` after an
    earlier call `writer` ended with `writer_outcome` (its effect rule `writer_rule`) on the same
    address, where that effect writes state the branch reads. `tests` show it; none: not reached."""

    writer: str
    writer_rule: str
    writer_outcome: str
    call: str
    rule: str
    branch: str
    tests: tuple[str, ...] = ()
    why: str = ""  # when no test shows it: why not

    @property
    def label(self) -> str:
        return transition_label(self.writer_rule, self.writer_outcome, self.branch)

    def to_json(self) -> dict:
        out = {"writer": self.writer, "writer_rule": self.writer_rule, "writer_outcome": self.writer_outcome,
               "call": self.call, "rule": self.rule, "branch": self.branch, "covered": bool(self.tests),
               "tests": list(self.tests)}
        if not self.tests:
            out["why"] = self.why
        return out


def transition_label(writer_rule: str, writer_outcome: str, branch: str) -> str:
    return f"{TRANSITION}: {writer_rule} {writer_outcome} -> {branch}"


@dataclass(frozen=True, slots=True)
class Suite:
    spec: str  # as a trace header names it (a bundled name or a path)
    tests: tuple[ConformanceTest, ...]
    coverage: tuple[RuleCoverage, ...]
    configs: tuple[Mapping[str, Any], ...]
    stats: Mapping[str, Any] = field(default_factory=dict)
    transitions: tuple[TransitionCoverage, ...] = ()

    def test(self, name: str) -> ConformanceTest:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class GenerateOptions:
    """`depth`: calls in an enumerated prefix; `bmc_depth`: steps the model checker may use for a
    branch or transition enumeration did not reach (0: no solver); `configs`: parameter sets (None:
    the spec's, see `configurations`); `rlimit`: Z3 resource units per solver query, which decide
    where a query gives up (the same on every machine), `timeout_ms` only a backstop above it."""

    depth: int = 3
    bmc_depth: int = 5
    configs: tuple[Mapping[str, Any], ...] | None = None
    timeout_ms: int = 60_000  # a backstop only: `rlimit` decides, the same on every machine
    rlimit: int = 50_000_000  # Z3 resource units per solver query


@dataclass(frozen=True, slots=True)
class Node:
    """A state reached by a prefix: its steps and the allocations (recorded base, size) it made."""

    state: State
    steps: tuple[Step, ...]
    allocs: tuple[tuple[int, int], ...]
