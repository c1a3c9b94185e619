"""checker.drivers.lockcheck: the executor's event-by-event page-lock check gives, at every event,
the findings of the whole comparison (every pinned entry, every mapping's locks read from smaps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.drivers import lockcheck, pinning
from checker.drivers.execute import Execution, execute_trace
from checker.drivers.executor import ReferenceDriver
from checker.drivers.lockcheck import LockCheck, Mismatch, StartIndex
from checker.engines.replay import semantics_for
from checker.trace.reader import header_spec_ref, read_trace
from tests.drivers import sloppy
from tests.mutants import acl as acl_mutants
from tests.mutants import cuda as cuda_mutants

pytestmark = pytest.mark.usefixtures("real_pinning")

ROOT = Path(__file__).resolve().parent.parent
PAGE = 4096
PINNED, MAPPED = 0x10000000, 0x2
ACL = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}

# Drivers whose bugs are in what they lock: each gives findings of kind "pinning" somewhere.
LOCK_BUGS = [ReferenceDriver, sloppy.PinnedDoesNotPin, sloppy.UnregisterKeepsLock,
             acl_mutants.UnregisterKeepsLock, acl_mutants.PinnedDoesNotPin, acl_mutants.MallocHostNotLocked]


class Whole:
    """A driver's view without the change reports: a LockCheck on it compares whole every time."""

    def __init__(self, driver):
        self.kernel_locked_pages, self.owns = driver.kernel_locked_pages, driver.owns


def assert_same_both_ways(path: str, cls: type, stale: list | None = None) -> list[Mismatch | None]:
    """Execute the trace on `cls`; after each event, the incremental check's difference and its
    entries' places must be those a whole comparison (in the same process, at the same moment)
    finds. `stale` receives, per event, the entries that predict nothing any more."""
    stale = [] if stale is None else stale
    header, events = read_trace(path)
    sem = semantics_for(header, None, path)
    driver = cls()
    driver.start(header_spec_ref(header, path), header.env)
    try:
        run = Execution(sem, driver, path)
        assert run.locks is not None and run.locks.incremental
        whole = LockCheck(sem, Whole(driver), run.relocator.relocate_range, lambda: [], run.relocator.maps_onto)
        evs = list(events)
        seen = []
        for i, ev in enumerate(evs):
            last = i == len(evs) - 1
            run.step(ev, last=last)
            seen.append(run.locks.mismatch())
            assert seen[-1] == whole.after_event(run.driver_state, run.applied, last), (path, cls.__name__, ev.line)
            assert run.locks.pinned_at == whole.pinned_at, (path, cls.__name__, ev.line)
            stale.append({key for key, at in whole.pinned_at.items() if at is None})
        return seen
    finally:
        driver.close()


CORPUS = sorted((ROOT / "traces" / "acl").glob("*.jsonl"))


@pytest.mark.parametrize("trace", CORPUS, ids=lambda p: p.stem)
def test_corpus_traces_give_the_same_findings_both_ways(trace):
    for cls in (ReferenceDriver, sloppy.PinnedDoesNotPin, acl_mutants.MallocHostNotLocked):
        assert_same_both_ways(str(trace), cls)


@pytest.mark.slow
@pytest.mark.parametrize("trace", sorted((ROOT / "traces" / "cuda").glob("*.jsonl")), ids=lambda p: p.stem)
def test_cuda_corpus_traces_give_the_same_findings_both_ways(trace):
    for cls in (ReferenceDriver, *(getattr(cuda_mutants, n) for n in cuda_mutants.__all__)):
        assert_same_both_ways(str(trace), cls)


# ---- random Ascend traces, conforming or not, on drivers with and without lock bugs

BASES = [0x7F00_0000_0000 + i * 64 * PAGE for i in range(4)]


