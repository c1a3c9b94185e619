"""Drivers for the executor: the `Driver` interface and the reference driver that runs for real.

A `Driver` carries out a trace's calls against an implementation of one spec: `start(spec, env)`,
then `call(name, args) -> Result` once per event, then `close()`. `ReferenceDriver` implements both
bundled specs (`acl`, `cupva`) with real memory from `checker.drivers.pinning.PinnedArena`: host memory it
hands out is its own memfd-backed mapping, PINNED registrations `mlock` their pages (counted per
page), MAPPED registrations get a second real mapping of the same pages as their device address.
There is no accelerator here, so cuPVA's CUDA pointers come from a simulated device address space.

The reference driver is an independent implementation of the documented behaviour: it keeps its own
tables and never asks `checker.model.semantics` what a call should return (testing it against the spec
would otherwise be circular). Where the spec allows several outcomes it returns what the open-source
CANN runtime returns in its software-table mode (`shared/api-rules.md` 1.3-1.8) or, for cuPVA, what
the Register/Unregister pages' Throws lists say; docs/drivers.md tabulates every choice.

A trace is untrusted input. Every address argument the driver would act on (lock, map, free) must
lie inside memory it created; anything else is refused without touching memory: the call returns a
failure status and an `Incident` (kind REFUSED) is recorded. A failure of the machine (mlock refused,
the pinning cap reached, mmap failed) during an API call returns the vendor's failure status and
records an `Incident` (kind ENVIRONMENT); the driver's tables and the kernel's locks are then as they
were before the call.

Error codes (X08xx, executor environment; X0801-X0806 are checker.drivers.pinning's):
  X0807  the reference driver does not implement this spec
  X0808  a call the driver does not implement, or a missing or mistyped argument

Drivers are not thread-safe; use one from one thread.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterator, Mapping, Protocol, runtime_checkable

from sortedcontainers import SortedDict

from ..language.diagnostics import Diagnostic, RegcheckError, error
from ..language.load import load_spec
from .pinning import (
    CODE_NOT_OWNED,
    DEFAULT_MAX_LOCKED_BYTES,
    PAGE_SIZE,
    LockCalls,
    MappingFailed,
    PinnedArena,
    PinningError,
    install_signal_cleanup,
)
from ..model.values import resolve_config

CODE_SPEC_NOT_IMPLEMENTED = "X0807"
CODE_BAD_CALL = "X0808"

# ---------------------------------------------------------------- the interface


@dataclass(frozen=True, slots=True)
class Result:
    """What one call returned: `ret` as in the trace format (an int aclError, or "ok" / a cuPVA
    error name) and `out`, the outputs by name (`{"ptr": ...}` for malloc, ...). Treat `out` as
    read-only."""

    ret: int | str
    out: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Driver(Protocol):
    """An implementation of one spec that the executor can drive, event by event.

    Arguments arrive normalised: integers for addresses, sizes and flags (a flag list already OR-ed
    into one int), enum member names as strings. Addresses are the driver's own: the executor
    relocates a trace's addresses to the ones this driver's allocations returned.
    """

    def start(self, spec: str, env: Mapping[str, Any]) -> None:
        """Prepare for one trace of `spec` (a bundled name or a path) with the header's `env`."""
        ...

    def call(self, name: str, args: Mapping[str, Any]) -> Result:
        """Carry out one call or environment event and report its status and outputs."""
        ...

    def close(self) -> None:
        """Release everything the driver holds; safe to call twice."""
        ...


class IncidentKind(str, Enum):
    REFUSED = "refused"  # an address argument is not memory the driver created; nothing was touched
    ENVIRONMENT = "environment"  # the machine refused (mlock, the pinning cap, mmap); state unchanged


@dataclass(frozen=True, slots=True)
class Incident:
    """Something the reference driver did instead of what a real library would have done."""

    kind: IncidentKind
    call: str
    code: str  # X08xx
    message: str

    def diagnostic(self) -> Diagnostic:
        return error(self.code, f"{self.call}: {self.message}")


@dataclass(frozen=True, slots=True)
class Allocation:
    """Memory the driver handed out: host buffers are real, `cudaMalloc` ones are simulated."""

    base: int
    size: int
    kind: str  # "malloc", "aclrtMallocHost", "cudaMalloc" or "device-alias"

    @property
    def end(self) -> int:
        return self.base + self.size

    def contains(self, address: int, size: int) -> bool:
        return size > 0 and self.base <= address and address + size <= self.end


