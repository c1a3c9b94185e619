"""Replay a trace three ways: the recorded results, the spec's allowed outcomes, a driver's real results.

`execute_trace` relocates every allocation the trace recorded into memory the driver hands out (the
offset of an address inside its allocation and its offset inside its page are kept), calls the driver
for each event, and compares:

  usage / conformance / unspecified   the recorded trace against the spec, exactly as `regcheck replay`
  executor     the driver's own result is not an outcome the spec allows (in the state that follows
               the driver's results; an allocation's promises about its address among the blocks
               the driver handed out, `Execution.handed_out`)
  divergence   the driver's result differs from the recorded one, both allowed (informational)
  refused      an address argument relocates to no memory the trace allocated: the call is not made
               (or the driver refused it itself); informational
  pinning      after the event, the pages the kernel reports locked differ from the pages the
               spec's `pinned` declarations predict (not checked for a spec that has none: it
               predicts nothing); checker.drivers.lockcheck keeps both sides event by event. A
               driver that reports no locks of its own is read through its ObservedDriver
               (checker.drivers.observed), as the conformance runner reads every driver

Two model states are kept: one follows the recorded results (for the replay findings), the other the
driver's results (to judge the driver and to predict its page locks), so one divergence does not
cascade into false findings later.

Both are checked with the replayer's fast steps (checker.fast.fastpath) where those find nothing in
the event: the recording's line as `regcheck replay` reads it (`CheckedLines`), the driver's result
given as values (`ModelSteps`); the general path (`Replayer.normalise` and `check`,
`Semantics.allowed` and `judge`) takes every event they decline, from the same state, so the
findings are those of the general path alone (FAST_STEPS False).

Rule IDs of the executor's own checks (not spec rules):
  EXEC-ADDRESS-UNOWNED  an address that relocates to nothing the trace allocated
  EXEC-DIVERGENCE       driver and recording disagree (both allowed)
  EXEC-LOCK-EXTRA       the kernel reports a page locked that the spec does not predict
  EXEC-DRIVER-ERROR     the driver raised an exception from a call, returned something other
                        than a Result, or a success whose outputs are missing or not values of
                        their declared types (None, a string, an address past 2**64); the run stops
                        at that event (what the driver did to its state is unknown, so later events
                        could only report its consequences)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

from ..engines.replay import Finding, Replayer, ReplayReport, semantics_for, show_value, spec_notes
from ..fast.fastpath import DECODE_ERRORS, EventMaker, LineValues, event_makers, fast_path, line_readers
from ..fast.stepcode import INT64_MAX, INT64_MIN
from ..language.analysis import memory_shape
from ..language.checked import UNBOUNDED, value_bounds
from ..language.diagnostics import RegcheckError, error
from ..language.source import Span
from ..model.outcomes import CONFORMS, Judgement, describe_outcomes
from ..model.semantics import Semantics
from ..model.state import State
from ..model.values import type_problem
from ..trace.reader import UNDECODED, EventStream, header_spec_ref, read_trace
from .executor import ReferenceDriver
from .lockcheck import LockCheck, Mismatch
from .ordered import IntMap
from .pinning import PAGE_SIZE, forget_locked_reading
from .observed import ObservedDriver
from .protocol import CODE_DRIVER_FAILED, Driver, DriverRaised, Result

# Findings that do not make a trace violate: silences of the documents, divergences both allowed,
# and refusals (the executor protecting memory it does not own; the cause, a caller error or an
# earlier divergence, has its own finding).
INFORMATIONAL = frozenset({"unspecified", "divergence", "refused"})
EXEC_ADDRESS_UNOWNED = "EXEC-ADDRESS-UNOWNED"
EXEC_DIVERGENCE = "EXEC-DIVERGENCE"
EXEC_LOCK_EXTRA = "EXEC-LOCK-EXTRA"
EXEC_DRIVER_ERROR = "EXEC-DRIVER-ERROR"
# Tests set it False: every event on the general path, the reference (`Replayer.normalise` and
# `check` for the recording, `Semantics.allowed` and `judge` for the driver's results), where
# otherwise the replayer's fast steps take the events they find nothing in (`CheckedLines`,
# `ModelSteps`). The findings are the same either way.
FAST_STEPS = True


# ---------------------------------------------------------------- relocation


class Relocator:
    """Recorded allocations -> the driver's: an address keeps its offset in its allocation and page."""

    def __init__(self) -> None:
        self._by_base = IntMap()  # recorded base -> (size, driver address of that base, shift)
        # Recorded (base, end) spans whose relocation changed since `take_changed` last ran.
        self._changed: list[tuple[int, int]] = []
        # Live recorded allocations a later one overlapped, and so replaced (`add`): from then on
        # their addresses relocate into the later one (a recording whose allocations of two
        # address spaces, a device's and the host's, overlap; the fuzzer stops judging there).
        self.displaced = 0

    def take_changed(self) -> list[tuple[int, int]]:
        """The recorded spans where an address relocates differently since the last call."""
        spans = self._changed
        if spans:  # else the same empty list serves again: most events relocate nothing
            self._changed = []
        return spans

    @staticmethod
    def shift_of(recorded_base: int) -> int:
        """The padding asked of the driver so the relocated base keeps its offset inside its page."""
        return recorded_base % PAGE_SIZE

    def add(self, recorded_base: int, size: int, driver_block: int) -> None:
        shift = self.shift_of(recorded_base)
        # The recorded allocations never overlap (a reuse replaces them), so of those below
        # `recorded_base` only the last can reach into the new one.
        end = recorded_base + max(size, 1)
        for base in self._by_base.meeting(recorded_base, end):
            old_size = self._by_base[base][0]
            if base < end and recorded_base < base + max(old_size, 1):
                del self._by_base[base]  # the recording reused that memory
                self._changed.append((base, base + max(old_size, 1)))
                self.displaced += 1
        self._by_base[recorded_base] = (size, driver_block + shift, shift)
        self._changed.append((recorded_base, recorded_base + max(size, 1)))

    def relocate(self, address: int) -> int | None:
        """The driver's address for a recorded one, or None when no recorded allocation holds it."""
        if address == 0:
            return 0  # null stays null: every API checks it itself
        entry = self._by_base.get(address)
        if entry is not None:  # the usual case, an allocation's own base: no search
            return entry[1]
        before = self._by_base.floor_item(address)
        if before is None:
            return None
        base, (size, moved, _) = before
        if base <= address < base + max(size, 1):
            return moved + (address - base)
        return None

    def relocate_base(self, address: int) -> int | None:
        """For a release: the driver's own block address of the allocation starting at `address`."""
        entry = self._by_base.get(address)
        if entry is None:
            return self.relocate(address)
        size, moved, shift = entry
        return moved - shift

    def span_of(self, recorded_base: int) -> tuple[int, int] | None:
        """[base, end) of the recorded allocation starting at `recorded_base`, if there is one."""
        entry = self._by_base.get(recorded_base)
        return None if entry is None else (recorded_base, recorded_base + max(entry[0], 1))

    def forget(self, recorded_base: int, kept: Iterable[tuple[int, int]] = ()) -> None:
        """The recording released this allocation: its addresses relocate to nothing any more (the
        driver may hand the same memory out again for a later allocation), except the parts `kept`
        ((base, size) of what is left of it: a partial munmap), which keep their places."""
        entry = self._by_base.pop(recorded_base, None)
        if entry is None:
            return
        size, moved, shift = entry
        self._changed.append((recorded_base, recorded_base + max(size, 1)))
        for base, part in kept:
            if recorded_base < base < recorded_base + size:
                self._by_base[base] = (part, moved + (base - recorded_base), shift)

    def relocate_range(self, base: int, end: int) -> tuple[int, int] | None:
        entry = self._by_base.get(base)
        if entry is not None and base != 0:  # an allocation's own base (`relocate`, inline: the lock check asks)
            start = entry[1]
        else:
            start = self.relocate(base)
            if start is None:
                return None
        return start, start + (end - base)

    def maps_onto(self, driver_page: int) -> bool:
        """Whether a recorded allocation (not at null: null relocates to null) lies on this page of
        the driver's memory, so that the model can say whether the page should be locked."""
        return any(base != 0 and moved < driver_page + PAGE_SIZE and driver_page < moved + max(size, 1)
                   for base, (size, moved, _) in self._by_base.items())


