"""The model's state: variables and tables, each table an ordered interval index (in C when checker._native
is built, in Python otherwise)."""

from __future__ import annotations

import heapq
import os
import sys
from bisect import bisect_left, bisect_right
from typing import Any, Callable, Sequence

from sortedcontainers import SortedList


# ---------------------------------------------------------------- state


def overlap_window(base: int, end: int, largest: int) -> tuple[int, int]:
    """[lo, hi): the keys of the entries that may overlap [base, end), given the largest entry size.

    Only non-empty ranges overlap, so an entry (k, s) qualifies only if s > 0, k < end and
    k + s > base, hence k > base - largest. The C module's tables (checker/native/_native.c,
    WINDOW_LOOP) use the same bounds; tests/test_table_index.py checks that they agree.
    """
    return base - largest + 1, end


def containment_window(base: int, end: int, largest: int) -> tuple[int, int]:
    """[lo, hi): the keys of the entries that may contain [base, end) (an address x is [x, x + 1)).

    (k, s) contains [base, end) iff k <= base and end <= k + s, hence k >= end - largest; the lower
    bound min(base, end) - largest also covers inverted (negative-size) queries.
    """
    return (base if base < end else end) - largest, base + 1


class _TableOps:
    """A keyed collection of records; sized tables keep an interval index for range queries.

    The index of a sized table is its sorted keys plus the largest size of any entry (a max-heap
    with lazy deletion). A query for the entries whose range overlaps or contains a given range
    then only looks at keys within one maximum size of it: O(log n + k) for k candidates, and exact
    (the candidates are a superset of the answer; the caller tests each). One large entry makes
    that window as wide as the table, so while a table is known to be separated (`_separated`: no
    key lies inside another entry's range, as in a trace that keeps the bundled specs' invariants)
    the queries ask only the entry before the range and the entries within it: O(log n) plus the
    entries that do overlap. Every put checks its neighbours to keep the flag true; a table that
    loses it walks the window until it is empty again.

    The sorted keys are a plain list while the table is small (insertion there is a memmove of at
    most SMALL pointers, several times cheaper than a SortedList's bookkeeping at a few hundred
    live entries; PyTable's SMALL is larger) and an O(log n) ordered index once it grows past
    SMALL (`big_index`: the C module's SortedKeys, whose keys the C probes walk, or a SortedList
    in pure Python and for keys SortedKeys cannot hold); it goes back to a list below SMALL // 2.

    These methods are the reference. `Table` is `PyTable` (them alone) or, when the C module
    `checker._native` is built, a subclass of its `TableCore` whose put, remove and the three
    `any_*` probes run in C for the common case and hand every other case to the `_slow_*`
    aliases below (see checker/native/_native.c).
    """

    __slots__ = ()

    SMALL = 2048

    def __init__(self, sized_by: str | None, name: str = "", small: int | None = None):
        self.name = name
        self.rows: dict[Any, dict] = {}
        # interned, as the records' field names are: looking the size up then compares pointers
        self.sized_by = sys.intern(sized_by) if sized_by else sized_by
        self.small = self.SMALL if small is None else small  # tests set 0: always a SortedList
        self.keys: list | SortedList | None = (SortedList() if self.small == 0 else []) if sized_by else None
        self._size_count: dict[int, int] = {}
        self._size_heap: list[int] = []  # negated sizes; stale entries are dropped lazily
        self._largest: int | None = None  # the largest size while known; None: ask the heap
        # True only while the table is known to be separated: no entry's key lies inside another
        # entry's non-empty range (so non-empty ranges are disjoint), as a table of registrations or
        # allocations is in a trace that keeps its spec's invariants. Then only the entry before an
        # address can contain it, and the probes ask that one entry instead of walking the window of
        # keys one largest size wide (which one large entry widens to the whole table). False is
        # always safe: the window's walk is exact either way.
        self._separated = True
        # Every put/remove is appended as (table, key, "put"|"remove", previous record): `apply`
        # rolls a failed effect back with it, and the replayer learns which line made each entry.
        self.journal: list | None = None

    @staticmethod
    def big_index(keys: list) -> Any:
        """The ordered index of a table grown past SMALL keys (the pure-Python one)."""
        return SortedList(keys)

    def put(self, key, record: dict) -> None:
        rows = self.rows
        old = rows.get(key)
        journal = self.journal
        if journal is not None:
            journal.append((self.name, key, "put", old))
        field = self.sized_by
        if field is not None:
            size = record[field]
            separation_known = False
            if old is None:
                keys = self.keys
                if type(keys) is list:
                    i = bisect_right(keys, key)
                    keys.insert(i, key)
                    if len(keys) > self.small:
                        try:
                            self.keys = self.big_index(keys)
                        except (OverflowError, TypeError):
                            self.keys = SortedList(keys)
                    elif self._separated:  # `_keeps_separated`, with the neighbours the insertion found
                        self._separated = self._separated_between(
                            keys[i - 1] if i else None, keys[i + 1] if i + 1 < len(keys) else None, key, size)
                        separation_known = True
                elif type(keys) is SortedList and self._separated and type(key) is int:
                    self._separated = self._sorted_list_add(keys, key, size)
                    separation_known = True
                else:
                    try:
                        keys.add(key)
                    except (OverflowError, TypeError):  # a key SortedKeys cannot hold: a SortedList holds any
                        self.keys = SortedList(keys)
                        self.keys.add(key)
            else:
                self._forget_size(old[field])
            if self._separated and not separation_known:
                self._separated = self._keeps_separated(key, size)
            counts = self._size_count
            count = counts.get(size, 0)
            counts[size] = count + 1
            largest = self._largest
            if largest is not None and size > largest:
                self._largest = size
            if count == 0:
                heap = self._size_heap
                if len(heap) > 2 * len(counts) + 16:  # mostly stale: rebuild, so memory stays bounded
                    heap[:] = [-s for s in counts]
                    heapq.heapify(heap)
                else:
                    heapq.heappush(heap, -size)
        rows[key] = record

    def remove(self, key) -> None:
        old = self.rows.pop(key, None)
        if old is None:
            return
        journal = self.journal
        if journal is not None:
            journal.append((self.name, key, "remove", old))
        field = self.sized_by
        if field is not None:
            keys = self.keys
            if type(keys) is list:
                del keys[bisect_left(keys, key)]
            else:
                if type(keys) is SortedList and self._sorted_list_discard(keys, key):
                    left = keys._len  # (len(keys): SortedList's __len__ is a Python call)
                else:
                    keys.remove(key)
                    left = len(keys)
                if left < self.small // 2:
                    self.keys = list(keys)
            self._forget_size(old[field])
            if not self.rows:
                self._separated = True

    def _forget_size(self, size: int) -> None:
        count = self._size_count[size] - 1
        if count:
            self._size_count[size] = count
        else:
            del self._size_count[size]
            if size == self._largest:
                self._largest = None

    def set_field(self, key, name: str, value) -> None:
        if name == self.sized_by:  # the index must follow a size change
            record = dict(self.rows[key])
            record[name] = value
            self.put(key, record)
            return
        old = self.rows[key]
        if self.journal is not None:
            self.journal.append((self.name, key, "put", old))
        record = old.copy()
        record[name] = value
        self.rows[key] = record

    def _keeps_separated(self, key, size) -> bool:
        """Whether a separated table stays separated with the entry (key, size), its key in the index
        already: the entry before it must not hold `key`, nor may the entry after it lie inside it.
        (In a separated table only the entry before an address can hold it.) False where a size or a
        key cannot be compared: the window's walk answers then."""
        try:
            before, after = self._neighbours(key)
        except (TypeError, KeyError, OverflowError):
            return False
        return self._separated_between(before, after, key, size)

    def _sorted_list_add(self, keys: SortedList, key: int, size) -> bool:
        """`keys.add(key)` for a new int key of a separated table, and `_keeps_separated(key, size)`
        after it, from the one bisection the insertion makes: the neighbours are beside the place
        where the key goes. (SortedList's add, written out on its documented layout: sorted
        sublists `_lists`, their last keys `_maxes`, `_expand` splitting a sublist grown past twice
        the load and keeping the positional `_index` if one is built.)"""
        maxes, lists = keys._maxes, keys._lists
        if not maxes:
            keys.add(key)
            return True
        pos = bisect_right(maxes, key)
        if pos == len(maxes):  # past every key: the last sublist's end
            pos -= 1
            sub = lists[pos]
            before, after = sub[-1], None
            sub.append(key)
            maxes[pos] = key
        else:
            sub = lists[pos]
            i = bisect_right(sub, key)
            sub.insert(i, key)
            before = sub[i - 1] if i else (lists[pos - 1][-1] if pos else None)
            after = sub[i + 1]  # (maxes[pos] > key: a larger key follows in this sublist)
        if keys._index or len(sub) > keys._load << 1:  # (else `_expand` has nothing to do: no call)
            keys._expand(pos)
        keys._len += 1
        return self._separated_between(before, after, key, size)

    @staticmethod
    def _sorted_list_discard(keys: SortedList, key) -> bool:
        """`keys.remove(key)` for the usual case, written out as `_sorted_list_add` is: the key is
        there, and its sublist keeps more than half the load without it (no merge) and no
        positional index is built. False (nothing changed) otherwise: SortedList's remove then."""
        maxes = keys._maxes
        pos = bisect_left(maxes, key)
        if pos == len(maxes) or keys._index:
            return False
        sub = keys._lists[pos]
        if len(sub) <= (keys._load >> 1) + 1:
            return False
        i = bisect_left(sub, key)
        if sub[i] != key:
            return False
        del sub[i]
        keys._len -= 1
        maxes[pos] = sub[-1]
        return True

    def _separated_between(self, before, after, key, size) -> bool:
        """`_keeps_separated` given the keys before and after `key` (None: none)."""
        try:
            if after is not None and size > 0 and after < key + size:
                return False
            largest = self._largest  # (no entry before this put is larger; unknown: read the record)
            if before is None or largest is not None and key - before >= largest:
                return True
            size_before = self.rows[before][self.sized_by]
            return not (size_before > 0 and key < before + size_before)
        except (TypeError, KeyError, OverflowError):
            return False

    def _neighbours(self, x) -> tuple:
        """(the largest key < x, the smallest key > x), each None where there is none."""
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, x)
            j = i + 1 if i < len(keys) and keys[i] == x else i
            return (keys[i - 1] if i else None), (keys[j] if j < len(keys) else None)
        if type(keys) is not SortedList:
            return keys.neighbours(x)  # the C module's SortedKeys
        maxes, lists = keys._maxes, keys._lists  # (their documented-stable layout, as _keys_between)
        pos = bisect_left(maxes, x)
        if pos == len(maxes):
            return (maxes[-1] if maxes else None), None
        sub = lists[pos]
        i = bisect_left(sub, x)  # sub[i] exists: maxes[pos] >= x
        before = sub[i - 1] if i else (lists[pos - 1][-1] if pos else None)
        j = i + 1 if sub[i] == x else i
        after = sub[j] if j < len(sub) else (lists[pos + 1][0] if pos + 1 < len(lists) else None)
        return before, after

    def entries(self) -> list[tuple]:
        return list(self.rows.items())

    def _window(self, lo: int, hi: int) -> list[tuple]:
        """Entries whose key lies in [lo, hi)."""
        rows = self.rows
        return [(k, rows[k]) for k in self._keys_between(lo, hi)]

    def overlapping(self, base: int, end: int) -> list[tuple]:
        """Candidates for `entry.range overlaps [base, end)`."""
        bounds = self._probe_bounds(base, end, True)
        if not bounds:
            return []
        if self._separated:  # the entry before base, and those from base on
            before = self._neighbours(base)[0]
            return ([(before, self.rows[before])] if before is not None else []) + self._window(base, end)
        return self._window(*bounds)

    def containing(self, base: int, end: int) -> list[tuple]:
        """Candidates for `entry.range contains [base, end)` (an address x is [x, x + 1))."""
        bounds = self._probe_bounds(base, end, False)
        if not bounds:
            return []
        if self._separated and base < end:  # only the entry at or before base can hold it
            at = base if base in self.rows else self._neighbours(base)[0]
            return [(at, self.rows[at])] if at is not None else []
        return self._window(*bounds)

    def _probe_bounds(self, base: int, end: int, overlap: bool) -> tuple[int, int] | None:
        """[lo, hi): where the keys of the entries that may overlap (`overlap`) or contain
        [base, end) lie; None when no entry can."""
        if not self.rows or (overlap and end <= base):
            return None
        largest = self.max_size()
        if overlap:
            return overlap_window(base, end, largest) if largest > 0 else None
        return containment_window(base, end, largest)

    # Whole `exists` tests for the fast path: an exact hit on the key first (the usual case: the
    # range asked about is an entry's own), then the window of `overlapping` / `containing` and the
    # exact test of each key in one loop (the same truth as `overlaps` / `contains_range` /
    # `contains_addr` below on (k, k + size)), written out in each because they run for most events;
    # the window's keys come from `_window_keys`, shared by the three.
    # The window skips the exact key: its test there is the exact hit's, with the same answer (the
    # spec's predicates are pure), so asking it again would only repeat the predicate.
    def _window_keys(self, lo: int, hi: int, exact: int, separable: bool) -> Sequence | None:
        """The keys in [lo, hi), or none when the window holds no key but `exact` (whose test the
        probe has made already): the probes' windows, each usual case found by one bisection.
        None where the window holds keys, the table is separated and `separable` (the probe can
        ask the separated way): the probe then asks the entry before its range, and for an
        overlap those within it, not every key one largest size wide."""
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, lo)
            if i == len(keys) or keys[i] >= hi:  # no key in the window (a range no entry is near)
                return ()
            if keys[i] == exact and (i + 1 == len(keys) or keys[i + 1] >= hi):  # only the exact key's
                return ()
            if separable and self._separated:
                return None
            return keys[i:bisect_left(keys, hi, i)]
        if type(keys) is SortedList:  # the usual window: in one sublist, or in the last (else `_keys_between`)
            maxes = keys._maxes
            pos = bisect_left(maxes, lo)
            if pos == len(maxes):
                return ()
            sub = keys._lists[pos]
            i = bisect_left(sub, lo)
            if sub[i] >= hi:  # (sub[i] exists: the sublist's largest key is >= lo)
                return ()
            if sub[i] == exact and (sub[i + 1] >= hi if i + 1 < len(sub) else pos + 1 == len(maxes)):
                return ()  # only the exact key's
            if separable and self._separated:
                return None
            j = bisect_left(sub, hi, i)
            return sub[i:j] if j < len(sub) or pos + 1 == len(maxes) else self._keys_between(lo, hi)
        return None if separable and self._separated else self._keys_between(lo, hi)

    def _entry_before(self, x, largest: int, reach: int):
        """(key, record) of the entry before x, where its size can reach `reach` - key (no larger
        size than `largest` is in the table); None otherwise (its record is then not read)."""
        before = self._neighbours(x)[0]
        if before is None or reach - before > largest:
            return None
        return before, self.rows[before]

    def any_overlapping(self, base: int, end: int, pred: Callable | None = None) -> bool:
        rows = self.rows
        if not rows or end <= base:
            return False
        field = self.sized_by
        record = rows.get(base)
        if record is not None and record[field] > 0 and (pred is None or pred((base, record))):
            return True
        largest = self._largest
        if largest is None:
            largest = self.max_size()
        if largest <= 0:
            return False
        keys = self.keys
        if type(keys) is list and self._separated:
            # What the separated walk below answers, from one bisection of the small table's list:
            # the entry before base (if its size can reach base), then the keys from base on.
            i = bisect_left(keys, base)
            if i:
                before = keys[i - 1]
                if base - before < largest:
                    record = rows[before]
                    size = record[field]
                    if size > 0 and base < before + size and (pred is None or pred((before, record))):
                        return True
            n = len(keys)
            while i < n:
                k = keys[i]
                if k >= end:
                    break
                if k != base:  # (base's own was asked)
                    record = rows[k]
                    if record[field] > 0 and (pred is None or pred((k, record))):
                        return True
                i += 1
            return False
        lo = base - largest + 1  # overlap_window(base, end, largest), inline
        window = self._window_keys(lo, end, base, True)
        if window is None:  # separated: the entry before base, then those from base on (as the walk meets them)
            entry = self._entry_before(base, largest, base + 1)
            if entry is not None:
                before, record = entry
                size = record[field]
                if size > 0 and base < before + size and (pred is None or pred(entry)):
                    return True
            for k in self._keys_between(base + 1, end):
                record = rows[k]
                if record[field] > 0 and (pred is None or pred((k, record))):
                    return True
            return False
        for k in window:
            if k == base:
                continue
            record = rows[k]
            size = record[field]
            if size > 0 and base < k + size and (pred is None or pred((k, record))):  # k < end: the window's bound
                return True
        return False

    def any_containing(self, base: int, end: int, pred: Callable | None = None) -> bool:
        rows = self.rows
        if not rows:
            return False
        field = self.sized_by
        record = rows.get(base)
        if record is not None and end <= base + record[field] and (pred is None or pred((base, record))):
            return True
        largest = self._largest
        if largest is None:
            largest = self.max_size()
        lo = (base if base < end else end) - largest  # containment_window(base, end, largest), inline
        window = self._window_keys(lo, base + 1, base, base < end)
        if window is None:  # separated: only the entry before base can hold it (base's own was asked)
            entry = self._entry_before(base, largest, end)
            return entry is not None and end <= entry[0] + entry[1][field] and (pred is None or bool(pred(entry)))
        for k in window:
            if k == base:
                continue
            record = rows[k]
            if k <= base and end <= k + record[field] and (pred is None or pred((k, record))):
                return True
        return False

    def any_containing_addr(self, x: int, pred: Callable | None = None) -> bool:
        rows = self.rows
        if not rows:
            return False
        field = self.sized_by
        record = rows.get(x)
        if record is not None and record[field] > 0 and (pred is None or pred((x, record))):
            return True
        largest = self._largest
        if largest is None:
            largest = self.max_size()
        lo = x - largest  # containment_window(x, x + 1, largest), inline
        window = self._window_keys(lo, x + 1, x, True)
        if window is None:  # separated: only the entry before x can hold it (x's own was asked)
            entry = self._entry_before(x, largest, x + 1)
            return entry is not None and x < entry[0] + entry[1][field] and (pred is None or bool(pred(entry)))
        for k in window:
            if k == x:
                continue
            record = rows[k]
            if k <= x < k + record[field] and (pred is None or pred((k, record))):
                return True
        return False

    def max_size(self) -> int:
        """The largest size of any entry (the table must not be empty)."""
        largest = self._largest
        if largest is None:
            heap, counts = self._size_heap, self._size_count
            while -heap[0] not in counts:
                heapq.heappop(heap)
            largest = self._largest = -heap[0]
        return largest

    def _keys_between(self, lo: int, hi: int) -> list:
        """The keys in [lo, hi)."""
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, lo)
            return keys[i:bisect_left(keys, hi, i)]
        if type(keys) is not SortedList:
            return keys.irange(lo, hi)
        # A SortedList: walk its sublists directly (its documented-stable `_lists`/`_maxes`
        # layout); positional indexing through the public API costs a tree lookup per element.
        maxes = keys._maxes
        pos = bisect_left(maxes, lo)
        if pos == len(maxes):
            return []
        lists = keys._lists
        sub = lists[pos]
        idx = bisect_left(sub, lo)
        stop = bisect_left(sub, hi, idx)
        if stop < len(sub):
            return sub[idx:stop]
        out = sub[idx:]
        for sub in lists[pos + 1:]:
            stop = bisect_left(sub, hi)
            out += sub[:stop]
            if stop < len(sub):
                break
        return out

    def restore(self, key, old: dict | None) -> None:
        """Undo one journalled change (the journal itself is not touched)."""
        journal, self.journal = self.journal, None
        try:
            if old is None:
                self.remove(key)
            else:
                self.put(key, old)
        finally:
            self.journal = journal

    def copy(self) -> "Table":
        t = type(self)(self.sized_by, self.name, self.small)
        t.rows = dict(self.rows)
        if self.sized_by is not None:
            t.keys = self.keys.copy()
            t._size_count = dict(self._size_count)
            t._size_heap = list(self._size_heap)
            t._largest = self._largest
            t._separated = self._separated
        return t

    # Pickling and copy.copy/deepcopy, the same for both classes (the C base has no default for it).
    def __reduce__(self):
        return type(self), (self.sized_by, self.name, self.small), {f: getattr(self, f) for f in _FIELDS}

    def __setstate__(self, state: dict) -> None:
        for field, value in state.items():
            setattr(self, field, value)

    # What the C methods fall back to (the methods above, even where C overrides them).
    _slow_put = put
    _slow_remove = remove
    _slow_set_field = set_field
    _slow_any_overlapping = any_overlapping
    _slow_any_containing = any_containing
    _slow_any_containing_addr = any_containing_addr


