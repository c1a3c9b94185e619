"""Pinning: the real-memory layer under the reference executor (Linux only).

A `PinnedArena` hands out its own page-aligned buffers, makes second mappings of their pages (the
"device" view of a MAPPED registration), and locks pages with per-page reference counts, because the
kernel does not count `mlock`: one `munlock` undoes any number of `mlock`s of a page. Every address
it is given must lie inside memory it created; it never locks, maps or writes anything else.

Buffers are `memfd_create` files mapped MAP_SHARED, so an alias is simply another mapping of the
same file: a write through one address is visible through the other.

Error codes (X08xx, executor environment):
  X0801  the kernel refused to lock pages (mlock errno: EPERM, ENOMEM/RLIMIT_MEMLOCK, EAGAIN)
  X0802  locking would exceed the arena's `max_locked_bytes` cap
  X0803  address range not inside a buffer or alias this arena created
  X0804  unlock of pages this arena has not locked
  X0805  creating a buffer or alias failed (memfd_create, ftruncate, mmap)
  X0806  the arena is closed

Cleanup safety net: every open arena is in a module registry that `atexit` closes, and
`install_signal_cleanup()` makes SIGINT/SIGTERM close them before the process stops.

Arenas are not thread-safe; use one from one thread.
"""

from __future__ import annotations

import atexit
import ctypes
import errno as errno_codes
import mmap
import os
import re
import signal
from dataclasses import dataclass, fields, replace
from enum import Enum
from functools import partial
from types import FrameType
from typing import Any, Callable, Iterator


from ..language.diagnostics import RegcheckError, error
from ..model.state import NATIVE
from .lockcounts import LockCounts
from .ordered import IntMap

PAGE_SIZE = mmap.PAGESIZE
DEFAULT_MAX_LOCKED_BYTES = 256 * 1024 * 1024
# Changed spans kept for `take_changed_spans`; past this they are merged (a covering span reads
# more pages again, never fewer).
MAX_CHANGED_SPANS = 4096

CODE_MLOCK_REFUSED = "X0801"
CODE_CAP_EXCEEDED = "X0802"
CODE_NOT_OWNED = "X0803"
CODE_NOT_LOCKED = "X0804"
CODE_MAPPING_FAILED = "X0805"
CODE_ARENA_CLOSED = "X0806"


# --- errors ---------------------------------------------------------------------------------------


class PinningError(RegcheckError):
    """Root of this module's errors; `code` is the X08xx diagnostic code."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__([error(code, message)])


class PinningFailed(PinningError):
    """Pages could not be locked; the arena's counts and the kernel's locks are as before the call."""

    def __init__(self, errno: int, message: str, code: str = CODE_MLOCK_REFUSED):
        self.errno = errno
        super().__init__(code, message)


class NotOwned(PinningError):
    """An address range that does not lie entirely inside one buffer or alias of the arena."""

    def __init__(self, address: int, size: int, why: str = "is not inside a buffer or alias of this arena"):
        self.address = address
        self.size = size
        super().__init__(CODE_NOT_OWNED, f"range {_show(address, size)} {why}")


class NotLocked(PinningError):
    """An unlock of pages whose lock count is already zero."""

    def __init__(self, address: int, size: int):
        self.address = address
        self.size = size
        super().__init__(CODE_NOT_LOCKED, f"range {_show(address, size)} has pages this arena has not locked")


class MappingFailed(PinningError):
    def __init__(self, errno: int, message: str):
        self.errno = errno
        super().__init__(CODE_MAPPING_FAILED, message)


class ArenaClosed(PinningError):
    def __init__(self) -> None:
        super().__init__(CODE_ARENA_CLOSED, "the pinning arena is closed")


def _show(address: int, size: int) -> str:
    return f"[{address:#x}, {address + size:#x})"


def _strerror(err: int) -> str:
    return f"{errno_codes.errorcode.get(err, str(err))}: {os.strerror(err)}"


# --- system calls ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockCalls:
    """The two calls that change the kernel's lock state, replaceable so tests can inject failures.

    Each takes (address, length) and returns 0 or an errno value.
    """

    mlock: Callable[[int, int], int]
    munlock: Callable[[int, int], int]


def _libc_calls() -> LockCalls:
    """checker._native's mlock and munlock where it is built (no ctypes conversion per call), else
    the ctypes originals, their reference in the tests."""
    native = (getattr(NATIVE, "mlock", None), getattr(NATIVE, "munlock", None))
    if None not in native:
        return LockCalls(*native)
    return _ctypes_lock_calls()


def _ctypes_lock_calls() -> LockCalls:
    libc = ctypes.CDLL(None, use_errno=True)
    for name in ("mlock", "munlock"):
        fn = getattr(libc, name)
        fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        fn.restype = ctypes.c_int

    def call(fn: Any) -> Callable[[int, int], int]:
        def run(address: int, length: int) -> int:
            return 0 if fn(address, length) == 0 else ctypes.get_errno()

        return run

    return LockCalls(call(libc.mlock), call(libc.munlock))


_LIBC: LockCalls | None = None


@dataclass(frozen=True, slots=True)
class _MemoryCalls:
    """The two calls trim_front needs that Python's mmap module lacks; each returns 0 or an errno."""

    protect_none: Callable[[int, int], int]  # replace pages by an inaccessible anonymous reservation
    punch_hole: Callable[[int, int, int], int]  # (fd, offset, length): free a memfd range's memory