@st.composite
def acl_events(draw) -> list[dict]:
    """Calls over a few allocations, in any order: frees while registered, double registrations,
    unregistrations of interior pointers and reuse of freed addresses all occur."""
    events = []
    for _ in range(draw(st.integers(1, 24))):
        base = draw(st.sampled_from(BASES))
        ptr = base + draw(st.sampled_from([0, 0, 100, PAGE, 3 * PAGE]))
        size = draw(st.sampled_from([1, PAGE, 2 * PAGE + 8, 5 * PAGE]))
        kind = draw(st.sampled_from(["malloc", "mallochost", "register", "register", "unregister", "free", "freehost",
                                     "getdev"]))
        ret = draw(st.sampled_from([0, 0, 0, 507910, 507911, 107000]))
        if kind == "malloc":
            events.append({"call": "malloc", "args": {"size": 8 * PAGE}, "out": {"ptr": base}})
        elif kind == "mallochost":
            events.append({"call": "aclrtMallocHost", "args": {"size": 8 * PAGE}, "ret": 0, "out": {"hostPtr": base}})
        elif kind == "register":
            flag = draw(st.sampled_from([PINNED, MAPPED, PINNED | MAPPED]))
            events.append({"call": "aclrtHostRegisterV2", "args": {"ptr": ptr, "size": size, "flag": flag}, "ret": ret})
        elif kind == "unregister":
            events.append({"call": "aclrtHostUnregister", "args": {"ptr": ptr}, "ret": ret})
        elif kind == "free":
            events.append({"call": "free", "args": {"ptr": base}})
        elif kind == "freehost":
            events.append({"call": "aclrtFreeHost", "args": {"hostPtr": base}, "ret": 0})
        else:
            events.append({"call": "aclrtHostGetDevicePointer", "args": {"pHost": ptr, "flag": 0}, "ret": ret,
                           **({"out": {"pDevice": 0x12_0000_0000 + ptr}} if ret == 0 else {})})
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=acl_events(), cls=st.sampled_from(LOCK_BUGS))
def test_random_traces_give_the_same_findings_both_ways(tmp_path, events, cls):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [ACL, *events]) + "\n")
    assert_same_both_ways(str(path), cls)


def test_a_mismatch_is_reported_at_every_event_it_lasts(tmp_path):
    """A lock the driver left behind is a finding at each later event, not only where it arose."""
    base = BASES[0]
    events = [
        {"call": "malloc", "args": {"size": 8 * PAGE}, "out": {"ptr": base}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": 2 * PAGE, "flag": PINNED}, "ret": 0},
        {"call": "aclrtHostUnregister", "args": {"ptr": base}, "ret": 0},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 507911},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 507911},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [ACL, *events]) + "\n")
    assert [m is not None and len(m.extra) for m in assert_same_both_ways(str(path), sloppy.UnregisterKeepsLock)] \
        == [False, False, 1, 1, 1]
    report = execute_trace(str(path), sloppy.UnregisterKeepsLock)
    assert [f.line for f in report.findings if f.rule == "EXEC-LOCK-EXTRA"] == [4, 5, 6]


def test_without_the_kernel_probe_the_reading_falls_back_to_smaps(tmp_path, monkeypatch):
    monkeypatch.setattr(pinning, "kernel_lock_probe", lambda: None)
    trace = ROOT / "traces" / "acl" / "bad_free_while_registered.jsonl"
    for cls in (ReferenceDriver, sloppy.PinnedDoesNotPin):
        assert_same_both_ways(str(trace), cls)


def test_an_allocation_recorded_over_a_live_one_makes_its_registration_stale(tmp_path):
    """The recording hands out memory it never freed: the registration in it relocates elsewhere
    now, with no memory of the driver's unmapped, so only the relocation says it went stale."""
    base = BASES[0]
    events = [
        {"call": "malloc", "args": {"size": 8 * PAGE}, "out": {"ptr": base}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": 2 * PAGE, "flag": PINNED}, "ret": 0},
        {"call": "malloc", "args": {"size": 8 * PAGE}, "out": {"ptr": base}},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 507911},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [ACL, *events]) + "\n")
    stale: list = []
    assert assert_same_both_ways(str(path), ReferenceDriver, stale) == [None] * 4
    assert [("ACL-PIN-REGISTERED", base) in s for s in stale] == [False, False, True, True]