_FIELDS = ("name", "rows", "sized_by", "keys", "small", "_size_count", "_size_heap", "_largest", "_separated", "journal")


class PyTable(_TableOps):
    """A table in pure Python."""

    __slots__ = _FIELDS

    # A plain list stays cheaper here than a SortedList up to about 8,000 keys: its bisections are
    # one C call where the SortedList's take several Python steps, and its memmove on a put or
    # remove only outgrows the SortedList's bookkeeping past about 4,000 keys (bench/bench_replay.py
    # register-heavy, and churn on 3,000-16,000 live registrations, measured at stop 33).
    SMALL = 8192


NATIVE_INTERFACE = 10  # what checker/native/_native.c must say it implements


def _native_module():
    """The C module, unless it is not built (or an old build), or REGCHECK_PURE_PYTHON is set."""
    if os.environ.get("REGCHECK_PURE_PYTHON"):
        return None
    try:
        from .. import _native as module
    except ImportError:
        return None
    return module if getattr(module, "INTERFACE", None) == NATIVE_INTERFACE else None


NATIVE = _native_module()  # also read by checker.engines.replay

if NATIVE is not None:
    class Table(NATIVE.TableCore, _TableOps):
        """A table whose hot operations run in C (checker/native/_native.c), its large index too."""

        __slots__ = ()
        big_index = staticmethod(NATIVE.SortedKeys)
