"""What the reference driver's CUDA runtime and HIP implementations share: host memory from malloc and
mmap, a pinned allocator whose blocks are page-locked for real, registrations that lock their pages
and (when mapped) get a second real mapping as their device address, and a simulated device space.

The two runtimes differ in their status values, flag sets and the order and codes of their checks;
`checker.drivers.cuda` and `checker.drivers.hip` make those choices (docs/drivers.md tabulates them)
and call the mechanisms here, which never choose a status themselves.

Freeing or unmapping registered memory is the caller's bug (CUDA-FREE-REGISTERED, HIP-FREE-REGISTERED
and their munmap and pinned-free siblings); the runtime keeps its registration (catalogue C6.2, H6.3),
and so does this driver: the memory goes, its locks and device mapping with it, and the entry stays
as a *dead* one, which still overlaps later registrations and can still be unregistered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator


from .memory import (CUDA_ALIGNMENT, CUDA_SPACE_BASE, CUDA_SPACE_END, HostEvents, HostMemory, allocation_at,
                     allocations_of, expected_locks, holds, overlaps_any, show_range, sized_entry_holding)
from .ordered import IntMap
from .pinning import PAGE_SIZE, MappingFailed, PinnedArena, PinningError
from .protocol import Allocation, CallArgs, Incident, IncidentKind, Report, Result


@dataclass(slots=True)
class Registration:
    size: int
    flags: int
    device: int | None  # the alias address of a mapped registration
    live: bool = True  # False once its memory was freed or unmapped under it (the entry stays)


@dataclass(frozen=True, slots=True)
class PinnedBlock:
    """A block of the pinned allocator: page-locked for its lifetime, mapped when `device` is set."""

    flags: int
    device: int | None


class DeviceSpace:
    """Simulated device allocations (there is no GPU here): 2 MiB-aligned numbers above every host
    address, never reused, with nothing mapped behind them (as cuPVA's cudaMalloc, docs/drivers.md)."""

    def __init__(self) -> None:
        self.allocs = IntMap()  # base -> size
        self.next = CUDA_SPACE_BASE

    def allocate(self, size: int, call: str) -> int:
        span = max(-(-size // CUDA_ALIGNMENT), 1) * CUDA_ALIGNMENT
        if self.next + span > CUDA_SPACE_END:
            raise MappingFailed(0, f"{call} of {size} bytes: the simulated device address space is exhausted")
        base, self.next = self.next, self.next + span
        self.allocs[base] = size
        return base

    def free(self, base: int) -> bool:
        """Whether `base` was a live allocation (it is released then)."""
        return self.allocs.pop(base, None) is not None


PROT_READ, PROT_WRITE = 0x1, 0x2  # <sys/mman.h>


def is_read_only(prot: int) -> bool:
    """Readable and not writable: a mapping C1.8 asks cudaHostRegisterReadOnly for."""
    return bool(prot & PROT_READ) and not prot & PROT_WRITE


def page_round(length: int) -> int:
    """`length` rounded up to whole pages, as mmap and munmap take it."""
    return -(-length // PAGE_SIZE) * PAGE_SIZE


class PinnedHostDriver(HostEvents):
    """Host memory, the pinned allocator and registrations, on a `PinnedArena`.

    A subclass sets `success`, `pinned_kinds` (its pinned allocator's block kinds), `device_kind` (its
    device allocator's name) and `handlers`, and decides every status; the methods here carry out a
    decision and report an ENVIRONMENT incident (returning False or None) when the machine refuses.
    """

    pinned_kinds: frozenset[str] = frozenset()
    device_kind = "device"

    def __init__(self, arena: PinnedArena, note: Report, success: Any):
        self.arena = arena
        self.host = HostMemory(arena)
        self.regs = IntMap()  # base -> Registration; bases of disjoint ranges
        self.pinned: dict[int, PinnedBlock] = {}  # base of a pinned-allocator block -> its flags and alias
        self.aliases = IntMap()  # device address -> size, of every live alias
        self.read_only: set[int] = set()  # bases of the mappings the CPU may read but not write
        self.device = DeviceSpace()
        self.note = note
        self.success = success
        self.handlers: dict[str, Callable[[CallArgs], Result]] = {}

    # -- environment events: mmap and munmap (malloc and free are HostEvents')

    def mmap(self, a: CallArgs) -> Result:
        length = a.integer("length")
        prot = a.integer_or("prot", PROT_READ | PROT_WRITE)  # recorded, not applied: see `mprotect`
        if length <= 0:
            raise MappingFailed(22, f"mmap of {length} bytes: the kernel refuses an empty mapping (EINVAL)")
        base = self.host.allocate(page_round(length), "mmap", lock=False)
        if is_read_only(prot):
            self.read_only.add(base)
        return Result(self.success, {"addr": base})

    def munmap(self, a: CallArgs) -> Result:
        """A munmap from a mapping's base releases its first pages (all of them, or a prefix) for real;
        a zero length unmaps nothing. A munmap that starts inside a mapping is not carried out (the
        spec keeps such a mapping whole, docs/cuda-hip.md "Modelling limits"): REFUSED."""
        addr, length = a.integer("addr"), a.integer("length")
        if length <= 0:
            return Result(self.success)
        block = self.host.block_at(addr, "mmap")
        if block is None:
            self.refuse(a, f"{show_range(addr, length)} does not start at a mapping mmap returned; nothing was "
                           "unmapped (only a munmap from a mapping's base is carried out)")
            return Result(self.success)
        span = page_round(length)
        if span >= block.size:
            self.release_block(addr)
        else:
            self.kill_registrations(addr, span)
            self.host.trim_front(addr, span)
            if addr in self.read_only:
                self.read_only.discard(addr)
                self.read_only.add(addr + span)
        return Result(self.success)

    def mprotect(self, a: CallArgs) -> Result:
        """A mapping's protection is recorded, not applied: the arena's pages stay readable and
        writable (the driver relocates and locks them but never runs code that could fault on them);
        `read_only` says which mappings a registration treats as read-only. Followed as the specs
        follow it: an mprotect from a mapping's base that covers all of it sets its protection, one
        that makes a prefix writable makes the whole writable; any other changes nothing."""
        addr, length, prot = a.integer("addr"), a.integer("length"), a.integer("prot")
        block = self.host.block_at(addr, "mmap")
        if block is None:
            return Result(self.success)
        if page_round(length) >= block.size and is_read_only(prot):
            self.read_only.add(addr)
        elif page_round(length) >= block.size or prot & PROT_WRITE:
            self.read_only.discard(addr)
        return Result(self.success)

    def overlaps_read_only_mapping(self, ptr: int, size: int) -> bool:
        """Whether [ptr, ptr + size) shares a byte with a mapping the CPU may read but not write."""
        return any(ptr < base + self.host.blocks[base].size and base < ptr + size for base in self.read_only)

    def release_block(self, base: int) -> None:
        """free, munmap or the pinned allocator's free of a whole block: registrations inside die."""
        self.kill_registrations(base, max(self.host.blocks[base].size, 1))
        self.read_only.discard(base)
        pinned = self.pinned.pop(base, None)
        if pinned is not None and pinned.device is not None:
            del self.aliases[pinned.device]
        self.host.free(base)  # the arena drops the block's locks and aliases with it

    def kill_registrations(self, base: int, size: int) -> None:
        """The memory [base, base + size) goes: every live registration touching it loses its locks and
        its device mapping (all of it, even a part outside the range) and stays as a dead entry."""
        for reg_base, reg in list(self._touching(base, size)):
            if reg.live:
                self.arena.unlock(reg_base, reg.size)
                reg.live = False
                if reg.device is not None:
                    self.arena.unalias(reg.device)
                    del self.aliases[reg.device]

    # -- device memory

    def allocate_device(self, a: CallArgs, size: int) -> int | None:
        """A simulated device allocation, or None after an ENVIRONMENT incident (the space is full: an
        out-of-memory failure, which these specs' device allocators may return)."""
        try:
            return self.device.allocate(size, a.call)
        except PinningError as exc:
            self.environment(a, exc)
            return None

    # -- the pinned allocator

    def allocate_pinned(self, a: CallArgs, size: int, kind: str, flags: int, mapped: bool) -> int | None:
        """A page-locked block (and its alias when `mapped` and not empty), or None after an
        ENVIRONMENT incident with nothing left behind."""
        try:
            base = self.host.allocate(size, kind, lock=True)
        except PinningError as exc:
            self.environment(a, exc)
            return None
        device = None
        if mapped and size > 0:
            try:
                device = self.arena.alias(base, size)
            except PinningError as exc:
                self.host.free(base)
                self.environment(a, exc)
                return None
            self.aliases[device] = size
        self.pinned[base] = PinnedBlock(flags, device)
        return base

    def pinned_block_at(self, base: int) -> bool:
        block = self.host.blocks.get(base)
        return block is not None and block.kind in self.pinned_kinds

    def pinned_block_holding(self, address: int) -> tuple[int, PinnedBlock] | None:
        """The pinned-allocator block whose bytes include `address`, if any."""
        held = self.host.holding(address, 1)
        if held is None or held[1].kind not in self.pinned_kinds:
            return None
        return held[0], self.pinned[held[0]]

    def overlaps_pinned(self, ptr: int, size: int) -> bool:
        """Whether [ptr, ptr + size) shares a byte with a pinned-allocator block."""
        return any(self.host.blocks[b].kind in self.pinned_kinds
                   for b in self._blocks_touching(ptr, size))

    # -- registrations

    def overlaps_registration(self, ptr: int, size: int) -> bool:
        """Any shared byte with a registration, live or dead: the new range inside, around or across an
        old one (catalogue C1.13, H1.10). Adjacent ranges do not overlap."""
        return overlaps_any(self.regs, ptr, size, lambda reg: reg.size)

    def registration_holding(self, address: int) -> tuple[int, Registration] | None:
        """The registration (live or dead) whose range includes `address`, if any."""
        entry = self.regs.floor_item(address)
        if entry is None:
            return None
        base, reg = entry
        return (base, reg) if address < base + reg.size else None

    def in_one_host_block(self, ptr: int, size: int) -> bool:
        return self.host.holding(ptr, size) is not None

    def register(self, a: CallArgs, ptr: int, size: int, flags: int, mapped: bool) -> bool:
        """Lock the range (and alias it when `mapped`) and record it; False after an ENVIRONMENT
        incident, with no lock, alias or entry left behind. The caller has checked ownership."""
        try:
            device = self.arena.alias(ptr, size) if mapped else None
        except PinningError as exc:
            self.environment(a, exc)
            return False
        try:
            self.arena.lock(ptr, size)
        except PinningError as exc:
            if device is not None:
                self.arena.unalias(device)
            self.environment(a, exc)
            return False
        self.regs[ptr] = Registration(size, flags, device)
        if device is not None:
            self.aliases[device] = size
        return True

    def unregister(self, a: CallArgs, base: int) -> bool:
        """End the registration at `base` (a key of `regs`); a dead one touches nothing. False after an
        ENVIRONMENT incident (munlock refused), with the registration left as it was."""
        reg = self.regs[base]
        if reg.live:
            try:
                self.arena.unlock(base, reg.size)
            except PinningError as exc:
                self.environment(a, exc)
                return False
            if reg.device is not None:
                self.arena.unalias(reg.device)
                del self.aliases[reg.device]
        del self.regs[base]
        return True

    # -- views

    def allocations(self) -> Iterator[Allocation]:
        yield from allocations_of(self.host, self.aliases, "device-alias")
        for base, size in self.device.allocs.items():
            yield Allocation(base, size, self.device_kind)

    def owns(self, address: int, size: int) -> bool:
        return holds(self.host, self.aliases, address, size) or \
            sized_entry_holding(self.device.allocs, address, size) is not None

    def allocation_of(self, address: int, size: int) -> Allocation | None:
        found = allocation_at(self.host, self.aliases, "device-alias", address, size)
        if found is None:
            base = sized_entry_holding(self.device.allocs, address, size)
            found = None if base is None else Allocation(base, self.device.allocs[base], self.device_kind)
        return found

    def expected_locked_pages(self) -> frozenset[int]:
        """Pinned-allocator blocks and live registrations."""
        return expected_locks(self.host, self.regs, lambda reg: reg.live)

    # -- internals

    def environment(self, a: CallArgs, exc: PinningError) -> None:
        self.note(Incident(IncidentKind.ENVIRONMENT, a.call, exc.code, exc.diagnostics[0].message))

    def _touching(self, base: int, size: int) -> Iterator[tuple[int, Registration]]:
        """Registrations sharing a byte with [base, base + size): the one starting before it, if it
        reaches in, and every one starting inside."""
        for key in self.regs.meeting(base, base + size):
            reg = self.regs[key]
            if key >= base or base < key + reg.size:
                yield key, reg

    def _blocks_touching(self, ptr: int, size: int) -> Iterator[int]:
        if size <= 0:
            return
        blocks = self.host.blocks
        for key in blocks.meeting(ptr, ptr + size):
            block_size = blocks[key].size
            if block_size > 0 and (key >= ptr or ptr < key + block_size):
                yield key