# ---- conditions that read more than their entry, on a driver of its own (no real memory)

PINS_SPEC = """spec pins "pinned conditions that read a variable and another table"
source DOC "d" "d"
status int success 0
record Buf { sz: u64 }
record Hold { on: bool }
table bufs: addr -> Buf sized by sz
table holds: addr -> Hold
var armed: bool = false
event put(p: addr, s: u64) {
  effect PINS-PUT: { bufs[p] = { sz: s } }
    cite DOC "d"
}
event drop(p: addr) {
  effect PINS-DROP: { if p in bufs { delete bufs[p] } }
    cite DOC "d"
}
event hold(p: addr, on: bool) {
  effect PINS-HOLD: { holds[p] = { on: on } }
    cite DOC "d"
}
event arm(on: bool) {
  effect PINS-ARM: { armed = on }
    cite DOC "d"
}
pinned PINS-ARMED: b in bufs where armed
  cite DOC "d"
pinned PINS-HELD: b in bufs where exists h in holds: h.key == b.key and h.on
  cite DOC "d"
pinned PINS-BIG: b in bufs where b.sz > 8192
  cite DOC "d"
"""


class FakeDriver:
    """Locks a set of pages it is told to, and reports each change as a span."""

    def __init__(self):
        self.kernel: set[int] = set()
        self.spans: list[tuple[int, int]] = []

    def lock(self, lo, hi, on):
        pages = set(range(lo, hi, PAGE))
        self.kernel = self.kernel | pages if on else self.kernel - pages
        self.spans.append((lo, hi))

    def kernel_locked_pages(self):
        return frozenset(self.kernel)

    def take_changed_spans(self):
        spans, self.spans = self.spans, []
        return spans

    def kernel_locked_in(self, spans):
        return frozenset(p for p in self.kernel if any(lo <= p < hi for lo, hi in spans))

    def tracks(self, address, size):
        return True

    def owns(self, address, size):
        return True


PIN_OPS = st.lists(st.tuples(st.sampled_from(["put", "drop", "hold", "arm", "lock", "unlock"]), st.integers(0, 3),
                             st.sampled_from([PAGE, 3 * PAGE]), st.booleans()), max_size=25)


@settings(max_examples=150, deadline=None)
@given(ops=PIN_OPS)
def test_conditions_that_read_the_state_are_evaluated_again_after_any_change(ops):
    from checker.language.load import check_source
    from checker.language.source import SourceFile
    from checker.model.semantics import Semantics

    sem = Semantics(check_source(SourceFile.of("<pins>", PINS_SPEC)), {})
    assert [local for _, _, local in sem.pinned_decls] == [False, False, True]
    st_ = sem.initial_state()
    driver = FakeDriver()
    same = (lambda lo, hi: (lo, hi)), (lambda: []), (lambda page: True)
    check = LockCheck(sem, driver, *same)
    whole = LockCheck(sem, Whole(driver), *same)
    assert check.incremental and not whole.incremental
    for op, which, size, on in ops:
        base = 0x10_0000 + which * 4 * PAGE
        journal = None
        if op in ("lock", "unlock"):
            driver.lock(base, base + size, op == "lock")
        else:
            args = {"put": {"p": base, "s": size}, "drop": {"p": base}, "hold": {"p": base, "on": on},
                    "arm": {"on": on}}[op]
            sem.apply(st_, op, args, {})
            journal = st_.journal
        assert check.after_event(st_, journal, False) == whole.after_event(st_, journal, False), (op, which, size, on)
        assert check.pinned_at == whole.pinned_at