_MAP_FIXED = 0x10  # Linux, every architecture
_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x1, 0x2
_MM: _MemoryCalls | None = None


def _libc_mm() -> _MemoryCalls:
    global _MM
    if _MM is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
        libc.mmap.restype = ctypes.c_void_p
        libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long)
        libc.fallocate.restype = ctypes.c_int
        failed = ctypes.c_void_p(-1).value

        def protect_none(address: int, length: int) -> int:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED
            got = libc.mmap(address, length, 0, flags, -1, 0)
            return ctypes.get_errno() or errno_codes.EINVAL if got == failed or got != address else 0

        def punch_hole(fd: int, offset: int, length: int) -> int:
            mode = _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE
            return 0 if libc.fallocate(fd, mode, offset, length) == 0 else ctypes.get_errno()

        _MM = _MemoryCalls(protect_none, punch_hole)
    return _MM


def libc_calls() -> LockCalls:
    """The real `mlock`/`munlock`, loaded once."""
    global _LIBC
    if _LIBC is None:
        _LIBC = _libc_calls()
    return _LIBC


def _ctypes_address_of(m: mmap.mmap) -> int:
    # The ctypes view exports m's buffer; it must be gone before m can be closed.
    view = ctypes.c_char.from_buffer(m)
    try:
        return ctypes.addressof(view)
    finally:
        del view


# A mapping's address: checker._native's `buffer_address` (the buffer exported and released in C,
# no ctypes object made) where it is built, else the ctypes original, its reference in the tests.
_address_of: Callable[[mmap.mmap], int] = getattr(NATIVE, "buffer_address", None) or _ctypes_address_of


def _page_floor(address: int) -> int:
    return address - address % PAGE_SIZE


def _page_ceil(address: int) -> int:
    return (address + PAGE_SIZE - 1) // PAGE_SIZE * PAGE_SIZE


def _require_size(size: int) -> None:
    if not isinstance(size, int) or size <= 0:
        raise ValueError(f"size must be a positive int, not {size!r}")


# --- regions --------------------------------------------------------------------------------------


class RegionKind(str, Enum):
    BUFFER = "buffer"
    ALIAS = "alias"


_BUFFER, _ALIAS = RegionKind.BUFFER, RegionKind.ALIAS  # (a member read from the class costs a lookup per use)


@dataclass(frozen=True, slots=True, init=False)
class Region:
    """A buffer or alias of an arena: its usable bytes and the page-aligned mapping holding them."""

    kind: RegionKind
    address: int  # what allocate() or alias() returned
    size: int  # usable bytes from `address`
    map_address: int
    map_length: int
    buffer: int  # address of the buffer whose pages these are (its own address for a buffer)

    def __init__(self, kind: RegionKind, address: int, size: int, map_address: int, map_length: int, buffer: int):
        # The generated __init__'s work through the slots' own setters (as checker.drivers.protocol's
        # Result): a frozen class's generated __init__ looks up and calls object.__setattr__ per field.
        _SET_KIND(self, kind)
        _SET_ADDRESS(self, address)
        _SET_SIZE(self, size)
        _SET_MAP_ADDRESS(self, map_address)
        _SET_MAP_LENGTH(self, map_length)
        _SET_BUFFER(self, buffer)

    @property
    def end(self) -> int:
        return self.address + self.size

    def contains(self, address: int, size: int) -> bool:
        return size > 0 and self.address <= address and address + size <= self.end


_SET_KIND, _SET_ADDRESS, _SET_SIZE, _SET_MAP_ADDRESS, _SET_MAP_LENGTH, _SET_BUFFER = (
    getattr(Region, f.name).__set__ for f in fields(Region))


class _Mapping:
    """One mapping of the arena and what it was made from; never changed (a change makes a new one).
    A plain class: a frozen dataclass's __init__ cost several times as much, once per mapping."""

    __slots__ = ("region", "view", "fd", "offset", "view_start")

    def __init__(self, region: Region, view: mmap.mmap, fd: int = -1, offset: int = 0, view_start: int = -1):
        self.region = region
        self.view = view
        self.fd = fd  # the memfd, kept by buffers so that aliases can map it later
        self.offset = offset  # the memfd offset of region.map_address (not 0 for a buffer after trim_front)
        self.view_start = view_start  # the address of view's first byte (before region.map_address after trim_front)

    def index(self, address: int) -> int:
        """The position of `address` in `view`."""
        return address - (self.view_start if self.view_start >= 0 else self.region.map_address)


# --- the arena ------------------------------------------------------------------------------------

_LIVE: set["PinnedArena"] = set()


