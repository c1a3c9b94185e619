"""Mutants of the reference driver's CUDA runtime (`cuda`) implementation: one injected bug each."""

from checker.drivers.cuda import (CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, CUDA_ERROR_INVALID_VALUE,
                                  CUDA_ERROR_NOT_SUPPORTED, CUDA_HOST_REGISTER_MAPPED, CUDA_HOST_REGISTER_PORTABLE)
from checker.drivers.executor import ReferenceDriver
from checker.drivers.pinned import Registration
from checker.drivers.protocol import Result

__all__ = ["CudaNoOverlapCheck", "CudaOverlapStartOnly", "CudaRejectedReadOnlyLeavesEntry",
           "CudaDevicePointerNotRegisteredCode", "CudaStaleDevicePointerAfterUnregister",
           "CudaGetFlagsOnRegisteredMemory", "CudaMappingNotRegistrable", "CudaMappingNotLocked"]

REGISTER, GETDEV = "cudaHostRegister", "cudaHostGetDevicePointer"


class CudaNoOverlapCheck(ReferenceDriver):
    """cudaHostRegister has no overlap check: a range that shares bytes with a registration (the same
    one again, inside, around or across it) registers too. Caught by CUDA-REG-OVERLAP (712)."""

    def start(self, spec, env):
        super().start(spec, env)
        self._impl.overlaps_registration = lambda ptr, size: False


class CudaOverlapStartOnly(ReferenceDriver):
    """The overlap check asks only whether the new range's start lies inside a registration (the check
    ROCm/rocm-systems#7498 added to clr, transplanted), so a new range that contains an old one, or
    runs into it from below, registers. Caught by CUDA-REG-OVERLAP (a range around or across the
    start of an existing registration)."""

    def start(self, spec, env):
        super().start(spec, env)
        impl = self._impl
        impl.overlaps_registration = lambda ptr, size: impl.registration_holding(ptr) is not None


class CudaRejectedReadOnlyLeavesEntry(ReferenceDriver):
    """ReadOnly on a device without read-only registration support is refused with 801, but only after
    the range was recorded (and locked and mapped), and nothing rolls it back. Caught by
    CUDA-REG-READONLY-UNSUPPORTED's tests: the probe after the refusal finds the range registered (712,
    or an unregister that succeeds)."""

    def call(self, name, args):
        result = super().call(name, args)
        impl = self._impl
        ptr, size = args.get("ptr", 0), args.get("size", 0)
        if name == REGISTER and result.ret == CUDA_ERROR_NOT_SUPPORTED and impl.in_one_host_block(ptr, size):
            device = impl.arena.alias(ptr, size) if impl.can_map_host else None
            impl.arena.lock(ptr, size)
            impl.regs[ptr] = Registration(size, args["flags"], device)
            if device is not None:
                impl.aliases[device] = size
        return result


