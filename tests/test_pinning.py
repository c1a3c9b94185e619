"""Tests for checker.drivers.pinning: real buffers, aliases and reference-counted page locks (Linux)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from checker.language.diagnostics import RegcheckError
from checker.drivers.pinning import (
    CODE_CAP_EXCEEDED,
    CODE_MLOCK_REFUSED,
    CODE_NOT_OWNED,
    PAGE_SIZE,
    ArenaClosed,
    LockCalls,
    NotLocked,
    NotOwned,
    PinnedArena,
    PinningFailed,
    install_signal_cleanup,
    libc_calls,
    live_arenas,
    pinning_permitted,
    uninstall_signal_cleanup,
    vmlck_bytes,
)
from tests.helpers import MEMLOCK_LIMITED, default_sigint

P = PAGE_SIZE
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def arena():
    with PinnedArena() as a:
        yield a


def pages(base: int, first: int, count: int) -> set[int]:
    return {base + (first + i) * P for i in range(count)}


def run_child(code: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint, **kw
    )


def status_vmlck(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmLck:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmLck line")


# --- per-page counting ----------------------------------------------------------------------------


def test_overlapping_locks_are_counted_per_page(real_pinning, arena):
    baseline = vmlck_bytes()
    buf = arena.allocate(8 * P)
    arena.lock(buf, 3 * P)  # pages 0..2
    arena.lock(buf + P + 100, 3 * P)  # rounds out to pages 1..4
    assert arena.locked_pages() == {buf: 1, buf + P: 2, buf + 2 * P: 2, buf + 3 * P: 1, buf + 4 * P: 1}
    assert arena.kernel_locked_pages() == pages(buf, 0, 5)
    assert vmlck_bytes() == baseline + 5 * P

    arena.unlock(buf, 3 * P)
    assert arena.locked_pages() == {buf + P: 1, buf + 2 * P: 1, buf + 3 * P: 1, buf + 4 * P: 1}
    assert arena.kernel_locked_pages() == pages(buf, 1, 4)  # shared pages stay locked
    assert not arena.is_locked(buf) and arena.is_locked(buf + P + 5)

    arena.unlock(buf + P + 100, 3 * P)
    assert arena.locked_pages() == {}
    assert arena.kernel_locked_bytes() == 0
    assert vmlck_bytes() == baseline


def test_unlock_of_unlocked_pages_is_refused_without_change(real_pinning, arena):
    buf = arena.allocate(4 * P)
    arena.lock(buf, P)
    with pytest.raises(NotLocked):
        arena.unlock(buf, 2 * P)
    assert arena.locked_pages() == {buf: 1}
    assert arena.kernel_locked_pages() == {buf}


def test_free_drops_the_arenas_locks(real_pinning, arena):
    baseline = vmlck_bytes()
    buf = arena.allocate(4 * P)
    dev = arena.alias(buf, 4 * P)
    arena.lock(buf, 4 * P)
    arena.lock(dev, 2 * P)
    arena.free(buf)
    assert arena.locked_pages() == {} and arena.kernel_locked_bytes() == 0
    assert vmlck_bytes() == baseline
    assert not arena.owns(dev, 1)  # aliases go with their buffer


# --- aliases --------------------------------------------------------------------------------------


def test_writes_are_visible_through_the_alias_both_ways(arena):
    buf = arena.allocate(3 * P)
    dev = arena.alias(buf + P + 10, 100)
    assert dev % P == 10 and dev != buf + P + 10
    arena.write(buf + P + 10, b"host")
    assert arena.read(dev, 4) == b"host"
    arena.write(dev + 50, b"device")
    assert arena.read(buf + P + 60, 6) == b"device"


def test_alias_pages_are_locked_in_their_own_mapping(real_pinning, arena):
    buf = arena.allocate(2 * P)
    dev = arena.alias(buf, 2 * P)
    arena.lock(dev, P)
    assert arena.kernel_locked_pages() == {dev}
    arena.unalias(dev)
    assert arena.kernel_locked_bytes() == 0 and arena.locked_pages() == {}


# --- refusals -------------------------------------------------------------------------------------


def test_addresses_outside_the_arena_are_refused(arena):
    buf = arena.allocate(2 * P + 100)
    end = buf + 2 * P + 100
    for address, size in [(buf - P, P), (buf - 1, 2), (end - 10, 20), (end, 1), (0x1000, 8)]:
        assert not arena.owns(address, size)
        for op in (arena.lock, arena.unlock, arena.alias, arena.read):
            with pytest.raises(NotOwned) as info:
                op(address, size)
            assert info.value.code == CODE_NOT_OWNED
        with pytest.raises(NotOwned):
            arena.write(address, b"x" * size)
    assert arena.owns(buf, 2 * P + 100) and arena.buffer_of(end - 1).address == buf
    assert arena.buffer_of(end) is None


def test_freed_buffers_and_removed_aliases_are_refused(arena):
    buf = arena.allocate(P)
    dev = arena.alias(buf, P)
    with pytest.raises(NotOwned):
        arena.free(dev)  # an alias is not a buffer
    with pytest.raises(NotOwned):
        arena.unalias(buf)
    arena.unalias(dev)
    with pytest.raises(NotOwned):
        arena.read(dev, 1)
    arena.free(buf)
    for op in (arena.lock, arena.alias, arena.read):
        with pytest.raises(NotOwned):
            op(buf, 1)
    with pytest.raises(NotOwned):
        arena.free(buf)


def test_errors_are_regcheck_diagnostics():
    exc = NotOwned(0x1000, 16)
    assert isinstance(exc, RegcheckError)
    assert exc.diagnostics[0].code == CODE_NOT_OWNED
    assert "0x1000" in exc.diagnostics[0].message


# --- failures leave counts unchanged --------------------------------------------------------------


def test_cap_is_checked_before_anything_is_locked(real_pinning):
    with PinnedArena(max_locked_bytes=4 * P) as arena:
        buf = arena.allocate(8 * P)
        arena.lock(buf, 3 * P)
        before = arena.locked_pages()
        with pytest.raises(PinningFailed) as info:
            arena.lock(buf + 2 * P, 3 * P)  # two new pages: 5 > 4
        assert info.value.code == CODE_CAP_EXCEEDED and info.value.errno == errno.ENOMEM
        assert arena.locked_pages() == before
        assert arena.kernel_locked_pages() == pages(buf, 0, 3)
        arena.lock(buf + 2 * P, 2 * P)  # one new page fits exactly
        assert arena.locked_bytes() == 4 * P


def test_mlock_failure_rolls_back_pages_locked_in_the_same_call(real_pinning):
    real = libc_calls()
    armed = False
    calls_seen: list[tuple[int, int]] = []

    def failing_second_mlock(address: int, length: int) -> int:
        if not armed:
            return real.mlock(address, length)
        calls_seen.append((address, length))
        return errno.EAGAIN if len(calls_seen) == 2 else real.mlock(address, length)

    with PinnedArena(calls=LockCalls(failing_second_mlock, real.munlock)) as arena:
        buf = arena.allocate(8 * P)
        arena.lock(buf, 2 * P)
        arena.lock(buf + 4 * P, 2 * P)
        armed = True
        before = arena.locked_pages()
        with pytest.raises(PinningFailed) as info:
            arena.lock(buf, 8 * P)  # new pages come in two runs: 2..3 and 6..7
        assert info.value.errno == errno.EAGAIN and info.value.code == CODE_MLOCK_REFUSED
        assert calls_seen == [(buf + 2 * P, 2 * P), (buf + 6 * P, 2 * P)]
        assert arena.locked_pages() == before
        assert arena.kernel_locked_pages() == pages(buf, 0, 2) | pages(buf, 4, 2)


def test_failing_mlock_injected_through_the_constructor():
    calls = LockCalls(lambda a, n: errno.EPERM, lambda a, n: 0)
    with PinnedArena(calls=calls) as arena:
        buf = arena.allocate(P)
        with pytest.raises(PinningFailed) as info:
            arena.lock(buf, P)
        assert info.value.errno == errno.EPERM and "EPERM" in str(info.value)
        assert arena.locked_pages() == {}


RLIMIT_CHILD = MEMLOCK_LIMITED + r"""
out = {"dropped": dropped}
with p.PinnedArena() as arena:
    buf = arena.allocate(16 * p.PAGE_SIZE)
    arena.lock(buf, 2 * p.PAGE_SIZE)
    before = (arena.locked_pages(), sorted(arena.kernel_locked_pages()), p.vmlck_bytes())
    try:
        arena.lock(buf, 8 * p.PAGE_SIZE)
        out["failed"] = None
    except p.PinningFailed as exc:
        out["failed"] = exc.errno
        out["code"] = exc.code
    after = (arena.locked_pages(), sorted(arena.kernel_locked_pages()), p.vmlck_bytes())
    out["unchanged"] = before == after
