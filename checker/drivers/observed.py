"""The executor's view of a driver whose page locks it cannot read through the driver itself.

`ObservedDriver` wraps a driver: it remembers each result (`last`), turns an exception of the
driver into `DriverRaised`, and reports the pages of this process's locked mappings
(/proc/self/smaps) that lie inside the memory the driver's allocation calls returned. `regcheck
execute` wraps every driver without the reference driver's lock reports in it, and `regcheck
conform` and `regcheck fuzz` wrap every driver, so a third-party driver's locks are compared with
the spec's predictions after every event (checker.drivers.lockcheck: the whole comparison).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..language.diagnostics import RegcheckError
from .executor import ReferenceDriver
from .pinning import PAGE_SIZE, kernel_locked_vmas
from .protocol import Driver, DriverRaised, Result

# The reference driver's lock reports, which an observed reference driver may keep as its own.
LOCK_REPORTS = ("kernel_locked_pages", "take_changed_spans", "kernel_locked_in", "tracks")


class ObservedDriver:
    """The driver as the executor sees it: remembers each result (`last`), turns an exception of the
    driver (but a RegcheckError, its refusal of the input) into `DriverRaised`, and gives the executor a page-lock view.

    The view is the pages of this process's locked mappings (/proc/self/smaps) inside the memory
    the driver's allocation calls returned, for every driver that runs in this process (whether or
    not it has a `kernel_locked_pages()` of its own). A driver that is not the reference driver maps
    and locks memory no arena of this process sees, so its reading is taken afresh after each of its
    calls (`kernel_locked_vmas(reuse=False)`): a reading reused because VmLck and the arenas'
    changes looked the same (an earlier test's locks at other addresses, as many as now) would
    report its pages wrongly. Several readings between two calls share one.

    The one exception, with `event_by_event` (the conformance runner's tests and the fuzzer's
    runs): a driver whose lock reporting is the reference driver's own, unchanged (a ReferenceDriver
    subclass that overrides none of its four reporting methods, as the mutants and sloppy drivers
    of the tests). Every change to the kernel's locks on its memory is a call its arena makes, so
    its locks are read as `regcheck execute` reads them: event by event, on the spans its arena
    changed, and whole (smaps) at the test's last event. Reading smaps after every event cost about
    70% of a conformance run of the reference driver.
    """

    # Not forwarded to the driver (but see `reads_locks_as_the_reference`): this view's pages are not
    # the driver's arena's, so the executor compares them whole after every event (checker.drivers.lockcheck).
    take_changed_spans = kernel_locked_in = tracks = None

    def __init__(self, driver: Driver, allocators: Mapping[str, Any], check_locks: bool = True,
                 event_by_event: bool = False):
        self._driver = driver
        self._allocators = allocators
        self.last: Result | None = None
        self._blocks: list[tuple[int, int]] = []  # what the driver's allocation calls returned
        self._calls = 0  # calls made so far: a reading is reused only between two calls
        self._cached: tuple[int, frozenset[int]] | None = None  # (calls then, pages)
        # Only the reference driver's memory changes are all seen by an arena (pinning's reuse rule).
        self._reuse = type(driver) is ReferenceDriver
        if not check_locks:
            self.kernel_locked_pages = None
        elif event_by_event and reads_locks_as_the_reference(driver):
            for name in LOCK_REPORTS:
                setattr(self, name, getattr(driver, name))

    def kernel_locked_pages(self) -> frozenset[int]:
        if not self._blocks:
            return frozenset()  # nothing of the driver's is mapped: nothing of it can be locked
        if self._cached is None or self._cached[0] != self._calls:
            self._cached = (self._calls, self._driver_pages(kernel_locked_vmas(reuse=self._reuse)))
        return self._cached[1]

    def call(self, name: str, args: Mapping[str, Any]) -> Result:
        self._calls += 1
        try:
            result = self._driver.call(name, args)
        except RegcheckError:
            raise  # the driver's refusal of its input (X0808), as the executor passes it on
        except Exception as exc:  # a crash of the driver under test is a test failure, not ours
            raise DriverRaised(name, exc) from exc
        self.last = result
        alloc = self._allocators.get(name)
        if alloc is not None and isinstance(result, Result):
            base = result.out.get(alloc.output)
            size = args.get(alloc.size_param, 0)
            if type(base) is int and type(size) is int:
                self._blocks.append((base, max(size, 1)))
        return result

    def __getattr__(self, name: str):
        return getattr(self._driver, name)

    def _driver_pages(self, vmas: list[tuple[int, int]]) -> frozenset[int]:
        pages = set()
        for lo, hi in vmas:
            for base, size in self._blocks:
                a, b = max(lo, base), min(hi, base + size)
                if a < b:
                    pages.update(range(a - a % PAGE_SIZE, b, PAGE_SIZE))
        return frozenset(pages)


def reads_locks_as_the_reference(driver: Driver) -> bool:
    """Whether the driver reports its locks with ReferenceDriver's own methods, none overridden."""
    return isinstance(driver, ReferenceDriver) and all(
        getattr(type(driver), name) is getattr(ReferenceDriver, name) for name in LOCK_REPORTS)
