"""Helpers shared by several test modules."""

from __future__ import annotations

import io

from checker.cli import main


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`regcheck ARGV...` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


# The start of a child process that locks memory under a small RLIMIT_MEMLOCK. Root's
# CAP_IPC_LOCK would bypass the limit, so the child first drops it from itself; `dropped` says
# whether that worked. After it: `p` is checker.pinning, and `ctypes`, `json`, `resource` are imported.
MEMLOCK_LIMITED = r"""
import ctypes, json, resource
from checker import pinning as p

class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

libc = ctypes.CDLL(None, use_errno=True)
header, data = Header(0x20080522, 0), (Data * 2)()
dropped = libc.capget(ctypes.byref(header), data) == 0
if dropped:
    data[0].effective &= ~(1 << 14)
    data[0].permitted &= ~(1 << 14)
    dropped = libc.capset(ctypes.byref(header), data) == 0
resource.setrlimit(resource.RLIMIT_MEMLOCK, (4 * p.PAGE_SIZE, 4 * p.PAGE_SIZE))
"""
