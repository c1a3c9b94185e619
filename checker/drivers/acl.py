"""The reference driver's Ascend CANN calls, in the open-source runtime's software-table mode (shared/api-
rules.md 1.3-1.8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from .memory import (ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                     ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     ACL_ERROR_RT_MEMORY_ALLOCATION, ACL_ERROR_RT_PARAM_INVALID, ACL_HOST_REG_ALL,
                     ACL_HOST_REG_MAPPED, ACL_HOST_REG_PINNED, ACL_REGISTER_PRODUCTS, ACL_SUCCESS, HostEvents,
                     HostMemory, allocation_at, allocations_of, expected_locks, holds, overlaps_any, show_range)
from .ordered import IntMap
from .pinning import PinnedArena, PinningError
from .protocol import Allocation, CallArgs, Incident, IncidentKind, Report, Result


# ---------------------------------------------------------------- Ascend CANN (software-table mode)


@dataclass(slots=True)
class _AclRegistration:
    size: int
    flags: int
    device: int | None  # the alias address of a MAPPED registration
    locked: bool  # PINNED: the arena holds one lock count on each of its pages
    live: bool = True  # False once its memory was freed under it (the entry stays, as in the runtime)


class AclDriver(HostEvents):
    """aclrtHostRegisterV2 and friends as the CANN runtime does them in software-table mode."""

    def __init__(self, arena: PinnedArena, config: Mapping[str, Any], note: Report):
        self.arena = arena
        self.host = HostMemory(arena)
        self.regs = IntMap()  # base -> _AclRegistration; bases of disjoint ranges
        self.aliases = IntMap()  # device address -> size, of live MAPPED registrations
        self.supported = config.get("product", "AtlasA2") in ACL_REGISTER_PRODUCTS
        self.note = note
        self.success = ACL_SUCCESS
        self.handlers: dict[str, Callable[[CallArgs], Result]] = {
            "malloc": self.malloc,
            "free": self.free,
            "aclrtMallocHost": self.malloc_host,
            "aclrtFreeHost": self.free_host,
            "aclrtHostRegisterV2": self.register,
            "aclrtHostGetDevicePointer": self.get_device_pointer,
            "aclrtHostUnregister": self.unregister,
        }

    # -- environment events

    # -- aclrtMallocHost / aclrtFreeHost (api-rules.md 1.8)

    def malloc_host(self, a: CallArgs) -> Result:
        size = a.integer("size")
        if size == 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        try:
            return Result(ACL_SUCCESS, {"hostPtr": self.host.allocate(size, "aclrtMallocHost", lock=True)})
        except PinningError as exc:
            self._environment(a, exc)
            return Result(ACL_ERROR_RT_MEMORY_ALLOCATION)

    def free_host(self, a: CallArgs) -> Result:
        ptr = a.integer("hostPtr")
        if ptr == 0:
            return Result(ACL_ERROR_INVALID_PARAM)
        if self.host.block_at(ptr, "aclrtMallocHost") is None:
            # The runtime answers 107000 for a pointer its attribute query does not place on the host.
            self.refuse(a, f"{show_range(ptr)} is not the start of a block aclrtMallocHost returned; nothing was freed")
            return Result(ACL_ERROR_RT_PARAM_INVALID)
        self.release_block(ptr)
        return Result(ACL_SUCCESS)

    # -- aclrtHostRegisterV2 (api-rules.md 1.3)

    def register(self, a: CallArgs) -> Result:
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
            self.refuse(a, f"{show_range(ptr, size)} is not inside one block the driver allocated; nothing was "
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

    def get_device_pointer(self, a: CallArgs) -> Result:
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

    def unregister(self, a: CallArgs) -> Result:
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
        return allocations_of(self.host, self.aliases, "device-alias")

    def allocation_of(self, address: int, size: int) -> Allocation | None:
        return allocation_at(self.host, self.aliases, "device-alias", address, size)

    def owns(self, address: int, size: int) -> bool:
        return holds(self.host, self.aliases, address, size)

    def expected_locked_pages(self) -> frozenset[int]:
        return expected_locks(self.host, self.regs, lambda reg: reg.live and reg.locked)

    # -- internals

    def _overlaps(self, ptr: int, size: int) -> bool:
        return overlaps_any(self.regs, ptr, size, lambda reg: reg.size)

    def release_block(self, base: int) -> None:
        # Freeing registered memory is undefined (ACL-FREE-REGISTERED, ACL-FREEHOST-REGISTERED); the
        # runtime frees anyway and keeps its table entries. So do we: the arena drops the locks and
        # aliases with the block, and the entries stay as dead ones until unregistered.
        size = self.host.blocks[base].size
        for reg_base in self.regs.irange(base, base + size):
            reg = self.regs[reg_base]
            if reg.live:  # a dead entry from earlier memory at the same addresses is already done
                reg.live = reg.locked = False
                if reg.device is not None:
                    del self.aliases[reg.device]
        self.host.free(base)

    def _environment(self, a: CallArgs, exc: PinningError) -> None:
        self.note(Incident(IncidentKind.ENVIRONMENT, a.call, exc.code, exc.diagnostics[0].message))
