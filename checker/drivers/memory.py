"""The reference driver's memory: the vendors' status values and flags it returns, its host allocations
(memfd-backed mappings of whole pages) and the simulated CUDA device address space."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .ordered import IntMap
from .pinning import CODE_NOT_OWNED, PAGE_SIZE, PinnedArena, PinningError
from .protocol import Allocation, CallArgs, Incident, IncidentKind, Report, Result


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


class HostMemory:
    """Host blocks the driver allocated from its arena, keyed by base (blocks never overlap)."""

    def __init__(self, arena: PinnedArena):
        self.arena = arena
        self.blocks = IntMap()  # base -> _Block

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

    def trim_front(self, base: int, length: int) -> int:
        """Release the block's first `length` bytes (whole pages, fewer than the block has): the rest
        stays at its addresses as a block starting at the returned `base + length`."""
        block = self.blocks.pop(base)
        try:
            end = self.arena.trim_front(base, length)
        except Exception:  # PinningError or a bad length: the block is as it was
            self.blocks[base] = block
            raise
        self.blocks[end] = _Block(block.size - length, block.kind, block.locked)
        return end

    def block_at(self, base: int, kind: str) -> _Block | None:
        block = self.blocks.get(base)
        return block if block is not None and block.kind == kind else None

    def holding(self, address: int, size: int) -> tuple[int, _Block] | None:
        """The block whose bytes include all of [address, address + size), if any."""
        entry = self.blocks.floor_item(address)
        if entry is None or size <= 0 or address + size > entry[0] + entry[1].size:
            return None
        return entry

    def allocations(self) -> Iterator[Allocation]:
        for base, block in self.blocks.items():
            yield Allocation(base, block.size, block.kind)


def sized_entry_holding(table: IntMap, address: int, size: int) -> int | None:
    """The key of the entry (base -> size, entries disjoint) whose range includes the range, if any."""
    entry = table.floor_item(address)
    if entry is None or size <= 0 or address + size > entry[0] + entry[1]:
        return None
    return entry[0]


def allocations_of(host: HostMemory, other: IntMap, kind: str) -> Iterator[Allocation]:
    """A driver's memory: its host blocks, then the entries (base -> size) of its other space."""
    yield from host.allocations()
    for base, size in other.items():
        yield Allocation(base, size, kind)


def allocation_at(host: HostMemory, other: IntMap, kind: str, address: int, size: int) -> Allocation | None:
    """The host block, or else the entry of the driver's other space, holding the whole range."""
    held = host.holding(address, size)
    if held is not None:
        return Allocation(held[0], held[1].size, held[1].kind)
    base = sized_entry_holding(other, address, size)
    return None if base is None else Allocation(base, other[base], kind)


def holds(host: HostMemory, other: IntMap, address: int, size: int) -> bool:
    """Whether `allocation_at` finds an allocation (without making one: the lock check asks)."""
    return host.holding(address, size) is not None or sized_entry_holding(other, address, size) is not None


def overlaps_any(table: IntMap, address: int, size: int, size_of: Callable[[Any], int]) -> bool:
    """Whether [address, address + size) overlaps an entry of a table of disjoint ranges.

    Disjoint ranges sorted by base are sorted by end as well, so only the last one starting
    before `address + size` can reach past `address`.
    """
    entry = table.floor_item(address + size - 1)
    return entry is not None and size > 0 and entry[0] + size_of(entry[1]) > address


def expected_locks(host: "HostMemory", regs: IntMap, holds_lock: Callable[[Any], bool]) -> frozenset[int]:
    """The pages a driver's own tables say are locked: its page-locked host blocks, and the
    registrations (base -> entry with a `size`) that `holds_lock` says hold their pages locked."""
    pages: set[int] = set()
    for base, block in host.blocks.items():
        if block.locked and block.size > 0:
            pages.update(pages_of(base, block.size))
    for base, reg in regs.items():
        if holds_lock(reg):
            pages.update(pages_of(base, reg.size))
    return frozenset(pages)


def pages_of(address: int, size: int) -> range:
    first = address - address % PAGE_SIZE
    return range(first, address + size, PAGE_SIZE)


def show_range(address: int, size: int | None = None) -> str:
    return f"{address:#x}" if size is None else f"[{address:#x}, {address + size:#x})"


class HostEvents:
    """The environment events both reference implementations serve alike: `malloc` and `free` of
    host blocks, and the REFUSED incident for an address the driver did not hand out. A subclass
    sets `host`, `note` and `success` (its spec's success status) and may extend `release_block`."""

    host: HostMemory
    note: Report
    success: Any

    def malloc(self, a: CallArgs) -> Result:
        return Result(self.success, {"ptr": self.host.allocate(a.integer("size"), "malloc", lock=False)})

    def free(self, a: CallArgs) -> Result:
        ptr = a.integer("ptr")
        if ptr != 0:
            if self.host.block_at(ptr, "malloc") is None:
                self.refuse(a, f"{show_range(ptr)} is not the start of a block malloc returned; nothing was freed")
            else:
                self.release_block(ptr)
        return Result(self.success)

    def release_block(self, base: int) -> None:
        self.host.free(base)

    def refuse(self, a: CallArgs, message: str) -> None:
        self.note(Incident(IncidentKind.REFUSED, a.call, CODE_NOT_OWNED, message))