FIELDS_SPEC = """spec fields "pinned conditions that read some of their entry's fields"
source DOC "d" "d"
status int success 0
record Buf { sz: u64, on: bool, note: u64 }
table bufs: addr -> Buf sized by sz
event put(p: addr, s: u64) {
  effect FIELDS-PUT: { bufs[p] = { sz: s, on: false, note: 0 } }
    cite DOC "d"
}
event drop(p: addr) {
  effect FIELDS-DROP: { if p in bufs { delete bufs[p] } }
    cite DOC "d"
}
event flag(p: addr, on: bool) {
  effect FIELDS-FLAG: { if p in bufs { bufs[p].on = on } }
    cite DOC "d"
}
event note(p: addr, n: u64) {
  effect FIELDS-NOTE: { if p in bufs { bufs[p].note = n } }
    cite DOC "d"
}
event grow(p: addr, s: u64) {
  effect FIELDS-GROW: { if p in bufs { bufs[p].sz = s } }
    cite DOC "d"
}
pinned FIELDS-ON: b in bufs where b.on
  cite DOC "d"
pinned FIELDS-BIG: b in bufs where b.sz > 8192
  cite DOC "d"
"""

class UnmappingDriver(FakeDriver):
    """Also unmaps memory on its own (the recording does not know), reporting the span as the
    reference driver's arena does: entries predicting pages there predict nothing any more."""

    def __init__(self):
        super().__init__()
        self.gone: set[int] = set()

    def unmap(self, lo, hi):
        pages = set(range(lo, hi, PAGE))
        self.gone |= pages
        self.kernel = self.kernel - pages
        self.spans.append((lo, hi))

    def owns(self, address, size):
        return not any(p in self.gone for p in range(address - address % PAGE, address + size, PAGE))


FIELD_OPS = st.lists(st.tuples(st.sampled_from(["put", "drop", "flag", "note", "grow", "lock", "unlock", "unmap"]),
                               st.integers(0, 3), st.sampled_from([PAGE, 3 * PAGE]), st.booleans()), max_size=25)


def fields_semantics():
    from checker.language.load import check_source
    from checker.language.source import SourceFile
    from checker.model.semantics import Semantics

    return Semantics(check_source(SourceFile.of("<fields>", FIELDS_SPEC)), {})


def apply_field_op(sem, st_, op, base, size, on):
    args = {"put": {"p": base, "s": size}, "drop": {"p": base}, "flag": {"p": base, "on": on},
            "note": {"p": base, "n": size + on}, "grow": {"p": base, "s": size}}[op]
    sem.apply(st_, op, args, {})
    return st_.journal


@settings(max_examples=150, deadline=None)
@given(ops=FIELD_OPS)
def test_changes_of_an_entrys_fields_give_the_whole_comparisons_answer(ops):
    # Each event's changed entries are evaluated once, whatever their reasons (a journalled change,
    # a changed span of the driver's memory): a change of a field a local declaration reads (on,
    # sz) or of one none reads (note), and memory the driver unmapped under an entry, must give the
    # whole comparison's answer.
    sem = fields_semantics()
    assert [local for _, _, local in sem.pinned_decls] == [True, True]
    st_ = sem.initial_state()
    driver = UnmappingDriver()
    same = (lambda lo, hi: (lo, hi)), (lambda: []), (lambda page: True)
    check = LockCheck(sem, driver, *same)
    whole = LockCheck(sem, Whole(driver), *same)
    for op, which, size, on in ops:
        base = 0x10_0000 + which * 4 * PAGE
        journal = None
        if op in ("lock", "unlock"):
            driver.lock(base, base + size, op == "lock")
        elif op == "unmap":
            driver.unmap(base, base + size)
        else:
            journal = apply_field_op(sem, st_, op, base, size, on)
        assert check.after_event(st_, journal, False) == whole.after_event(st_, journal, False), (op, which, size, on)
        assert check.pinned_at == whole.pinned_at



# StartIndex: the entries by start that a changed span or a relocated range asks for, against a
# plain set of (start, item) pairs; both kinds of index (the C module's SortedKeys, a SortedList),
# and starts beyond 64 bits, which move a SortedKeys index to a SortedList on the way.
_START = st.one_of(st.integers(0, 64), st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, -1, -(2**63) - 1]))
_INDEX_OPS = st.lists(st.tuples(st.sampled_from(["add", "discard", "within"]), _START, st.integers(0, 3),
                                st.integers(0, 70)), max_size=60)