# ---------------------------------------------------------------- the run


class _CallPlan:
    """What every event of one call needs of the spec, read once per call: its address arguments
    (each with whether it names an allocation to release), its allocator (or None), the arguments
    it releases (or None), whether it touches the driver's own memory (`_follow_own_memory`), and
    the quick check of a success's outputs (`outputs_fine`)."""

    __slots__ = ("addr", "alloc", "released", "own_memory", "int_outputs")

    def __init__(self, sem: Semantics, name: str, params: tuple[str, ...], shape) -> None:
        released = shape.releases.get(name)
        self.addr = tuple((p, p in (released or ())) for p in params)
        self.alloc = shape.allocators.get(name)
        self.released = released
        self.own_memory = self.alloc is not None or name in shape.releases
        # (name, lo, hi) of each output, where every output is an int or flags value (the common
        # case): `output_problem` finds nothing in outputs that are exact ints within these bounds.
        outputs = sem.calls[name].info.outputs
        self.int_outputs = tuple((n, *(value_bounds(t) or UNBOUNDED)) for n, t in outputs) \
            if all(t.kind in ("int", "flags") for _, t in outputs) else None

    def outputs_fine(self, out: Any) -> bool:
        """True when `output_problem` would find nothing in a success's outputs `out`; False when
        it must be asked (it may still find nothing)."""
        checks = self.int_outputs
        if checks is None or type(out) is not dict:
            return False
        for n, lo, hi in checks:
            v = out.get(n)
            if type(v) is not int or not lo <= v <= hi:
                return False
        return True