print(json.dumps(out))
"""


def test_rlimit_memlock_failure_rolls_back(real_pinning):
    child = run_child(RLIMIT_CHILD)
    stdout, stderr = child.communicate(timeout=10)
    assert child.returncode == 0, stderr
    out = json.loads(stdout)
    if out["failed"] is None:
        pytest.skip(f"RLIMIT_MEMLOCK is not enforced here (CAP_IPC_LOCK dropped: {out['dropped']})")
    assert out["failed"] in (errno.ENOMEM, errno.EPERM, errno.EAGAIN)
    assert out["code"] == CODE_MLOCK_REFUSED
    assert out["unchanged"]


# --- cleanup --------------------------------------------------------------------------------------


def test_close_unlocks_and_is_idempotent(real_pinning):
    baseline = vmlck_bytes()
    arena = PinnedArena()
    buf = arena.allocate(4 * P)
    arena.lock(buf, 4 * P)
    arena.lock(buf, P)
    assert vmlck_bytes() == baseline + 4 * P and arena in live_arenas()
    arena.close()
    arena.close()
    assert vmlck_bytes() == baseline and arena not in live_arenas()
    with pytest.raises(ArenaClosed):
        arena.allocate(P)


def test_exception_inside_with_block_unlocks(real_pinning):
    baseline = vmlck_bytes()
    with pytest.raises(RuntimeError):
        with PinnedArena() as arena:
            buf = arena.allocate(4 * P)
            arena.lock(buf, 4 * P)
            assert vmlck_bytes() == baseline + 4 * P
            raise RuntimeError("boom")
    assert arena.closed and vmlck_bytes() == baseline


SIGNAL_CHILD = r"""
import signal, sys, time
from checker.drivers import pinning as p
if "--previous" in sys.argv:
    def previous(signum, frame):
        print("previous", p.vmlck_bytes(), flush=True)
        sys.exit(7)
    signal.signal(signal.SIGTERM, previous)