else:
    Table = PyTable  # type: ignore[misc]


class State:
    """State scalars and tables. Mutable for speed; `copy()` and `snapshot()` for pure uses.

    `journal` lists the changes made by the last `Semantics.apply` (entries (table, key, op, old),
    with table None for a state variable): the undo log of a failed effect and the replayer's
    record of which event created which entry.
    """

    __slots__ = ("vars", "tables", "journal")

    def __init__(self, vars: dict, tables: dict[str, Table]):
        self.vars = vars
        self.tables = tables
        self.journal: list = []
        for t in tables.values():
            t.journal = self.journal

    def copy(self) -> "State":
        return State(dict(self.vars), {n: t.copy() for n, t in self.tables.items()})

    def rollback(self) -> None:
        for table, key, op, old in reversed(self.journal):
            if table is None:
                self.vars[key] = old
            else:
                self.tables[table].restore(key, old)
        self.journal.clear()

    def snapshot(self) -> tuple:
        """A hashable, order-independent image of the state (for tests and model checking)."""
        return (
            tuple(sorted(self.vars.items())),
            tuple((n, tuple(sorted((k, tuple(sorted(r.items()))) for k, r in t.rows.items())))
                  for n, t in sorted(self.tables.items())),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.snapshot() == other.snapshot()

    def __repr__(self) -> str:
        tables = {n: dict(t.rows) for n, t in self.tables.items()}
        return f"State(vars={self.vars}, tables={tables})"
