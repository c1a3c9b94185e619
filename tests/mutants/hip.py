"""Mutants of the reference driver's HIP (`hip`) implementation: one injected bug each."""

from checker.drivers.executor import ReferenceDriver
from checker.drivers.hip import (HIP_ERROR_HOST_MEMORY_NOT_REGISTERED, HIP_ERROR_INVALID_DEVICE_POINTER,
                                 HIP_ERROR_INVALID_VALUE)
from checker.drivers.pinned import Registration
from checker.drivers.protocol import Result

__all__ = ["HipDuplicateAccepted", "HipOverlapStartOnly", "HipRejectedFlagsLeaveEntry",
           "HipDevicePointerNotRegisteredCode", "HipStaleDevicePointerAfterUnregister", "HipFreeAnswersClrCode"]

REGISTER, GETDEV = "hipHostRegister", "hipHostGetDevicePointer"


class HipDuplicateAccepted(ReferenceDriver):
    """No overlap check, as clr had none up to 01ad4049 (H1.10): registering the same base again
    succeeds and records nothing (the object map keeps the first entry), any other overlapping range
    registers. Caught by HIP-REG-OVERLAP (712)."""

    def call(self, name, args):
        impl = self._impl
        if name == REGISTER and impl.overlaps_registration(args["hostPtr"], args["sizeBytes"]):
            if args["hostPtr"] in impl.regs:
                return Result(0)
            check, impl.overlaps_registration = impl.overlaps_registration, lambda ptr, size: False
            try:
                return super().call(name, args)
            finally:
                impl.overlaps_registration = check
        return super().call(name, args)


class HipOverlapStartOnly(ReferenceDriver):
    """The overlap check of ROCm/rocm-systems#7498: 712 only when the new start lies inside an existing
    registration, so a new range that contains an old one (or runs into it from below) registers, as
    the review noted. Caught by HIP-REG-OVERLAP (a range around or across the start of a registration)."""

    def start(self, spec, env):
        super().start(spec, env)
        impl = self._impl
        impl.overlaps_registration = lambda ptr, size: impl.registration_holding(ptr) is not None


class HipRejectedFlagsLeaveEntry(ReferenceDriver):
    """With clr's flag check (`observed`, rocm >= 5.6) a refused flag value returns InvalidValue, but
    the range was entered in the object map (locked and mapped) before the check and stays. Caught by
    HIP-OBS-REG-FLAGS's tests: the probe after the refusal finds the range registered."""

    def call(self, name, args):
        result = super().call(name, args)
        impl = self._impl
        ptr, size = args.get("hostPtr", 0), args.get("sizeBytes", 0)
        if name == REGISTER and result.ret == HIP_ERROR_INVALID_VALUE and ptr and size and \
                impl.flags_refused(args["flags"]) and impl.in_one_host_block(ptr, size) and \
                not impl.overlaps_registration(ptr, size) and not impl.overlaps_pinned(ptr, size):
            device = impl.arena.alias(ptr, size)
            impl.arena.lock(ptr, size)
            impl.regs[ptr] = Registration(size, args["flags"], device)
            impl.aliases[device] = size
        return result


class HipDevicePointerNotRegisteredCode(ReferenceDriver):
    """hipHostGetDevicePointer of memory that is neither registered nor from hipHostMalloc answers 713
    (not registered), where the header gives InvalidValue (H3.1). Caught by HIP-GETDEV-NOT-PINNED."""

    def call(self, name, args):
        result = super().call(name, args)
        impl = self._impl
        if name == GETDEV and result.ret == HIP_ERROR_INVALID_VALUE and \
                impl.registration_holding(args["hstPtr"]) is None and impl.pinned_block_holding(args["hstPtr"]) is None:
            return Result(HIP_ERROR_HOST_MEMORY_NOT_REGISTERED)
        return result


class HipStaleDevicePointerAfterUnregister(ReferenceDriver):
    """clr's device-pointer lookup finds a per-device VA entry that hipHostUnregister forgot to remove:
    a query of the base after the unregistration still succeeds with the old address (H3.3 says
    InvalidValue). A transition test (register, unregister, query). Caught by HIP-GETDEV-NOT-PINNED."""

    def start(self, spec, env):
        super().start(spec, env)
        self._devices: dict[int, int] = {}

    def call(self, name, args):
        result = super().call(name, args)
        impl = self._impl
        if name == REGISTER and result.ret == 0:
            self._devices[args["hostPtr"]] = impl.regs[args["hostPtr"]].device
        elif name == GETDEV and result.ret == HIP_ERROR_INVALID_VALUE and args["hstPtr"] in self._devices and \
                args["hstPtr"] not in impl.regs:
            return Result(0, {"devPtr": self._devices[args["hstPtr"]]})
        return result


class HipFreeAnswersClrCode(ReferenceDriver):
    """hipFree of a pointer it did not allocate answers InvalidValue, as clr's ihipFree does (H5.6),
    also where the documents are held to (`observed: false`): the header documents
    InvalidDevicePointer (17). Caught by HIP-FREE-INVALID."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "hipFree" and result.ret == HIP_ERROR_INVALID_DEVICE_POINTER:
            return Result(HIP_ERROR_INVALID_VALUE)
        return result