p.install_signal_cleanup()
arena = p.PinnedArena()
buf = arena.allocate(8 * p.PAGE_SIZE)
arena.lock(buf, 8 * p.PAGE_SIZE)
try:
    # Announced inside the try: a signal that arrives right after the announcement must still
    # reach the finally below.
    print("locked", p.vmlck_bytes(), flush=True)
    time.sleep(30)
finally:
    print("cleaned", p.vmlck_bytes(), len(p.live_arenas()), flush=True)
"""


def signalled_child(signum: int, *args: str) -> tuple[int, list[str], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, "-c", SIGNAL_CHILD, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        first = child.stdout.readline().split()
        assert first[:1] == ["locked"], child.stderr.read()
        assert int(first[1]) >= 8 * P
        assert status_vmlck(child.pid) >= 8 * P  # the kernel agrees just before the signal
        child.send_signal(signum)
        rest, stderr = child.communicate(timeout=60)  # generous: a loaded machine
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, rest.splitlines(), stderr


def test_sigint_closes_arenas_then_raises_keyboard_interrupt(real_pinning):
    code, lines, stderr = signalled_child(signal.SIGINT)
    assert lines == ["cleaned 0 0"]
    assert "KeyboardInterrupt" in stderr
    assert code == -signal.SIGINT  # Python's exit for an uncaught KeyboardInterrupt


def test_sigterm_closes_arenas_then_exits_143(real_pinning):
    code, lines, _ = signalled_child(signal.SIGTERM)
    assert lines == ["cleaned 0 0"]
    assert code == 128 + signal.SIGTERM


def test_sigterm_chains_to_the_previous_handler(real_pinning):
    code, lines, _ = signalled_child(signal.SIGTERM, "--previous")
    assert lines == ["previous 0", "cleaned 0 0"]
    assert code == 7


def test_atexit_closes_arenas_left_open(real_pinning):
    code = r"""