class CudaDevicePointerNotRegisteredCode(ReferenceDriver):
    """cudaHostGetDevicePointer of memory that is neither registered nor pinned answers 713 (not
    registered), where the documents give InvalidValue (C3.1, C3.4). Caught by CUDA-GETDEV-NOT-MAPPED
    (713 has a documented meaning, so it is not an allowed environmental failure either)."""

    def call(self, name, args):
        result = super().call(name, args)
        impl = self._impl
        if name == GETDEV and result.ret == CUDA_ERROR_INVALID_VALUE and args["flags"] == 0 and \
                impl.registration_holding(args["pHost"]) is None and impl.pinned_block_holding(args["pHost"]) is None:
            return Result(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
        return result


class CudaStaleDevicePointerAfterUnregister(ReferenceDriver):
    """The runtime keeps an interval table of device mappings, filled when a registration is mapped,
    and cudaHostUnregister does not drop the entry: a query of a pointer in the old range after the
    unregistration still succeeds, with the old (unmapped) address plus the offset. A transition test
    (register, unregister, query). Caught by CUDA-GETDEV-NOT-MAPPED."""

    def start(self, spec, env):
        super().start(spec, env)
        self._mappings: dict[int, tuple[int, int]] = {}  # host base -> (size, device address)

    def call(self, name, args):
        result = super().call(name, args)
        impl = self._impl
        if name == REGISTER and result.ret == 0 and impl.regs[args["ptr"]].device is not None:
            self._mappings[args["ptr"]] = (args["size"], impl.regs[args["ptr"]].device)
        elif name == GETDEV and result.ret == CUDA_ERROR_INVALID_VALUE and args["flags"] == 0:
            p = args["pHost"]
            for base, (size, device) in self._mappings.items():
                if base <= p < base + size and impl.registration_holding(p) is None:
                    return Result(0, {"pDevice": device + (p - base)})
        return result


class CudaGetFlagsOnRegisteredMemory(ReferenceDriver):
    """cudaHostGetFlags answers for registered memory as the real driver does (C4.2: Mapped, plus
    Portable), also where the documents are held to (`observed: false`), which say it fails there
    (C4.1). Caught by CUDA-GETFLAGS-NOT-PINNED."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "cudaHostGetFlags" and result.ret == CUDA_ERROR_INVALID_VALUE:
            held = self._impl.registration_holding(args["pHost"])
            if held is not None:
                flags = CUDA_HOST_REGISTER_MAPPED | held[1].flags & CUDA_HOST_REGISTER_PORTABLE
                return Result(0, {"pFlags": flags})
        return result


class CudaMappingNotRegistrable(ReferenceDriver):
    """cudaHostRegister pins only heap memory: a range of an `mmap` mapping (read-write, anonymous) is
    refused with InvalidValue, as if no host allocation held it (the shape of
    NVIDIA/open-gpu-kernel-modules#732, where pages mapped by a driver's own mmap could not be
    registered). Caught by CUDA-REG-EFFECT: a registration of a mapping that must succeed. The suites
    before stop 42 had no test on mapped memory (no prefix mapped any) and passed it; only the
    fuzzer caught it (tests/test_mutants.py asks the suite to)."""

    def call(self, name, args):
        if name == REGISTER and _in_a_mapping(self._impl, args.get("ptr", 0), args.get("size", 0)):
            return Result(CUDA_ERROR_INVALID_VALUE)
        return super().call(name, args)


class CudaMappingNotLocked(ReferenceDriver):
    """cudaHostRegister of a range of an `mmap` mapping succeeds and records the registration but
    never page-locks it (a driver that pins through its heap allocator's bookkeeping alone), so the
    device would read pages the kernel may move. Caught by CUDA-PIN-REGISTERED: the page locks,
    compared with the kernel's after the registration, lack the range. Like the mutant above, it
    passed the suites before stop 42."""

    def start(self, spec, env):
        super().start(spec, env)
        impl = self._impl
        lock, unlock = impl.arena.lock, impl.arena.unlock
        skipped: dict[tuple[int, int], int] = {}  # the ranges it did not lock (their unlocks skip too)

        def heap_only(ptr, size):
            if not _in_a_mapping(impl, ptr, size):
                return lock(ptr, size)
            skipped[(ptr, size)] = skipped.get((ptr, size), 0) + 1

        def unlock_locked(ptr, size):
            left = skipped.get((ptr, size), 0)
            if not left:
                return unlock(ptr, size)
            if left == 1:
                del skipped[(ptr, size)]
            else:
                skipped[(ptr, size)] = left - 1
        impl.arena.lock, impl.arena.unlock = heap_only, unlock_locked


def _in_a_mapping(impl, ptr: int, size: int) -> bool:
    """Whether [ptr, ptr + size) lies in one block the driver's `mmap` made."""
    held = impl.host.holding(ptr, max(size, 1))
    return held is not None and held[1].kind == "mmap"
