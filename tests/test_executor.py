"""Tests for checker.drivers.executor: the Driver interface and the reference driver (real pinning on Linux)."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.language.diagnostics import RegcheckError
from checker.drivers.executor import ReferenceDriver
from checker.drivers.memory import (ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED as ALREADY,
                                    ACL_ERROR_HOST_MEMORY_NOT_REGISTERED as NOT_REGISTERED, ACL_ERROR_INVALID_PARAM as
                                    INVALID_PARAM, ACL_ERROR_RT_DRV_INTERNAL_ERROR as DRV_INTERNAL,
                                    ACL_ERROR_RT_FEATURE_NOT_SUPPORT as NOT_SUPPORTED, ACL_ERROR_RT_MEMORY_ALLOCATION
                                    as MEMORY_ALLOCATION, ACL_ERROR_RT_PARAM_INVALID as PARAM_INVALID, CUDA_ALIGNMENT,
                                    CUDA_SPACE_BASE)
from checker.drivers.protocol import Driver, Incident, IncidentKind, Result
from checker.language.load import load_spec
from checker.drivers.pinning import (
    CODE_CAP_EXCEEDED,
    CODE_MLOCK_REFUSED,
    CODE_NOT_OWNED,
    PAGE_SIZE,
    LockCalls,
    libc_calls,
    uninstall_signal_cleanup,
    vmlck_bytes,
)
from checker.model.semantics import Semantics
from tests.helpers import MEMLOCK_LIMITED, default_sigint

P = PAGE_SIZE
ROOT = Path(__file__).resolve().parents[1]
MAPPED, IOMEMORY, READONLY, PINNED = 0x2, 0x4, 0x8, 0x10000000


def started(spec: str, env: dict | None = None, **options) -> ReferenceDriver:
    driver = ReferenceDriver(signal_cleanup=False, **options)
    driver.start(spec, env or {})
    return driver


@pytest.fixture
def acl():
    driver = started("acl")
    yield driver
    driver.close()


def pvad(**env):
    return started("cupva", env)


def call(driver: ReferenceDriver, name: str, **args) -> Result:
    return driver.call(name, args)


def malloc(driver: ReferenceDriver, size: int) -> int:
    return call(driver, "malloc", size=size).out["ptr"]


def malloc_host(driver: ReferenceDriver, size: int) -> int:
    result = call(driver, "aclrtMallocHost", size=size)
    assert result.ret == 0
    return result.out["hostPtr"]


def register(driver: ReferenceDriver, ptr: int, size: int, flag: int) -> int:
    return call(driver, "aclrtHostRegisterV2", ptr=ptr, size=size, flag=flag).ret


def pages(base: int, first: int, count: int) -> frozenset[int]:
    return frozenset(base + (first + i) * P for i in range(count))


def assert_locks_agree(driver: ReferenceDriver, expected: frozenset[int]) -> None:
    assert driver.expected_locked_pages() == expected
    assert driver.arena_locked_pages() == expected
    assert driver.kernel_locked_pages() == expected


# --- the interface --------------------------------------------------------------------------------


def test_reference_driver_is_a_driver():
    assert isinstance(ReferenceDriver(), Driver)

    class Minimal:
        def start(self, spec, env): ...
        def call(self, name, args): return Result(0, {})
        def close(self): ...

    class NoClose:
        def start(self, spec, env): ...
        def call(self, name, args): ...

    assert isinstance(Minimal(), Driver)
    assert not isinstance(NoClose(), Driver)


def test_result_is_frozen_and_compares_by_value():
    r = Result(0, {"ptr": 4096})
    with pytest.raises(AttributeError):
        r.ret = 1  # type: ignore[misc]
    assert r == Result(0, {"ptr": 4096}) and Result("ok") == Result("ok", {})


@pytest.mark.parametrize("spec", ["acl", "cupva"])
def test_every_call_and_event_of_the_bundled_specs_is_implemented(spec):
    with started(spec) as driver:
        assert driver.calls == frozenset(load_spec(spec).calls)


def test_start_refuses_specs_it_does_not_implement(tmp_path):
    text = (ROOT / "spec" / "acl.spec").read_text().replace("spec acl ", "spec othervendor ", 1)
    other = tmp_path / "other.spec"
    other.write_text(text)
    with pytest.raises(RegcheckError) as info:
        ReferenceDriver(signal_cleanup=False).start(str(other), {})
    assert info.value.diagnostics[0].code == "X0807"
    with pytest.raises(RegcheckError) as info:
        ReferenceDriver(signal_cleanup=False).start("nosuchspec", {})
    assert info.value.diagnostics[0].code == "E0601"


def test_start_checks_parameters_and_accepts_a_spec_path():
    with pytest.raises(RegcheckError) as info:
        ReferenceDriver(signal_cleanup=False).start("acl", {"nonsense": 1})
    assert info.value.diagnostics[0].code == "T0720"
    with started(str(ROOT / "spec" / "cupva.spec"), {"driver_version": 2005}) as driver:
        assert driver.spec_name == "cupva" and driver.config["driver_version"] == 2005


def test_unknown_calls_and_bad_arguments_are_diagnostics(acl):
    for name, args in [("aclrtMalloc", {"size": 1}), ("aclrtHostRegisterV2", {"ptr": 4096, "size": 1}),
                       ("aclrtHostUnregister", {"ptr": "0x1000"}), ("malloc", {"size": True})]:
        with pytest.raises(RegcheckError) as info:
            acl.call(name, args)
        assert info.value.diagnostics[0].code == "X0808", name


def test_calls_outside_a_run_are_programming_errors():
    driver = ReferenceDriver(signal_cleanup=False)
    with pytest.raises(RuntimeError):
        driver.call("malloc", {"size": 1})
    driver.start("acl", {})
    driver.close()
    driver.close()
    with pytest.raises(RuntimeError):
        driver.owns(0x1000, 1)


def test_start_installs_signal_cleanup_when_asked():
    uninstall_signal_cleanup()  # from a clean slate, whatever ran before
    before = signal.getsignal(signal.SIGTERM)
    driver = ReferenceDriver()
    try:
        driver.start("acl", {})
        assert signal.getsignal(signal.SIGTERM) is not before
    finally:
        driver.close()
        uninstall_signal_cleanup()
    assert signal.getsignal(signal.SIGTERM) is before


# --- Ascend: documented error paths ---------------------------------------------------------------


def test_register_argument_checks_in_runtime_order(acl):
    buf = malloc(acl, 4 * P)
    assert register(acl, 0, P, 0) == INVALID_PARAM  # null before flag
    assert register(acl, buf, 0, 0) == INVALID_PARAM  # size 0 before flag
    for flag in (0, 0x1, 0x20000000, MAPPED | 0x100):
        assert register(acl, buf, P, flag) == PARAM_INVALID, hex(flag)
    assert acl.expected_locked_pages() == frozenset() and acl.allocations()[0].kind == "malloc"


@pytest.mark.parametrize("product", ["Ascend950DT", "Atlas200I500A2", "AtlasInference", "AtlasTraining"])
def test_unsupported_products_refuse_the_registration_calls(product):
    with started("acl", {"product": product}) as driver:
        buf = malloc(driver, P)
        assert register(driver, buf, P, PINNED) == NOT_SUPPORTED
        assert call(driver, "aclrtHostGetDevicePointer", pHost=buf, flag=0).ret == NOT_SUPPORTED
        assert call(driver, "aclrtHostUnregister", ptr=buf).ret == NOT_SUPPORTED
        assert register(driver, 0, P, PINNED) == INVALID_PARAM  # the ACL layer checks first
        assert call(driver, "aclrtMallocHost", size=P).ret != NOT_SUPPORTED  # MallocHost is on every product


@pytest.mark.parametrize("product", ["Ascend950PR", "AtlasA3", "AtlasA2"])
def test_supported_products_register(product):
    with started("acl", {"product": product}) as driver:
        buf = malloc(driver, P)
        assert register(driver, buf, P, MAPPED) == 0


def test_any_overlap_with_a_live_registration_is_507910(acl):
    buf = malloc(acl, 8 * P)
    assert register(acl, buf + 2 * P, 2 * P, MAPPED) == 0
    for ptr, size in [(buf + 2 * P, 2 * P), (buf + 2 * P + 1, 1), (buf + P, P + 1), (buf + 4 * P - 1, 5), (buf, 8 * P)]:
        assert register(acl, ptr, size, PINNED) == ALREADY, (ptr - buf, size)
    assert register(acl, buf + P, P, MAPPED) == 0  # touching, not overlapping
    assert register(acl, buf + 4 * P, P, MAPPED) == 0


def test_unregister_needs_the_exact_base(acl):
    buf = malloc(acl, 4 * P)
    assert call(acl, "aclrtHostUnregister", ptr=0).ret == INVALID_PARAM
    assert call(acl, "aclrtHostUnregister", ptr=buf).ret == NOT_REGISTERED  # never registered
    assert register(acl, buf, 2 * P, MAPPED) == 0
    assert call(acl, "aclrtHostUnregister", ptr=buf + 8).ret == NOT_REGISTERED  # interior
    assert call(acl, "aclrtHostUnregister", ptr=0x1000).ret == NOT_REGISTERED  # not the driver's memory
    assert call(acl, "aclrtHostUnregister", ptr=buf).ret == 0
    assert call(acl, "aclrtHostUnregister", ptr=buf).ret == NOT_REGISTERED  # twice
    assert acl.refusals == ()  # lookups touch no memory: these are ordinary answers


def test_get_device_pointer_answers_only_mapped_bases(real_pinning, acl):
    buf = malloc(acl, 8 * P)
    assert register(acl, buf, 2 * P, MAPPED | PINNED) == 0
    assert register(acl, buf + 4 * P, P, PINNED) == 0
    assert register(acl, buf + 6 * P, P, IOMEMORY) == 0  # reserved bit: accepted, maps nothing
    first = call(acl, "aclrtHostGetDevicePointer", pHost=buf, flag=0)
    assert first.ret == 0 and first.out["pDevice"] not in (0, buf)
    assert call(acl, "aclrtHostGetDevicePointer", pHost=buf, flag=0) == first  # stable
    assert call(acl, "aclrtHostGetDevicePointer", pHost=0, flag=0).ret == INVALID_PARAM
    assert call(acl, "aclrtHostGetDevicePointer", pHost=buf, flag=1).ret == INVALID_PARAM
    for p_host in (buf + 8, buf + 4 * P, buf + 6 * P, buf + 3 * P, 0x1000):
        assert call(acl, "aclrtHostGetDevicePointer", pHost=p_host, flag=0) == Result(PARAM_INVALID), hex(p_host - buf)


def test_readonly_with_mapped_gets_a_device_address(acl):
    buf = malloc(acl, P)
    assert register(acl, buf, P, MAPPED | READONLY) == 0
    assert call(acl, "aclrtHostGetDevicePointer", pHost=buf, flag=0).ret == 0


def test_malloc_host_and_free_host(real_pinning, acl):
    assert call(acl, "aclrtMallocHost", size=0) == Result(INVALID_PARAM)
    host = malloc_host(acl, 100)
    assert host % 64 == 0 and acl.owns(host, 100) and not acl.owns(host, 101)
    assert call(acl, "aclrtFreeHost", hostPtr=0).ret == INVALID_PARAM
    assert call(acl, "aclrtFreeHost", hostPtr=host + 64).ret == PARAM_INVALID
    assert acl.last_incident is not None and acl.last_incident.kind is IncidentKind.REFUSED
    buf = malloc(acl, P)
    assert call(acl, "aclrtFreeHost", hostPtr=buf).ret == PARAM_INVALID  # malloc memory is not freed
    assert acl.owns(buf, P)
    assert call(acl, "aclrtFreeHost", hostPtr=host) == Result(0)
    assert acl.last_incident is None and not acl.owns(host, 1)
    assert call(acl, "aclrtFreeHost", hostPtr=host).ret == PARAM_INVALID  # twice


def test_malloc_and_free_events(acl):
    a, b = malloc(acl, 10), malloc(acl, 0)
    assert a != b and a and b and acl.owns(a, 10) and not acl.owns(b, 1)
    assert call(acl, "free", ptr=0) == Result(0) and acl.last_incident is None
    assert call(acl, "free", ptr=a + 1) == Result(0)
    assert acl.last_incident.kind is IncidentKind.REFUSED and acl.owns(a, 10)
    assert call(acl, "free", ptr=a) == Result(0) and not acl.owns(a, 1)


# --- Ascend: real pinning -------------------------------------------------------------------------


def test_pinned_registration_locks_for_real(real_pinning, acl):
    baseline = vmlck_bytes()
    buf = malloc(acl, 4 * P)
    assert register(acl, buf + P, 2 * P, PINNED) == 0
    assert_locks_agree(acl, pages(buf, 1, 2))
    assert vmlck_bytes() == baseline + 2 * P
    assert call(acl, "aclrtHostUnregister", ptr=buf + P).ret == 0
    assert_locks_agree(acl, frozenset())
    assert vmlck_bytes() == baseline


def test_unaligned_registrations_sharing_a_page_unlock_only_their_own(real_pinning, acl):
    baseline = vmlck_bytes()
    buf = malloc(acl, 4 * P)
    middle = buf + P + 100  # page 1 is shared
    assert register(acl, buf + 50, middle - buf - 50, PINNED) == 0  # pages 0..1
    assert register(acl, middle, 2 * P, PINNED) == 0  # pages 1..3
    assert_locks_agree(acl, pages(buf, 0, 4))
    assert call(acl, "aclrtHostUnregister", ptr=buf + 50).ret == 0
    assert_locks_agree(acl, pages(buf, 1, 3))  # the shared page stays locked
    assert call(acl, "aclrtHostUnregister", ptr=middle).ret == 0
    assert_locks_agree(acl, frozenset())
    assert vmlck_bytes() == baseline


def test_malloc_host_memory_stays_locked_after_its_registration_goes(real_pinning, acl):
    baseline = vmlck_bytes()
    host = malloc_host(acl, 3 * P)
    assert_locks_agree(acl, pages(host, 0, 3))
    assert register(acl, host, 3 * P, PINNED) == PARAM_INVALID  # already page-locked
    assert register(acl, host + P, P, PINNED | MAPPED) == PARAM_INVALID
    assert register(acl, host + P, P, MAPPED) == 0
    assert call(acl, "aclrtHostUnregister", ptr=host + P).ret == 0
    assert_locks_agree(acl, pages(host, 0, 3))
    assert vmlck_bytes() == baseline + 3 * P
    assert call(acl, "aclrtFreeHost", hostPtr=host).ret == 0
    assert_locks_agree(acl, frozenset())
    assert vmlck_bytes() == baseline


def test_freeing_registered_memory_drops_its_locks_and_keeps_a_dead_entry(real_pinning, acl):
    baseline = vmlck_bytes()
    buf = malloc(acl, 2 * P)
    assert register(acl, buf, 2 * P, PINNED | MAPPED) == 0
    device = call(acl, "aclrtHostGetDevicePointer", pHost=buf, flag=0).out["pDevice"]
    assert call(acl, "free", ptr=buf) == Result(0)
    assert_locks_agree(acl, frozenset())
    assert vmlck_bytes() == baseline and not acl.owns(device, 1)
    # The runtime keeps its table entry: the range still counts as registered until unregistered.
    assert register(acl, buf, P, MAPPED) == ALREADY
    assert call(acl, "aclrtHostUnregister", ptr=buf).ret == 0
    assert vmlck_bytes() == baseline


def test_dead_entries_survive_the_reuse_of_their_addresses(acl):
    buf = malloc(acl, 2 * P)
    assert register(acl, buf, 2 * P, MAPPED) == 0
    call(acl, "free", ptr=buf)
    again = malloc(acl, 2 * P)
    if again != buf:
        pytest.skip("the kernel did not reuse the freed addresses for the next mapping")
    assert register(acl, buf + P, P, MAPPED) == ALREADY  # the dead entry still covers them
    assert call(acl, "free", ptr=again) == Result(0)  # freeing the new block leaves the dead entry be
    assert call(acl, "aclrtHostUnregister", ptr=buf) == Result(0)
    assert call(acl, "aclrtHostUnregister", ptr=buf).ret == NOT_REGISTERED


def test_mapped_device_address_is_a_second_mapping_of_the_same_pages(acl):
    buf = malloc(acl, 3 * P)
    host = buf + P + 10  # unaligned: the alias keeps the offset within the page
    assert register(acl, host, 200, MAPPED) == 0
    device = call(acl, "aclrtHostGetDevicePointer", pHost=host, flag=0).out["pDevice"]
    assert device != host and device % P == host % P and acl.owns(device, 200)
    ctypes.memmove(host, b"written via host", 16)
    assert ctypes.string_at(device, 16) == b"written via host"
    ctypes.memmove(device + 100, b"via device", 10)
    assert ctypes.string_at(host + 100, 10) == b"via device"
    assert call(acl, "aclrtHostUnregister", ptr=host).ret == 0
    assert not acl.owns(device, 1) and acl.allocation_of(device) is None


# --- Safety: untrusted addresses ------------------------------------------------------------------


def test_addresses_the_driver_did_not_create_are_refused_untouched(acl):
    baseline, foreign = vmlck_bytes(), ctypes.create_string_buffer(b"x" * (2 * P), 2 * P)
    buf = malloc(acl, 2 * P)
    register(acl, buf, P, MAPPED)
    alias = call(acl, "aclrtHostGetDevicePointer", pHost=buf, flag=0).out["pDevice"]
    cases = [
        (ctypes.addressof(foreign), P, "memory Python owns"),
        (buf + P + 1, P, "runs past the end of a block"),
        (alias, 16, "a device alias is not host memory"),
        (0x1000, P, "nothing mapped"),
        (2**64 - P, 2 * P, "wraps the address space"),
    ]
    for ptr, size, why in cases:
        assert register(acl, ptr, size, PINNED | MAPPED) == DRV_INTERNAL, why
        incident = acl.last_incident
        assert incident == acl.incidents[-1] and isinstance(incident, Incident)
        assert incident.kind is IncidentKind.REFUSED and incident.code == CODE_NOT_OWNED, why
        assert incident.diagnostic().code == CODE_NOT_OWNED
        assert call(acl, "aclrtHostUnregister", ptr=ptr).ret == NOT_REGISTERED, why  # nothing recorded
    assert len(acl.refusals) == len(cases)
    assert vmlck_bytes() == baseline and foreign.raw == b"x" * (2 * P)
    assert sorted(a.kind for a in acl.allocations()) == ["device-alias", "malloc"]


# --- Safety: mlock failures and the cap -----------------------------------------------------------


class Switch:
    """mlock that fails with `err` while armed; munlock is the real one."""

    def __init__(self, err: int):
        self.err, self.armed, self.real = err, True, libc_calls()

    def mlock(self, address: int, length: int) -> int:
        return self.err if self.armed else self.real.mlock(address, length)

    def calls(self) -> LockCalls:
        return LockCalls(self.mlock, self.real.munlock)


@pytest.mark.parametrize("err", [errno.ENOMEM, errno.EPERM, errno.EAGAIN])
def test_mlock_failure_is_an_environmental_failure_that_leaves_nothing_behind(real_pinning, err):
    switch = Switch(err)
    baseline = vmlck_bytes()
    with started("acl", lock_calls=switch.calls()) as driver:
        buf = malloc(driver, 2 * P)
        assert register(driver, buf, 2 * P, PINNED | MAPPED) == MEMORY_ALLOCATION
        incident = driver.last_incident
        assert incident.kind is IncidentKind.ENVIRONMENT and incident.code == CODE_MLOCK_REFUSED
        assert errno.errorcode[err] in incident.message
        assert [a.kind for a in driver.allocations()] == ["malloc"]  # the alias was taken down
        assert call(driver, "aclrtHostGetDevicePointer", pHost=buf, flag=0).ret == PARAM_INVALID
        assert call(driver, "aclrtHostUnregister", ptr=buf).ret == NOT_REGISTERED
        assert call(driver, "aclrtMallocHost", size=P) == Result(MEMORY_ALLOCATION)
        assert [a.kind for a in driver.allocations()] == ["malloc"]
        assert_locks_agree(driver, frozenset())
        assert vmlck_bytes() == baseline
        switch.armed = False  # the same call works once the machine lets it
        assert register(driver, buf, 2 * P, PINNED | MAPPED) == 0
        assert_locks_agree(driver, pages(buf, 0, 2))
    assert vmlck_bytes() == baseline


def test_the_cap_on_pinned_bytes(real_pinning):
    with started("acl", max_locked_bytes=3 * P) as driver:
        assert call(driver, "aclrtMallocHost", size=4 * P) == Result(MEMORY_ALLOCATION)
        assert driver.last_incident.code == CODE_CAP_EXCEEDED
        host = malloc_host(driver, P)
        buf = malloc(driver, 4 * P)
        assert register(driver, buf, 3 * P, PINNED) == MEMORY_ALLOCATION
        assert driver.last_incident.code == CODE_CAP_EXCEEDED
        assert register(driver, buf, 2 * P, PINNED) == 0  # exactly at the cap
        assert_locks_agree(driver, pages(host, 0, 1) | pages(buf, 0, 2))


RLIMIT_CHILD = MEMLOCK_LIMITED + r"""
from checker.drivers import executor as x
baseline = p.vmlck_bytes()
with x.ReferenceDriver(signal_cleanup=False) as d:
    d.start("acl", {})
    buf = d.call("malloc", {"size": 16 * p.PAGE_SIZE}).out["ptr"]
    ret = d.call("aclrtHostRegisterV2", {"ptr": buf, "size": 16 * p.PAGE_SIZE, "flag": 0x10000002}).ret
    incident = d.last_incident
    out = {"dropped": dropped, "ret": ret,
           "code": incident.code if incident else None,
           "kind": incident.kind.value if incident else None,
           "unregister": d.call("aclrtHostUnregister", {"ptr": buf}).ret,
           "allocations": [a.kind for a in d.allocations()],
           "expected": len(d.expected_locked_pages()), "kernel": len(d.kernel_locked_pages()),
           "vmlck_same": p.vmlck_bytes() == baseline}
