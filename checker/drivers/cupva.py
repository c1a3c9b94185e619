"""The reference driver's NVIDIA cuPVA calls (mem::Register, Unregister, GetDevicePointer and the VPU's
init phase), as their pages' Throws lists say."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

from .memory import (CUDA_ALIGNMENT, CUDA_SPACE_BASE, CUDA_SPACE_END, PVA_OK, HostEvents, HostMemory, allocation_at,
                     allocations_of, holds, overlaps_any, show_range, sized_entry_holding)
from .ordered import IntMap
from .pinning import MappingFailed, PinnedArena
from .protocol import Allocation, CallArgs, Report, Result


# ---------------------------------------------------------------- NVIDIA cuPVA


_VM_STATES = ("Init", "Operational", "DeInit")
_ALLOC_TYPES = ("CUDA", "HOST")


class PvaDriver(HostEvents):
    """cupva::mem::Register/Unregister as their reference pages' Throws lists describe them."""

    def __init__(self, arena: PinnedArena, config: Mapping[str, Any], note: Report):
        self.host = HostMemory(arena)
        self.cuda = IntMap()  # simulated device base -> size
        self.next_cuda = CUDA_SPACE_BASE
        self.regs = IntMap()  # base -> (size, kind)
        self.vm = "Init"
        self.cuda_disabled = False
        self.cuda_interop_used = False
        self.driver_version = int(config.get("driver_version", 2006))
        self.qnx_safety = bool(config.get("qnx_safety", False))
        self.note = note
        self.success = PVA_OK
        self.handlers: dict[str, Callable[[CallArgs], Result]] = {
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

    def cuda_malloc(self, a: CallArgs) -> Result:
        size = a.integer("size")
        span = max(-(-size // CUDA_ALIGNMENT), 1) * CUDA_ALIGNMENT  # 2 MiB granules, at least one
        if self.next_cuda + span > CUDA_SPACE_END:
            raise MappingFailed(0, f"cudaMalloc of {size} bytes: the simulated device address space is exhausted")
        base, self.next_cuda = self.next_cuda, self.next_cuda + span  # never reused: no stale aliasing
        self.cuda[base] = size
        return Result(PVA_OK, {"devPtr": base})

    def cuda_free(self, a: CallArgs) -> Result:
        ptr = a.integer("devPtr")
        if ptr != 0:
            if ptr not in self.cuda:
                self.refuse(a, f"{show_range(ptr)} is not the start of a simulated cudaMalloc allocation")
            else:
                # Registrations inside stay (PVA-FREE-REGISTERED is undefined): the simulated
                # memory holds nothing real, so a stale entry touches nothing.
                del self.cuda[ptr]
        return Result(PVA_OK)

    def vm_state(self, a: CallArgs) -> Result:
        self.vm = a.member("state", _VM_STATES)
        return Result(PVA_OK)

    def force_disable_support(self, a: CallArgs) -> Result:
        if self.cuda_interop_used:
            return Result("InvalidState")
        self.cuda_disabled = True
        return Result(PVA_OK)

    # -- cupva::mem::Register (api-rules.md 2.2 and the seed page)

    def register(self, a: CallArgs) -> Result:
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
            self.refuse(a, f"{show_range(ptr, size)} is not inside one simulated cudaMalloc allocation")
            return Result("DriverAPIError")
        self.regs[ptr] = (size, kind)
        self.cuda_interop_used = True
        return Result(PVA_OK)

    # -- cupva::mem::Unregister (api-rules.md 2.3)

    def unregister(self, a: CallArgs) -> Result:
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
        return allocations_of(self.host, self.cuda, "cudaMalloc")

    def allocation_of(self, address: int, size: int) -> Allocation | None:
        return allocation_at(self.host, self.cuda, "cudaMalloc", address, size)

    def owns(self, address: int, size: int) -> bool:
        return holds(self.host, self.cuda, address, size)

    def expected_locked_pages(self) -> frozenset[int]:
        return frozenset()  # cuPVA locks nothing: HOST registration is unsupported

    # -- internals

    def _overlaps(self, ptr: int, size: int) -> bool:
        return overlaps_any(self.regs, ptr, size, lambda reg: reg[0])

    def _in_cuda_allocation(self, ptr: int, size: int) -> bool:
        return sized_entry_holding(self.cuda, ptr, size) is not None