# ---------------------------------------------------------------- status values

# Ascend aclError values (api-rules.md 1.1).
ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899
ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 507910
ACL_ERROR_HOST_MEMORY_NOT_REGISTERED = 507911

ACL_HOST_REG_MAPPED = 0x2
ACL_HOST_REG_IOMEMORY = 0x4
ACL_HOST_REG_READONLY = 0x8
ACL_HOST_REG_PINNED = 0x10000000
ACL_HOST_REG_ALL = ACL_HOST_REG_MAPPED | ACL_HOST_REG_IOMEMORY | ACL_HOST_REG_READONLY | ACL_HOST_REG_PINNED

# Products whose documentation lists the host-registration calls (the seed's table, api-rules.md 1.2).
ACL_REGISTER_PRODUCTS = frozenset({"Ascend950PR", "AtlasA3", "AtlasA2"})

PVA_OK = "ok"

# The simulated CUDA device address space: above 2**56, the top of the largest Linux user address
# space (5-level paging), so a simulated device address never equals a real host address.
CUDA_SPACE_BASE = 1 << 57
CUDA_ALIGNMENT = 2 * 1024 * 1024
CUDA_SPACE_END = 1 << 64


# ---------------------------------------------------------------- host memory


@dataclass(slots=True)
class _Block:
    size: int  # the size the caller asked for (the arena buffer is at least one byte)
    kind: str  # "malloc" or "aclrtMallocHost"
    locked: bool  # page-locked as a whole for its lifetime (aclrtMallocHost)


class _HostMemory:
    """Host blocks the driver allocated from its arena, keyed by base (blocks never overlap)."""

    def __init__(self, arena: PinnedArena):
        self.arena = arena
        self.blocks: SortedDict = SortedDict()  # base -> _Block

    def allocate(self, size: int, kind: str, lock: bool) -> int:
        """A new block; raises PinningError (nothing left behind) when the machine refuses."""
        base = self.arena.allocate(max(size, 1))
        if lock and size > 0:
            try:
                self.arena.lock(base, size)
            except PinningError:
                self.arena.free(base)
                raise
        self.blocks[base] = _Block(size, kind, lock)
        return base

    def free(self, base: int) -> None:
        """Unmap the block; the arena drops its locks and aliases on those pages."""
        del self.blocks[base]
        self.arena.free(base)

    def block_at(self, base: int, kind: str) -> _Block | None:
        block = self.blocks.get(base)
        return block if block is not None and block.kind == kind else None

    def holding(self, address: int, size: int) -> tuple[int, _Block] | None:
        """The block whose bytes include all of [address, address + size), if any."""
        entry = _at_or_before(self.blocks, address)
        if entry is None or size <= 0 or address + size > entry[0] + entry[1].size:
            return None
        return entry

    def allocations(self) -> Iterator[Allocation]:
        for base, block in self.blocks.items():
            yield Allocation(base, block.size, block.kind)


def _at_or_before(table: SortedDict, address: int) -> tuple[int, Any] | None:
    """The entry with the greatest key <= address, if any."""
    i = table.bisect_right(address)
    return table.peekitem(i - 1) if i else None


def _sized_entry_holding(table: SortedDict, address: int, size: int) -> int | None:
    """The key of the entry (base -> size, entries disjoint) whose range includes the range, if any."""
    entry = _at_or_before(table, address)
    if entry is None or size <= 0 or address + size > entry[0] + entry[1]:
        return None
    return entry[0]


def _allocations(host: _HostMemory, other: SortedDict, kind: str) -> Iterator[Allocation]:
    """A driver's memory: its host blocks, then the entries (base -> size) of its other space."""
    yield from host.allocations()
    for base, size in other.items():
        yield Allocation(base, size, kind)


def _allocation_of(host: _HostMemory, other: SortedDict, kind: str, address: int, size: int) -> Allocation | None:
    """The host block, or else the entry of the driver's other space, holding the whole range."""
    held = host.holding(address, size)
    if held is not None:
        return Allocation(held[0], held[1].size, held[1].kind)
    base = _sized_entry_holding(other, address, size)
    return None if base is None else Allocation(base, other[base], kind)


