"""Ordered int keys for the executor's address tables: add, remove, the keys in a range and the key
before a value, each O(log n).

The drivers' ordered tables are `IntMap`s (a dict by start address that keeps an `IntKeys` of its
keys); the lock check's index of entries by start keeps an `IntKeys` of its own. The keys are kept
in the C module's `SortedKeys` where it is built, one C call per operation where a SortedDict or a
SortedList of tuples took several Python calls; else, and from the first key it cannot hold
(beyond 64 bits, or not an int), in a SortedList. Keys are unique: the caller adds a key only when
it does not hold it, and removes it only when it does.
"""

from __future__ import annotations

from typing import Any

from sortedcontainers import SortedList

from ..model.state import NATIVE


class IntKeys:
    """A sorted set of int keys (see the module's docstring)."""

    __slots__ = ("keys", "native")

    def __init__(self, native: bool = True) -> None:
        self.native = native and NATIVE is not None  # native False: the SortedList from the start (tests)
        self.keys: Any = NATIVE.SortedKeys() if self.native else SortedList()

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self):
        return iter(self.keys)

    def add(self, key: Any) -> None:
        if self.native:
            try:
                self.keys.add(key)
                return
            except (OverflowError, TypeError):
                self.native = False
                self.keys = SortedList(self.keys)
        self.keys.add(key)

    def remove(self, key: Any) -> None:
        self.keys.remove(key)

    def clear(self) -> None:
        self.keys = NATIVE.SortedKeys() if self.native else SortedList()

    def within(self, lo: int, hi: int) -> list:
        """The keys k with lo <= k < hi, in order."""
        if self.native:
            return self.keys.irange(lo, hi)
        return list(self.keys.irange(lo, hi, inclusive=(True, False)))

    def before(self, x: int) -> Any:
        """The largest key below x, or None."""
        if self.native:
            return self.keys.neighbours(x)[0]
        i = self.keys.bisect_left(x)
        return self.keys[i - 1] if i else None


_ABSENT = object()  # no entry (a map's values may be None)


class IntMap(dict):
    """A dict by int key (an address) that keeps its keys in order as well (an IntKeys), for the
    drivers' tables: `floor_item` and `irange` each cost a dict lookup and a call of the C module,
    where a SortedDict's bisection and positional reads took several Python calls, and its writes
    one more.

    Only `d[k] = v`, `del d[k]`, `pop` and `clear` keep the order; the dict methods that would go
    around them (`setdefault`, `update`, `popitem`, `|=`) raise TypeError. Iteration is in
    insertion order, as a dict's; `order` holds the keys in order."""

    __slots__ = ("order",)

    def __init__(self) -> None:
        super().__init__()
        self.order = IntKeys()

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self:
            order = self.order
            if order.native:  # (IntKeys.add's first try, inline: the drivers insert at most calls)
                try:
                    order.keys.add(key)
                except (OverflowError, TypeError):
                    order.add(key)  # (it tries again, then moves to a SortedList)
            else:
                order.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self.order.remove(key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            self.order.remove(key)
        return dict.pop(self, key, *default)

    def clear(self) -> None:
        dict.clear(self)
        self.order.clear()

    def _around_the_order(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an IntMap keeps its keys' order only through d[k] = v, del d[k], pop and clear")

    setdefault = update = popitem = __ior__ = _around_the_order

    def __reduce__(self) -> tuple:
        # pickle, copy and deepcopy: rebuilt through __setitem__, so the copy has its own order (a
        # dict subclass's default would share it, or set the items before the order exists).
        return _int_map_of, (list(dict.items(self)),)

    def floor_item(self, x: int) -> tuple[Any, Any] | None:
        """(key, value) of the largest key <= x, or None."""
        value = self.get(x, _ABSENT)
        if value is not _ABSENT:  # the usual question, an entry's own key: no search
            return x, value
        key = self.order.before(x)
        return None if key is None else (key, dict.__getitem__(self, key))

    def irange(self, lo: int, hi: int) -> list:
        """The keys k with lo <= k < hi, in order."""
        return self.order.within(lo, hi)

    def meeting(self, lo: int, hi: int) -> list:
        """In order, the keys whose entries can reach into [lo, hi) when the entries are ranges
        starting at their keys: the last key below lo, then the keys in [lo, hi)."""
        inside = self.order.within(lo, hi)
        before = self.order.before(lo)
        return inside if before is None else [before, *inside]


def _int_map_of(items: list) -> IntMap:
    table = IntMap()
    for key, value in items:
        table[key] = value
    return table