print(json.dumps(out))
"""


def test_rlimit_memlock_gives_an_environmental_failure(real_pinning):
    child = subprocess.run([sys.executable, "-c", RLIMIT_CHILD], env=child_env(), capture_output=True, text=True,
                           timeout=20)
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout)
    if out["ret"] == 0:
        pytest.skip(f"RLIMIT_MEMLOCK is not enforced here (CAP_IPC_LOCK dropped: {out['dropped']})")
    assert out == {"dropped": out["dropped"], "ret": MEMORY_ALLOCATION, "code": CODE_MLOCK_REFUSED,
                   "kind": "environment", "unregister": NOT_REGISTERED, "allocations": ["malloc"],
                   "expected": 0, "kernel": 0, "vmlck_same": True}


# --- Safety: every lock is undone -----------------------------------------------------------------


def test_close_unlocks_everything(real_pinning):
    baseline = vmlck_bytes()
    driver = started("acl")
    host = malloc_host(driver, 2 * P)
    buf = malloc(driver, 2 * P)
    assert register(driver, buf, 2 * P, PINNED | MAPPED) == 0
    assert vmlck_bytes() == baseline + 4 * P and driver.owns(host, 1)
    driver.close()
    assert vmlck_bytes() == baseline
    driver.start("acl", {})  # a closed driver starts afresh
    assert driver.allocations() == () and driver.incidents == []
    driver.close()


def test_an_exception_inside_the_with_block_unlocks(real_pinning):
    baseline = vmlck_bytes()
    with pytest.raises(RuntimeError):
        with started("acl") as driver:
            malloc_host(driver, 4 * P)
            assert vmlck_bytes() == baseline + 4 * P
            raise RuntimeError("boom")
    assert vmlck_bytes() == baseline


def child_env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT))


PROLOGUE = r"""
import atexit, sys
def report():  # registered before checker.drivers.pinning, so it runs after the module's own hook
    vmlck = [l for l in open("/proc/self/status") if l.startswith("VmLck:")][0].split()[1]
    print("at exit", vmlck, flush=True)
