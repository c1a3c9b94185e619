"""The reference driver's HIP calls (spec/hip.spec): hipHostRegister and its family, the pinned allocator
hipHostMalloc/hipHostFree, hipMalloc/hipFree, with the host's malloc, free, mmap and munmap.

The HIP header documents little (catalogue H1.x-H6.x); where the spec leaves a choice the driver does
what the open implementation, clr, does ([CODE]/[TEST] entries), with the complete overlap check of the
later rocclr (H1.10: any shared byte, either direction, is 712) rather than #7498's start-only one.
Where clr answers with a code the documents-only profile (`observed: false`) does not allow (InvalidValue
for unknown flags, for a null device-pointer flag), the documented behaviour wins in that profile.
docs/drivers.md tabulates every choice.
"""

from __future__ import annotations

from typing import Any, Mapping

from .memory import show_range
from .pinned import PinnedHostDriver
from .pinning import PinnedArena
from .protocol import CallArgs, Report, Result

HIP_SUCCESS = 0
HIP_ERROR_INVALID_VALUE = 1
HIP_ERROR_OUT_OF_MEMORY = 2
HIP_ERROR_INVALID_DEVICE_POINTER = 17
HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712
HIP_ERROR_HOST_MEMORY_NOT_REGISTERED = 713
HIP_ERROR_UNKNOWN = 999

HIP_HOST_REGISTER_KNOWN = 0xF  # Portable, Mapped, IoMemory, ReadOnly (= CoarseGrained)
HIP_EXT_HOST_REGISTER_UNCACHED = 0x80000000
HIP_HOST_MALLOC_COHERENT = 0x40000000
HIP_HOST_MALLOC_NON_COHERENT = 0x80000000

_ROCM_5_6 = (5, 6)
_ROCM_6_2_2 = (6, 2, 2)