@pytest.mark.parametrize("native", [True, False], ids=["sortedkeys", "sortedlist"])
@settings(max_examples=150, deadline=None)
@given(ops=_INDEX_OPS)
def test_start_index_answers_as_a_set_of_pairs(native, ops):
    index, model = StartIndex(native), set()
    for op, start, item, width in ops:
        if op == "add":
            index.add(start, item)
            model.add((start, item))
        elif op == "discard":
            index.discard(start, item)
            model.discard((start, item))
        else:
            got = index.within(start, start + width)
            assert sorted(got) == sorted(i for s, i in model if start <= s < start + width)
    assert sorted(index.within(-(2**70), 2**70)) == sorted(i for _, i in model)


def test_a_start_beyond_64_bits_moves_the_index_to_a_sorted_list():
    index = StartIndex()
    index.add(5, "a")
    index.add(2**64, "b")
    assert index.starts.native is False
    assert index.within(0, 2**65) == ["a", "b"]
    assert index.within(6, 2**64) == []


def test_a_huge_prediction_is_counted_not_walked(tmp_path):
    """A driver's success for 2**63 bytes of aclrtMallocHost predicts 2**51 locked pages: the check
    counts them against the kernel's few locked pages instead of walking them (it hung), and
    reports the pages the driver did not lock."""
    import signal

    from tests.drivers.thirdparty import TruncatesSizes
    huge = 1 << 63
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [
        ACL, {"call": "aclrtMallocHost", "args": {"size": huge}, "ret": 0, "out": {"hostPtr": 0x200000}},
        {"call": "malloc", "args": {"size": PAGE}, "out": {"ptr": 0x100000}}]) + "\n")

    def hung(*_):
        raise TimeoutError("the lock check walks the predicted pages one by one")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, 20)
    try:
        report = execute_trace(str(path), TruncatesSizes)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pinned = [f for f in report.findings if f.kind == "pinning"]
    assert [(f.line, f.rule) for f in pinned] == [(2, "ACL-PIN-MALLOC-HOST"), (3, "ACL-PIN-MALLOC-HOST")]
    assert f"{huge // PAGE - 1} page(s)" in pinned[0].message  # all but the one page it locked


# ---- checker._native's lock-check set work against the Python originals

needs_native_sync = pytest.mark.skipif(lockcheck.NATIVE_SYNC is None, reason="checker._native is not built")
# Pages near one another and a few far apart; a start or end beyond what the C code reads as an
# address (negative, or 2**62 and above) sends the caller back to the Python original.
_PAGES = st.integers(0, 40).map(lambda i: 0x7F00_0000_0000 + i * PAGE) | st.sampled_from([0, PAGE, 2**62 - PAGE])
_BOUNDS = st.integers(0, 44).map(lambda i: 0x7F00_0000_0000 + i * PAGE + (i % 3 == 1) * 100) | st.sampled_from(
    [0, -PAGE, 2**62, 2**64 + PAGE])


def _unit(decl: int) -> int:
    return 1 << (lockcheck.COUNT_BITS * decl)


@needs_native_sync
@settings(max_examples=300, deadline=None)
@given(kernel=st.sets(_PAGES), cover=st.dictionaries(_PAGES, st.sampled_from([1, 2, _unit(1), _unit(2) + 3])),
       missing=st.sets(_PAGES), extra=st.sets(_PAGES), dirty=st.sets(_PAGES),
       spans=st.lists(st.tuples(_BOUNDS, _BOUNDS), max_size=4), locked=st.none() | st.frozensets(_PAGES))
def test_the_sets_synced_in_c_are_those_the_python_original_leaves(kernel, cover, missing, extra, dirty, spans, locked):
    """`sync_locked` against `sync_pages` on random sets: the same kernel, dirty, missing and extra
    sets afterwards (the cover unchanged), spans of either size against the kernel's pages (its two
    ways of finding them), unaligned, empty and reversed spans among them; where a span is out of
    the C code's reach it changes nothing and says so, and the caller runs the original."""
    sets = [set(kernel), dict(cover), set(missing), set(extra), set(dirty)]
    reference = [set(kernel), dict(cover), set(missing), set(extra), set(dirty)]
    assert lockcheck.sync_pages(*reference, spans, locked, PAGE)
    in_reach = all(0 <= x < 2**62 for span in spans for x in span)
    assert lockcheck.NATIVE_SYNC(*sets, list(spans), locked, PAGE) is in_reach
    if in_reach:
        assert sets == reference
    else:
        assert sets == [kernel, cover, missing, extra, dirty]