class Execution:
    """One trace against one driver; `step` checks one event."""

    def __init__(self, sem: Semantics, driver: Driver, path: str):
        self.sem, self.driver, self.path = sem, driver, path
        self.replayer = Replayer(sem, path)
        self.shape = memory_shape(sem.spec, computed_sizes=True)  # (mmap: whole pages of its length)
        self._partial_tables = tuple(sorted({a.table for a in self.shape.allocators.values() if not a.exact}))
        # Per call, what every event of it needs (its address arguments, allocator, releases, the
        # checks of a success's outputs): read from the shape once, since every event asks.
        self.plans = {name: _CallPlan(sem, name, params, self.shape) for name, params in self.shape.addr_params.items()}
        self.relocator = Relocator()
        self.driver_state: State = sem.initial_state()  # the model, following the driver's results
        self.driver_model = ModelSteps(sem, self.driver_state, FAST_STEPS)
        # A spec without `pinned` declarations predicts no page locks, so there is nothing to compare
        # (cupva locks nothing; for cuda and hip whether pages are locked is not modelled, docs/cuda-hip.md).
        # An entry whose memory was released under it (the caller's bug: freed while registered)
        # predicts nothing until it goes, even when the recording reuses its addresses.
        check_locks = bool(sem.spec.pinned) and callable(getattr(driver, "kernel_locked_pages", None))
        self.locks = LockCheck(sem, driver, self.relocator.relocate_range, self.relocator.take_changed,
                               self.relocator.maps_onto) if check_locks else None
        self.applied: list | None = None  # the driver-following model's changes in this event
        # The driver's own allocations at its own addresses (the allocator tables alone): what an
        # allocation promises of its address (fresh among the live blocks, aligned) is judged there,
        # since the model that follows the driver holds the recording's addresses in their place.
        self.handed_out: State = sem.initial_state()

    def step(self, ev, last: bool = False) -> list[Finding]:
        """The findings of one event; `last`: the trace's last event, after which the kernel's
        locks are read whole."""
        rep = self.replayer
        self.applied = None
        shape, args, status, outs = rep.normalise(ev)
        findings = list(rep.check(ev, shape, args, status, outs))  # the recording against the spec (this also advances its model)
        return self._drive(ev, shape.name, args, status, outs, findings, last)

    def step_checked(self, at: Located, values: LineValues, last: bool = False) -> list[Finding]:
        """`step` of an event whose recording the replayer's fast step has checked (it found nothing)
        and applied already: `at` its line and call, `values` what it recorded."""
        self.replayer.events += 1
        self.applied = None
        return self._drive(at, at.call, dict(zip(values.params, values.inputs)), values.status, values.outs, [], last,
                           values.inputs)

    def _drive(self, ev, name: str, args: dict, status, outs: dict, findings: list[Finding],
               last: bool, inputs: tuple | None = None) -> list[Finding]:
        """The driver's side of one event, after the recording's (`findings`)."""
        plan = self.plans[name]
        driver_args, unowned = self._relocate_args(plan, args, outs)
        if unowned is not None:
            findings.append(self.replayer.finding(
                ev, "refused", EXEC_ADDRESS_UNOWNED, f"argument {unowned} = {show_value(args[unowned])} lies in no "
                "memory this trace allocated; the call was not made"))
            return findings
        result = self._call_driver(name, driver_args, plan)
        incident = getattr(self.driver, "last_incident", None)
        refused = incident is not None and incident.kind.value == "refused"
        self._judge_driver(ev, name, plan, args, status, outs, result, refused, inputs, findings)
        if plan.own_memory and not refused and result.ret == self.sem.success:
            self._follow_own_memory(ev, name, driver_args, result.out, findings)
        if incident is not None:
            kind = "refused" if incident.kind.value == "refused" else "divergence"
            rule = EXEC_ADDRESS_UNOWNED if kind == "refused" else EXEC_DIVERGENCE
            findings.append(self.replayer.finding(ev, kind, rule,
                                                  f"the driver reports: {incident.message} ({incident.code})"))
        locks = self.locks
        if locks is not None:
            if last:
                forget_locked_reading()  # a fresh reading of smaps, not one reused
            mismatch = locks.after_event(self.driver_state, self.applied, last)
            if mismatch is not None:
                self._report_mismatch(ev, mismatch, findings)
        return findings

    def _call_driver(self, name: str, args: dict, plan: _CallPlan | None = None) -> Result:
        """The driver's result; DriverRaised where it raised (a RegcheckError is its refusal of the
        input, an input error, passed on as it is), returned no Result, or a success whose outputs
        are missing or not of their declared types (`output_problem`)."""
        try:
            result = self.driver.call(name, args)
        except (RegcheckError, DriverRaised):
            raise
        except Exception as exc:  # noqa: BLE001 - any crash of the driver under test is its finding
            raise DriverRaised(name, exc) from exc
        if type(result) is not Result and not isinstance(result, Result):
            raise DriverRaised(name, TypeError(f"call() returned {_shown(result)}, "
                                               "not a checker.drivers.protocol.Result"))
        if result.ret == self.sem.success and not (plan or self.plans[name]).outputs_fine(result.out):
            problem = output_problem(self.sem, name, result.out)
            if problem is not None:
                raise DriverRaised(name, ValueError(problem))
        return result

    def lock_check_at_the_end(self, ev) -> list[Finding]:
        """After a run whose last event (`ev`) was not known as last when it was stepped: the page
        locks compared whole, with smaps read afresh, as `step(ev, last=True)` would have (the
        findings at `ev`)."""
        found: list[Finding] = []
        if self.locks is not None:
            self._compare_locks(ev, True, found)
        return found

    def _relocate_args(self, plan: _CallPlan, args: Mapping[str, Any],
                       outs: Mapping[str, Any]) -> tuple[dict, str | None]:
        out = dict(args)
        relocator = self.relocator
        by_base = relocator._by_base
        for p, release in plan.addr:
            address = args[p]
            entry = by_base.get(address)  # the usual case, an allocation's own base: relocate(_base) inline
            if entry is not None and address != 0:
                out[p] = entry[1] - entry[2] if release else entry[1]
                continue
            moved = (relocator.relocate_base if release else relocator.relocate)(address)
            if moved is None:
                return out, p
            out[p] = moved
        alloc = plan.alloc
        recorded_base = outs.get(alloc.output) if alloc is not None else None
        if recorded_base is not None:
            # Ask for the recorded base's offset in its page in front, so the relocated base keeps it.
            out[alloc.size_param] = args[alloc.size_param] + Relocator.shift_of(recorded_base)
        return out, None

    def _judge_driver(self, ev, name, plan: _CallPlan, args, status, outs, result: Result, refused: bool,
                      inputs: tuple | None, found: list[Finding]) -> None:
        """The driver's result against the spec, in the model that follows the driver's results
        (`inputs`: the arguments' values in declaration order as the decoder gave them, if it did);
        its findings go into `found`."""
        sem = self.sem
        success = sem.success
        driver_status = result.ret
        alloc = plan.alloc
        model_outs: Mapping[str, Any] | None = result.out  # read only, as the driver's own
        substituted = False
        if alloc is not None and driver_status == success:
            recorded_base = outs.get(alloc.output)
            block = result.out.get(alloc.output)
            if recorded_base is not None and block is not None:
                self.relocator.add(recorded_base, self._recorded_size(alloc, recorded_base, args), block)
                # The driver's block stands for the recorded one.
                model_outs = {**result.out, alloc.output: recorded_base}
                substituted = True
            else:
                model_outs = None  # allocated only by the driver: nothing of the trace refers to it
        st = self.driver_state
        # A step whose call has no effect leaves the journal as the last effect left it; emptied
        # here, it lists this event's changes alone (the lock check looks again only at those).
        st.journal.clear()
        # The call's fast step, where it takes the result, found it allowed (so the judgement below
        # would find nothing) and, for a success, applied its effect, as `sem.apply` below would.
        took = model_outs is not None and not refused and self.driver_model.took(name, args, driver_status, model_outs,
                                                                                inputs)
        if not took and (model_outs is not None or driver_status != success):
            allowed = sem.allowed(st, name, args)
            # A substituted output is the recording's address, so promises about it (fresh, aligned)
            # speak of the recording, not of the driver: judge the status alone then (the driver's
            # own address is judged among its own blocks, `_follow_own_memory`).
            judgement = sem.judge(allowed, st, args, driver_status, model_outs or {}) if not substituted else \
                _status_only(sem, allowed, driver_status)
            if not judgement.conforms:
                rule = (judgement.rules or (EXEC_DIVERGENCE,))[0]
                found.append(self.replayer.finding(ev, "executor", rule, f"the driver returned {driver_status!r}; "
                                                   f"the spec allows {judgement.expected}"))
        if driver_status != status:
            found.append(self.replayer.finding(ev, "divergence", EXEC_DIVERGENCE,
                                               f"recorded {status!r}, the driver returned {driver_status!r}"))
        if model_outs is not None and not refused and driver_status == success:
            if not took:
                sem.apply(st, name, args, model_outs)  # a refused event changed nothing in the driver
            # Its changes, for the lock check; the recorded allocations it released relocate to
            # nothing any more.
            self.applied = st.journal
            released = plan.released
            if released:
                for p in released:
                    self.relocator.forget(args[p], self._left_of(args[p]))

    def _follow_own_memory(self, ev, name: str, driver_args: Mapping[str, Any], out: Mapping[str, Any],
                           found: list[Finding]) -> None:
        """A successful allocation's promises about its address, judged on the driver's own address
        among the driver's own live blocks (findings into `found`), then recorded there; a release
        forgets its block there."""
        sem, alloc = self.sem, self.plans[name].alloc
        if alloc is not None:
            for rule in sem.ensures_broken(self.handed_out, name, driver_args, out):
                found.append(self.replayer.finding(
                    ev, "executor", rule, f"the driver returned {alloc.output} = {out[alloc.output]:#x} for "
                    f"{driver_args[alloc.size_param]} bytes, which breaks it among the blocks it handed out"))
            sem.apply(self.handed_out, name, driver_args, out)
        elif name in self.shape.releases:
            sem.apply(self.handed_out, name, driver_args, {})

    def _left_of(self, recorded_base: int) -> list[tuple[int, int]]:
        """(base, size) of the entries the recording's model still holds inside the allocation at
        `recorded_base` after a release: what a partial munmap leaves, for the tables of allocators
        that compute their sizes (mmap's); none for the others (a free releases the whole)."""
        span = self.relocator.span_of(recorded_base)
        if span is None or not self._partial_tables:
            return []
        tables, spec_tables = self.replayer.state.tables, self.sem.spec.tables
        return [(k, record[spec_tables[t].sized_by]) for t in self._partial_tables
                for k, record in tables[t].overlapping(*span) if span[0] < k < span[1]]

    def _recorded_size(self, alloc, recorded_base: int, args: Mapping[str, Any]) -> int:
        """The size of the allocation the recording made: its entry's in the recording's model (the
        whole pages of an mmap), else the size argument (an allocation the model did not take)."""
        if not alloc.exact:
            rows = self.replayer.state.tables[alloc.table].rows
            entry = rows.get(recorded_base)
            if entry is not None:
                return entry[self.sem.spec.tables[alloc.table].sized_by]
        return args[alloc.size_param]

    def _compare_locks(self, ev, last: bool, found: list[Finding]) -> None:
        """The page locks after the event, compared (findings into `found`)."""
        if last:
            forget_locked_reading()  # a fresh reading of smaps, not one reused
        mismatch = self.locks.after_event(self.driver_state, self.applied, last)  # type: ignore[union-attr]
        if mismatch is not None:
            self._report_mismatch(ev, mismatch, found)

    def _report_mismatch(self, ev, mismatch: Mismatch, found: list[Finding]) -> None:
        if mismatch.missing:
            found.append(self.replayer.finding(
                ev, "pinning", mismatch.rule,
                f"{mismatch.missing} page(s) the spec says are locked are not locked by the kernel"
                f" (first {mismatch.first_missing:#x})"))
        if mismatch.extra:
            found.append(self.replayer.finding(
                ev, "pinning", EXEC_LOCK_EXTRA,
                f"{len(mismatch.extra)} page(s) are locked that the spec does not predict (first {mismatch.extra[0]:#x})"))