atexit.register(report)
from checker.drivers import executor as x
from checker.drivers import pinning as p
d = x.ReferenceDriver()
d.start("acl", {})
host = d.call("aclrtMallocHost", {"size": 4 * p.PAGE_SIZE}).out["hostPtr"]
buf = d.call("malloc", {"size": 4 * p.PAGE_SIZE}).out["ptr"]
assert d.call("aclrtHostRegisterV2", {"ptr": buf, "size": 4 * p.PAGE_SIZE, "flag": 0x10000002}).ret == 0
"""
LOCKED = 'print("locked", p.vmlck_bytes() // 1024, flush=True)\n'



@pytest.mark.parametrize("ending, code", [("", 0), ("raise RuntimeError('boom')", 1), ("sys.exit(5)", 5)])
def test_exit_without_close_unlocks(real_pinning, ending, code):
    child = subprocess.run([sys.executable, "-c", PROLOGUE + LOCKED + ending], env=child_env(), capture_output=True,
                           text=True, timeout=20)
    assert child.returncode == code, child.stderr
    assert child.stdout.splitlines() == [f"locked {8 * P // 1024}", "at exit 0"]


SIGNAL_ENDING = r"""
import time
try:  # report inside the try, so the signal cannot arrive before it
    print("locked", p.vmlck_bytes() // 1024, flush=True)
    time.sleep(30)
finally:
    print("cleaned", p.vmlck_bytes(), flush=True)
"""


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_signals_unlock_before_the_process_stops(real_pinning, signum, code):
    child = subprocess.Popen([sys.executable, "-c", PROLOGUE + SIGNAL_ENDING], env=child_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        first = child.stdout.readline()
        assert first == f"locked {8 * P // 1024}\n", child.stderr.read()
        child.send_signal(signum)
        rest, stderr = child.communicate(timeout=60)  # generous: a loaded machine
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert rest.splitlines() == ["cleaned 0", "at exit 0"], stderr
    assert child.returncode == code


# --- cuPVA ----------------------------------------------------------------------------------------


def pva_register(driver, ptr, size, kind="CUDA") -> str:
    return call(driver, "cupva::mem::Register", ptr=ptr, size=size, externalAllocType=kind).ret


def pva_unregister(driver, ptr) -> str:
    return call(driver, "cupva::mem::Unregister", ptr=ptr).ret


def cuda_malloc(driver, size) -> int:
    return call(driver, "cudaMalloc", size=size).out["devPtr"]


def test_simulated_cuda_addresses_are_aligned_disjoint_and_never_reused():
    with pvad() as driver:
        a, b, c = cuda_malloc(driver, 1), cuda_malloc(driver, 3 * CUDA_ALIGNMENT + 1), cuda_malloc(driver, 0)
        assert a >= CUDA_SPACE_BASE and all(x % CUDA_ALIGNMENT == 0 for x in (a, b, c))
        assert b >= a + 1 and c >= b + 3 * CUDA_ALIGNMENT + 1
        assert call(driver, "cudaFree", devPtr=a) == Result("ok")
        assert cuda_malloc(driver, 1) > c
        host = malloc(driver, P)
        assert host < CUDA_SPACE_BASE and driver.allocation_of(b + 5).kind == "cudaMalloc"
        assert call(driver, "cudaFree", devPtr=a) == Result("ok") and driver.last_incident.kind is IncidentKind.REFUSED
        assert driver.expected_locked_pages() == frozenset()


@pytest.mark.parametrize("env", [{}, {"driver_version": 2005}, {"qnx_safety": True}])
def test_register_errors_every_configuration_shares(env):
    with pvad(**env) as driver:
        dev, host = cuda_malloc(driver, 4 * P), malloc(driver, P)
        assert pva_register(driver, host, P, "HOST") == "UnsupportedFeature"
        assert pva_register(driver, 0, P) == "InvalidArgument"
        assert pva_register(driver, dev, 0) == "InvalidArgument"
        assert pva_register(driver, dev, -1) == "InvalidArgument"
        call(driver, "vm_state", state="Operational")
        assert pva_register(driver, dev, P) == "NotAllowedInOperationalState"
        assert pva_unregister(driver, dev) == "NotAllowedInOperationalState"
        call(driver, "vm_state", state="Init")
        assert pva_register(driver, dev, P) == "ok"
        assert call(driver, "cupva::cuda::ForceDisableSupport") == Result("InvalidState")  # interop was used
        call(driver, "vm_state", state="DeInit")
        assert pva_unregister(driver, dev) == "ok"
        assert pva_unregister(driver, 0x1234) == "InvalidArgument"


def test_force_disable_makes_registration_fail_with_cuda_disabled():
    with pvad() as driver:
        dev = cuda_malloc(driver, P)
        assert call(driver, "cupva::cuda::ForceDisableSupport") == Result("ok")
        assert pva_register(driver, dev, P) == "CUDADisabled"
        assert pva_unregister(driver, dev) == "InvalidArgument"  # no automatic registration any more


def test_explicit_registration_before_driver_2006():
    with pvad(driver_version=2005) as driver:
        dev = cuda_malloc(driver, 4 * P)
        assert pva_register(driver, dev + P, P) == "ok"
        assert pva_register(driver, dev, 2 * P) == "InvalidArgument"  # overlap
        assert pva_register(driver, dev + P, P) == "InvalidArgument"  # exact duplicate
        assert pva_register(driver, dev + 3 * P, 2 * P) == "DriverAPIError"  # past the allocation
        assert driver.last_incident.kind is IncidentKind.REFUSED
        assert pva_unregister(driver, dev + P + 1) == "InvalidArgument"  # interior
        assert pva_unregister(driver, dev) == "InvalidArgument"  # an allocation, not a registration
        assert pva_unregister(driver, dev + P) == "ok"
        assert pva_unregister(driver, dev + P) == "InvalidArgument"  # twice


def test_driver_2006_registers_cuda_pointers_itself():
    with pvad() as driver:
        dev = cuda_malloc(driver, 4 * P)
        assert pva_register(driver, dev, P) == "ok"
        assert pva_register(driver, dev, P) == "ok"  # a no-op, so no overlap either
        assert pva_register(driver, 0x5000, P) == "ok" and driver.refusals == ()  # nothing is touched
        assert pva_unregister(driver, dev) == "ok"
        assert pva_unregister(driver, dev + 8) == "InvalidArgument"


# --- conformance with the specs (the one semantics judges the independent driver) ----------------

ACL_CALLS = ["malloc", "malloc", "free", "aclrtMallocHost", "aclrtFreeHost", "aclrtHostRegisterV2",
             "aclrtHostRegisterV2", "aclrtHostRegisterV2", "aclrtHostGetDevicePointer", "aclrtHostUnregister",
             "aclrtHostUnregister"]
PVA_CALLS = ["malloc", "free", "cudaMalloc", "cudaMalloc", "cudaFree", "vm_state", "cupva::cuda::ForceDisableSupport",
             "cupva::mem::Register", "cupva::mem::Register", "cupva::mem::Register", "cupva::mem::Unregister",
             "cupva::mem::Unregister"]
FLAGS = [0, MAPPED, PINNED, MAPPED | PINNED, IOMEMORY, READONLY | MAPPED, 0x1, PINNED | 0x40]
SIZES = [0, 1, 100, P, P, P + 1, 2 * P]
ALLOC_SIZES = [0, 100, 2 * P, 4 * P, 4 * P, 3 * P - 7]


def step_args(data, spec: str, name: str, bases: list[int]) -> dict:
    def address() -> int:
        kind = data.draw(st.sampled_from(["base", "base", "offset", "zero", "foreign"]))
        if kind == "zero" or not bases:
            return 0 if kind == "zero" else 0x10000
        base = data.draw(st.sampled_from(bases[-3:]))  # recent ones: live more often
        return base + data.draw(st.sampled_from([0, 1, 64, P, P + 100, 2 * P])) if kind == "offset" else base

    size = lambda: data.draw(st.sampled_from(SIZES))  # noqa: E731
    match name:
        case "malloc" | "aclrtMallocHost" | "cudaMalloc":
            return {"size": data.draw(st.sampled_from(ALLOC_SIZES))}
        case "free" | "aclrtHostUnregister" | "cupva::mem::Unregister":
            return {"ptr": address()}
        case "aclrtFreeHost":
            return {"hostPtr": address()}
        case "cudaFree":
            return {"devPtr": address()}
        case "aclrtHostRegisterV2":
            return {"ptr": address(), "size": size(), "flag": data.draw(st.sampled_from(FLAGS))}
        case "aclrtHostGetDevicePointer":
            return {"pHost": address(), "flag": data.draw(st.sampled_from([0, 0, 0, 1]))}
        case "vm_state":
            return {"state": data.draw(st.sampled_from(["Init", "Operational", "DeInit"]))}
        case "cupva::cuda::ForceDisableSupport":
            return {}
        case "cupva::mem::Register":
            return {"ptr": address(), "size": data.draw(st.sampled_from(SIZES + [-1])),
                    "externalAllocType": data.draw(st.sampled_from(["CUDA", "CUDA", "HOST"]))}
    raise AssertionError(name)


def run_conformance(data, spec: str, env: dict, calls: list[str]) -> None:
    sem = Semantics(load_spec(spec), env)
    state = sem.initial_state()
    bases: list[int] = []
    clean = True  # no obligation broken so far: the model's invariants must then hold
    with started(spec, env) as driver:
        for _ in range(data.draw(st.integers(3, 30))):
            name = data.draw(st.sampled_from(calls))
            args = step_args(data, spec, name, bases)
            allowed = sem.allowed(state, name, args)
            result = driver.call(name, args)
            judgement = sem.judge(allowed, state, args, result.ret, result.out)
            assert judgement.conforms, (name, args, result, judgement)
            clean = clean and not allowed.broken
            if result.ret == sem.success:
                sem.apply(state, name, args, result.out)
                bases.extend(v for v in result.out.values() if isinstance(v, int))
                if name in ("aclrtHostRegisterV2", "cupva::mem::Register"):
                    bases += [args["ptr"], args["ptr"] + max(args["size"], 0)]
            assert not clean or not sem.holds(state), (name, args, result, sem.holds(state))
            assert driver.expected_locked_pages() == driver.arena_locked_pages()


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), product=st.sampled_from(["AtlasA2", "AtlasA2", "AtlasTraining"]))
def test_the_reference_driver_conforms_to_the_acl_spec(data, product):
    run_conformance(data, "acl", {"product": product}, ACL_CALLS)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), version=st.sampled_from([2005, 2006]), qnx=st.booleans())
def test_the_reference_driver_conforms_to_the_cupva_spec(data, version, qnx):
    run_conformance(data, "cupva", {"driver_version": version, "qnx_safety": qnx}, PVA_CALLS)