class PinnedArena:
    """Buffers, aliases and reference-counted page locks, all released by `close()`."""

    def __init__(self, max_locked_bytes: int = DEFAULT_MAX_LOCKED_BYTES, *, calls: LockCalls | None = None,
                 native: bool = True):
        if max_locked_bytes < 0:
            raise ValueError("max_locked_bytes must not be negative")
        self.max_locked_bytes = max_locked_bytes
        self._calls = calls if calls is not None else libc_calls()
        self._mappings = IntMap()  # map_address -> _Mapping (mappings never overlap)
        self._aliases: dict[int, set[int]] = {}  # buffer address -> the map addresses of its aliases
        # Page-aligned spans whose mapping or lock state changed since `take_changed_spans` last ran.
        self._changed: list[tuple[int, int]] = []
        self._counts = LockCounts()  # lock counts by page-aligned range, only counts > 0
        self._looped_probe: Callable[[int, int], int] | None = None  # the probe `_loops` ask
        self._loops: tuple[ProbeLoop, ProbeLoop] | None = None
        self._native = native  # False: the Python loops over the probe, as the tests compare them with C
        self._segment_loop: SegmentLoop | None = None  # `kernel_locked_in`'s whole loop in C, for `_looped_probe`
        self._closed = False
        _LIVE.add(self)
        _raise_open_files_limit()

    # -- context manager

    def __enter__(self) -> "PinnedArena":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- buffers and aliases

    def allocate(self, size: int) -> int:
        """A new zero-filled buffer of `size` bytes; returns its page-aligned address."""
        self._changing(size)
        length = _page_ceil(size)
        fd = self._memfd(length)
        try:
            view = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as exc:
            os.close(fd)
            raise MappingFailed(exc.errno or 0, f"mmap of a {length}-byte buffer failed: {exc}") from exc
        address = _address_of(view)
        region = Region(_BUFFER, address, size, address, length, address)
        self._mappings[address] = _Mapping(region, view, fd)
        self._note_change(address, address + length)
        return address

    def free(self, address: int) -> None:
        """Unmap the buffer that `allocate` returned as `address`, and every alias of it.

        Locks the arena holds on those pages are dropped first, so nothing stays locked.
        """
        self._changing()
        buffer = self._region_at(address, _BUFFER)
        for alias in sorted(self._aliases.get(buffer.address, ())):
            self._release(self._mappings[alias])
        self._release(self._mappings[buffer.map_address])

    def alias(self, address: int, size: int) -> int:
        """A second mapping of the pages holding buffer bytes [address, address + size).

        Returns the address in the new mapping that corresponds to `address`.
        """
        self._changing(size)
        host = self._owner(address, size)
        if host.kind is not _BUFFER:
            raise NotOwned(address, size, "is not inside a buffer (aliases of aliases are not made)")
        first = _page_floor(address)
        length = _page_ceil(address + size) - first
        owner = self._mappings[host.map_address]
        offset = owner.offset + first - host.map_address
        try:
            view = mmap.mmap(
                owner.fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=offset
            )
        except OSError as exc:
            raise MappingFailed(exc.errno or 0, f"mmap of an alias of {_show(address, size)} failed: {exc}") from exc
        base = _address_of(view)
        device = base + (address - first)
        region = Region(_ALIAS, device, size, base, length, host.address)
        self._mappings[base] = _Mapping(region, view, offset=offset)
        self._aliases.setdefault(host.address, set()).add(base)
        self._note_change(base, base + length)
        return device

    def unalias(self, device_address: int) -> None:
        """Unmap the alias that `alias` returned as `device_address`, dropping the arena's locks on it."""
        self._changing()
        region = self._region_at(device_address, _ALIAS)
        self._release(self._mappings[region.map_address])

    def trim_front(self, address: int, length: int) -> int:
        """Give back the first `length` bytes (a positive multiple of the page size, less than the
        buffer's size) of the buffer that `allocate` returned as `address`; returns the buffer's new
        address, `address + length`, where its remaining bytes stay (a munmap of a mapping's prefix).

        The arena's locks on those pages are dropped and their memory is returned to the kernel (the
        memfd's hole is punched). A Python mmap cannot shrink, so the addresses stay reserved,
        inaccessible (PROT_NONE), until the buffer is freed; the kernel cannot reuse them meanwhile.
        Raises NotOwned when an alias still maps one of the pages, MappingFailed when the kernel
        refuses; the arena is then as before the call.
        """
        self._changing()
        buffer = self._region_at(address, _BUFFER)
        if not isinstance(length, int) or length <= 0 or length % PAGE_SIZE or length >= buffer.size:
            raise ValueError(f"length must be a positive multiple of the page size below {buffer.size}, not {length!r}")
        mapping = self._mappings[buffer.map_address]
        lo, hi = mapping.offset, mapping.offset + length  # the memfd range given back
        aliases = sorted(self._aliases.get(address, ()))
        for m in (self._mappings[a] for a in aliases):
            if m.offset < hi and lo < m.offset + m.region.map_length:
                raise NotOwned(address, length, f"is still mapped by the alias at {m.region.address:#x}")
        err = _libc_mm().protect_none(address, length)
        if err:
            raise MappingFailed(err, f"releasing {_show(address, length)} failed: {_strerror(err)}")
        self._counts.drop(address, address + length)  # those pages are gone, and their locks with them
        self._note_change(address, address + length)
        _libc_mm().punch_hole(mapping.fd, lo, length)  # best effort: only the memory's return depends on it
        end = address + length
        region = Region(_BUFFER, end, buffer.size - length, end, buffer.map_length - length, end)
        del self._mappings[buffer.map_address]
        view_start = mapping.view_start if mapping.view_start >= 0 else buffer.map_address
        self._mappings[end] = _Mapping(region, mapping.view, mapping.fd, hi, view_start)
        for key in aliases:
            m = self._mappings[key]
            self._mappings[key] = _Mapping(replace(m.region, buffer=end), m.view, m.fd, m.offset, m.view_start)
        if aliases:
            self._aliases[end] = self._aliases.pop(address)
        return end

    # -- ownership

    def owns(self, address: int, size: int) -> bool:
        """Whether [address, address + size) lies entirely inside one buffer or alias."""
        return self._find(address, size) is not None

    def buffer_of(self, address: int) -> Region | None:
        """The buffer or alias whose usable bytes include `address`, if any."""
        return self._find(address, 1)

    # -- locking

    def lock(self, address: int, size: int) -> None:
        """Count one more lock on each page of the range; `mlock` the pages whose count was 0.

        Raises PinningFailed (leaving every count and kernel lock as it was) when the cap would be
        exceeded or the kernel refuses.
        """
        self._changing(size)
        self._owner(address, size)
        lo, hi = _page_floor(address), _page_ceil(address + size)
        fresh = self._counts.gaps(lo, hi)  # the cap is checked first, on lengths: no per-page work
        wanted = self._counts.total + sum(n for _, n in fresh)
        if wanted > self.max_locked_bytes:
            raise PinningFailed(
                errno_codes.ENOMEM,
                f"locking {_show(address, size)} would lock {wanted} bytes, over the cap of {self.max_locked_bytes}",
                CODE_CAP_EXCEEDED,
            )
        self._apply(fresh, self._calls.mlock, self._calls.munlock, "mlock")
        self._counts.add(lo, hi, 1)

    def unlock(self, address: int, size: int) -> None:
        """Count one lock less on each page of the range; `munlock` the pages whose count reaches 0."""
        self._changing(size)
        self._owner(address, size)
        lo, hi = _page_floor(address), _page_ceil(address + size)
        if self._counts.gaps(lo, hi):
            raise NotLocked(address, size)
        self._apply(self._counts.runs_at(lo, hi, 1), self._calls.munlock, self._calls.mlock, "munlock")
        self._counts.add(lo, hi, -1)

    def locked_pages(self) -> dict[int, int]:
        """Page address -> lock count, for every page the arena holds locked."""
        return self._counts.pages(PAGE_SIZE)

    def locked_bytes(self) -> int:
        return self._counts.total

    def is_locked(self, address: int) -> bool:
        page = _page_floor(address)
        return self._counts.covered(page, page + PAGE_SIZE) > 0

    # -- what the kernel says

    def kernel_locked_pages(self) -> frozenset[int]:
        """Pages of the arena's mappings that the kernel marks locked (VmFlags `lo` in smaps; a
        reading is reused while VmLck has not moved, see kernel_locked_vmas)."""
        return frozenset(_pages_within(sorted(kernel_locked_vmas()), self._spans()))

    def take_changed_spans(self) -> list[tuple[int, int]]:
        """The page-aligned spans this arena mapped, unmapped, locked or unlocked since the last
        call (or since it opened), and forgets them: the only places where the kernel's locks on
        the arena's pages can have changed, since the arena makes every such call itself."""
        spans = self._changed
        if spans:  # else the same empty list serves again: most events change nothing here
            self._changed = []
        return spans

    def kernel_locked_in(self, spans: list[tuple[int, int]]) -> frozenset[int]:
        """The pages of the arena's live mappings within `spans` that the kernel holds locked, read
        for those pages alone (`kernel_lock_probe`), or from smaps where the probe cannot run."""
        probe = kernel_lock_probe()
        inside = self._live_parts(_merged(spans))
        if probe is None:
            return frozenset(_pages_within(sorted(kernel_locked_vmas()), inside))
        if probe is not self._looped_probe:  # the loops over a probe are made once per probe
            self._loops, self._looped_probe = probe_loops(probe, self._native), probe
            self._segment_loop = segment_loop(probe, self._native)
        if self._segment_loop is not None:
            return frozenset(self._segment_loop(inside, self._counts))
        halving, each = self._loops  # type: ignore[misc]
        segments = self._counts.segments
        pages: list[int] = []
        for lo, hi in inside:
            # Where the arena holds the pages locked, each is asked alone (a yes is expected, and
            # halving would ask twice as often); elsewhere a no for the whole run is expected.
            at = lo
            for start, end, _ in segments(lo, hi):
                if at < start:
                    pages += halving(at, start)
                pages += each(start, end)
                at = end
            if at < hi:
                pages += halving(at, hi)
        return frozenset(pages)

    def _note_change(self, lo: int, hi: int) -> None:
        changed = self._changed
        changed.append((lo, hi))
        if len(changed) > MAX_CHANGED_SPANS:  # nobody takes them (no event-by-event check): stay small
            merged = _merged(changed)
            self._changed = merged if len(merged) <= MAX_CHANGED_SPANS // 2 else [(merged[0][0], merged[-1][1])]

    def _live_parts(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The parts of sorted, disjoint spans that lie in the arena's mappings (found by bisection:
        a few spans of a large arena)."""
        out: list[tuple[int, int]] = []
        mappings = self._mappings
        for lo, hi in spans:
            mapping = mappings.get(lo)
            if mapping is not None and hi <= lo + mapping.region.map_length:
                out.append((lo, hi))  # the usual span, inside the mapping that starts there: no bisection
                continue
            for start in mappings.meeting(lo, hi):
                a, b = max(lo, start), min(hi, start + mappings[start].region.map_length)
                if a < b:
                    out.append((a, b))
        return out

    def _spans(self) -> list[tuple[int, int]]:
        """The arena's mappings as sorted, disjoint (start, end) spans."""
        return [(start, start + self._mappings[start].region.map_length) for start in self._mappings.order]

    def kernel_locked_bytes(self) -> int:
        """Bytes of the arena's mappings the kernel holds locked, read from /proc/self/smaps."""
        return len(self.kernel_locked_pages()) * PAGE_SIZE

    # -- data

    def write(self, address: int, data: bytes) -> None:
        """Copy `data` to `address`; the whole range must lie inside one buffer or alias."""
        self._require_open()
        mapping, offset = self._slice(address, len(data))
        mapping.view[offset : offset + len(data)] = data

    def read(self, address: int, n: int) -> bytes:
        """The `n` bytes at `address`; the whole range must lie inside one buffer or alias."""
        self._require_open()
        mapping, offset = self._slice(address, n)
        return mapping.view[offset : offset + n]

    # -- closing

    def close(self) -> None:
        """Unlock everything the arena locked and unmap everything it mapped; safe to call twice.

        Never raises: it also runs from signal handlers and atexit, where an error would replace the
        real reason the process is stopping.
        """
        _memory_changed()
        if self._closed:
            return
        self._closed = True
        _LIVE.discard(self)
        for start, end, _ in list(self._counts.segments()):
            # A failure here is harmless: unmapping below drops any lock that is left.
            self._calls.munlock(start, end - start)
        self._counts.clear()
        for mapping in list(self._mappings.values()):
            self._unmap(mapping)
        self._mappings.clear()
        self._aliases.clear()
        self._changed.clear()

    # -- internals

    def _require_open(self) -> None:
        if self._closed:
            raise ArenaClosed()

    def _changing(self, size: int | None = None) -> None:
        """What a call that maps, unmaps, locks or unlocks does first: `_memory_changed`,
        `_require_open` and, given a size, `_require_size`, in one call (the calls an event's
        registration makes ask it, so three calls were most of their overhead)."""
        global _arena_changes
        _arena_changes += 1
        if self._closed:
            raise ArenaClosed()
        if size is not None and (type(size) is not int or size <= 0):
            _require_size(size)

    @staticmethod
    def _memfd(length: int) -> int:
        # One descriptor per buffer, held while it lives (an alias maps it again): a trace with
        # many live allocations needs many, hence `_raise_open_files_limit`.
        try:
            fd = os.memfd_create("regcheck-arena", os.MFD_CLOEXEC)
        except (AttributeError, OSError) as exc:
            hint = (" (the reference driver holds one descriptor per live allocation: raise the limit, `ulimit -n`)"
                    if getattr(exc, "errno", 0) == errno_codes.EMFILE else "")
            raise MappingFailed(getattr(exc, "errno", 0) or 0, f"memfd_create failed: {exc}{hint}") from exc
        try:
            os.ftruncate(fd, length)
        except OSError as exc:
            os.close(fd)
            raise MappingFailed(exc.errno or 0, f"ftruncate of a memfd to {length} bytes failed: {exc}") from exc
        except OverflowError as exc:  # a length past off_t (a size >= 2**63)
            os.close(fd)
            raise MappingFailed(errno_codes.EFBIG, f"a buffer of {length} bytes is larger than a file can be "
                                                   "(2**63 - 1 bytes)") from exc
        return fd

    def _find(self, address: int, size: int) -> Region | None:
        # A region lies inside its mapping and mappings never overlap: only the mapping that
        # starts last at or before `address` can hold it.
        if size <= 0:
            return None
        mapping = self._mappings.get(address)  # the usual case, a buffer's own address: no search
        if mapping is None:
            entry = self._mappings.floor_item(address)
            if entry is None:
                return None
            mapping = entry[1]
        region = mapping.region
        start = region.address  # (`region.contains`, inline: every call of the driver asks)
        return region if start <= address and address + size <= start + region.size else None

    def _owner(self, address: int, size: int) -> Region:
        region = self._find(address, size)
        if region is None:
            raise NotOwned(address, size)
        return region

    def _region_at(self, address: int, kind: RegionKind) -> Region:
        region = self._find(address, 1)
        if region is not None and region.address == address and region.kind is kind:
            return region
        raise NotOwned(address, 1, f"is not the start of a {kind.value} of this arena")

    def _slice(self, address: int, n: int) -> tuple[_Mapping, int]:
        _require_size(n)
        region = self._owner(address, n)
        mapping = self._mappings[region.map_address]
        return mapping, mapping.index(address)

    def _apply(
        self, runs: list[tuple[int, int]], do: Callable[[int, int], int], undo: Callable[[int, int], int], name: str
    ) -> None:
        """Apply `do` to every run, or, if one fails, `undo` those already done and raise."""
        done: list[tuple[int, int]] = []
        for start, length in runs:
            self._note_change(start, start + length)
            err = do(start, length)
            if err:
                for d_start, d_length in reversed(done):
                    undo(d_start, d_length)
                raise PinningFailed(err, f"{name} of {_show(start, length)} failed: {_strerror(err)}")
            done.append((start, length))

    def _release(self, mapping: _Mapping) -> None:
        region = mapping.region
        for start, length in self._counts.drop(region.map_address, region.map_address + region.map_length):
            # Unmapping drops the lock even if this fails, so the error is not worth raising.
            self._calls.munlock(start, length)
        self._unmap(mapping)
        del self._mappings[region.map_address]
        self._note_change(region.map_address, region.map_address + region.map_length)
        if region.kind is _ALIAS:
            siblings = self._aliases.get(region.buffer)
            if siblings is not None:
                siblings.discard(region.map_address)
                if not siblings:
                    del self._aliases[region.buffer]
        else:
            self._aliases.pop(region.address, None)

    @staticmethod
    def _unmap(mapping: _Mapping) -> None:
        try:
            mapping.view.close()
        except BufferError:
            # Only a transient export from _ctypes_address_of can hold the view; the process exit unmaps it.
            pass
        if mapping.fd >= 0:
            os.close(mapping.fd)