class ModelSteps:
    """The fast path's steps (checker.fast.fastpath) over one model state, given values rather than
    lines: `took(call, args, status, outs)` is True when the call's step took the event, that is when
    the spec allows the status (and the outputs keep its promises) with no rule broken or silent, and
    then a success's effect is applied to the state, as `Semantics.apply` would. False when the step
    declined (the state is unchanged) or the call has no step: the caller judges it the general way.

    Only calls whose fields are all integers have a step here, and only integers within the decoder's
    bounds are handed to it (the steps take what the decoder would give them, `event_makers`)."""

    def __init__(self, sem: Semantics, st: State, enabled: bool = True):
        # Its own windows of recent calls: the events it is given carry no threads, so none is added.
        fast = fast_path(sem, st, _nothing_to_remember, {}) if enabled else None
        self.steps: dict[str, tuple[EventMaker, tuple[str, ...], tuple[str, ...]]] = {}
        self.success = sem.success
        # The status as the decoder gives it: a JSON integer (within int64), or an enum status's member.
        status_type = sem.spec.status_type
        members = frozenset(sem.spec.enums[status_type.name]) if status_type.kind == "enum" else frozenset()
        self.members = None if status_type.kind == "int" else members  # None: an int status
        for call, maker in (event_makers(sem, fast) if fast is not None else {}).items():
            if all(b is not None for b in maker.bounds):
                info = sem.calls[call].info
                self.steps[call] = (maker, tuple(n for n, _ in info.params), tuple(n for n, _ in info.outputs))
        # Per call with a step: (step, make, (name, lo, hi) per input, the same per output), so that
        # `took` reads no tuple of bounds by position per event.
        self._plans = {call: (maker.step, maker.make, _bounded(params, maker.bounds, 0),
                              _bounded(outputs, maker.bounds, len(params)))
                       for call, (maker, params, outputs) in self.steps.items()}

    def took(self, call: str, args: Mapping[str, Any], status: Any, outs: Mapping[str, Any],
             inputs: tuple | None = None) -> bool:
        """`inputs`: the values of `args` in declaration order as the decoder gave them (so within
        its bounds), where they were decoded."""
        plan = self._plans.get(call)
        if plan is None:
            return False
        if self.members is None:
            if type(status) is not int or not INT64_MIN <= status <= INT64_MAX:
                return False
        elif type(status) is not str or status not in self.members:
            return False
        step, make, in_bounds, out_bounds = plan
        if inputs is None:
            inputs = _values_within(args, in_bounds)
            if inputs is None:
                return False
        if not out_bounds or status != self.success:
            return step(make(inputs, (), status), 0)
        results = []
        for n, lo, hi in out_bounds:
            v = outs.get(n)
            if type(v) is not int or not lo <= v <= hi:
                return False
            results.append(v)
        return step(make(inputs, results, status), 0)


