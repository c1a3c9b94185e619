"""The reference driver's CUDA runtime calls (spec/cuda.spec): cudaHostRegister and its family, the pinned
allocator, cudaMalloc/cudaFree and cudaSetDeviceFlags, with the host's malloc, free, mmap and munmap.

Where the spec leaves a choice, the driver does what the catalogue (shared/cuda-hip-rules.md) records
the real runtime doing ([EMP] entries, the spec's `observed` rules), as far as the profile in force
allows it: with `observed: false` the documented answer wins where the two differ (cudaHostGetFlags on
registered memory, the 713 for unregistering pinned-allocator memory). docs/drivers.md tabulates
every choice; the status numbering is CUDA 10.1 and later, whatever `cuda_runtime` says.
"""

from __future__ import annotations

from typing import Any, Mapping

from .memory import show_range
from .pinned import PinnedHostDriver
from .pinning import PAGE_SIZE, PinnedArena
from .protocol import CallArgs, Report, Result

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_MEMORY_ALLOCATION = 2
CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712
CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713
CUDA_ERROR_NOT_SUPPORTED = 801
CUDA_ERROR_UNKNOWN = 999

CUDA_HOST_REGISTER_PORTABLE = 0x1
CUDA_HOST_REGISTER_MAPPED = 0x2
CUDA_HOST_REGISTER_READONLY = 0x8
CUDA_HOST_REGISTER_ALL = 0xF
CUDA_HOST_ALLOC_MAPPED = 0x2
CUDA_HOST_ALLOC_ALL = 0x7

_VERSION_4_1 = (4, 1)


