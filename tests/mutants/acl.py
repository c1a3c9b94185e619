"""Mutants of the reference driver's Ascend CANN (`acl`) implementation: one injected bug each."""

from checker.drivers.executor import ReferenceDriver
from checker.drivers.acl import _AclRegistration
from checker.drivers.memory import (ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                                    ACL_ERROR_RT_PARAM_INVALID, ACL_HOST_REG_MAPPED, ACL_HOST_REG_PINNED)
from checker.drivers.protocol import Result

__all__ = [
    "OverlapEndpointsOnly", "AdjacentRejected", "OverlapWrongCode", "RejectedRegistrationLeavesEntry",
    "UnregisterKeepsLock", "PinnedDoesNotPin", "DevicePointerForPinnedOnly", "ZeroSizeRegistered",
    "UnregisterWrongCode", "ProductCheckMissing", "UnregisterKeepsEntry", "MallocHostNotLocked",
    "DevicePointerIgnoresFlag", "RegistrationTableOfThree", "StaleDevicePointerAfterUnregister",
]

REGISTER, UNREGISTER, GETDEV = "aclrtHostRegisterV2", "aclrtHostUnregister", "aclrtHostGetDevicePointer"


class OverlapEndpointsOnly(ReferenceDriver):
    """The overlap check asks only whether the new range's first or last byte lies in a registration,
    so a new range that strictly contains an old one is accepted. Caught by ACL-REG-OVERLAP (a range
    that contains an existing registration)."""

    def start(self, spec, env):
        super().start(spec, env)
        regs = self._impl.regs

        def endpoints_only(ptr, size):
            last = ptr + size - 1
            return any(base <= ptr < base + r.size or base <= last < base + r.size for base, r in regs.items())
        self._impl._overlaps = endpoints_only


class AdjacentRejected(ReferenceDriver):
    """The overlap check compares closed intervals, so a range that merely touches a registration
    (ends where it starts, or starts where it ends) is rejected with 507910. Caught by ACL-REG-EFFECT
    (adjacent ranges must register)."""

    def start(self, spec, env):
        super().start(spec, env)
        regs = self._impl.regs
        self._impl._overlaps = lambda ptr, size: size > 0 and any(
            base <= ptr + size and ptr <= base + r.size for base, r in regs.items())


class OverlapWrongCode(ReferenceDriver):
    """An overlapping registration is reported as 507911 (not registered) instead of 507910.
    Caught by ACL-REG-OVERLAP (507911 is a documented-meaning code, not an allowed environmental one)."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == REGISTER and result.ret == ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
            return Result(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED)
        return result


class RejectedRegistrationLeavesEntry(ReferenceDriver):
    """PINNED on page-locked (aclrtMallocHost) memory is rejected, but the table entry (and, with
    MAPPED, its device mapping) made before the check is not rolled back. Caught by
    ACL-REG-PINNED-LOCKED: the probe after the failure registers the same range and gets 507910."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == REGISTER and result.ret == ACL_ERROR_RT_PARAM_INVALID and args["flag"] & ACL_HOST_REG_PINNED:
            impl = self._impl
            held = impl.host.holding(args["ptr"], args["size"])
            if held is not None and held[1].locked:
                device = impl.arena.alias(args["ptr"], args["size"]) if args["flag"] & ACL_HOST_REG_MAPPED else None
                impl.regs[args["ptr"]] = _AclRegistration(args["size"], args["flag"], device, False)
                if device is not None:
                    impl.aliases[device] = args["size"]
        return result


class UnregisterKeepsLock(ReferenceDriver):
    """Unregister succeeds but the pages of a PINNED registration stay locked. Caught by the page-lock
    check (EXEC-LOCK-EXTRA) on ACL-UNREG-EFFECT tests of PINNED registrations (ACL-PIN-REGISTERED)."""

    def call(self, name, args):
        reg = self._impl.regs.get(args["ptr"]) if name == UNREGISTER else None
        result = super().call(name, args)
        if reg is not None and reg.locked and result.ret == 0:
            self.arena.lock(args["ptr"], reg.size)
        return result