def _bounded(names: tuple[str, ...], bounds: tuple, first: int) -> tuple[tuple[str, int, int], ...]:
    return tuple((n, *bounds[i]) for i, n in enumerate(names, first))


def _values_within(values: Mapping[str, Any], bounded: tuple[tuple[str, int, int], ...]) -> tuple | None:
    """The values of the names in order when each is an integer within its bounds, else None."""
    out = []
    for n, lo, hi in bounded:
        v = values.get(n)
        if type(v) is not int or not lo <= v <= hi:
            return None
        out.append(v)
    return tuple(out)


def _nothing_to_remember(line: int, call: str) -> None:
    """The driver-following model keeps no record of which line made an entry."""


class Located(NamedTuple):
    """Where an event checked on the fast path was recorded: all a finding needs of its event."""

    line: int
    call: str


_new_tuple = tuple.__new__  # Located(...) without its __new__'s Python frame, once per event


class CheckedLines:
    """The recording's side of `execute_trace` on the replayer's fast path, as `regcheck replay`
    reads a trace: each line decoded into its call's struct goes to the call's step, which checks
    and applies it when it has no finding; the values the driver's side needs are then read from
    the struct. A line the decoder does not take, or whose step declines (having changed nothing),
    is read as a TraceEvent and checked by the general path from the same state (`Execution.step`).

    Integers spelt otherwise than as JSON integers ("0x..." strings, flag names) are read from a
    struct as the step's machine reads them (`line_readers`), which is what `Replayer.normalise`
    gives; a line with one that rule does not take goes the general way."""

    def __init__(self, run: Execution):
        self.run = run
        fast = run.replayer.fast_path()
        self.decode = fast.decode if fast is not None else None
        self.steps = fast.steps if fast is not None else {}
        self.readers = line_readers(run.sem, fast) if fast is not None else {}
        # struct -> (its reader, its step): one lookup per line
        self._by_struct = {struct: (read, self.steps[struct]) for struct, read in self.readers.items()}

    def lines(self, stream: EventStream) -> Iterator[tuple[int, bytes, Any]]:
        """(line number, raw line, its struct, or its TraceEvent where the decoder did not take it)
        per event line; the reader's errors raise here, at the line, as iterating `stream` would."""
        decode, event = self.decode, stream.event
        lineno = stream.lineno
        try:
            for raw in stream.raw_lines():
                lineno += 1
                try:
                    item = decode(raw)  # type: ignore[misc]
                except DECODE_ERRORS:
                    item = event(raw, UNDECODED, lineno)
                    if item is None:  # a blank line
                        continue
                yield lineno, raw, item
        except OSError as exc:
            raise stream.read_error(exc, lineno) from None

    def step(self, stream: EventStream, lineno: int, raw: bytes, item: Any, last: bool) -> list[Finding]:
        """`Execution.step` of one item of `lines`."""
        fast = self._by_struct.get(type(item))
        if fast is not None:
            values = fast[0](item)
            if values is not None and fast[1](item, lineno):
                return self.run.step_checked(_new_tuple(Located, (lineno, values.call)), values, last)
            item = stream.event(raw, UNDECODED, lineno)
        return self.run.step(item, last)