import atexit
def report():  # registered before checker.drivers.pinning, so it runs after the module's own hook
    vmlck = [l for l in open("/proc/self/status") if l.startswith("VmLck:")][0].split()[1]
    print("at exit", vmlck, flush=True)
atexit.register(report)
from checker.drivers import pinning as p
arena = p.PinnedArena()
buf = arena.allocate(4 * p.PAGE_SIZE)
arena.lock(buf, 4 * p.PAGE_SIZE)
print("locked", p.vmlck_bytes() // 1024, flush=True)
"""
    child = run_child(code)
    stdout, stderr = child.communicate(timeout=10)
    assert child.returncode == 0, stderr
    assert stdout.splitlines() == [f"locked {4 * P // 1024}", "at exit 0"]


def test_ignored_signals_stay_ignored():
    uninstall_signal_cleanup()  # an earlier test's driver may have installed it in this process
    # SIGINT as a foreground process has it (a background run of the tests ignores it)
    outer_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_int = signal.default_int_handler
    previous_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        install_signal_cleanup()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is not previous_int
        install_signal_cleanup()  # a second install does not chain to itself
        uninstall_signal_cleanup()
        assert signal.getsignal(signal.SIGINT) is previous_int
    finally:
        uninstall_signal_cleanup()
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, outer_int)


def test_pinning_permitted_reports_a_reason():
    ok, why = pinning_permitted()
    assert isinstance(ok, bool) and why


# --- reading the kernel's lock state only when it can have changed ----------------------------------


def test_the_kernels_lock_state_is_read_again_after_every_arena_change(real_pinning, monkeypatch):
    """Two arenas in turn lock the same number of pages at other addresses, so VmLck alone would
    not tell the readings apart: every lock, unlock and unmapping of an arena counts as a change."""
    from checker.drivers import pinning
    readings = []
    real = pinning._smaps_vmas
    monkeypatch.setattr(pinning, "_smaps_vmas", lambda: readings.append(1) or real())
    with PinnedArena() as a:
        base = a.allocate(4 * P)
        a.lock(base, 2 * P)
        assert a.kernel_locked_pages() == pages(base, 0, 2)
        assert a.kernel_locked_pages() == pages(base, 0, 2)  # nothing changed: the same reading
        assert len(readings) == 1
    with PinnedArena() as b:
        other = b.allocate(8 * P)
        b.lock(other + 4 * P, 2 * P)  # as many bytes as before, elsewhere
        assert b.kernel_locked_pages() == pages(other, 4, 2)
    assert len(readings) == 2


def test_locks_taken_outside_the_arena_are_seen_through_vmlck(real_pinning):
    """A driver that calls mlock itself moves VmLck, so the next reading is fresh."""
    import mmap
    with PinnedArena() as a:
        base = a.allocate(P)
        assert a.kernel_locked_pages() == set()
        stray = mmap.mmap(-1, P)
        address = ctypes_address(stray)
        calls = libc_calls()
        assert calls.mlock(address, P) == 0
        try:
            from checker.drivers.pinning import kernel_locked_vmas
            assert any(lo <= address < hi for lo, hi in kernel_locked_vmas())
        finally:
            calls.munlock(address, P)
            stray.close()
        assert base  # the arena itself was untouched


def ctypes_address(m) -> int:
    import ctypes
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


SMAPS_SAMPLE = """\
00400000-00401000 r-xp 00000000 08:01 131 /usr/bin/python3.11
Size:                  4 kB
Locked:                0 kB
VmFlags: rd ex mr mw me dw
7f0000000000-7f0000004000 rw-s 00000000 00:01 77   /memfd:regcheck (deleted)
Size:                 16 kB
Rss:                  16 kB
Locked:               16 kB
THPeligible:    0
VmFlags: rd wr sh mr mw me ms lo sd
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Size:                132 kB
VmFlags: rd wr mr mw me gd ac
"""


def smaps_by_lines(path: str) -> list[tuple[int, int, frozenset[str]]]:
    """The reading the regex replaced, line by line: the reference it must agree with."""
    out, start, end = [], -1, -1
    for line in Path(path).read_text().splitlines():
        head = line.split(" ", 1)[0]
        if "-" in head and ":" not in head:
            start, end = (int(x, 16) for x in head.split("-"))
        elif line.startswith("VmFlags:"):
            out.append((start, end, frozenset(line.split()[1:])))
    return out


def test_smaps_is_read_mapping_by_mapping(tmp_path):
    from checker.drivers import pinning
    sample = tmp_path / "smaps"
    sample.write_text(SMAPS_SAMPLE)
    vmas = list(pinning._smaps_vmas(str(sample)))
    assert [(hex(a), hex(b)) for a, b, _ in vmas] == [
        ("0x400000", "0x401000"), ("0x7f0000000000", "0x7f0000004000"), ("0x7ffd00000000", "0x7ffd00021000")]
    assert ["lo" in flags for _, _, flags in vmas] == [False, True, False]
    assert vmas == smaps_by_lines(str(sample))


def test_this_processs_smaps_reads_as_it_does_line_by_line(real_pinning, tmp_path):
    from checker.drivers import pinning
    with PinnedArena() as a:
        base = a.allocate(4 * P)
        a.lock(base + P, 2 * P)
        a.alias(base, 4 * P)
        copy = tmp_path / "smaps"  # one snapshot, so both read the same text
        copy.write_text(Path("/proc/self/smaps").read_text())
        vmas = list(pinning._smaps_vmas(str(copy)))
        assert vmas == smaps_by_lines(str(copy)) and len(vmas) > 10
        assert any(lo <= base + P < hi and "lo" in flags for lo, hi, flags in vmas)


# --- the kernel's locks read for some spans alone (checker.drivers.lockcheck reads them so)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from checker.drivers import pinning as p  # noqa: E402

ARENA_OPS = st.lists(st.tuples(st.sampled_from(["allocate", "lock", "unlock", "alias", "free", "unalias", "trim"]),
                               st.integers(0, 3), st.integers(0, 7), st.integers(1, 5)), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ARENA_OPS, fallback=st.booleans())
def test_changed_spans_and_their_reading_follow_the_whole_reading(real_pinning, monkeypatch, ops, fallback):
    """After any sequence of arena calls, the pages locked per the whole smaps reading equal the
    pages read before, updated on the changed spans alone, with the madvise probe or without it."""
    if fallback:
        monkeypatch.setattr(p, "kernel_lock_probe", lambda: None)
    with PinnedArena() as arena:
        buffers: list[int] = []
        aliases: list[int] = []
        known: set[int] = set()
        for op, which, page, pages in ops:
            try:
                if op == "allocate":
                    buffers.append(arena.allocate(8 * P))
                elif buffers:
                    b = buffers[which % len(buffers)]
                    if op == "lock":
                        arena.lock(b + page * P, pages * P)
                    elif op == "unlock":
                        arena.unlock(b + page * P, pages * P)
                    elif op == "alias":
                        aliases.append(arena.alias(b + page * P, pages * P))
                    elif op == "unalias" and aliases:
                        arena.unalias(aliases.pop(which % len(aliases)))
                    elif op == "free":
                        arena.free(buffers.pop(which % len(buffers)))
                        aliases.clear()
                    elif op == "trim":
                        buffers[which % len(buffers)] = arena.trim_front(b, P)
            except (NotOwned, NotLocked, ValueError):
                pass  # refused: nothing changed, and no span need be read again
            spans = arena.take_changed_spans()
            for lo, hi in spans:
                known = {q for q in known if not lo <= q < hi}
            known |= arena.kernel_locked_in(spans)
            p.forget_locked_reading()
            assert known == arena.kernel_locked_pages(), (op, which, page, pages)
        assert arena.take_changed_spans() == []


def test_the_kernel_probe_is_confirmed_on_this_kernel(real_pinning):
    probe = p.kernel_lock_probe()
    assert probe is not None  # Linux >= 5.4 with mlock permitted: the probe runs here
    with PinnedArena() as arena:
        b = arena.allocate(4 * P)
        arena.lock(b + P, 2 * P)
        assert arena.kernel_locked_in([(b, b + 4 * P)]) == {b + P, b + 2 * P}
        assert probe(b, P) == 0 and probe(b + P, P) == errno.EINVAL


def test_changed_spans_nobody_takes_stay_few_and_cover_every_change(real_pinning):
    with PinnedArena() as arena:
        buffers = [arena.allocate(P) for _ in range(p.MAX_CHANGED_SPANS + 10)]
        spans = arena.take_changed_spans()
        assert len(spans) <= p.MAX_CHANGED_SPANS
        assert all(any(lo <= b < hi for lo, hi in spans) for b in buffers)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(locks=st.lists(st.tuples(st.integers(0, 15), st.integers(1, 6)), max_size=5),
       hole=st.booleans(), lo=st.integers(-2, 17), n=st.integers(0, 20))
def test_the_probe_loops_in_c_answer_what_the_python_ones_do(real_pinning, locks, hole, lo, n):
    """checker._native's `locked_pages` against the Python loops over the same madvise probe, on
    real memory: pages locked in runs, a hole (a freed buffer) and ranges reaching outside."""
    probe = p.kernel_lock_probe()
    assert probe is not None
    native, python = p.probe_loops(probe), p.probe_loops(probe, native=False)
    if p.NATIVE is not None:  # built: the C loops are the ones the arena uses
        assert [f.func for f in native] != [f.func for f in python]
    with PinnedArena() as arena:
        before = arena.allocate(2 * P)  # freed below when `hole`: its pages are then unmapped
        b = arena.allocate(16 * P)
        for first, count in locks:
            arena.lock(b + first * P, min(count, 16 - first) * P)
        if hole:
            arena.free(before)
        start, end = b + lo * P, b + (lo + n) * P  # mmap places the buffer below `before`, usually next to it
        assert native[0](start, end) == python[0](start, end)
        assert native[1](start, end) == python[1](start, end)
        locked = {b + (f + i) * P for f, c in locks for i in range(min(c, 16 - f))}
        assert set(native[1](start, end)) == {q for q in locked if start <= q < end}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 4), st.booleans()), max_size=12))
def test_mlock_and_munlock_in_c_answer_what_the_ctypes_ones_do(real_pinning, ops):
    """checker._native's mlock/munlock against the ctypes originals on real memory: the same calls on
    two buffers, one each way (unaligned starts, empty ranges, locking twice), give the same
    answers and leave the same pages locked; both answer ENOMEM for unmapped memory."""
    native, reference = p.libc_calls(), p._ctypes_lock_calls()
    if p.NATIVE is not None:  # built: the C calls are the ones the arena uses
        assert native.mlock is p.NATIVE.mlock and native.munlock is p.NATIVE.munlock
    probe = p.kernel_lock_probe()
    assert probe is not None
    with PinnedArena() as arena:
        gone = arena.allocate(P)
        arena.free(gone)
        assert native.mlock(gone, P) == reference.mlock(gone, P) == errno.ENOMEM
        buffers = arena.allocate(8 * P), arena.allocate(8 * P)
        for lock, first, count, unaligned in ops:
            count = min(count, 8 - first)
            shift = 100 if unaligned and first + count < 8 else 0  # a range reaching one page further
            answers = [(calls.mlock if lock else calls.munlock)(b + first * P + shift, count * P)
                       for calls, b in zip((native, reference), buffers)]
            assert answers == [0, 0]
            held = [[probe(b + i * P, P) == errno.EINVAL for i in range(8)] for b in buffers]
            assert held[0] == held[1]
            if lock and count:
                assert all(held[0][first:first + count])


@pytest.mark.parametrize("pages", [1, 3, 64])
def test_the_address_of_a_mapping_in_c_is_the_ctypes_one_and_keeps_no_export(pages):
    import mmap

    if p.NATIVE is not None:  # built: the C function is the one the arena uses
        assert p._address_of is not p._ctypes_address_of
    fd = os.memfd_create("regcheck-test", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, pages * P)
        for m in (mmap.mmap(-1, pages * P), mmap.mmap(fd, pages * P, flags=mmap.MAP_SHARED)):
            assert p._address_of(m) == p._ctypes_address_of(m)
            assert p._address_of(m) % P == 0
            m.close()  # no export left behind: a BufferError here otherwise
            with pytest.raises(ValueError):
                p._address_of(m)
    finally:
        os.close(fd)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(locks=st.lists(st.tuples(st.integers(0, 15), st.integers(1, 6)), max_size=6),
       alias=st.none() | st.tuples(st.integers(0, 15), st.integers(1, 4), st.booleans()), hole=st.booleans(),
       spans=st.lists(st.tuples(st.integers(-4, 20), st.integers(0, 24)), min_size=1, max_size=4))
def test_the_arenas_reading_in_c_answers_what_the_python_loop_does(real_pinning, monkeypatch, locks, alias, hole, spans):
    """`kernel_locked_in` with its loop over the lock segments in C (checker._native's
    `locked_in_segments`) against the Python loop over the same madvise probe called from Python,
    on the same arena: overlapping locks (segments of several counts), a locked alias, a hole and
    spans reaching outside the mappings or overlapping one another."""
    probe = p.kernel_lock_probe()
    assert probe is not None
    if p.NATIVE is None or p.segment_loop(probe) is None:
        pytest.skip("checker._native is not built")  # (the C loop is what a built module runs here)
    assert p.segment_loop(probe, native=False) is None
    with PinnedArena() as arena:
        before = arena.allocate(2 * P)
        b = arena.allocate(16 * P)
        for first, count in locks:
            arena.lock(b + first * P, min(count, 16 - first) * P)
        if alias is not None:
            first, count, locked = alias
            a = arena.alias(b + first * P, min(count, 16 - first) * P)
            if locked:
                arena.lock(a, P)
        if hole:
            arena.free(before)
        asked = [(b + lo * P, b + (lo + n) * P) for lo, n in spans]
        if alias is not None:
            asked.append((a - P, a + 2 * P))
        in_c = arena.kernel_locked_in(asked)
        with monkeypatch.context() as m:  # (undone before the next example)
            m.setattr(p, "kernel_lock_probe", lambda: lambda address, length: probe(address, length))
            in_python = arena.kernel_locked_in(asked)
        assert in_c == in_python
        assert in_c == {q for q in arena.kernel_locked_pages() if any(lo <= q < hi for lo, hi in asked)}
