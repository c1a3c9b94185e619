"""Lock counts by address range: how many times each page-aligned range is locked, kept as disjoint
segments so that every operation costs time in the segments it touches, never in pages."""

from __future__ import annotations

import bisect


# --- lock counts by range ------------------------------------------------------------------------


class LockCounts:
    """Lock counts over page-aligned address ranges: disjoint segments [start, end) with a count >= 1.

    Every operation costs time in the number of segments it touches, never in pages, so a 1 TiB
    range costs what a 4 KiB one does.
    """

    __slots__ = ("_starts", "_segs", "total")

    def __init__(self) -> None:
        self._starts: list[int] = []  # sorted segment starts
        self._segs: dict[int, list[int]] = {}  # start -> [end, count]
        self.total = 0  # bytes with a count >= 1

    def __bool__(self) -> bool:
        return bool(self._starts)

    def clear(self) -> None:
        self._starts.clear()
        self._segs.clear()
        self.total = 0

    def layout(self) -> tuple[list[int], dict[int, list[int]]]:
        """(the sorted segment starts, start -> [end, count]): the structures themselves, for
        checker._native's `locked_in_segments` to read in place of `segments` (never to change)."""
        return self._starts, self._segs

    def segments(self, lo: int = 0, hi: int | None = None) -> list[tuple[int, int, int]]:
        """(start, end, count) of the segments meeting [lo, hi), clipped to it, in address order."""
        starts, segs = self._starts, self._segs
        if hi is None:  # no bound: the last segment's end, the highest of all
            if not starts:
                return []
            hi = segs[starts[-1]][0]
        out = []
        i = bisect.bisect_right(starts, lo)
        if i:  # the segment starting at or before lo, if it reaches past lo
            start = starts[i - 1]
            end, count = segs[start]
            if end > lo and start < hi:
                out.append((start if start > lo else lo, end if end < hi else hi, count))
        for start in starts[i:bisect.bisect_left(starts, hi, i)]:  # those starting inside (lo, hi)
            end, count = segs[start]
            out.append((start, end if end < hi else hi, count))
        return out

    def covered(self, lo: int, hi: int) -> int:
        """Bytes of [lo, hi) with a count >= 1."""
        return sum(e - s for s, e, _ in self.segments(lo, hi))

    def gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """(start, length) runs of [lo, hi) with no count."""
        out, at = [], lo
        for s, e, _ in self.segments(lo, hi):
            if s > at:
                out.append((at, s - at))
            at = e
        if at < hi:
            out.append((at, hi - at))
        return out

    def runs_at(self, lo: int, hi: int, count: int) -> list[tuple[int, int]]:
        """(start, length) runs of [lo, hi) whose count is exactly `count`, adjacent ones merged."""
        out: list[tuple[int, int]] = []
        for s, e, c in self.segments(lo, hi):
            if c != count:
                continue
            if out and out[-1][0] + out[-1][1] == s:
                out[-1] = (out[-1][0], out[-1][1] + e - s)
            else:
                out.append((s, e - s))
        return out

    def add(self, lo: int, hi: int, delta: int) -> None:
        """Add `delta` (+1 or -1) to every byte of [lo, hi); a count reaching 0 is dropped. A -1 must
        only be applied where every byte has a count."""
        starts, segs = self._starts, self._segs
        i = bisect.bisect_left(starts, lo)
        if delta > 0:
            if lo < hi and (i == len(starts) or starts[i] > hi) and (i == 0 or segs[starts[i - 1]][0] < lo):
                # The usual lock: a range no segment meets or touches, so one new segment, with
                # nothing to split or join (what the general way below ends with too).
                starts.insert(i, lo)
                segs[lo] = [hi, delta]
                self.total += hi - lo
                return
        elif i < len(starts) and starts[i] == lo:
            seg = segs[lo]
            if seg[0] == hi and seg[1] == -delta:  # the usual unlock: the range's own segment, held once
                del starts[i]
                del segs[lo]
                self.total -= hi - lo
                return
        self._split(lo)
        self._split(hi)
        if delta > 0:
            for start, length in self.gaps(lo, hi):
                self._insert(start, start + length, 0)
        i = bisect.bisect_left(self._starts, lo)
        while i < len(self._starts) and self._starts[i] < hi:
            start = self._starts[i]
            seg = self._segs[start]
            seg[1] += delta
            if seg[1] == 0:
                self.total -= seg[0] - start
                del self._segs[start]
                del self._starts[i]
                continue
            i += 1
        self._merge_around(lo, hi)

    def drop(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Forget every count in [lo, hi); returns the (start, length) runs that had one."""
        held = [(s, e - s) for s, e, _ in self.segments(lo, hi)]
        if not held:  # no segment meets the range (the usual unmapping: memory never locked)
            return []
        self._split(lo)
        self._split(hi)
        i = bisect.bisect_left(self._starts, lo)
        while i < len(self._starts) and self._starts[i] < hi:
            start = self._starts.pop(i)
            self.total -= self._segs.pop(start)[0] - start
        merged: list[tuple[int, int]] = []
        for s, n in held:
            if merged and merged[-1][0] + merged[-1][1] == s:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((s, n))
        return merged

    def pages(self, page_size: int) -> dict[int, int]:
        """Page address -> count (for inspection: one entry per locked page)."""
        return {p: c for s, e, c in self.segments() for p in range(s, e, page_size)}

    def _insert(self, start: int, end: int, count: int) -> None:
        bisect.insort(self._starts, start)
        self._segs[start] = [end, count]
        self.total += end - start

    def _split(self, at: int) -> None:
        """Make `at` a segment boundary if a segment spans it."""
        i = bisect.bisect_right(self._starts, at) - 1
        if i < 0:
            return
        start = self._starts[i]
        seg = self._segs[start]
        if start < at < seg[0]:
            self._segs[at] = [seg[0], seg[1]]
            seg[0] = at
            self._starts.insert(i + 1, at)

    def _merge_around(self, lo: int, hi: int) -> None:
        """Join neighbouring segments with equal counts in and at the edges of [lo, hi)."""
        i = max(bisect.bisect_left(self._starts, lo) - 1, 0)
        while i + 1 < len(self._starts) and self._starts[i] <= hi:
            a, b = self._starts[i], self._starts[i + 1]
            sa, sb = self._segs[a], self._segs[b]
            if sa[0] == b and sa[1] == sb[1]:
                sa[0] = sb[0]
                del self._segs[b]
                del self._starts[i + 1]
            else:
                i += 1