def output_problem(sem: Semantics, call: str, out: Any) -> str | None:
    """What is wrong with a successful call's outputs (a declared output missing, or not a value of
    its declared type: None, a "0x..." string, an address below 0 or past 2**64), or None. Such an
    output is the driver's bug, not the recording's, and nothing could be relocated or judged by it."""
    if type(out) is not dict and not isinstance(out, Mapping):  # (a dict first: the ABC's check is slow)
        return f"call() returned out={_shown(out)}, not a mapping of outputs by name"
    for name, t in sem.calls[call].info.outputs:
        if name not in out:
            return f"call() succeeded without its output {name!r} (out={_shown(out)})"
        problem = _value_problem(sem, t, out[name])
        if problem is not None:
            return f"call() returned {name}={_shown(out[name])}: {problem}"
    return None


def _value_problem(sem: Semantics, t, value: Any) -> str | None:
    """Why `value` is not a value of type `t` as the driver protocol gives it, or None."""
    if t.kind in ("int", "flags") and type(value) is not int:
        return f"not an int (an output of type {t} is a Python int)"
    if t.kind == "enum" and not isinstance(value, str):
        return f"not a member of {t}"
    if t.kind == "bool" and type(value) is not bool:
        return "not a bool"
    return type_problem(sem.spec, t, value)


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _status_only(sem: Semantics, allowed, status) -> Judgement:
    """A judgement of the status alone (outputs not compared)."""
    if allowed.allows_status(status, sem.success):
        return CONFORMS
    return Judgement(False, tuple(e.rule for e in allowed.errors), describe_outcomes(allowed, sem.success))