def _overlaps_any(table: SortedDict, address: int, size: int, size_of: Callable[[Any], int]) -> bool:
    """Whether [address, address + size) overlaps an entry of a table of disjoint ranges.

    Disjoint ranges sorted by base are sorted by end as well, so only the last one starting
    before `address + size` can reach past `address`.
    """
    entry = _at_or_before(table, address + size - 1)
    return entry is not None and size > 0 and entry[0] + size_of(entry[1]) > address


def _pages(address: int, size: int) -> range:
    first = address - address % PAGE_SIZE
    return range(first, address + size, PAGE_SIZE)


def _show(address: int, size: int | None = None) -> str:
    return f"{address:#x}" if size is None else f"[{address:#x}, {address + size:#x})"


# ---------------------------------------------------------------- the reference driver


class ReferenceDriver:
    """The reference implementation of the bundled specs, with real memory and real page locks.

    Options: `max_locked_bytes` caps the bytes it will ever hold locked (a call that would pass it
    fails as an environmental failure); `lock_calls` replaces mlock/munlock (tests inject failures);
    `signal_cleanup` makes `start` install checker.drivers.pinning's SIGINT/SIGTERM cleanup (main thread only).
    """

    def __init__(self, *, max_locked_bytes: int = DEFAULT_MAX_LOCKED_BYTES, lock_calls: LockCalls | None = None,
                 signal_cleanup: bool = True):
        if max_locked_bytes < 0:
            raise ValueError("max_locked_bytes must not be negative")
        self.max_locked_bytes = max_locked_bytes
        self._lock_calls = lock_calls
        self._signal_cleanup = signal_cleanup
        self._arena: PinnedArena | None = None
        self._impl: _AclDriver | _PvaDriver | None = None
        self.spec_name: str | None = None
        self.config: dict[str, Any] = {}
        self.incidents: list[Incident] = []
        self.last_incident: Incident | None = None

    # -- the Driver interface

    def start(self, spec: str, env: Mapping[str, Any]) -> None:
        """Load `spec`'s parameters from `env` and open a fresh arena.

        Raises RegcheckError: X0807 for a spec this driver does not implement, T0720/T0721 for a bad
        parameter, E06xx for a spec that cannot be loaded. Starting again closes the previous run.
        """
        checked = load_spec(spec)
        if checked.name not in _IMPLEMENTATIONS:
            raise RegcheckError([error(
                CODE_SPEC_NOT_IMPLEMENTED,
                f"the reference driver implements the specs {', '.join(sorted(_IMPLEMENTATIONS))}, not '{checked.name}'")])
        config = resolve_config(checked, env)
        self.close()
        if self._signal_cleanup and threading.current_thread() is threading.main_thread():
            install_signal_cleanup()
        self._arena = PinnedArena(self.max_locked_bytes, calls=self._lock_calls)
        self.spec_name, self.config = checked.name, config
        self.incidents, self.last_incident = [], None
        self._impl = _IMPLEMENTATIONS[checked.name](self._arena, config, self._note)

    def call(self, name: str, args: Mapping[str, Any]) -> Result:
        """Carry out one call or event. Raises RegcheckError only for an unknown call or argument
        (X0808) and for an environment event the machine cannot carry out (X08xx from pinning)."""
        if self._impl is None:
            raise RuntimeError("ReferenceDriver.call before start (or after close)")
        self.last_incident = None
        handler = self._impl.handlers.get(name)
        if handler is None:
            raise RegcheckError([error(
                CODE_BAD_CALL, f"the reference driver has no call '{name}' for spec {self.spec_name}")])
        return handler(_Args(name, args))

    def close(self) -> None:
        """Unlock and unmap everything; the driver can be started again afterwards."""
        if self._arena is not None:
            self._arena.close()
        self._arena = None
        self._impl = None

    def __enter__(self) -> "ReferenceDriver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the executor compares with the kernel

    @property
    def arena(self) -> PinnedArena | None:
        return self._arena

    @property
    def calls(self) -> frozenset[str]:
        """The calls and environment events the started spec's implementation carries out."""
        return frozenset(self._require_impl().handlers)

    @property
    def refusals(self) -> tuple[Incident, ...]:
        return tuple(i for i in self.incidents if i.kind is IncidentKind.REFUSED)

    def allocations(self) -> tuple[Allocation, ...]:
        """Every live allocation, host and simulated device, and every MAPPED device alias."""
        return tuple(sorted(self._require_impl().allocations(), key=lambda a: a.base))

    def allocation_of(self, address: int, size: int = 1) -> Allocation | None:
        """The allocation whose bytes include [address, address + size), if any (O(log n))."""
        return self._require_impl().allocation_of(address, size)

    def owns(self, address: int, size: int) -> bool:
        """Whether [address, address + size) lies inside one allocation this driver handed out."""
        return self._require_impl().allocation_of(address, size) is not None

    def expected_locked_pages(self) -> frozenset[int]:
        """The pages the driver's own tables say must be locked: aclrtMallocHost blocks and live
        PINNED registrations."""
        return self._require_impl().expected_locked_pages()

    def arena_locked_pages(self) -> frozenset[int]:
        """The pages the arena holds locked (its per-page counts)."""
        return frozenset(self._require_arena().locked_pages())

    def kernel_locked_pages(self) -> frozenset[int]:
        """The pages of the driver's memory the kernel marks locked (from /proc/self/smaps)."""
        return self._require_arena().kernel_locked_pages()

    # -- internals

    def _note(self, incident: Incident) -> None:
        self.incidents.append(incident)
        self.last_incident = incident

    def _require_impl(self) -> "_AclDriver | _PvaDriver":
        if self._impl is None:
            raise RuntimeError("the reference driver is not started")
        return self._impl

    def _require_arena(self) -> PinnedArena:
        if self._arena is None:
            raise RuntimeError("the reference driver is not started")
        return self._arena