class PinnedDoesNotPin(ReferenceDriver):
    """A PINNED registration succeeds but leaves the pages pageable. Caught by the page-lock check
    (ACL-PIN-REGISTERED)."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == REGISTER and result.ret == 0 and args["flag"] & ACL_HOST_REG_PINNED:
            self.arena.unlock(args["ptr"], args["size"])
            self._impl.regs[args["ptr"]].locked = False
        return result


class DevicePointerForPinnedOnly(ReferenceDriver):
    """aclrtHostGetDevicePointer answers for a registration made without MAPPED (PINNED only), with
    the host address. Caught by ACL-GETDEV-UNMAPPED."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == GETDEV and result.ret != 0 and args["flag"] == 0 and args["pHost"] in self._impl.regs:
            return Result(0, {"pDevice": args["pHost"]})
        return result


class ZeroSizeRegistered(ReferenceDriver):
    """Only the null pointer is checked: a zero-size registration succeeds (and registers nothing).
    Caught by ACL-REG-SIZE-ZERO."""

    def call(self, name, args):
        if name == REGISTER and args["size"] == 0 and args["ptr"] != 0 and self._impl.supported:
            return Result(0)
        return super().call(name, args)


class UnregisterWrongCode(ReferenceDriver):
    """Unregistering memory that was never registered returns 107000 (parameter invalid) instead of
    507911. Caught by ACL-UNREG-NOT-REGISTERED."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == UNREGISTER and result.ret == ACL_ERROR_HOST_MEMORY_NOT_REGISTERED:
            return Result(ACL_ERROR_RT_PARAM_INVALID)
        return result


class ProductCheckMissing(ReferenceDriver):
    """The applicable-products check is missing: the host-register calls work on every product.
    Caught by ACL-REG-PRODUCT (Ascend 950DT, Atlas 200I/500 A2, inference and training products)."""

    def start(self, spec, env):
        super().start(spec, env)
        self._impl.supported = True


class UnregisterKeepsEntry(ReferenceDriver):
    """Unregister unlocks and unmaps but leaves the table entry behind, so the range stays
    "registered". Caught by ACL-UNREG-EFFECT: the probe registering the range again gets 507910."""

    def call(self, name, args):
        reg = self._impl.regs.get(args["ptr"]) if name == UNREGISTER else None
        result = super().call(name, args)
        if reg is not None and result.ret == 0:
            self._impl.regs[args["ptr"]] = _AclRegistration(reg.size, reg.flags, None, False, live=False)
        return result


class MallocHostNotLocked(ReferenceDriver):
    """aclrtMallocHost returns pageable memory (the lock is dropped). Caught by the page-lock check
    (ACL-PIN-MALLOC-HOST)."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "aclrtMallocHost" and result.ret == 0 and args["size"] > 0:
            self.arena.unlock(result.out["hostPtr"], args["size"])
        return result


class DevicePointerIgnoresFlag(ReferenceDriver):
    """aclrtHostGetDevicePointer ignores its reserved `flag` argument instead of rejecting a non-zero
    one. Caught by ACL-GETDEV-FLAG."""

    def call(self, name, args):
        if name == GETDEV:
            args = {**args, "flag": 0}
        return super().call(name, args)


class RegistrationTableOfThree(ReferenceDriver):
    """The registration table holds three entries: a fourth registration succeeds but silently evicts
    the oldest one (its pages stay locked and mapped), so unregistering it later answers 507911.
    It needs four live registrations, deeper than the generated suite's prefixes.
    Caught by the fuzzer: ACL-UNREG-EFFECT when the evicted one is unregistered, ACL-REG-OVERLAP when
    it is overlapped."""

    def start(self, spec, env):
        super().start(spec, env)
        self._order = []

    def call(self, name, args):
        result = super().call(name, args)
        if name == REGISTER and result.ret == 0:
            regs = self._impl.regs
            self._order = [p for p in self._order if p in regs] + [args["ptr"]]
            if len(self._order) > 3:
                del regs[self._order.pop(0)]
        return result


class StaleDevicePointerAfterUnregister(ReferenceDriver):
    """aclrtHostGetDevicePointer keeps a cache of the device addresses it answered and does not drop
    an entry on aclrtHostUnregister, so querying an unregistered pointer still succeeds with the old
    device address. It needs register, query, unregister, query: a transition test. Caught by
    ACL-GETDEV-UNMAPPED (the pointer is no longer registered)."""

    def start(self, spec, env):
        super().start(spec, env)
        self._answered: dict[int, int] = {}

    def call(self, name, args):
        result = super().call(name, args)
        if name == GETDEV and result.ret == 0:
            self._answered[args["pHost"]] = result.out["pDevice"]
        elif name == GETDEV and args["flag"] == 0 and args["pHost"] in self._answered:
            return Result(0, {"pDevice": self._answered[args["pHost"]]})
        return result
