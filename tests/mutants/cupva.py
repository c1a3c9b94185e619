"""Mutants of the reference driver's NVIDIA cuPVA (`cupva`) implementation: one injected bug each."""

from checker.drivers.executor import ReferenceDriver
from checker.drivers.cupva import PvaDriver
from checker.drivers.memory import PVA_OK
from checker.drivers.protocol import Result

__all__ = ["RegisterInOperational", "AliasingRuleInverted", "NegativeSizeWraps", "ForceDisableAfterUse",
           "UnregisterInOperational"]

REGISTER, UNREGISTER = "cupva::mem::Register", "cupva::mem::Unregister"


class RegisterInOperational(ReferenceDriver):
    """Register does not check the DRIVE OS VM state: it succeeds while the VM is Operational.
    Caught by PVA-REG-OPERATIONAL (driver 2005, or QNX Safety)."""

    def call(self, name, args):
        impl = self._impl
        if name == REGISTER and impl.vm == "Operational":
            impl.vm = "Init"
            try:
                return super().call(name, args)
            finally:
                impl.vm = "Operational"
        return super().call(name, args)


class _InvertedAliasing(PvaDriver):
    @property
    def auto_cuda(self) -> bool:
        return self.driver_version < 2006 and not self.qnx_safety and not self.cuda_disabled


class AliasingRuleInverted(ReferenceDriver):
    """The driver >= 2006 rule is inverted: driver 2005 ignores explicit CUDA registrations (and their
    overlap check) while 2006 records them and rejects overlaps. Caught by PVA-REG-OVERLAP (2005) and
    PVA-REG-EFFECT (2006: a second registration of the same range must succeed)."""

    def start(self, spec, env):
        super().start(spec, env)
        self._impl.__class__ = _InvertedAliasing


class NegativeSizeWraps(ReferenceDriver):
    """The int64 size is converted to uint64 and `ptr + size` wraps past 2**64: only size == 0 is
    rejected, and a negative size passes the in-allocation test (its wrapped end lies below ptr), so
    it registers. Caught by PVA-REG-SIZE-INVALID with a negative size (driver 2005 or QNX Safety)."""

    def call(self, name, args):
        impl = self._impl
        if name == REGISTER and args["size"] < 0 and args["ptr"] != 0 and args["externalAllocType"] == "CUDA" \
                and impl.vm != "Operational" and not impl.cuda_disabled:
            if not impl.auto_cuda:
                impl.regs[args["ptr"]] = (args["size"], "CUDA")
            impl.cuda_interop_used = True
            return Result(PVA_OK)
        return super().call(name, args)


class ForceDisableAfterUse(ReferenceDriver):
    """cupva::cuda::ForceDisableSupport succeeds even after CUDA interop was used. Caught by
    PVA-DISABLE-AFTER-USE."""

    def call(self, name, args):
        if name == "cupva::cuda::ForceDisableSupport":
            self._impl.cuda_disabled = True
            return Result(PVA_OK)
        return super().call(name, args)


class UnregisterInOperational(ReferenceDriver):
    """Unregister does not check the VM state: it runs while the VM is Operational. Caught by
    PVA-UNREG-OPERATIONAL."""

    def call(self, name, args):
        impl = self._impl
        if name == UNREGISTER and impl.vm == "Operational":
            impl.vm = "DeInit"
            try:
                return super().call(name, args)
            finally:
                impl.vm = "Operational"
        return super().call(name, args)