class CudaDriver(PinnedHostDriver):
    """The CUDA runtime's host-memory calls on real memory: registrations and pinned blocks are
    page-locked, mapped ones get a second real mapping as their device address."""

    pinned_kinds = frozenset({"cudaMallocHost", "cudaHostAlloc"})
    device_kind = "cudaMalloc"

    def __init__(self, arena: PinnedArena, config: Mapping[str, Any], note: Report):
        super().__init__(arena, note, CUDA_SUCCESS)
        self.before_4_1 = tuple(config.get("cuda_runtime", (12, 6))) < _VERSION_4_1
        self.can_map_host = bool(config.get("can_map_host", True))
        self.read_only_supported = bool(config.get("read_only_supported", True))
        self.host_page_tables = bool(config.get("host_page_tables", False))
        self.observed = bool(config.get("observed", False))
        self.handlers = {
            "malloc": self.malloc,
            "free": self.free,
            "mmap": self.mmap,
            "munmap": self.munmap,
            "mprotect": self.mprotect,
            "cudaMalloc": self.cuda_malloc,
            "cudaFree": self.cuda_free,
            "cudaSetDeviceFlags": self.set_device_flags,
            "cudaMallocHost": self.malloc_host,
            "cudaHostAlloc": self.host_alloc,
            "cudaFreeHost": self.free_host,
            "cudaHostRegister": self.host_register,
            "cudaHostUnregister": self.host_unregister,
            "cudaHostGetDevicePointer": self.get_device_pointer,
            "cudaHostGetFlags": self.get_flags,
        }

    # -- device memory (C6.1) and device flags (C6.3)

    def cuda_malloc(self, a: CallArgs) -> Result:
        base = self.allocate_device(a, a.integer("size"))
        return Result(CUDA_ERROR_MEMORY_ALLOCATION) if base is None else Result(CUDA_SUCCESS, {"devPtr": base})

    def cuda_free(self, a: CallArgs) -> Result:
        ptr = a.integer("devPtr")
        if ptr != 0 and not self.device.free(ptr):
            return Result(CUDA_ERROR_INVALID_VALUE)  # a plain lookup: nothing is touched
        return Result(CUDA_SUCCESS)

    def set_device_flags(self, a: CallArgs) -> Result:
        # Map-host is implicit in runtime contexts (C6.3) and no other flag touches registration:
        # nothing to keep.
        a.integer("flags")
        return Result(CUDA_SUCCESS)

    # -- the pinned allocator (C5.1-C5.3)

    def malloc_host(self, a: CallArgs) -> Result:
        base = self.allocate_pinned(a, a.integer("size"), "cudaMallocHost", 0, mapped=False)
        return Result(CUDA_ERROR_MEMORY_ALLOCATION) if base is None else Result(CUDA_SUCCESS, {"ptr": base})

    def host_alloc(self, a: CallArgs) -> Result:
        size, flags = a.integer("size"), a.integer("flags")
        if flags & ~CUDA_HOST_ALLOC_ALL:
            return Result(CUDA_ERROR_INVALID_VALUE)
        # Mapped is accepted where nothing can be mapped; the failure comes at the query (C5.2).
        mapped = bool(flags & CUDA_HOST_ALLOC_MAPPED) and self.can_map_host
        base = self.allocate_pinned(a, size, "cudaHostAlloc", flags, mapped)
        return Result(CUDA_ERROR_MEMORY_ALLOCATION) if base is None else Result(CUDA_SUCCESS, {"pHost": base})

    def free_host(self, a: CallArgs) -> Result:
        ptr = a.integer("ptr")
        if ptr == 0:
            return Result(CUDA_SUCCESS)  # silent in the documents (C5.3); a no-op, as free(NULL)
        if not self.pinned_block_at(ptr):
            return Result(CUDA_ERROR_INVALID_VALUE)  # documented (C5.3): a lookup, nothing touched
        self.release_block(ptr)
        return Result(CUDA_SUCCESS)

    # -- cudaHostRegister (C1.x)

    def host_register(self, a: CallArgs) -> Result:
        ptr, size, flags = a.integer("ptr"), a.integer("size"), a.integer("flags")
        if flags & ~CUDA_HOST_REGISTER_ALL:
            return Result(CUDA_ERROR_INVALID_VALUE)  # C1.9 (0x10 observed as InvalidValue)
        if self.before_4_1 and ptr != 0 and size != 0 and (ptr % PAGE_SIZE or size % PAGE_SIZE):
            return Result(CUDA_ERROR_INVALID_VALUE)  # C1.14
        if ptr != 0 and size > 0 and self.overlaps_registration(ptr, size):  # (a null pointer names no memory, Q4)
            # C1.16: before 4.1 an unspecific error (Panoptes saw cudaErrorUnknown); then 712 (C1.13).
            return Result(CUDA_ERROR_UNKNOWN if self.before_4_1 else CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
        if ptr == 0 or size == 0:
            return Result(CUDA_ERROR_INVALID_VALUE)  # C1.17 observed
        if flags & CUDA_HOST_REGISTER_READONLY and not self.read_only_supported:
            return Result(CUDA_ERROR_NOT_SUPPORTED)  # C1.8
        if not self.host_page_tables and not flags & CUDA_HOST_REGISTER_READONLY and self.overlaps_read_only_mapping(ptr, size):
            # C1.8 requires ReadOnly here and names no error; driver 610.43.02 answered InvalidValue
            # (vllm-project/vllm-omni#6240), which the spec admits (CUDA-REG-READONLY-MAPPING is `undefined`).
            return Result(CUDA_ERROR_INVALID_VALUE)
        if self.overlaps_pinned(ptr, size):
            return Result(CUDA_ERROR_INVALID_VALUE)  # C1.18 observed
        if not self.in_one_host_block(ptr, size):
            self.refuse(a, f"{show_range(ptr, size)} is not inside one block the driver allocated; nothing was "
                           "locked or mapped")
            return Result(CUDA_ERROR_INVALID_VALUE)  # CUDA-REG-HOST-MEMORY broken (undefined); C1.19 observed
        # Default is mapped on a UVA system (C1.4); Mapped where the device can map host memory (C1.6).
        mapped = self.can_map_host and (flags == 0 or bool(flags & CUDA_HOST_REGISTER_MAPPED))
        if not self.register(a, ptr, size, flags, mapped):
            return Result(CUDA_ERROR_MEMORY_ALLOCATION)
        return Result(CUDA_SUCCESS)

    # -- cudaHostUnregister (C2.x)

    def host_unregister(self, a: CallArgs) -> Result:
        ptr = a.integer("ptr")
        if ptr == 0:
            return Result(CUDA_ERROR_INVALID_VALUE)  # C2.4 observed
        if ptr in self.regs:
            return Result(CUDA_SUCCESS if self.unregister(a, ptr) else CUDA_ERROR_UNKNOWN)
        if self.registration_holding(ptr) is not None:
            return Result(CUDA_ERROR_INVALID_VALUE)  # interior pointer, C2.4 observed
        if self.observed and self.pinned_block_holding(ptr) is not None:
            return Result(CUDA_ERROR_INVALID_VALUE)  # C2.5 observed; the documents say 713 (C2.3)
        return Result(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)

    # -- cudaHostGetDevicePointer (C3.x)

    def get_device_pointer(self, a: CallArgs) -> Result:
        p_host, flags = a.integer("pHost"), a.integer("flags")
        if flags != 0:
            return Result(CUDA_ERROR_INVALID_VALUE)  # C3.3
        if not self.can_map_host:
            return Result(CUDA_ERROR_MEMORY_ALLOCATION)  # C3.4, Panoptes' expectation
        held = self.registration_holding(p_host)
        if held is not None:
            base, reg = held
            if reg.device is None:
                return Result(CUDA_ERROR_INVALID_VALUE)  # neither Mapped nor Default: not mapped (C3.8)
            # The device base plus the offset (C3.6 observed); a dead entry answers its old address.
            return Result(CUDA_SUCCESS, {"pDevice": reg.device + (p_host - base)})
        block = self.pinned_block_holding(p_host)
        if block is None:
            return Result(CUDA_ERROR_INVALID_VALUE)  # C3.1: only mapped pinned memory has one
        base, pinned = block
        if self.host.blocks[base].kind == "cudaMallocHost":
            return Result(CUDA_SUCCESS, {"pDevice": p_host})  # mapped, and the same address under UVA (C5.4, D5.1)
        if pinned.device is None:
            return Result(CUDA_ERROR_INVALID_VALUE)  # cudaHostAlloc without Mapped (C3.1, C5.2)
        return Result(CUDA_SUCCESS, {"pDevice": pinned.device + (p_host - base)})

    # -- cudaHostGetFlags (C4.x)

    def get_flags(self, a: CallArgs) -> Result:
        p_host = a.integer("pHost")
        block = self.pinned_block_holding(p_host)
        if block is not None:
            # The allocation flags (C4.1); the real driver adds Mapped (C4.2 observed).
            flags = block[1].flags | (CUDA_HOST_ALLOC_MAPPED if self.observed else 0)
            return Result(CUDA_SUCCESS, {"pFlags": flags})
        held = self.registration_holding(p_host)
        if held is not None and self.observed:
            # C4.2 observed: Mapped, plus Portable when it was given. The documents: InvalidValue (C4.1).
            flags = CUDA_HOST_REGISTER_MAPPED | held[1].flags & CUDA_HOST_REGISTER_PORTABLE
            return Result(CUDA_SUCCESS, {"pFlags": flags})
        return Result(CUDA_ERROR_INVALID_VALUE)