# --- kernel views ---------------------------------------------------------------------------------


def _raise_open_files_limit() -> None:
    """The soft limit of open files up to the hard one, once per process: an arena holds a memfd per
    live buffer, and a soft limit of 1,024 (a common default) stopped an execution at about 600 live
    allocations (X0805, EMFILE). Nothing happens where the limit cannot be read or changed."""
    global _FILES_LIMIT_RAISED
    if _FILES_LIMIT_RAISED:
        return
    _FILES_LIMIT_RAISED = True
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, OSError, ValueError):
        pass


_FILES_LIMIT_RAISED = False


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint spans covering the same addresses."""
    if len(spans) == 1:  # the usual case: one span, nothing to sort or join
        lo, hi = spans[0]
        return [(lo, hi)] if hi > lo else []
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        elif hi > lo:
            out.append((lo, hi))
    return out


def _clip(spans: list[tuple[int, int]], within: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of sorted, disjoint `spans` inside sorted, disjoint `within`."""
    out, j = [], 0
    for lo, hi in spans:
        while j < len(within) and within[j][1] <= lo:
            j += 1
        k = j
        while k < len(within) and within[k][0] < hi:
            a, b = max(lo, within[k][0]), min(hi, within[k][1])
            if a < b:
                out.append((a, b))
            k += 1
    return out