class _Args:
    """One call's arguments, read with a precise error for a missing or mistyped one."""

    __slots__ = ("call", "values")

    def __init__(self, call: str, values: Mapping[str, Any]):
        self.call = call
        self.values = values

    def integer(self, name: str) -> int:
        value = self.values.get(name)
        if type(value) is not int:
            raise self._bad(name, "an integer", value)
        return value

    def member(self, name: str, allowed: tuple[str, ...]) -> str:
        value = self.values.get(name)
        if value not in allowed:
            raise self._bad(name, "one of " + ", ".join(allowed), value)
        return value

    def _bad(self, name: str, wanted: str, value: Any) -> RegcheckError:
        found = "nothing" if name not in self.values else repr(value)
        return RegcheckError([error(CODE_BAD_CALL, f"{self.call}: argument '{name}' must be {wanted}, found {found}")])


Report = Callable[[Incident], None]


# ---------------------------------------------------------------- Ascend CANN (software-table mode)


@dataclass(slots=True)
class _AclRegistration:
    size: int
    flags: int
    device: int | None  # the alias address of a MAPPED registration
    locked: bool  # PINNED: the arena holds one lock count on each of its pages
    live: bool = True  # False once its memory was freed under it (the entry stays, as in the runtime)


class _AclDriver:
    """aclrtHostRegisterV2 and friends as the CANN runtime does them in software-table mode."""

    def __init__(self, arena: PinnedArena, config: Mapping[str, Any], note: Report):
        self.arena = arena
        self.host = _HostMemory(arena)
        self.regs: SortedDict = SortedDict()  # base -> _AclRegistration; bases of disjoint ranges
        self.aliases: SortedDict = SortedDict()  # device address -> size, of live MAPPED registrations
        self.supported = config.get("product", "AtlasA2") in ACL_REGISTER_PRODUCTS
        self.note = note
        self.handlers: dict[str, Callable[[_Args], Result]] = {
            "malloc": self.malloc,
            "free": self.free,
            "aclrtMallocHost": self.malloc_host,
            "aclrtFreeHost": self.free_host,
            "aclrtHostRegisterV2": self.register,
            "aclrtHostGetDevicePointer": self.get_device_pointer,
            "aclrtHostUnregister": self.unregister,
        }

    # -- environment events

    def malloc(self, a: _Args) -> Result:
        return Result(ACL_SUCCESS, {"ptr": self.host.allocate(a.integer("size"), "malloc", lock=False)})

    def free(self, a: _Args) -> Result:
        ptr = a.integer("ptr")
        if ptr != 0:
            if self.host.block_at(ptr, "malloc") is None:
                self._refuse(a, f"{_show(ptr)} is not the start of a block malloc returned; nothing was freed")
            else:
                self._release_block(ptr)
        return Result(ACL_SUCCESS)

    # -- aclrtMallocHost / aclrtFreeHost (api-rules.md 1.8)

    def malloc_host(self, a: _Args) -> Result:
        size = a.integer("size")
        if size == 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        try:
            return Result(ACL_SUCCESS, {"hostPtr": self.host.allocate(size, "aclrtMallocHost", lock=True)})
        except PinningError as exc:
            self._environment(a, exc)
            return Result(ACL_ERROR_RT_MEMORY_ALLOCATION)

    def free_host(self, a: _Args) -> Result:
        ptr = a.integer("hostPtr")
        if ptr == 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        if self.host.block_at(ptr, "aclrtMallocHost") is None:
            # The runtime answers 107000 for a pointer its attribute query does not place on the host.
            self._refuse(a, f"{_show(ptr)} is not the start of a block aclrtMallocHost returned; nothing was freed")
            return Result(ACL_ERROR_RT_PARAM_INVALID)
        self._release_block(ptr)
        return Result(ACL_SUCCESS)

    # -- aclrtHostRegisterV2 (api-rules.md 1.3)

    def register(self, a: _Args) -> Result:
        ptr, size, flag = a.integer("ptr"), a.integer("size"), a.integer("flag")
        if ptr == 0 or size == 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        if flag == 0 or flag & ~ACL_HOST_REG_ALL:
            return Result(ACL_ERROR_RT_PARAM_INVALID)
        if not self.supported:
            return Result(ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        if self._overlaps(ptr, size):
            return Result(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
        held = self.host.holding(ptr, size)
        if held is None:
            self._refuse(a, f"{_show(ptr, size)} is not inside one block the driver allocated; nothing was "
                            "locked or mapped")
            return Result(ACL_ERROR_RT_DRV_INTERNAL_ERROR)
        pinned = bool(flag & ACL_HOST_REG_PINNED)
        if pinned and held[1].locked:
            # The repo docs: PINNED is for pageable memory; page-locked memory makes the call fail.
            return Result(ACL_ERROR_RT_PARAM_INVALID)
        try:
            device = self.arena.alias(ptr, size) if flag & ACL_HOST_REG_MAPPED else None
        except PinningError as exc:
            self._environment(a, exc)
            return Result(ACL_ERROR_RT_MEMORY_ALLOCATION)
        if pinned:
            try:
                self.arena.lock(ptr, size)
            except PinningError as exc:
                if device is not None:
                    self.arena.unalias(device)
                self._environment(a, exc)
                return Result(ACL_ERROR_RT_MEMORY_ALLOCATION)
        self.regs[ptr] = _AclRegistration(size, flag, device, pinned)
        if device is not None:
            self.aliases[device] = size
        return Result(ACL_SUCCESS)

    # -- aclrtHostGetDevicePointer (api-rules.md 1.5)

    def get_device_pointer(self, a: _Args) -> Result:
        p_host, flag = a.integer("pHost"), a.integer("flag")
        if p_host == 0 or flag != 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        if not self.supported:
            return Result(ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        reg = self.regs.get(p_host)  # exact base, as the runtime's table fallback
        if reg is None or reg.device is None:
            return Result(ACL_ERROR_RT_PARAM_INVALID)
        return Result(ACL_SUCCESS, {"pDevice": reg.device})

    # -- aclrtHostUnregister (api-rules.md 1.6)

    def unregister(self, a: _Args) -> Result:
        ptr = a.integer("ptr")
        if ptr == 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        if not self.supported:
            return Result(ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        reg = self.regs.get(ptr)  # exact base: interior, unknown and repeated pointers all miss
        if reg is None:
            return Result(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED)
        if reg.live:
            if reg.locked:
                try:
                    self.arena.unlock(ptr, reg.size)
                except PinningError as exc:
                    self._environment(a, exc)
                    return Result(ACL_ERROR_RT_DRV_INTERNAL_ERROR)
            if reg.device is not None:
                self.arena.unalias(reg.device)
                del self.aliases[reg.device]
        del self.regs[ptr]
        return Result(ACL_SUCCESS)

    # -- views

    def allocations(self) -> Iterator[Allocation]:
        return _allocations(self.host, self.aliases, "device-alias")

    def allocation_of(self, address: int, size: int) -> Allocation | None:
        return _allocation_of(self.host, self.aliases, "device-alias", address, size)

    def expected_locked_pages(self) -> frozenset[int]:
        pages: set[int] = set()
        for base, block in self.host.blocks.items():
            if block.locked and block.size > 0:
                pages.update(_pages(base, block.size))
        for base, reg in self.regs.items():
            if reg.live and reg.locked:
                pages.update(_pages(base, reg.size))
        return frozenset(pages)

    # -- internals

    def _overlaps(self, ptr: int, size: int) -> bool:
        return _overlaps_any(self.regs, ptr, size, lambda reg: reg.size)

    def _release_block(self, base: int) -> None:
        # Freeing registered memory is undefined (ACL-FREE-REGISTERED, ACL-FREEHOST-REGISTERED); the
        # runtime frees anyway and keeps its table entries. So do we: the arena drops the locks and
        # aliases with the block, and the entries stay as dead ones until unregistered.
        size = self.host.blocks[base].size
        for reg_base in self.regs.irange(base, base + size, inclusive=(True, False)):
            reg = self.regs[reg_base]
            if reg.live:  # a dead entry from earlier memory at the same addresses is already done
                reg.live = reg.locked = False
                if reg.device is not None:
                    del self.aliases[reg.device]
        self.host.free(base)

    def _refuse(self, a: _Args, message: str) -> None:
        self.note(Incident(IncidentKind.REFUSED, a.call, CODE_NOT_OWNED, message))

    def _environment(self, a: _Args, exc: PinningError) -> None:
        self.note(Incident(IncidentKind.ENVIRONMENT, a.call, exc.code, exc.diagnostics[0].message))


# ---------------------------------------------------------------- NVIDIA cuPVA


_VM_STATES = ("Init", "Operational", "DeInit")
_ALLOC_TYPES = ("CUDA", "HOST")


class _PvaDriver:
    """cupva::mem::Register/Unregister as their reference pages' Throws lists describe them."""

    def __init__(self, arena: PinnedArena, config: Mapping[str, Any], note: Report):
        self.host = _HostMemory(arena)
        self.cuda: SortedDict = SortedDict()  # simulated device base -> size
        self.next_cuda = CUDA_SPACE_BASE
        self.regs: SortedDict = SortedDict()  # base -> (size, kind)
        self.vm = "Init"
        self.cuda_disabled = False
        self.cuda_interop_used = False
        self.driver_version = int(config.get("driver_version", 2006))
        self.qnx_safety = bool(config.get("qnx_safety", False))
        self.note = note
        self.handlers: dict[str, Callable[[_Args], Result]] = {
            "malloc": self.malloc,
            "free": self.free,
            "cudaMalloc": self.cuda_malloc,
            "cudaFree": self.cuda_free,
            "vm_state": self.vm_state,
            "cupva::cuda::ForceDisableSupport": self.force_disable_support,
            "cupva::mem::Register": self.register,
            "cupva::mem::Unregister": self.unregister,
        }

    @property
    def auto_cuda(self) -> bool:
        """Driver >= 2006 outside QNX Safety registers CUDA pointers itself while interop is on."""
        return self.driver_version >= 2006 and not self.qnx_safety and not self.cuda_disabled

    # -- environment events

    def malloc(self, a: _Args) -> Result:
        return Result(PVA_OK, {"ptr": self.host.allocate(a.integer("size"), "malloc", lock=False)})

    def free(self, a: _Args) -> Result:
        ptr = a.integer("ptr")
        if ptr != 0:
            if self.host.block_at(ptr, "malloc") is None:
                self._refuse(a, f"{_show(ptr)} is not the start of a block malloc returned; nothing was freed")
            else:
                self.host.free(ptr)
        return Result(PVA_OK)

    def cuda_malloc(self, a: _Args) -> Result:
        size = a.integer("size")
        span = max(-(-size // CUDA_ALIGNMENT), 1) * CUDA_ALIGNMENT  # 2 MiB granules, at least one
        if self.next_cuda + span > CUDA_SPACE_END:
            raise MappingFailed(0, f"cudaMalloc of {size} bytes: the simulated device address space is exhausted")
        base, self.next_cuda = self.next_cuda, self.next_cuda + span  # never reused: no stale aliasing
        self.cuda[base] = size
        return Result(PVA_OK, {"devPtr": base})

    def cuda_free(self, a: _Args) -> Result:
        ptr = a.integer("devPtr")
        if ptr != 0:
            if ptr not in self.cuda:
                self._refuse(a, f"{_show(ptr)} is not the start of a simulated cudaMalloc allocation")
            else:
                # Registrations inside stay (PVA-FREE-REGISTERED is undefined): the simulated
                # memory holds nothing real, so a stale entry touches nothing.
                del self.cuda[ptr]
        return Result(PVA_OK)

    def vm_state(self, a: _Args) -> Result:
        self.vm = a.member("state", _VM_STATES)
        return Result(PVA_OK)

    def force_disable_support(self, a: _Args) -> Result:
        if self.cuda_interop_used:
            return Result("InvalidState")
        self.cuda_disabled = True
        return Result(PVA_OK)

    # -- cupva::mem::Register (api-rules.md 2.2 and the seed page)

    def register(self, a: _Args) -> Result:
        ptr, size = a.integer("ptr"), a.integer("size")
        kind = a.member("externalAllocType", _ALLOC_TYPES)
        if self.vm == "Operational":
            return Result("NotAllowedInOperationalState")
        if self.cuda_disabled:
            return Result("CUDADisabled")
        if kind == "HOST":
            return Result("UnsupportedFeature")
        if ptr == 0 or size <= 0:
            return Result("InvalidArgument")
        if self.auto_cuda:
            # Driver >= 2006: an explicit CUDA registration has no effect and raises no error.
            self.cuda_interop_used = True
            return Result(PVA_OK)
        if self._overlaps(ptr, size):
            return Result("InvalidArgument")
        if not self._in_cuda_allocation(ptr, size):
            self._refuse(a, f"{_show(ptr, size)} is not inside one simulated cudaMalloc allocation")
            return Result("DriverAPIError")
        self.regs[ptr] = (size, kind)
        self.cuda_interop_used = True
        return Result(PVA_OK)

    # -- cupva::mem::Unregister (api-rules.md 2.3)

    def unregister(self, a: _Args) -> Result:
        ptr = a.integer("ptr")
        if self.vm == "Operational":
            return Result("NotAllowedInOperationalState")
        if ptr in self.regs:
            del self.regs[ptr]
            return Result(PVA_OK)
        if self.auto_cuda and ptr in self.cuda:
            return Result(PVA_OK)  # the automatic registration: nothing to do, no error
        return Result("InvalidArgument")  # unknown, interior or already unregistered: "invalid pointer"

    # -- views

    def allocations(self) -> Iterator[Allocation]:
        return _allocations(self.host, self.cuda, "cudaMalloc")

    def allocation_of(self, address: int, size: int) -> Allocation | None:
        return _allocation_of(self.host, self.cuda, "cudaMalloc", address, size)

    def expected_locked_pages(self) -> frozenset[int]:
        return frozenset()  # cuPVA locks nothing: HOST registration is unsupported

    # -- internals

    def _overlaps(self, ptr: int, size: int) -> bool:
        return _overlaps_any(self.regs, ptr, size, lambda reg: reg[0])

    def _in_cuda_allocation(self, ptr: int, size: int) -> bool:
        return _sized_entry_holding(self.cuda, ptr, size) is not None

    def _refuse(self, a: _Args, message: str) -> None:
        self.note(Incident(IncidentKind.REFUSED, a.call, CODE_NOT_OWNED, message))


_IMPLEMENTATIONS: dict[str, type] = {"acl": _AclDriver, "cupva": _PvaDriver}


# ---------------------------------------------------------------- choosing a driver


def load_factory(text: str | None) -> Callable[[], Driver]:
    """`MODULE:FACTORY` (the --driver option) -> the factory; the reference driver when text is empty or None."""
    if not text:
        return ReferenceDriver
    module, _, attr = text.partition(":")
    if not module or not attr:
        raise RegcheckError([error("E0603", f"--driver must be MODULE:FACTORY, not {text!r}")])
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: a driver module next to the user is found
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise RegcheckError([error("E0603", f"cannot load driver factory {text!r}: {exc}")]) from None
    if not callable(factory):
        raise RegcheckError([error("E0603", f"driver factory {text!r} is not callable")])
    return factory
