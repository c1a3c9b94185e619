"""A small third-party acl driver, written from scratch (not a ReferenceDriver subclass): its own
memory (anonymous mmap), its own locks (libc mlock), none of the reference driver's lock reports.
Subclasses carry one bug or one odd habit each."""

import ctypes
import mmap

from checker.drivers.protocol import Result
from checker.language.diagnostics import RegcheckError, error

PAGE = 4096
MAPPED, PINNED = 0x2, 0x10000000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mlock.argtypes = _libc.munlock.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


def _pages(ptr, size):
    return range(ptr - ptr % PAGE, ptr + max(size, 1), PAGE)


class Plain:
    """Right answers for malloc/free, aclrtMallocHost/aclrtFreeHost, registration, its device
    pointer and unregistration (one registration per base, no overlap checks beyond the same base)."""

    def __init__(self):
        self.blocks = {}  # base -> (mmap, size)
        self.regs = {}  # base -> (size, flag)
        self.counts = {}  # page -> locks held

    def start(self, spec, env):
        if spec != "acl":
            raise RegcheckError([error("X0807", f"only acl, not {spec}")])

    def lock(self, ptr, size):
        for p in _pages(ptr, size):
            if not self.counts.get(p):
                _libc.mlock(p, PAGE)
            self.counts[p] = self.counts.get(p, 0) + 1

    def unlock(self, ptr, size):
        for p in _pages(ptr, size):
            self.counts[p] -= 1
            if not self.counts[p]:
                del self.counts[p]
                _libc.munlock(p, PAGE)

    def allocate(self, size):
        m = mmap.mmap(-1, -(-max(size, 1) // PAGE) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(m))
        self.blocks[base] = (m, size)
        return base

    def release(self, base):
        m, _ = self.blocks.pop(base)
        for p in _pages(base, len(m)):
            if self.counts.pop(p, 0):
                _libc.munlock(p, PAGE)
        m.close()

    def call(self, name, a):
        if name in ("malloc", "aclrtMallocHost"):
            if name == "aclrtMallocHost" and a["size"] == 0:
                return Result(100000)
            base = self.allocate(a["size"])
            if name == "aclrtMallocHost":
                self.lock(base, a["size"])
                return Result(0, {"hostPtr": base})
            return Result(0, {"ptr": base})
        if name in ("free", "aclrtFreeHost"):
            ptr = a["ptr" if name == "free" else "hostPtr"]
            if ptr in self.blocks:
                self.release(ptr)
            return Result(0)
        if name == "aclrtHostRegisterV2":
            if a["ptr"] in self.regs:
                return Result(507910)
            self.regs[a["ptr"]] = (a["size"], a["flag"])
            if a["flag"] & PINNED:
                self.lock(a["ptr"], a["size"])
            return Result(0)
        if name == "aclrtHostGetDevicePointer":
            reg = self.regs.get(a["pHost"])
            return Result(0, {"pDevice": 1 << 50}) if reg and reg[1] & MAPPED else Result(107000)
        if name == "aclrtHostUnregister":
            size, flag = self.regs.pop(a["ptr"])
            if flag & PINNED:
                self.unlock(a["ptr"], size)
            return Result(0)
        raise RegcheckError([error("X0808", f"no call {name}")])

    def close(self):
        for base in list(self.blocks):
            self.release(base)
        self.regs.clear()


class NeverPins(Plain):
    """Answers right, locks nothing."""

    def lock(self, ptr, size):
        pass

    def unlock(self, ptr, size):
        pass


class KeepsLocks(Plain):
    """Unregistration succeeds but the pages stay locked (until the memory goes)."""

    def unlock(self, ptr, size):
        pass


_KEPT: list = []  # the mappings KeepsItsMappings never gives back, for the process's life


class KeepsItsMappings(Plain):
    """Right, but keeps every mapping it made for the process's life (as a vendor library's caches
    do), so each driver's blocks land at new addresses: a later driver's locks are on other pages."""

    def release(self, base):
        m, _ = self.blocks.pop(base)
        for p in _pages(base, len(m)):
            if self.counts.pop(p, 0):
                _libc.munlock(p, PAGE)
        _KEPT.append(m)


class TruncatesSizes(Plain):
    """aclrtMallocHost passes its size through 32 bits (a C driver's unsigned int): 2**63 bytes
    become one page, allocated, locked, and reported as a success."""

    def call(self, name, a):
        if name == "aclrtMallocHost" and a["size"] >= 1 << 32:
            a = {**a, "size": max(a["size"] & 0xFFFFFFFF, 1)}
        return super().call(name, a)


MISSING = object()


class OddOutput(Plain):
    """Answers right but puts `VALUE` (or nothing, for MISSING) in place of output `OUTPUT` of `CALL`."""

    CALL, OUTPUT, VALUE = "aclrtHostGetDevicePointer", "pDevice", None

    def call(self, name, a):
        result = super().call(name, a)
        if name != self.CALL or result.ret != 0:
            return result
        out = {k: v for k, v in result.out.items() if k != self.OUTPUT}
        return Result(0, out if self.VALUE is MISSING else {**out, self.OUTPUT: self.VALUE})


class HandsOutMallocMemory(Plain):
    """aclrtMallocHost returns the base of a live malloc block (handed out twice), locked."""

    def call(self, name, a):
        malloced = [base for base in self.blocks if base not in self.regs]
        if name == "aclrtMallocHost" and a["size"] and malloced:
            self.lock(malloced[0], a["size"])
            return Result(0, {"hostPtr": malloced[0]})
        return super().call(name, a)


class Misaligned(Plain):
    """aclrtMallocHost returns a pointer 32 bytes into its block: not 64-byte aligned."""

    def call(self, name, a):
        if name == "aclrtMallocHost" and a["size"]:
            result = super().call(name, {"size": a["size"] + 32})
            self.blocks[result.out["hostPtr"] + 32] = self.blocks.pop(result.out["hostPtr"])
            return Result(0, {"hostPtr": result.out["hostPtr"] + 32})
        return super().call(name, a)