def _pages_within(vmas: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[int]:
    """The pages that lie in both sorted lists of disjoint spans."""
    pages: list[int] = []
    for lo, hi in _clip(vmas, spans):
        pages.extend(range(lo, hi, PAGE_SIZE))
    return pages


# madvise(MADV_COLD) fails with EINVAL on a range that includes a locked mapping (madvise(2), since
# Linux 5.4) and otherwise only ages the pages, changing no data: one system call tells whether any
# page of a range is locked, so a range's locked pages are found by halving it where the answer is
# yes. Mappings lock as a whole (mlock splits them), so a range of one lock costs a few calls per page.
_MADV_COLD = 20
_LOCK_PROBE: Callable[[int, int], int] | None | bool = False  # False: not tried yet


def _libc_madvise() -> Callable[[int, int], int]:
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.madvise
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int

    def probe(address: int, length: int) -> int:
        return 0 if fn(address, length, _MADV_COLD) == 0 else ctypes.get_errno()

    return probe


def kernel_lock_probe() -> Callable[[int, int], int] | None:
    """probe(address, length) -> 0 (no page of the range locked), EINVAL (some page locked) or
    ENOMEM (part unmapped, none locked); None where this kernel's answer could not be confirmed on a
    scratch page locked and unlocked (an old kernel, or mlock not permitted): smaps is read then."""
    global _LOCK_PROBE
    if _LOCK_PROBE is False:
        _LOCK_PROBE = _confirmed_probe()
    return _LOCK_PROBE  # type: ignore[return-value]


def _confirmed_probe() -> Callable[[int, int], int] | None:
    global _LIBC_PROBE
    try:
        probe, calls = _libc_madvise(), libc_calls()
        scratch = mmap.mmap(-1, PAGE_SIZE)
    except (OSError, AttributeError):
        return None
    try:
        address = _address_of(scratch)
        if probe(address, PAGE_SIZE) != 0 or calls.mlock(address, PAGE_SIZE) != 0:
            return None
        locked = probe(address, PAGE_SIZE)
        calls.munlock(address, PAGE_SIZE)
        if locked != errno_codes.EINVAL or probe(address, PAGE_SIZE) != 0:
            return None
        _LIBC_PROBE = probe
        return probe
    finally:
        scratch.close()


# The confirmed probe (madvise through ctypes), whose loops checker._native's `locked_pages` runs
# in C: the same system calls in the same order, without a Python call per probe.
_LIBC_PROBE: Callable[[int, int], int] | None = None
_NATIVE_PAGES = getattr(NATIVE, "locked_pages", None)
ProbeLoop = Callable[[int, int], list[int]]  # (lo, hi) -> the locked pages of [lo, hi)


def probe_loops(probe: Callable[[int, int], int], native: bool = True) -> tuple[ProbeLoop, ProbeLoop]:
    """(halving, each): `_locked_pages` and `_each_locked_page` over `probe`, in C when `probe` is
    the confirmed madvise one, the C module is built and `native` (False: the Python reference)
    holds; another probe, such as a test's or a counting wrapper, is called from Python for every
    question."""
    if native and probe is _LIBC_PROBE and _NATIVE_PAGES is not None:
        return partial(_native_locked_pages, False), partial(_native_locked_pages, True)
    return partial(_locked_pages, probe), partial(_each_locked_page, probe)


def _native_locked_pages(each: bool, lo: int, hi: int) -> list[int]:
    return _probed(_NATIVE_PAGES(lo, hi, PAGE_SIZE, each))  # type: ignore[misc]


# checker._native's `locked_in_segments`: `PinnedArena.kernel_locked_in`'s loop over its lock
# segments and the probe loops, whole, in C: (the parts to read, the arena's lock counts) -> pages.
_NATIVE_SEGMENTS = getattr(NATIVE, "locked_in_segments", None)
SegmentLoop = Callable[[list[tuple[int, int]], LockCounts], list[int]]


def segment_loop(probe: Callable[[int, int], int], native: bool = True) -> SegmentLoop | None:
    """`kernel_locked_in`'s loop over the arena's lock segments in C, where `probe_loops` would run
    its loops in C and checker._native has this one too (the same probes in the same order); None:
    the Python loop runs."""
    if native and probe is _LIBC_PROBE and _NATIVE_SEGMENTS is not None and _NATIVE_PAGES is not None:
        return _native_locked_in
    return None


def _native_locked_in(parts: list[tuple[int, int]], counts: LockCounts) -> list[int]:
    starts, segs = counts.layout()
    return _probed(_NATIVE_SEGMENTS(parts, starts, segs, PAGE_SIZE))  # type: ignore[misc]


def _probed(got: list[int] | tuple[int, int, int]) -> list[int]:
    """A C probe loop's pages, or its failure, (errno, address, length) of the probe answering
    neither yes nor no, raised as the Python loops raise it."""
    if type(got) is tuple:
        err, at, length = got
        raise PinningFailed(err, f"reading the kernel's locks on {_show(at, length)} failed: {_strerror(err)}")
    return got  # type: ignore[return-value]


def _probe_says_locked(probe: Callable[[int, int], int], lo: int, hi: int) -> bool:
    """Whether the kernel holds some page of the page-aligned range [lo, hi) locked, by the probe
    (EINVAL: a locked mapping there; 0 or ENOMEM, a hole: none)."""
    err = probe(lo, hi - lo)
    if err in (0, errno_codes.ENOMEM):
        return False
    if err != errno_codes.EINVAL:
        raise PinningFailed(err, f"reading the kernel's locks on {_show(lo, hi - lo)} failed: {_strerror(err)}")
    return True


def _locked_pages(probe: Callable[[int, int], int], lo: int, hi: int) -> list[int]:
    """The locked pages of the page-aligned range [lo, hi), by halving where the probe says yes."""
    if not _probe_says_locked(probe, lo, hi):
        return []
    if hi - lo == PAGE_SIZE:
        return [lo]
    mid = lo + (hi - lo) // PAGE_SIZE // 2 * PAGE_SIZE
    return _locked_pages(probe, lo, mid) + _locked_pages(probe, mid, hi)


def _each_locked_page(probe: Callable[[int, int], int], lo: int, hi: int) -> list[int]:
    """The locked pages of the page-aligned range [lo, hi), each page asked alone: where the arena
    holds the pages locked a yes is expected for every one, so halving would only ask more often."""
    return [page for page in range(lo, hi, PAGE_SIZE) if _probe_says_locked(probe, page, page + PAGE_SIZE)]


# A mapping's header line (start-end and the rest) through its VmFlags line, lazily: one match per
# mapping. A regex over the whole text rather than a Python loop over its lines, as the loop cost
# more than the kernel's writing of the text (4,000 lines for a process with z3 loaded).
_SMAPS_ENTRY = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (?:[^\n]*\n)+?VmFlags:([^\n]*)", re.MULTILINE)


def _smaps_vmas(path: str = "/proc/self/smaps") -> Iterator[tuple[int, int, frozenset[str]]]:
    """(start, end, VmFlags) for every mapping of the process."""
    with open(path, encoding="ascii", errors="replace") as f:
        text = f.read()
    for m in _SMAPS_ENTRY.finditer(text):
        yield int(m[1], 16), int(m[2], 16), frozenset(m[3].split())


# (VmLck, arena changes) then, and the locked VMAs read then; `_arena_changes` counts every arena
# call that maps, unmaps, locks or unlocks memory in this process.
_locked_reading: tuple[tuple[int, int], list[tuple[int, int]]] | None = None
_arena_changes = 0


def _memory_changed() -> None:
    global _arena_changes
    _arena_changes += 1


def forget_locked_reading() -> None:
    """Make the next kernel_locked_vmas a fresh reading of smaps."""
    global _locked_reading
    _locked_reading = None


def kernel_locked_vmas(reuse: bool = True) -> list[tuple[int, int]]:
    """The process's locked mappings. Reading smaps costs milliseconds (the kernel walks every
    mapping's page tables), so with `reuse` a reading is reused (the same list object) while no
    arena of this process has mapped, unmapped, locked or unlocked memory since and VmLck, the
    process's locked-byte count (a cheap read), has not moved either. That is sound for memory
    that arenas alone change (the reference driver's): the arenas' count never goes back. It is not
    for memory mapped and locked outside them (a third-party driver's): its locks can move to
    other pages, as many, or come back to VmLck's earlier figure at other addresses (a later test),
    so its readers pass `reuse=False` and always read afresh (and store the reading for others)."""
    # VmFlags rather than the `Locked:` field: `Locked:` is a proportional (PSS) figure, so pages
    # mapped by both a buffer and its alias would count half in each mapping.
    global _locked_reading
    key = (vmlck_bytes(), _arena_changes)
    if reuse and _locked_reading is not None and _locked_reading[0] == key:
        return _locked_reading[1]
    vmas = [(start, end) for start, end, flags in _smaps_vmas() if "lo" in flags]
    _locked_reading = (key, vmas)
    return vmas


def vmlck_bytes() -> int:
    """The process's locked memory (`VmLck` in /proc/self/status), in bytes."""
    with open("/proc/self/status", encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("VmLck:"):
                value, unit = line.split()[1:3]
                assert unit == "kB", line
                return int(value) * 1024
    return 0


def pinning_permitted() -> tuple[bool, str]:
    """Whether this process can really lock memory: tries to mlock one page of a scratch memfd mapping."""
    if not hasattr(os, "memfd_create"):
        return False, "os.memfd_create is not available (pinning needs Linux)"
    try:
        calls = libc_calls()
    except (OSError, AttributeError) as exc:
        return False, f"cannot load mlock/munlock from libc: {exc}"
    try:
        fd = os.memfd_create("regcheck-probe", os.MFD_CLOEXEC)
    except OSError as exc:
        return False, f"memfd_create failed: {exc}"
    try:
        os.ftruncate(fd, PAGE_SIZE)
        view = mmap.mmap(fd, PAGE_SIZE, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError as exc:
        os.close(fd)
        return False, f"mapping a memfd failed: {exc}"
    try:
        address = _address_of(view)
        err = calls.mlock(address, PAGE_SIZE)
        if err:
            return False, f"mlock of one page failed: {_strerror(err)}"
        calls.munlock(address, PAGE_SIZE)
        return True, "mlock of one page succeeded"
    finally:
        view.close()
        os.close(fd)


# --- process-wide cleanup -------------------------------------------------------------------------


def live_arenas() -> tuple[PinnedArena, ...]:
    return tuple(_LIVE)


def close_all_arenas() -> None:
    """Close every arena that is still open."""
    for arena in tuple(_LIVE):
        arena.close()


atexit.register(close_all_arenas)

_CLEANUP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_previous_handlers: dict[int, Any] = {}


def _close_then_stop(signum: int, frame: FrameType | None) -> None:
    close_all_arenas()
    previous = _previous_handlers.get(signum)
    if callable(previous):
        # Python's own SIGINT handler lands here and raises KeyboardInterrupt.
        previous(signum, frame)
        return
    # SIG_DFL (or a handler set outside Python): stop the way the default would, but through
    # Python's unwinding so that finally blocks and atexit still run.
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def install_signal_cleanup() -> None:
    """Make SIGINT and SIGTERM close all live arenas, then do what the previous handler did.

    A signal that was ignored stays ignored: the process will survive it, so its memory must stay.
    Call from the main thread. Calling twice is harmless.
    """
    for signum in _CLEANUP_SIGNALS:
        current = signal.getsignal(signum)
        if current is _close_then_stop or current == signal.SIG_IGN:
            continue
        _previous_handlers[signum] = current
        signal.signal(signum, _close_then_stop)


def uninstall_signal_cleanup() -> None:
    """Put back the handlers that `install_signal_cleanup` replaced."""
    for signum, previous in list(_previous_handlers.items()):
        if signal.getsignal(signum) is _close_then_stop:
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        del _previous_handlers[signum]