def verdict_of(findings) -> str:
    return "violates" if any(f.kind not in INFORMATIONAL for f in findings) else "conforms"


@dataclass(frozen=True, slots=True)
class ExecutionReport(ReplayReport):
    spec_ref: str | None = None  # the spec executed against, as load_spec takes it (--spec, or the header's)

    @property
    def verdict(self) -> str:
        return verdict_of(self.findings)


def execute_trace(path: str, driver_factory: Callable[[], Driver] = ReferenceDriver, spec_name: str | None = None,
                  max_findings: int | None = None) -> ExecutionReport:
    """Execute one trace against a fresh driver; the driver is closed (memory unlocked) on every exit."""
    header, events = read_trace(path)
    try:
        sem = semantics_for(header, spec_name, path)
        driver = _guarded(path, "the driver factory", driver_factory)
        spec_ref = spec_name or header_spec_ref(header, path)
        try:
            _guarded(path, "the driver's start()", driver.start, spec_ref, header.env)
            run = Execution(sem, observed(driver, sem), path)
            findings: list[Finding] = []
            truncated = False
            checked = CheckedLines(run) if FAST_STEPS and isinstance(events, EventStream) else None
            if checked is not None and checked.decode is not None:
                items = checked.lines(events)
                step = partial(checked.step, events)
            else:
                items = ((ev,) for ev in events)
                step = run.step
            violations = 0  # findings so far that make the trace violate (counted, not recounted)
            item = next(items, None)
            while item is not None:
                following = next(items, None)
                try:
                    found = step(*item, last=following is None)
                except RegcheckError as exc:  # (the driver's X08xx, at the event it could not carry out)
                    raise exc.located(Span(path, _line_of(item), 1)) from None
                except DriverRaised as exc:
                    findings.append(run.replayer.finding(
                        Located(_line_of(item), exc.call), "executor", EXEC_DRIVER_ERROR,
                        f"the driver failed: {type(exc.exc).__name__}: {exc.exc}; execution stops at this event"))
                    break
                if found:
                    findings += found
                    violations += sum(f.kind not in INFORMATIONAL for f in found)
                    if max_findings is not None and violations >= max_findings:
                        truncated = True
                        break
                item = following
            return ExecutionReport(path, sem.spec.name, run.replayer.events, tuple(findings), truncated,
                                   spec_notes(header, spec_name, path), spec_ref)
        finally:
            _guarded(path, "the driver's close()", driver.close)
    finally:
        close = getattr(events, "close", None)
        if close:
            close()


def _line_of(item: tuple) -> int:
    """The line of an item `execute_trace` steps: (line, raw, struct) or (event,)."""
    return item[0] if type(item[0]) is int else item[0].line


def observed(driver: Driver, sem: Semantics) -> Driver:
    """The driver, or where it reports no page locks of its own (a third-party driver) its
    ObservedDriver: the pages of this process's locked mappings inside the memory it handed out, so
    that its locks are compared with the spec's predictions after every event too."""
    if callable(getattr(driver, "kernel_locked_pages", None)):
        return driver
    return ObservedDriver(driver, memory_shape(sem.spec).allocators)  # type: ignore[return-value]


def _guarded(path: str, what: str, fn: Callable, *args) -> Any:
    """fn(*args), where an exception other than a RegcheckError (the driver's refusal of its input)
    is the driver's failure, X0809 at the trace's header: a diagnostic, not a traceback."""
    try:
        return fn(*args)
    except RegcheckError:
        raise
    except Exception as exc:  # noqa: BLE001 - any crash of the driver under test
        raise RegcheckError([error(CODE_DRIVER_FAILED, f"{what} raised {type(exc).__name__}: {exc}",
                                   Span(path, 1, 1))]) from exc