@needs_native_sync
def test_sync_in_c_declines_what_it_does_not_read():
    """Arguments of another shape (a frozenset for a set, a tuple of spans, a span of three) leave
    everything as it was and answer False: the caller then runs the Python original."""
    sets = [{PAGE}, {PAGE: 1}, set(), set(), {2 * PAGE}]
    assert lockcheck.NATIVE_SYNC(frozenset({PAGE}), *sets[1:], [], None, PAGE) is False
    assert lockcheck.NATIVE_SYNC(*sets, ((0, PAGE),), None, PAGE) is False
    assert lockcheck.NATIVE_SYNC(*sets, [(0, PAGE, 1)], None, PAGE) is False
    assert sets == [{PAGE}, {PAGE: 1}, set(), set(), {2 * PAGE}]
    with pytest.raises(ValueError):
        lockcheck.NATIVE_SYNC(*sets, [], None, 0)


@needs_native_sync
@settings(max_examples=300, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), st.integers(0, 6), st.booleans()), max_size=20),
       track=st.booleans())
def test_pages_counted_in_c_are_those_the_python_original_counts(ops, track):
    """`predict_pages` in C against the original on a random sequence of entries (three
    declarations) counted in and out: the same cover, keys in the same order, and the same dirty
    pages; taking out a page nothing counts raises KeyError both ways."""
    base = 0x7F00_0000_0000
    native, reference = {}, {}
    dirty_c: set | None = set() if track else None
    dirty_py: set | None = set() if track else None
    live: list[tuple[int, int, int]] = []
    for decl, first, pages, add in ops:
        if add or not live:
            entry = (decl, base + first * PAGE, base + (first + pages) * PAGE)
            live.append(entry)
            delta = True
        else:
            entry = live.pop(first % len(live))
            delta = False
        d, start, stop = entry
        assert lockcheck.NATIVE_PREDICT(native, start, stop, PAGE, _unit(d), delta, dirty_c)
        lockcheck.predict_pages(reference, start, stop, PAGE, _unit(d), delta, dirty_py)
        assert list(native.items()) == list(reference.items())
        assert dirty_c == dirty_py
    with pytest.raises(KeyError):
        lockcheck.NATIVE_PREDICT({}, base, base + PAGE, PAGE, 1, False, None)
    with pytest.raises(KeyError):
        lockcheck.predict_pages({}, base, base + PAGE, PAGE, 1, False, None)
    assert lockcheck.NATIVE_PREDICT({}, -PAGE, 0, PAGE, 1, True, None) is False  # (out of reach: the original runs)


@pytest.mark.skipif(lockcheck.NATIVE_SYNC is None or pinning.segment_loop(pinning.kernel_lock_probe()) is None,
                    reason="checker._native is not built")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=acl_events(), cls=st.sampled_from(LOCK_BUGS))
def test_the_lock_check_in_c_finds_what_the_python_one_finds(tmp_path, monkeypatch, events, cls):
    """Random traces executed with the lock check's set work and the arena's kernel reading in C,
    then with the Python originals alone: the same findings, event by event."""
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [ACL, *events]) + "\n")
    in_c = execute_trace(str(path), cls)
    with monkeypatch.context() as m:
        m.setattr(lockcheck, "NATIVE_SYNC", None)
        m.setattr(lockcheck, "NATIVE_PREDICT", None)
        m.setattr(pinning, "segment_loop", lambda probe, native=True: None)
        in_python = execute_trace(str(path), cls)
    assert [(f.line, f.rule, f.kind, f.message) for f in in_c.findings] == \
        [(f.line, f.rule, f.kind, f.message) for f in in_python.findings]
