"""Helpers shared by several test modules."""

from __future__ import annotations

import io

import checker.fast.fastpath as fastpath_mod
import checker.engines.replay as replay_mod
from checker.cli import main
from checker.language.diagnostics import RegcheckError
from checker.engines.replay import Replayer, _replay_iter, _replay_stream, semantics_for
from checker.trace.reader import read_trace_text


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`regcheck ARGV...` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()



def outcome(text: bytes, fast: bool, max_findings: int | None = None, python_loop: bool = False,
            machine: bool = True, sem=None):
    """What one replay produces: ("error", diagnostics) or ("report", json, notes, state, memory).
    `fast`: the replayer's fast path (else the general path only); `python_loop`: the fast path's
    Python loop, even where checker._native has the C one; `machine`: False for the generated
    Python steps even where the C step machine is built; `sem`: the semantics to replay with
    (default: the one the header names)."""
    saved, replay_mod._PYTHON_LOOP = replay_mod._PYTHON_LOOP, python_loop
    saved_machine, fastpath_mod.MACHINE_STEPS = fastpath_mod.MACHINE_STEPS, machine
    try:
        header, events = read_trace_text(text, "t.jsonl")
        sem = sem or semantics_for(header, None, "t.jsonl")
        r = Replayer(sem, "t.jsonl")
        run = _replay_stream if fast else _replay_iter
        report = run(r, events, max_findings, None)
    except RegcheckError as exc:
        return ("error", [(d.code, d.span.line, d.span.column, d.message) for d in exc.diagnostics])
    finally:
        replay_mod._PYTHON_LOOP = saved
        fastpath_mod.MACHINE_STEPS = saved_machine
    return ("report", report.to_json(), [f.notes for f in report.findings], report.truncated,
            r.state.snapshot(), sorted(r.created.items(), key=repr), list(r.removed))  # (created: in no order)


def default_sigint() -> None:
    """A child's `preexec_fn`: SIGINT back to its default before the child's Python starts, which
    then installs its KeyboardInterrupt handler. A test run started in the background of a
    non-interactive shell ignores SIGINT, its children inherit that, and Python keeps an ignored
    SIGINT ignored: a test that interrupts a child would wait for nothing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


# The start of a child process that locks memory under a small RLIMIT_MEMLOCK. Root's
# CAP_IPC_LOCK would bypass the limit, so the child first drops it from itself; `dropped` says
# whether that worked. After it: `p` is checker.drivers.pinning, and `ctypes`, `json`, `resource` are imported.
MEMLOCK_LIMITED = r"""
import ctypes, json, resource
from checker.drivers import pinning as p

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