class HipDriver(PinnedHostDriver):
    """HIP's host-memory calls as clr does them, on real memory: every registration and every
    hipHostMalloc block is page-locked and mapped (clr maps them all, H1.12, H5.1)."""

    pinned_kinds = frozenset({"hipHostMalloc"})
    device_kind = "hipMalloc"

    def __init__(self, arena: PinnedArena, config: Mapping[str, Any], note: Report):
        super().__init__(arena, note, HIP_SUCCESS)
        self.runtime = tuple(config.get("hip_runtime", (6, 2)))
        self.observed = bool(config.get("observed", False))
        self.handlers = {
            "malloc": self.malloc,
            "free": self.free,
            "mmap": self.mmap,
            "munmap": self.munmap,
            "mprotect": self.mprotect,
            "hipMalloc": self.hip_malloc,
            "hipFree": self.hip_free,
            "hipHostMalloc": self.host_malloc,
            "hipHostFree": self.host_free,
            "hipHostRegister": self.host_register,
            "hipHostUnregister": self.host_unregister,
            "hipHostGetDevicePointer": self.get_device_pointer,
        }

    # -- device memory (H5.6)

    def hip_malloc(self, a: CallArgs) -> Result:
        base = self.allocate_device(a, a.integer("size"))
        return Result(HIP_ERROR_OUT_OF_MEMORY) if base is None else Result(HIP_SUCCESS, {"ptr": base})

    def hip_free(self, a: CallArgs) -> Result:
        ptr = a.integer("ptr")
        if ptr != 0 and not self.device.free(ptr):
            # The header says InvalidDevicePointer; clr's ihipFree answers InvalidValue (H5.6).
            return Result(HIP_ERROR_INVALID_VALUE if self.observed else HIP_ERROR_INVALID_DEVICE_POINTER)
        return Result(HIP_SUCCESS)

    # -- the pinned allocator (H5.1, H5.3, H5.5)

    def host_malloc(self, a: CallArgs) -> Result:
        size, flags = a.integer("size"), a.integer("flags")
        if flags & HIP_HOST_MALLOC_COHERENT and flags & HIP_HOST_MALLOC_NON_COHERENT:
            return Result(HIP_ERROR_INVALID_VALUE)
        if size == 0:
            return Result(HIP_SUCCESS, {"ptr": 0})  # documented: success with a null pointer
        base = self.allocate_pinned(a, size, "hipHostMalloc", flags, mapped=True)
        return Result(HIP_ERROR_OUT_OF_MEMORY) if base is None else Result(HIP_SUCCESS, {"ptr": base})

    def host_free(self, a: CallArgs) -> Result:
        ptr = a.integer("ptr")
        if ptr == 0:
            return Result(HIP_SUCCESS)  # clr (H5.5)
        if not self.pinned_block_at(ptr):
            return Result(HIP_ERROR_INVALID_VALUE)  # clr and hip-tests, registered memory included (H5.5)
        self.release_block(ptr)
        return Result(HIP_SUCCESS)

    # -- hipHostRegister (H1.x)

    def host_register(self, a: CallArgs) -> Result:
        ptr, size, flags = a.integer("hostPtr"), a.integer("sizeBytes"), a.integer("flags")
        if self.observed and self.flags_refused(flags):
            return Result(HIP_ERROR_INVALID_VALUE)  # H1.8 [CODE]
        if ptr != 0 and size > 0 and self.overlaps_registration(ptr, size):  # (a null pointer names no memory, Q4)
            return Result(HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED)  # H1.10, the complete check
        if ptr == 0 or size == 0:
            return Result(HIP_ERROR_INVALID_VALUE)  # H1.8 [CODE]
        if self.overlaps_pinned(ptr, size):
            # hipHostMalloc memory is already in clr's object map: 712 from #7498 on (H5.7).
            return Result(HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
        if not self.in_one_host_block(ptr, size):
            self.refuse(a, f"{show_range(ptr, size)} is not inside one block the driver allocated; nothing was locked "
                           "or mapped")
            # HIP-REG-HOST-MEMORY broken (undefined): clr's buffer creation fails, InvalidValue (H1.9).
            return Result(HIP_ERROR_INVALID_VALUE)
        if not self.register(a, ptr, size, flags, mapped=True):  # clr maps every registration (H1.12)
            return Result(HIP_ERROR_OUT_OF_MEMORY)
        return Result(HIP_SUCCESS)

    def flags_refused(self, flags: int) -> bool:
        """clr from rocm-5.6: flags above 15 are refused, and Uncached too up to 6.2.2 (H1.8)."""
        if self.runtime < _ROCM_5_6:
            return False
        unknown = flags & ~(HIP_HOST_REGISTER_KNOWN | HIP_EXT_HOST_REGISTER_UNCACHED)
        return bool(unknown) or (self.runtime <= _ROCM_6_2_2 and bool(flags & HIP_EXT_HOST_REGISTER_UNCACHED))

    # -- hipHostUnregister (H2.x)

    def host_unregister(self, a: CallArgs) -> Result:
        ptr = a.integer("hostPtr")
        if ptr == 0:
            return Result(HIP_ERROR_INVALID_VALUE)  # H2.2 [CODE]
        if ptr in self.regs:
            return Result(HIP_SUCCESS if self.unregister(a, ptr) else HIP_ERROR_UNKNOWN)
        if self.registration_holding(ptr) is not None:
            # clr aborts the process here (H2.5); a driver cannot: InvalidValue, the registration stays.
            return Result(HIP_ERROR_INVALID_VALUE)
        if self.observed and self.runtime < _ROCM_5_6:
            return Result(HIP_ERROR_INVALID_VALUE)  # H2.4: clr before rocm-5.6
        return Result(HIP_ERROR_HOST_MEMORY_NOT_REGISTERED)

    # -- hipHostGetDevicePointer (H3.x)

    def get_device_pointer(self, a: CallArgs) -> Result:
        p_host, flags = a.integer("hstPtr"), a.integer("flags")
        if self.observed and flags != 0:
            return Result(HIP_ERROR_INVALID_VALUE)  # H3.2 [CODE]
        held = self.registration_holding(p_host)
        if held is not None:
            base, reg = held
            device = reg.device
        else:
            block = self.pinned_block_holding(p_host)
            if block is None:
                return Result(HIP_ERROR_INVALID_VALUE)  # H3.1, H3.3
            base, device = block[0], block[1].device
        assert device is not None  # every registration and every non-empty block is mapped
        # The device address plus the offset (H3.2); a dead entry answers its old address.
        return Result(HIP_SUCCESS, {"devPtr": device + (p_host - base)})
