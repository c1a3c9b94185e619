"""Buggy drivers for `regcheck execute --driver` tests (and drivers that crash, for their error paths)."""

from checker.drivers.executor import ReferenceDriver
from checker.drivers.protocol import Result

PINNED = 0x10000000


class PinnedDoesNotPin(ReferenceDriver):
    """Answers like the reference driver, but a PINNED registration leaves the pages pageable."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "aclrtHostRegisterV2" and result.ret == 0 and args["flag"] & PINNED:
            self.arena.unlock(args["ptr"], args["size"])
        return result


class UnregisterKeepsLock(ReferenceDriver):
    """Unregister succeeds but the pages stay locked (an extra lock is taken back after the unpin)."""

    def call(self, name, args):
        pinned = name == "aclrtHostUnregister" and self._is_pinned(args["ptr"])
        result = super().call(name, args)
        if pinned and result.ret == 0:
            self.arena.lock(args["ptr"], 4096)
        return result

    def _is_pinned(self, ptr):
        reg = self._impl.regs.get(ptr)
        return reg is not None and reg.locked


class WrongOverlapCode(ReferenceDriver):
    """Reports an overlapping registration with the wrong error code."""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "aclrtHostRegisterV2" and result.ret == 507910:
            return Result(507911)
        return result


class RegisterReturnsText(ReferenceDriver):
    """aclrtHostRegisterV2 returns a bare status, not a Result."""

    def call(self, name, args):
        result = super().call(name, args)
        return result.ret if name == "aclrtHostRegisterV2" else result


class RegisterRaises(ReferenceDriver):
    """aclrtHostRegisterV2 raises."""

    def call(self, name, args):
        if name == "aclrtHostRegisterV2":
            raise ValueError("boom")
        return super().call(name, args)


class RegisterRaisesControlCharacters(ReferenceDriver):
    """aclrtHostRegisterV2 raises with a message holding characters XML 1.0 cannot write."""

    def call(self, name, args):
        if name == "aclrtHostRegisterV2":
            raise RuntimeError("boom\x01\x1b[31m\x00\ufffe end")
        return super().call(name, args)


class RegisterRaisesTerminalControls(ReferenceDriver):
    """aclrtHostRegisterV2 raises with a message holding characters XML can write but a terminal acts on."""

    def call(self, name, args):
        if name == "aclrtHostRegisterV2":
            raise RuntimeError("boom\r\x7f\x9b2J\u202e end")
        return super().call(name, args)


def no_driver():
    """A factory that raises."""
    raise RuntimeError("no device")


class StartRaises(ReferenceDriver):
    def start(self, spec, env):
        raise OSError("no device")


class CloseRaises(ReferenceDriver):
    """Closes, then raises."""

    def close(self):
        super().close()
        raise RuntimeError("close failed")
