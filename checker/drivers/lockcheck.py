"""The executor's page-lock check, kept up to date event by event.

After every event the executor compares the pages the spec's `pinned` declarations predict locked
(each pinned entry's range, relocated into the driver's memory) with the pages the kernel holds
locked. Computing both sides afresh costs a walk of every pinned entry and a reading of every
mapping's lock state (/proc/self/smaps), per event; `LockCheck` keeps both sides and their
differences instead, and after an event looks again only at:

- model side: the entries the event's effect changed (the model state's journal), the entries whose
  recorded addresses relocate differently (an allocation recorded or released), the entries whose
  driver memory was mapped, unmapped or trimmed, and, at every event, the few entries whose memory
  the driver's change reports do not cover (simulated device memory); a declaration whose condition
  reads more than its entry's own fields is evaluated whole after every change of the state;
- kernel side: the spans the driver itself reports having mapped, unmapped, locked or unlocked
  (`take_changed_spans`), read for those pages alone (`kernel_locked_in`).

A driver that offers no such reports (any driver but the reference one, unless it implements them)
gets the whole comparison after every event, as does every driver at a trace's last event, where
the kernel's locks are read afresh from smaps: that last reading also sees locks taken outside the
driver's reports. Either way the findings are the same: the difference of two page sets, reported
at every event while it lasts.

An entry predicting more pages than `WALKED_PAGES` (a driver that says it allocated 2**63 bytes: 2**51
pages) is kept as its range, never walked page by page: its pages are counted against the kernel's
locked pages (which are real, so few) when the difference is asked for. Its findings are the same.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable, Iterable, NamedTuple

from ..model.semantics import Semantics
from ..model.state import NATIVE, State
from .ordered import IntKeys
from .pinning import PAGE_SIZE

# Past this many pages (1 GiB, four times the reference driver's default cap on locked bytes) an
# entry's prediction is kept as a range rather than page by page: no process locks that much memory
# page by page here, and a driver's claim of a huge allocation must not make the check walk it.
WALKED_PAGES = 1 << 18
# The width of one declaration's count of the entries predicting a page in `LockCheck.cover`: a
# count is at most the number of entries of one table, far below 2**64.
COUNT_BITS = 64
COUNT_MASK = (1 << COUNT_BITS) - 1
# checker._native's versions of `sync_pages` and `predict_pages` where it is built (None: the Python
# originals run); a LockCheck made with native=False runs the originals, as the tests compare them.
NATIVE_SYNC = getattr(NATIVE, "sync_locked", None)
NATIVE_PREDICT = getattr(NATIVE, "predict_pages", None)


class StartIndex:
    """Items by an int start (an entry's key, or where its range lies in the driver's memory):
    `add`, `discard` and the items whose start lies in [lo, hi) (`within`), each O(log n) in the
    starts (checker.drivers.ordered's IntKeys: one C call each where the C module is built, where a
    SortedList of tuples took several Python calls)."""

    __slots__ = ("starts", "items")

    def __init__(self, native: bool = True) -> None:
        self.starts = IntKeys(native)
        self.items: dict[Any, set] = {}  # start -> its items

    def add(self, start: Any, item: Any) -> None:
        items = self.items
        held = items.get(start)
        if held is not None:
            held.add(item)
            return
        self.starts.add(start)
        items[start] = {item}

    def discard(self, start: Any, item: Any) -> None:
        held = self.items.get(start)
        if held is None:
            return
        held.discard(item)
        if not held:
            del self.items[start]
            self.starts.remove(start)

    def within(self, lo: int, hi: int) -> list:
        """The items whose start s has lo <= s < hi."""
        items = self.items
        if not items:
            return []
        out: list = []
        for start in self.starts.within(lo, hi):
            out += items[start]
        return out


def pages_of(lo: int, hi: int, page_size: int) -> range:
    """The pages of [lo, hi): from the one holding lo, none when the range is empty."""
    return range(lo - lo % page_size, hi, page_size) if hi > lo else range(0)


class Mismatch(NamedTuple):
    """The difference after an event: pages predicted locked that the kernel has not locked (with
    the rule predicting the first), and pages locked that nothing predicts."""

    missing: int
    first_missing: int
    rule: str
    extra: tuple[int, ...]


class LockCheck:
    """Predicted against kernel-locked pages, for one execution (see the module's docstring).

    `relocate_range(lo, hi)` gives a recorded range's place in the driver's memory (None: nowhere);
    `take_relocated()` the recorded spans whose relocation changed since it last ran; `maps_onto(page)`
    whether a recorded allocation lies on a driver page (an unpredicted lock elsewhere is no finding)."""

    def __init__(self, sem: Semantics, driver: Any, relocate_range: Callable[[int, int], tuple[int, int] | None],
                 take_relocated: Callable[[], list[tuple[int, int]]], maps_onto: Callable[[int], bool],
                 native: bool = True):
        self.sem, self.driver = sem, driver
        self.sync = NATIVE_SYNC if native else None
        self.predict = NATIVE_PREDICT if native else None
        self.relocate_range, self.take_relocated, self.maps_onto = relocate_range, take_relocated, maps_onto
        self.owns = getattr(driver, "owns", None)
        self.incremental = all(callable(getattr(driver, m, None))
                               for m in ("take_changed_spans", "kernel_locked_in", "tracks"))
        self.take_spans = driver.take_changed_spans if self.incremental else None
        self.decls = sem.pinned_decls
        self.rules = [rule for rule, _, _ in self.decls]
        # Per table, the declarations whose condition reads only the entry's own fields: a change
        # of an entry is asked of those alone; the others are asked of every entry after any change.
        self.local_decls: dict[str, tuple[int, ...]] = {}
        for decl, (_, table, local) in enumerate(self.decls):
            if local:
                self.local_decls[table] = self.local_decls.get(table, ()) + (decl,)
        self.nonlocal_decls = tuple(decl for decl, (_, _, local) in enumerate(self.decls) if not local)
        # (rule, key) -> where the entry's range lay in the driver's memory when first predicted, or
        # None (stale: its memory went or moved under it; it predicts nothing until it goes).
        self.pinned_at: dict[tuple[str, Any], tuple[int, int] | None] = {}
        self.members: list[set] = [set() for _ in self.decls]  # per declaration: keys in pinned_at
        self.by_key = StartIndex()  # (decl, key) of every entry predicting pages, by its key
        self.by_place = StartIndex()  # the same, by where its range lies in the driver's memory
        self.untracked: set[tuple[int, Any]] = set()  # (decl, key) predicting pages the driver's reports miss
        # page -> the entries predicting it, per declaration: declaration d's count in bits
        # [COUNT_BITS * d, COUNT_BITS * (d + 1)) of one int (an update is one addition)
        self.cover: dict[int, int] = {}
        self.kernel: set[int] = set()  # pages the kernel holds locked, as last read
        self.missing: set[int] = set()
        self.extra: set[int] = set()  # locked, predicted by nothing (before the maps_onto filter)
        # (decl, key) -> its pages [first, stop) for an entry predicting more than WALKED_PAGES: in
        # neither `cover` nor `missing`; `extra` may hold kernel pages inside it (mismatch drops them).
        self.oversized: dict[tuple[int, Any], tuple[int, int]] = {}

    # ---- after an event

    def after_event(self, st: State, journal: list | None, last: bool) -> Mismatch | None:
        """Bring both sides up to date after an event (`journal`: the changes the event made to `st`,
        None when it changed nothing) and say how they differ, or None when they agree."""
        if last or not self.incremental:
            self.rebuild(st)
        else:
            spans, relocated = self.take_spans(), self.take_relocated()  # type: ignore[misc]
            if journal or spans or relocated or self.untracked:  # else (most queries) neither side changed
                dirty: set[int] = set()
                evaluate = self._evaluate
                for decl, key in self._entries_to_evaluate(st, journal, spans, relocated):
                    evaluate(st, decl, key, dirty)
                if spans or dirty:
                    self._sync(spans, dirty)
        if self.missing or self.extra or self.oversized:
            return self.mismatch()
        return None

    def rebuild(self, st: State) -> None:
        """Both sides afresh: every pinned entry, and the kernel's locks read whole."""
        for decl in range(len(self.decls)):
            for key in self._keys_of(st, decl):
                self._evaluate(st, decl, key, None)
        take = getattr(self.driver, "take_changed_spans", None)
        if take is not None:
            take()  # the whole reading below covers them
        self.take_relocated()
        self.kernel = set(self.driver.kernel_locked_pages())
        self.missing = {p for p in self.cover if p not in self.kernel}
        self.extra = {p for p in self.kernel if p not in self.cover}

    def mismatch(self) -> Mismatch | None:
        if not self.missing and not self.extra and not self.oversized:
            return None
        ranges = self._oversized_ranges()
        extra = tuple(sorted(p for p in self.extra if self.maps_onto(p) and not _inside(ranges, p)))
        missing = len(self.missing)
        first = min(self.missing) if self.missing else None
        for lo, hi in ranges:
            count, gap = self._unlocked_in(lo, hi)
            missing += count
            if gap is not None and (first is None or gap < first):
                first = gap
        if not missing and not extra:
            return None
        if first is None:
            return Mismatch(0, 0, "", extra)
        return Mismatch(missing, first, self._rule_of(first), extra)

    def _oversized_ranges(self) -> list[tuple[int, int]]:
        """The oversized entries' page ranges, merged and in order."""
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(self.oversized.values()):
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        return merged

    def _unlocked_in(self, lo: int, hi: int) -> tuple[int, int | None]:
        """(the pages of [lo, hi) the kernel has not locked, less those already in `missing`; the
        first of them, or None), found from the kernel's few locked pages, never walking [lo, hi)."""
        locked = sum(1 for p in self.kernel if lo <= p < hi)
        counted = sum(1 for p in self.missing if lo <= p < hi)
        gap = lo
        while gap < hi and gap in self.kernel:
            gap += PAGE_SIZE
        return (hi - lo) // PAGE_SIZE - locked - counted, gap if gap < hi else None

    # ---- the model side

    def _entries_to_evaluate(self, st: State, journal: list | None, spans: list[tuple[int, int]],
                             relocated: list[tuple[int, int]]) -> set[tuple[int, Any]]:
        """Every entry whose prediction the event may have changed, once each (an entry can have
        several reasons: evaluating it again would only repeat the answer)."""
        todo: set[tuple[int, Any]] = set(self.untracked)
        if journal:
            local_decls = self.local_decls
            for change in journal:
                decls = local_decls.get(change[0])  # (table None: a state variable, no entry)
                if decls is not None:
                    key = change[1]
                    for decl in decls:
                        todo.add((decl, key))
            for decl in self.nonlocal_decls:
                todo.update(zip(repeat(decl), self._keys_of(st, decl)))
        if relocated:
            within = self.by_key.within
            for lo, hi in relocated:
                todo.update(within(lo, hi))
        if spans:
            # The driver's memory changed there: those entries' memory may have gone.
            within = self.by_place.within
            for lo, hi in spans:
                todo.update(within(lo, hi))
        return todo

    def _keys_of(self, st: State, decl: int) -> set:
        table = self.decls[decl][1]
        return set(st.tables[table].rows) | self.members[decl]

    def _evaluate(self, st: State, decl: int, key: Any, dirty: set[int] | None) -> None:
        """The entry's prediction now, in place of its last one; the pages whose prediction changed
        go into `dirty`."""
        where = (self.rules[decl], key)
        span = self.sem.pinned_range(st, decl, key)
        pinned_at = self.pinned_at
        old = pinned_at.get(where)
        if span is None:
            if where not in pinned_at:
                return  # predicted nothing, predicts nothing
            del pinned_at[where]
            self.members[decl].discard(key)
            new = None
        else:
            moved = self.relocate_range(*span)
            # (where the entry was first predicted, and still is: the same place, in driver memory)
            new = moved if moved is not None and pinned_at.get(where, moved) == moved and \
                (self.owns is None or self.owns(moved[0], max(moved[1] - moved[0], 1))) else None
            pinned_at[where] = new
            self.members[decl].add(key)
        if old == new:
            return
        if old is not None:
            self._predict(decl, key, old, -1, dirty)
        if new is not None:
            self._predict(decl, key, new, +1, dirty)

    def _predict(self, decl: int, key: Any, place: tuple[int, int], delta: int, dirty: set[int] | None) -> None:
        entry = (decl, key)
        lo, hi = place
        if delta > 0:
            self.by_key.add(key, entry)
            self.by_place.add(lo, entry)
            if self.incremental and not self.driver.tracks(lo, max(hi - lo, 1)):
                self.untracked.add(entry)
        else:
            self.by_key.discard(key, entry)
            self.by_place.discard(lo, entry)
            self.untracked.discard(entry)
        pages = pages_of(lo, hi, PAGE_SIZE)
        if len(pages) > WALKED_PAGES:
            if delta > 0:
                self.oversized[entry] = (pages.start, pages.stop)
            else:
                del self.oversized[entry]
            return  # (its kernel pages are judged in `mismatch`, against its range)
        unit, predict = 1 << (COUNT_BITS * decl), self.predict
        if predict is None or not predict(self.cover, pages.start, pages.stop, PAGE_SIZE, unit, delta > 0, dirty):
            predict_pages(self.cover, pages.start, pages.stop, PAGE_SIZE, unit, delta > 0, dirty)

    def _rule_of(self, page: int) -> str:
        """The rule predicting a page: that of the first declaration with an entry on it."""
        counts = self.cover.get(page, 0)
        decls = [d for d in range(len(self.decls)) if counts >> (COUNT_BITS * d) & COUNT_MASK]
        decls += [d for (d, _), (lo, hi) in self.oversized.items() if lo <= page < hi]
        return self.rules[min(decls)]

    # ---- the kernel side

    def _sync(self, spans: list[tuple[int, int]], dirty: set[int]) -> None:
        """Read the kernel's locks again on the driver's changed spans (the entries predicting pages
        there were evaluated again first, by `_entries_to_evaluate`), then judge `missing` and `extra`
        again on the pages either side changed (`sync_pages`, in C where it is built)."""
        locked = self.driver.kernel_locked_in(spans) if spans else None
        sync = self.sync
        if sync is None or not sync(self.kernel, self.cover, self.missing, self.extra, dirty, spans, locked, PAGE_SIZE):
            sync_pages(self.kernel, self.cover, self.missing, self.extra, dirty, spans, locked, PAGE_SIZE)


def predict_pages(cover: dict[int, int], start: int, stop: int, page_size: int, unit: int, add: bool,
                  dirty: set[int] | None) -> bool:
    """An entry's prediction of the pages range(start, stop, page_size) added to (`add`) or taken
    from their counts in `cover` (`unit`: one entry of its declaration), each page going into `dirty`
    (None: nowhere). The reference for checker._native's `predict_pages`, which answers the same."""
    pages = range(start, stop, page_size)
    if add:
        get = cover.get
        cover.update({page: get(page, 0) + unit for page in pages})
    else:
        pop = cover.pop
        for page in pages:
            counts = pop(page) - unit
            if counts:  # another entry still predicts the page
                cover[page] = counts
    if dirty is not None:
        dirty.update(pages)
    return True


def sync_pages(kernel: set[int], cover: dict[int, int], missing: set[int], extra: set[int], dirty: set[int],
               spans: list[tuple[int, int]], locked: Iterable[int] | None, page_size: int) -> bool:
    """The kernel's locked pages (`kernel`) read again on `spans`: its pages there dropped and
    `locked` (those the kernel holds locked there now) added, every page either touched going into
    `dirty`; then `missing` (predicted in `cover`, not locked) and `extra` (locked, not predicted)
    judged again on the pages of `dirty`, by set operations (no Python step per page). The
    reference for checker._native's `sync_locked`, which leaves the same sets."""
    if kernel:
        for lo, hi in spans:
            if (hi - lo) // page_size <= len(kernel):
                gone = kernel.intersection(pages_of(lo, hi, page_size))
            else:
                gone = [p for p in kernel if lo <= p < hi]  # type: ignore[assignment]
            if gone:
                kernel.difference_update(gone)
                dirty.update(gone)
    if locked:
        kernel.update(locked)
        dirty.update(locked)
    if dirty:
        predicted = cover.keys() & dirty
        now = kernel & dirty
        missing.difference_update(dirty)
        missing.update(predicted.difference(now))
        extra.difference_update(dirty)
        extra.update(now.difference(predicted))
    return True


def _inside(ranges: list[tuple[int, int]], page: int) -> bool:
    return any(lo <= page < hi for lo, hi in ranges)
