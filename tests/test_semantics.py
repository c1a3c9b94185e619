"""The concrete semantics, rule by rule: every rule ID of both specs is exercised twice.

Each rule has a scenario on each side, registered in CASES under (spec, rule, side):

  side "holds": the rule is kept or does not fire (an obligation met, an error condition false,
                good outputs, a good state; for an effect: what the clause does not name stays as it
                was, or its conditional branch is not taken);
  side "fires": the rule is broken or fires (a broken obligation in `Allowed.broken`, a documented
                error in `Allowed.errors` with its codes and success refused, an environmental failure
                in `env_errors`, an open case in `unspecified`, bad outputs reported by `judge`, a
                state that breaks an invariant; for an effect: the state changes as the clause says).

`test_every_rule_has_both_scenarios` fails when a spec gains a rule without scenarios here.
Scenarios build states with short call sequences through `Semantics.apply` (or, for states no
allowed sequence reaches, with `Table.put`).
"""

from __future__ import annotations

from typing import Callable

import pytest

from checker.language.diagnostics import RegcheckError
from checker.language.load import check_source, load_spec
from checker.language.source import SourceFile
from checker.model.codegen import Emitter
from checker.language.parser import parse_spec
from checker.model.semantics import Semantics
from checker.model.outcomes import ErrorOutcome
from checker.language.typecheck import check_spec
from checker.language import syntax as S
from checker.language.checked import Type
from checker.model.values import type_problem

ACL = load_spec("acl")
CUPVA = load_spec("cupva")
SPECS = {"acl": ACL, "cupva": CUPVA}
SIDES = ("holds", "fires")

# Values as the vendor documents give them (not read from the spec, so a wrong constant in the spec shows).
INVALID_PARAM = frozenset({100000, 107000})  # ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID
FEATURE_NOT_SUPPORT = 207000
ALREADY_REGISTERED = 507910
NOT_REGISTERED = 507911
MAPPED, IOMEMORY, READONLY, PINNED = 0x2, 0x4, 0x8, 0x10000000
PAGE = 4096

PRODUCTS = ("Ascend950PR", "Ascend950DT", "AtlasA3", "AtlasA2", "Atlas200I500A2", "AtlasInference", "AtlasTraining")
SUPPORTED = ("Ascend950PR", "AtlasA3", "AtlasA2")  # the seed's applicability table

A = 0x10_0000  # page-aligned addresses far apart
B = 0x40_0000
C = 0x80_0000
SZ = 4 * PAGE
DEV = 0xD000_0000

CASES: dict[tuple[str, str, str], Callable[[], None]] = {}


def case(spec: str, rule: str, side: str):
    assert side in SIDES
    def deco(fn):
        key = (spec, rule, side)
        assert key not in CASES, key
        CASES[key] = fn
        return fn
    return deco


class World:
    """One spec under one configuration, with a state that calls advance."""

    def __init__(self, spec_name: str, **env):
        self.sem = Semantics(SPECS[spec_name], env)
        self.st = self.sem.initial_state()

    def allowed(self, call: str, **args):
        return self.sem.allowed(self.st, call, args)

    def judge(self, call: str, status, out: dict | None = None, **args):
        al = self.sem.allowed(self.st, call, args)
        return self.sem.judge(al, self.st, args, status, out or {})

    def do(self, call: str, out: dict | None = None, **args):
        """A successful call the spec allows (nothing broken, success allowed, outputs fine); applies it."""
        al = self.sem.allowed(self.st, call, args)
        assert not al.broken and al.success and not al.open, al
        j = self.sem.judge(al, self.st, args, self.sem.success, out or {})
        assert j.conforms, j
        assert self.sem.apply(self.st, call, args, out or {})
        return al

    def force(self, call: str, out: dict | None = None, **args):
        """Apply a call's success effect whatever it breaks (a state a caller bug leads to)."""
        assert self.sem.apply(self.st, call, args, out or {})

    def put(self, table: str, key: int, **record):
        self.st.tables[table].put(key, record)

    def rows(self, table: str) -> dict:
        return dict(self.st.tables[table].rows)

    def snapshot(self):
        return self.st.snapshot()


def error_rules(al) -> set[str]:
    return {e.rule for e in al.errors}


def env_rules(al) -> set[str]:
    return {e.rule for e in al.env_errors}


def codes_of(al, rule: str):
    return next(e.codes for e in al.errors + al.env_errors if e.rule == rule)


def assert_fails(w: World, call: str, rule: str, codes, **args):
    """`rule` fires: in errors with exactly `codes` (None: any failure), and success is refused."""
    al = w.allowed(call, **args)
    assert rule in error_rules(al), al
    assert codes_of(al, rule) == (None if codes is None else frozenset(codes))
    assert not al.success
    j = w.sem.judge(al, w.st, args, w.sem.success, {})
    assert not j.conforms and rule in j.rules
    for code in codes or ():
        assert w.sem.judge(al, w.st, args, code, {}).conforms


def assert_not_fails(w: World, call: str, rule: str, **args):
    al = w.allowed(call, **args)
    assert rule not in error_rules(al), al
    return al


def assert_broken(w: World, call: str, rule: str, undefined: bool, **args):
    al = w.allowed(call, **args)
    assert rule in al.broken, al
    assert (rule in al.undefined) is undefined
    if undefined:
        assert al.open  # a breach the documents call undefined leaves every outcome allowed
        assert w.sem.judge(al, w.st, args, 12345, {}).conforms
    return al


# `may fail ...: any except {...}` in acl: any non-zero aclError except the four whose documented
# meaning names a specific condition (those are allowed only where their `fails` clause holds).
ACL_ENV_EXCLUDED = INVALID_PARAM | {ALREADY_REGISTERED, NOT_REGISTERED}


def assert_env_fires(w: World, call: str, rule: str, codes, excluded=frozenset(), **args):
    """`rule` (a `may fail`) holds: in env_errors with its codes, and a failure it allows conforms."""
    al = w.allowed(call, **args)
    assert ErrorOutcome(rule, None if codes is None else frozenset(codes), frozenset(excluded)) in al.env_errors, al
    allowed_status = next(iter(codes)) if codes is not None else 507899  # ACL_ERROR_RT_DRV_INTERNAL_ERROR
    assert w.sem.judge(al, w.st, args, allowed_status, {}).conforms
    return al


def assert_acl_env_holds(w: World, call: str, rule: str, **args):
    """An acl environmental failure never forbids success and never excuses a documented-meaning code."""
    al = w.allowed(call, **args)
    assert al.success and al.errors == () and rule in env_rules(al), al
    for code in sorted(ACL_ENV_EXCLUDED):
        j = w.sem.judge(al, w.st, args, code, {})
        assert not j.conforms, code
    return al


def assert_kept(w: World, call: str, rule: str, **args):
    al = w.allowed(call, **args)
    assert rule not in al.broken and rule not in al.undefined, al
    return al


# ================================================================ acl

def acl(**env) -> World:
    return World("acl", **env)


def acl_registered(flag: int = MAPPED, **env) -> World:
    """malloc'ed memory at A with one registration of the whole block."""
    w = acl(**env)
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("aclrtHostRegisterV2", ptr=A, size=SZ, flag=flag)
    return w


def acl_good_state() -> World:
    """A reachable state that gives every invariant something to check."""
    w = acl_registered(MAPPED)
    w.do("aclrtHostGetDevicePointer", {"pDevice": DEV}, pHost=A, flag=0)
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    w.do("aclrtHostRegisterV2", ptr=B, size=PAGE, flag=MAPPED)
    w.do("malloc", {"ptr": C}, size=SZ)
    w.do("aclrtHostRegisterV2", ptr=C + PAGE, size=PAGE, flag=PINNED)
    return w


# ---- invariants: a state built to break each one (Table.put), and a reachable good state

def _acl_bad_no_overlap(w):
    w.put("host_allocs", A, size=2 * SZ, origin="MALLOC", locked=False)
    w.put("regs", A, size=SZ, flags=MAPPED, dev=0)
    w.put("regs", A + PAGE, size=SZ, flags=MAPPED, dev=0)


def _acl_bad_reg_in_alloc(w):
    w.put("regs", A, size=SZ, flags=MAPPED, dev=0)


def _acl_bad_dev_only_mapped(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC", locked=False)
    w.put("regs", A, size=SZ, flags=PINNED, dev=DEV)


def _acl_bad_malloc_host_locked(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC_HOST", locked=False)


def _acl_bad_pinned_locked(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC_HOST", locked=True)
    w.put("regs", A, size=SZ, flags=PINNED, dev=0)


def _acl_bad_malloc_pageable(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC", locked=True)


def _acl_bad_allocs_disjoint(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC", locked=False)
    w.put("host_allocs", A + SZ - 1, size=SZ, origin="MALLOC", locked=False)


def _acl_bad_alloc_in_space(w):
    # key + size = 2**64 + PAGE: exact arithmetic sees it; a wrapping one would see PAGE.
    w.put("host_allocs", 2**64 - PAGE, size=2 * PAGE, origin="MALLOC", locked=False)


def _acl_bad_reg_nonempty(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC", locked=False)
    w.put("regs", A, size=0, flags=MAPPED, dev=0)


def _acl_bad_reg_aligned(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC", locked=False)
    w.put("regs", A + 16, size=PAGE, flags=MAPPED, dev=0)


def _acl_one_registration(w):
    w.put("host_allocs", A, size=SZ, origin="MALLOC", locked=False)
    w.put("regs", A, size=SZ, flags=MAPPED, dev=0)


ACL_INVARIANTS = {
    "ACL-INV-NO-OVERLAP": ({}, _acl_bad_no_overlap),
    "ACL-INV-REG-IN-ALLOC": ({}, _acl_bad_reg_in_alloc),
    "ACL-INV-DEV-ONLY-MAPPED": ({}, _acl_bad_dev_only_mapped),
    "ACL-INV-MALLOC-HOST-LOCKED": ({}, _acl_bad_malloc_host_locked),
    "ACL-INV-PINNED-LOCKED": ({}, _acl_bad_pinned_locked),
    "ACL-INV-MALLOC-PAGEABLE": ({}, _acl_bad_malloc_pageable),
    "ACL-INV-ALLOCS-DISJOINT": ({}, _acl_bad_allocs_disjoint),
    "ACL-INV-ALLOC-IN-SPACE": ({}, _acl_bad_alloc_in_space),
    "ACL-INV-REG-NONEMPTY": ({}, _acl_bad_reg_nonempty),
    "ACL-INV-REG-ALIGNED": ({}, _acl_bad_reg_aligned),
    # Configuration-dependent: the same registration is fine on a supported product / a newer kernel.
    "ACL-INV-UNSUPPORTED-NONE": ({"product": "AtlasInference"}, _acl_one_registration),
    "ACL-INV-OLD-KERNEL-HOST-ONLY": ({"os_kernel": "5.10"}, _acl_one_registration),
}


def _register_invariant_cases(spec: str, table: dict, good: Callable[[], World]):
    for rule, (env, build) in table.items():
        def fires(rule=rule, env=env, build=build):
            w = World(spec, **env)
            assert w.sem.holds(w.st) == []  # the empty initial state keeps every invariant
            build(w)
            assert rule in w.sem.holds(w.st)

        def holds(rule=rule):
            w = good()
            assert w.sem.holds(w.st) == []
        case(spec, rule, "fires")(fires)
        case(spec, rule, "holds")(holds)


_register_invariant_cases("acl", ACL_INVARIANTS, acl_good_state)


def test_acl_configuration_invariants_hold_in_the_other_configuration():
    for env in ({"product": "AtlasA3"}, {"os_kernel": "5.10.1"}):
        w = acl(**env)
        _acl_one_registration(w)
        assert w.sem.holds(w.st) == [], env


# ---- events: malloc, free

@case("acl", "ENV-MALLOC-FRESH", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert w.judge("malloc", 0, {"ptr": A + SZ}, size=SZ).conforms  # adjacent: ranges are half-open
    assert w.judge("malloc", 0, {"ptr": 2**64 - PAGE}, size=PAGE).conforms  # ends exactly at 2**64


@case("acl", "ENV-MALLOC-FRESH", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for ptr, size in ((0, SZ), (A + PAGE, SZ), (A - PAGE, 2 * PAGE), (A, 0), (2**64 - PAGE, 2 * PAGE)):
        j = w.judge("malloc", 0, {"ptr": ptr}, size=size)
        assert not j.conforms and j.rules == ("ENV-MALLOC-FRESH",), (ptr, size)


@case("acl", "ENV-MALLOC-EFFECT", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert w.rows("host_allocs") == {A: {"size": SZ, "origin": "MALLOC", "locked": False}}
    assert w.rows("regs") == {}


@case("acl", "ENV-MALLOC-EFFECT", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    before = w.snapshot()
    # malloc has no documented failure here: an unexplained failure is blamed on its effect rule
    j = w.judge("malloc", 12, {"ptr": 0}, size=SZ)
    assert not j.conforms and j.rules == ("ENV-MALLOC-EFFECT",)
    w.do("malloc", {"ptr": B}, size=PAGE)  # frame: the earlier block is untouched
    assert w.rows("host_allocs")[A] == {"size": SZ, "origin": "MALLOC", "locked": False}
    assert before != w.snapshot()


@case("acl", "ENV-FREE-UNKNOWN", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_kept(w, "free", "ENV-FREE-UNKNOWN", ptr=0)
    assert_kept(w, "free", "ENV-FREE-UNKNOWN", ptr=A)


@case("acl", "ENV-FREE-UNKNOWN", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_broken(w, "free", "ENV-FREE-UNKNOWN", False, ptr=C)  # never allocated
    assert_broken(w, "free", "ENV-FREE-UNKNOWN", False, ptr=A + PAGE)  # not the start
    assert_broken(w, "free", "ENV-FREE-UNKNOWN", False, ptr=B)  # aclrtMallocHost memory
    w.do("free", ptr=A)
    assert_broken(w, "free", "ENV-FREE-UNKNOWN", False, ptr=A)  # double free


@case("acl", "ACL-FREE-REGISTERED", "fires")
def _():
    w = acl_registered()
    assert_broken(w, "free", "ACL-FREE-REGISTERED", True, ptr=A)


@case("acl", "ACL-FREE-REGISTERED", "holds")
def _():
    w = acl_registered()
    w.do("aclrtHostUnregister", ptr=A)
    assert_kept(w, "free", "ACL-FREE-REGISTERED", ptr=A)


@case("acl", "ENV-FREE-EFFECT", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("malloc", {"ptr": B}, size=SZ)
    w.do("free", ptr=A)
    assert list(w.rows("host_allocs")) == [B]


@case("acl", "ENV-FREE-EFFECT", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    before = w.snapshot()
    w.do("free", ptr=0)  # free(NULL) does nothing
    assert w.snapshot() == before
    j = w.judge("free", 1, ptr=A)
    assert not j.conforms and j.rules == ("ENV-FREE-EFFECT",)


# ---- aclrtMallocHost / aclrtFreeHost

@case("acl", "ACL-MALLOCHOST-SIZE", "fires")
def _():  # a plain obligation: the documented error still decides the outcome
    al = assert_broken(acl(), "aclrtMallocHost", "ACL-MALLOCHOST-SIZE", False, size=0)
    assert error_rules(al) == {"ACL-MALLOCHOST-SIZE-ZERO"}


@case("acl", "ACL-MALLOCHOST-SIZE", "holds")
def _():
    assert_kept(acl(), "aclrtMallocHost", "ACL-MALLOCHOST-SIZE", size=1)


@case("acl", "ACL-MALLOCHOST-SIZE-ZERO", "fires")
def _():
    assert_fails(acl(), "aclrtMallocHost", "ACL-MALLOCHOST-SIZE-ZERO", INVALID_PARAM, size=0)


@case("acl", "ACL-MALLOCHOST-SIZE-ZERO", "holds")
def _():
    al = assert_not_fails(acl(), "aclrtMallocHost", "ACL-MALLOCHOST-SIZE-ZERO", size=1)
    assert al.success and al.errors == ()


@case("acl", "ACL-MALLOCHOST-ENV", "fires")
def _():
    w = acl()
    assert_env_fires(w, "aclrtMallocHost", "ACL-MALLOCHOST-ENV", None, ACL_ENV_EXCLUDED, size=SZ)
    assert w.judge("aclrtMallocHost", 207001, size=SZ).conforms  # ACL_ERROR_RT_MEMORY_ALLOCATION


@case("acl", "ACL-MALLOCHOST-ENV", "holds")
def _():
    assert_acl_env_holds(acl(), "aclrtMallocHost", "ACL-MALLOCHOST-ENV", size=SZ)


@case("acl", "ACL-MALLOCHOST-FRESH", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": A}, size=SZ)
    assert w.judge("aclrtMallocHost", 0, {"hostPtr": A + SZ}, size=SZ).conforms
    # 64-byte alignment is not promised on the RC forms
    w2 = acl(product="AtlasInference")
    assert w2.judge("aclrtMallocHost", 0, {"hostPtr": A + 8}, size=SZ).conforms


@case("acl", "ACL-MALLOCHOST-FRESH", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": A}, size=SZ)
    for ptr in (0, B + 8, A + PAGE, 2**64 - PAGE):
        j = w.judge("aclrtMallocHost", 0, {"hostPtr": ptr}, size=SZ)
        assert not j.conforms and j.rules == ("ACL-MALLOCHOST-FRESH",), hex(ptr)


@case("acl", "ACL-MALLOCHOST-EFFECT", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert w.rows("host_allocs") == {B: {"size": SZ, "origin": "MALLOC_HOST", "locked": True}}


@case("acl", "ACL-MALLOCHOST-EFFECT", "holds")
def _():
    w = acl_registered()
    regs = w.rows("regs")
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert w.rows("regs") == regs and w.rows("host_allocs")[A]["origin"] == "MALLOC"


@case("acl", "ACL-FREEHOST-ORIGIN", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_broken(w, "aclrtFreeHost", "ACL-FREEHOST-ORIGIN", True, hostPtr=A)  # malloc memory
    assert_broken(w, "aclrtFreeHost", "ACL-FREEHOST-ORIGIN", True, hostPtr=B)  # unknown


@case("acl", "ACL-FREEHOST-ORIGIN", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_kept(w, "aclrtFreeHost", "ACL-FREEHOST-ORIGIN", hostPtr=B)
    assert_kept(w, "aclrtFreeHost", "ACL-FREEHOST-ORIGIN", hostPtr=0)


@case("acl", "ACL-FREEHOST-REGISTERED", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    w.do("aclrtHostRegisterV2", ptr=B + PAGE, size=PAGE, flag=MAPPED)
    assert_broken(w, "aclrtFreeHost", "ACL-FREEHOST-REGISTERED", True, hostPtr=B)


@case("acl", "ACL-FREEHOST-REGISTERED", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    w.do("aclrtHostRegisterV2", ptr=B, size=SZ, flag=MAPPED)
    w.do("aclrtHostUnregister", ptr=B)
    assert_kept(w, "aclrtFreeHost", "ACL-FREEHOST-REGISTERED", hostPtr=B)


@case("acl", "ACL-FREEHOST-NULL", "fires")
def _():
    assert_fails(acl(), "aclrtFreeHost", "ACL-FREEHOST-NULL", INVALID_PARAM, hostPtr=0)


@case("acl", "ACL-FREEHOST-NULL", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert assert_not_fails(w, "aclrtFreeHost", "ACL-FREEHOST-NULL", hostPtr=B).success


@case("acl", "ACL-FREEHOST-ENV", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_env_fires(w, "aclrtFreeHost", "ACL-FREEHOST-ENV", None, ACL_ENV_EXCLUDED, hostPtr=B)
    assert w.judge("aclrtFreeHost", 107002, hostPtr=B).conforms  # no current context


@case("acl", "ACL-FREEHOST-ENV", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_acl_env_holds(w, "aclrtFreeHost", "ACL-FREEHOST-ENV", hostPtr=B)


@case("acl", "ACL-FREEHOST-EFFECT", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    w.do("aclrtFreeHost", hostPtr=B)
    assert w.rows("host_allocs") == {}


@case("acl", "ACL-FREEHOST-EFFECT", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    w.do("aclrtMallocHost", {"hostPtr": C}, size=SZ)
    w.do("aclrtFreeHost", hostPtr=B)
    assert list(w.rows("host_allocs")) == [C]  # only the freed block goes


# ---- aclrtHostRegisterV2

@case("acl", "ACL-REG-ALIGN", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-ALIGN", True, ptr=A + 16, size=PAGE, flag=MAPPED)


@case("acl", "ACL-REG-ALIGN", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-ALIGN", ptr=A + PAGE, size=PAGE + 1, flag=MAPPED)


@case("acl", "ACL-REG-HOST-MEMORY", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-HOST-MEMORY", True, ptr=B, size=PAGE, flag=MAPPED)
    assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-HOST-MEMORY", True, ptr=A, size=SZ + 1, flag=MAPPED)


@case("acl", "ACL-REG-HOST-MEMORY", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-HOST-MEMORY", ptr=A, size=SZ, flag=MAPPED)
    assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-HOST-MEMORY", ptr=B + SZ - PAGE, size=PAGE, flag=MAPPED)


@pytest.mark.parametrize("kernel, origin, breaks", [
    ("5.10", "malloc", True),
    ("5.10.0", "malloc", True),  # 5.10.0 is 5.10
    ("5.9", "malloc", True),
    ("4.19.90", "malloc", True),
    ("5.10.1", "malloc", False),  # 5.10 < 5.10.1 < 5.11
    ("5.11", "malloc", False),
    ("6.6", "malloc", False),
    ("5.10", "aclrtMallocHost", False),
])
def test_acl_pageable_memory_on_old_kernels(kernel, origin, breaks):
    w = acl(os_kernel=kernel)
    if origin == "malloc":
        w.do("malloc", {"ptr": A}, size=SZ)
    else:
        w.do("aclrtMallocHost", {"hostPtr": A}, size=SZ)
    args = dict(ptr=A, size=SZ, flag=MAPPED)
    if breaks:
        assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-PAGEABLE-OLD-KERNEL", True, **args)
    else:
        assert w.allowed("aclrtHostRegisterV2", **args).broken == ()


@case("acl", "ACL-REG-PAGEABLE-OLD-KERNEL", "fires")
def _():
    test_acl_pageable_memory_on_old_kernels("5.10", "malloc", True)


@case("acl", "ACL-REG-PAGEABLE-OLD-KERNEL", "holds")
def _():
    test_acl_pageable_memory_on_old_kernels("5.10.1", "malloc", False)
    test_acl_pageable_memory_on_old_kernels("5.10", "aclrtMallocHost", False)


@case("acl", "ACL-REG-FLAG-RESERVED", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for flag in (IOMEMORY, READONLY, MAPPED | IOMEMORY, PINNED | READONLY):
        assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-FLAG-RESERVED", True, ptr=A, size=SZ, flag=flag)


@case("acl", "ACL-REG-FLAG-RESERVED", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for flag in (MAPPED, PINNED, MAPPED | PINNED):
        assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-FLAG-RESERVED", ptr=A, size=SZ, flag=flag)


_PRODUCT_RULES = {
    "ACL-REG-PRODUCT": ("aclrtHostRegisterV2", dict(ptr=A + SZ, size=SZ, flag=MAPPED)),
    "ACL-GETDEV-PRODUCT": ("aclrtHostGetDevicePointer", dict(pHost=A, flag=0)),
    "ACL-UNREG-PRODUCT": ("aclrtHostUnregister", dict(ptr=A)),
}


@pytest.mark.parametrize("rule", sorted(_PRODUCT_RULES))
@pytest.mark.parametrize("product", PRODUCTS)
def test_acl_products(rule, product):
    call, args = _PRODUCT_RULES[rule]
    w = acl(product=product)
    w.do("malloc", {"ptr": A}, size=2 * SZ)
    w.put("regs", A, size=SZ, flags=MAPPED, dev=0)  # registered (on any product) for the other two calls
    if product in SUPPORTED:
        assert_not_fails(w, call, rule, **args)
        assert w.allowed(call, **args).success
    else:
        assert_fails(w, call, rule, {FEATURE_NOT_SUPPORT}, **args)


def test_acl_supported_products_match_the_seed_table():
    assert set(ACL.enums["Product"]) == set(PRODUCTS)
    body = ACL.defs["supported_product"]
    supported = {p for p in PRODUCTS if (w := acl(product=p)).sem.eval(body, w.st) is True}
    assert supported == set(SUPPORTED)


for _rule in _PRODUCT_RULES:
    case("acl", _rule, "fires")(lambda r=_rule: test_acl_products(r, "Ascend950DT"))
    case("acl", _rule, "holds")(lambda r=_rule: test_acl_products(r, "Ascend950PR"))


@case("acl", "ACL-REG-NULL", "fires")
def _():
    assert_fails(acl(), "aclrtHostRegisterV2", "ACL-REG-NULL", INVALID_PARAM, ptr=0, size=SZ, flag=MAPPED)


@case("acl", "ACL-REG-NULL", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_not_fails(w, "aclrtHostRegisterV2", "ACL-REG-NULL", ptr=A, size=SZ, flag=MAPPED)


@case("acl", "ACL-REG-SIZE-ZERO", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_fails(w, "aclrtHostRegisterV2", "ACL-REG-SIZE-ZERO", INVALID_PARAM, ptr=A, size=0, flag=MAPPED)


@case("acl", "ACL-REG-SIZE-ZERO", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_not_fails(w, "aclrtHostRegisterV2", "ACL-REG-SIZE-ZERO", ptr=A, size=1, flag=MAPPED)


@case("acl", "ACL-REG-FLAG-INVALID", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for flag in (0, 0x1, MAPPED | 0x20000000, 0x80000000):
        assert_fails(w, "aclrtHostRegisterV2", "ACL-REG-FLAG-INVALID", INVALID_PARAM, ptr=A, size=SZ, flag=flag)


@case("acl", "ACL-REG-FLAG-INVALID", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for flag in (MAPPED, PINNED, MAPPED | PINNED, IOMEMORY, READONLY):
        assert_not_fails(w, "aclrtHostRegisterV2", "ACL-REG-FLAG-INVALID", ptr=A, size=SZ, flag=flag)


@case("acl", "ACL-REG-PINNED-LOCKED", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_fails(w, "aclrtHostRegisterV2", "ACL-REG-PINNED-LOCKED", None, ptr=B, size=PAGE, flag=PINNED)


@case("acl", "ACL-REG-PINNED-LOCKED", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert_not_fails(w, "aclrtHostRegisterV2", "ACL-REG-PINNED-LOCKED", ptr=A, size=SZ, flag=PINNED)
    assert_not_fails(w, "aclrtHostRegisterV2", "ACL-REG-PINNED-LOCKED", ptr=B, size=SZ, flag=MAPPED)


@case("acl", "ACL-REG-OVERLAP", "fires")
def _():
    w = acl_registered()
    for ptr, size in ((A, SZ), (A + PAGE, PAGE), (A + SZ - PAGE, PAGE)):
        assert_fails(w, "aclrtHostRegisterV2", "ACL-REG-OVERLAP", {ALREADY_REGISTERED}, ptr=ptr, size=size, flag=MAPPED)


@case("acl", "ACL-REG-OVERLAP", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=2 * SZ)
    w.do("aclrtHostRegisterV2", ptr=A, size=SZ, flag=MAPPED)
    # adjacent ranges do not overlap: [A, A+SZ) and [A+SZ, A+2SZ)
    w.do("aclrtHostRegisterV2", ptr=A + SZ, size=SZ, flag=MAPPED)
    assert sorted(w.rows("regs")) == [A, A + SZ]


@case("acl", "ACL-REG-ENV", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_env_fires(w, "aclrtHostRegisterV2", "ACL-REG-ENV", None, ACL_ENV_EXCLUDED, ptr=A, size=SZ, flag=MAPPED)


@case("acl", "ACL-REG-ENV", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    # "already registered" (507910) for a fresh range is not an environmental failure
    assert_acl_env_holds(w, "aclrtHostRegisterV2", "ACL-REG-ENV", ptr=A, size=SZ, flag=MAPPED)


def _wrap_clause() -> S.Unspecified:
    info = ACL.calls["aclrtHostRegisterV2"]
    return next(c for c in info.clauses(S.Unspecified) if c.rule == "ACL-REG-WRAP")


@case("acl", "ACL-REG-WRAP", "fires")
def _():
    w = acl()
    ptr, size = 2**64 - PAGE, 2 * PAGE
    al = w.allowed("aclrtHostRegisterV2", ptr=ptr, size=size, flag=MAPPED)
    assert "ACL-REG-WRAP" in al.unspecified and al.open
    # `ptr + size` is exact: 2**64 + PAGE, never wrapped to PAGE
    plus = _wrap_clause().cond.left
    assert w.sem.eval(plus, w.st, {"ptr": ptr, "size": size}) == 2**64 + PAGE


@case("acl", "ACL-REG-WRAP", "holds")
def _():
    w = acl()
    top = 2**64 - 2 * PAGE
    w.do("malloc", {"ptr": top}, size=2 * PAGE)
    al = w.allowed("aclrtHostRegisterV2", ptr=top, size=2 * PAGE, flag=MAPPED)  # ends exactly at 2**64
    assert "ACL-REG-WRAP" not in al.unspecified and not al.open and al.success
    assert w.sem.eval(_wrap_clause().cond.left, w.st, {"ptr": top, "size": 2 * PAGE}) == 2**64


@case("acl", "ACL-REG-EFFECT", "fires")
def _():
    w = acl_registered(MAPPED | PINNED)
    assert w.rows("regs") == {A: {"size": SZ, "flags": MAPPED | PINNED, "dev": 0}}


@case("acl", "ACL-REG-EFFECT", "holds")
def _():
    w = acl_registered()
    allocs, first = w.rows("host_allocs"), w.rows("regs")[A]
    w.do("malloc", {"ptr": B}, size=SZ)
    w.do("aclrtHostRegisterV2", ptr=B, size=PAGE, flag=PINNED)
    assert w.rows("regs")[A] == first and w.rows("host_allocs")[A] == allocs[A]


# ---- aclrtHostGetDevicePointer

@case("acl", "ACL-GETDEV-NULL", "fires")
def _():
    assert_fails(acl(), "aclrtHostGetDevicePointer", "ACL-GETDEV-NULL", INVALID_PARAM, pHost=0, flag=0)


@case("acl", "ACL-GETDEV-NULL", "holds")
def _():
    assert_not_fails(acl_registered(), "aclrtHostGetDevicePointer", "ACL-GETDEV-NULL", pHost=A, flag=0)


@case("acl", "ACL-GETDEV-FLAG-ZERO", "fires")
def _():
    for flag in (1, MAPPED):
        al = assert_broken(acl_registered(), "aclrtHostGetDevicePointer", "ACL-GETDEV-FLAG-ZERO", False, pHost=A, flag=flag)
        assert "ACL-GETDEV-FLAG" in error_rules(al)


@case("acl", "ACL-GETDEV-FLAG-ZERO", "holds")
def _():
    assert_kept(acl_registered(), "aclrtHostGetDevicePointer", "ACL-GETDEV-FLAG-ZERO", pHost=A, flag=0)


@case("acl", "ACL-GETDEV-MAPPED", "fires")
def _():
    w = acl_registered(PINNED)  # registered, but not MAPPED
    assert_broken(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-MAPPED", False, pHost=A, flag=0)
    assert_broken(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-MAPPED", False, pHost=B, flag=0)  # never registered
    assert_broken(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-MAPPED", False, pHost=0, flag=0)  # null
    w = acl_registered()
    w.do("aclrtHostUnregister", ptr=A)
    assert_broken(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-MAPPED", False, pHost=A, flag=0)  # unregistered


@case("acl", "ACL-GETDEV-MAPPED", "holds")
def _():
    w = acl_registered()
    assert_kept(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-MAPPED", pHost=A, flag=0)
    assert_kept(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-MAPPED", pHost=A + PAGE, flag=0)  # interior: unspecified


@case("acl", "ACL-UNREG-REGISTERED", "fires")
def _():
    w = acl_registered()
    assert_broken(w, "aclrtHostUnregister", "ACL-UNREG-REGISTERED", False, ptr=B)
    assert_broken(w, "aclrtHostUnregister", "ACL-UNREG-REGISTERED", False, ptr=0)
    w.do("aclrtHostUnregister", ptr=A)
    al = assert_broken(w, "aclrtHostUnregister", "ACL-UNREG-REGISTERED", False, ptr=A)  # twice
    assert error_rules(al) == {"ACL-UNREG-NOT-REGISTERED"}


@case("acl", "ACL-UNREG-REGISTERED", "holds")
def _():
    w = acl_registered()
    assert_kept(w, "aclrtHostUnregister", "ACL-UNREG-REGISTERED", ptr=A)
    assert_kept(w, "aclrtHostUnregister", "ACL-UNREG-REGISTERED", ptr=A + PAGE)


@case("acl", "ACL-REG-FLAG-KNOWN", "fires")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for flag in (0, 0x1, MAPPED | 0x20):
        al = assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-FLAG-KNOWN", False, ptr=A, size=SZ, flag=flag)
        assert "ACL-REG-FLAG-INVALID" in error_rules(al)


@case("acl", "ACL-REG-FLAG-KNOWN", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    for flag in (MAPPED, PINNED, MAPPED | PINNED):
        assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-FLAG-KNOWN", ptr=A, size=SZ, flag=flag)


@case("acl", "ACL-REG-PINNED-PAGEABLE", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": A}, size=SZ)  # page-locked already
    al = assert_broken(w, "aclrtHostRegisterV2", "ACL-REG-PINNED-PAGEABLE", False, ptr=A, size=SZ, flag=PINNED)
    assert "ACL-REG-PINNED-LOCKED" in error_rules(al)


@case("acl", "ACL-REG-PINNED-PAGEABLE", "holds")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": A}, size=SZ)
    w.do("malloc", {"ptr": B}, size=SZ)
    assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-PINNED-PAGEABLE", ptr=A, size=SZ, flag=MAPPED)
    assert_kept(w, "aclrtHostRegisterV2", "ACL-REG-PINNED-PAGEABLE", ptr=B, size=SZ, flag=PINNED)


@case("acl", "ACL-GETDEV-FLAG", "fires")
def _():
    w = acl_registered()
    for flag in (1, MAPPED):
        assert_fails(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-FLAG", INVALID_PARAM, pHost=A, flag=flag)


@case("acl", "ACL-GETDEV-FLAG", "holds")
def _():
    al = assert_not_fails(acl_registered(), "aclrtHostGetDevicePointer", "ACL-GETDEV-FLAG", pHost=A, flag=0)
    assert al.success


@case("acl", "ACL-GETDEV-UNMAPPED", "fires")
def _():
    w = acl_registered(PINNED)
    assert_fails(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-UNMAPPED", None, pHost=A, flag=0)
    assert_fails(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-UNMAPPED", None, pHost=B, flag=0)  # not registered


@case("acl", "ACL-GETDEV-UNMAPPED", "holds")
def _():
    w = acl_registered(MAPPED | PINNED)
    assert_not_fails(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-UNMAPPED", pHost=A, flag=0)
    # an interior address is left open (ACL-GETDEV-INTERIOR), not an error
    assert_not_fails(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-UNMAPPED", pHost=A + PAGE, flag=0)


@case("acl", "ACL-GETDEV-ENV", "fires")
def _():
    w = acl_registered()
    assert_env_fires(w, "aclrtHostGetDevicePointer", "ACL-GETDEV-ENV", None, ACL_ENV_EXCLUDED, pHost=A, flag=0)
    assert w.judge("aclrtHostGetDevicePointer", 107002, pHost=A, flag=0).conforms


@case("acl", "ACL-GETDEV-ENV", "holds")
def _():
    assert_acl_env_holds(acl_registered(), "aclrtHostGetDevicePointer", "ACL-GETDEV-ENV", pHost=A, flag=0)


@case("acl", "ACL-GETDEV-INTERIOR", "fires")
def _():
    w = acl_registered()
    al = w.allowed("aclrtHostGetDevicePointer", pHost=A + PAGE, flag=0)
    assert al.unspecified == ("ACL-GETDEV-INTERIOR",) and al.open
    assert w.judge("aclrtHostGetDevicePointer", 0, {"pDevice": DEV}, pHost=A + PAGE, flag=0).conforms


@case("acl", "ACL-GETDEV-INTERIOR", "holds")
def _():
    w = acl_registered()
    assert w.allowed("aclrtHostGetDevicePointer", pHost=A, flag=0).unspecified == ()
    assert w.allowed("aclrtHostGetDevicePointer", pHost=A + SZ, flag=0).unspecified == ()  # one past the end


@case("acl", "ACL-GETDEV-STABLE", "holds")
def _():
    w = acl_registered()
    w.do("aclrtHostGetDevicePointer", {"pDevice": DEV}, pHost=A, flag=0)
    w.do("aclrtHostGetDevicePointer", {"pDevice": DEV}, pHost=A, flag=0)


@case("acl", "ACL-GETDEV-STABLE", "fires")
def _():
    w = acl_registered()
    j = w.judge("aclrtHostGetDevicePointer", 0, {"pDevice": 0}, pHost=A, flag=0)
    assert not j.conforms and j.rules == ("ACL-GETDEV-STABLE",)
    w.do("aclrtHostGetDevicePointer", {"pDevice": DEV}, pHost=A, flag=0)
    j = w.judge("aclrtHostGetDevicePointer", 0, {"pDevice": DEV + PAGE}, pHost=A, flag=0)
    assert not j.conforms and j.rules == ("ACL-GETDEV-STABLE",)


@case("acl", "ACL-GETDEV-EFFECT", "fires")
def _():
    w = acl_registered()
    w.do("aclrtHostGetDevicePointer", {"pDevice": DEV}, pHost=A, flag=0)
    assert w.rows("regs")[A]["dev"] == DEV


@case("acl", "ACL-GETDEV-EFFECT", "holds")
def _():
    w = acl_registered()
    before = w.snapshot()
    # an interior address: the effect's `if pHost in regs` branch is not taken
    assert w.sem.apply(w.st, "aclrtHostGetDevicePointer", {"pHost": A + PAGE, "flag": 0}, {"pDevice": DEV})
    assert w.snapshot() == before


# ---- aclrtHostUnregister

@case("acl", "ACL-UNREG-NULL", "fires")
def _():
    assert_fails(acl_registered(), "aclrtHostUnregister", "ACL-UNREG-NULL", INVALID_PARAM, ptr=0)


@case("acl", "ACL-UNREG-NULL", "holds")
def _():
    assert assert_not_fails(acl_registered(), "aclrtHostUnregister", "ACL-UNREG-NULL", ptr=A).success


@case("acl", "ACL-UNREG-NOT-REGISTERED", "fires")
def _():
    w = acl_registered()
    assert_fails(w, "aclrtHostUnregister", "ACL-UNREG-NOT-REGISTERED", {NOT_REGISTERED}, ptr=B)
    assert_fails(w, "aclrtHostUnregister", "ACL-UNREG-NOT-REGISTERED", {NOT_REGISTERED}, ptr=A + SZ)
    w.do("aclrtHostUnregister", ptr=A)
    assert_fails(w, "aclrtHostUnregister", "ACL-UNREG-NOT-REGISTERED", {NOT_REGISTERED}, ptr=A)  # twice


@case("acl", "ACL-UNREG-NOT-REGISTERED", "holds")
def _():
    w = acl_registered()
    assert_not_fails(w, "aclrtHostUnregister", "ACL-UNREG-NOT-REGISTERED", ptr=A)
    assert_not_fails(w, "aclrtHostUnregister", "ACL-UNREG-NOT-REGISTERED", ptr=A + PAGE)  # interior: open instead


@case("acl", "ACL-UNREG-ENV", "fires")
def _():
    w = acl_registered()
    assert_env_fires(w, "aclrtHostUnregister", "ACL-UNREG-ENV", None, ACL_ENV_EXCLUDED, ptr=A)
    assert w.judge("aclrtHostUnregister", 507000, ptr=A).conforms


@case("acl", "ACL-UNREG-ENV", "holds")
def _():
    # "never registered" (507911) for a registered pointer is not an environmental failure
    assert_acl_env_holds(acl_registered(), "aclrtHostUnregister", "ACL-UNREG-ENV", ptr=A)


@case("acl", "ACL-UNREG-INTERIOR", "fires")
def _():
    al = acl_registered().allowed("aclrtHostUnregister", ptr=A + SZ - 1)
    assert al.unspecified == ("ACL-UNREG-INTERIOR",) and al.open


@case("acl", "ACL-UNREG-INTERIOR", "holds")
def _():
    w = acl_registered()
    assert w.allowed("aclrtHostUnregister", ptr=A).unspecified == ()
    assert w.allowed("aclrtHostUnregister", ptr=A + SZ).unspecified == ()


@case("acl", "ACL-UNREG-EFFECT", "fires")
def _():
    w = acl_registered()
    w.do("aclrtHostUnregister", ptr=A)
    assert w.rows("regs") == {} and A in w.rows("host_allocs")


@case("acl", "ACL-UNREG-EFFECT", "holds")
def _():
    w = acl_registered()
    before = w.snapshot()
    assert w.sem.apply(w.st, "aclrtHostUnregister", {"ptr": A + PAGE}, {})  # interior: nothing removed
    assert w.snapshot() == before


# ---- what is page-locked (the executor compares this prediction with the kernel)

@case("acl", "ACL-PIN-MALLOC-HOST", "fires")
def _():
    w = acl()
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    assert ("ACL-PIN-MALLOC-HOST", B, (B, B + SZ)) in w.sem.pinned_ranges(w.st)


@case("acl", "ACL-PIN-MALLOC-HOST", "holds")
def _():
    w = acl()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert w.sem.pinned_ranges(w.st) == []  # malloc memory is pageable
    w.do("aclrtMallocHost", {"hostPtr": B}, size=SZ)
    w.do("aclrtFreeHost", hostPtr=B)
    assert w.sem.pinned_ranges(w.st) == []


@case("acl", "ACL-PIN-REGISTERED", "fires")
def _():
    w = acl_registered(MAPPED | PINNED)
    assert w.sem.pinned_ranges(w.st) == [("ACL-PIN-REGISTERED", A, (A, A + SZ))]


@case("acl", "ACL-PIN-REGISTERED", "holds")
def _():
    w = acl_registered(MAPPED)
    assert w.sem.pinned_ranges(w.st) == []
    w2 = acl_registered(PINNED)
    w2.do("aclrtHostUnregister", ptr=A)
    assert w2.sem.pinned_ranges(w2.st) == []


# ---- the outcome set

def test_acl_every_holding_error_is_allowed():
    w = acl(product="AtlasTraining")
    args = dict(ptr=0, size=0, flag=0)
    al = w.allowed("aclrtHostRegisterV2", **args)
    assert al.broken == ("ACL-REG-FLAG-KNOWN",) and not al.open  # a plain obligation: the outcome stays determinate
    assert error_rules(al) == {"ACL-REG-PRODUCT", "ACL-REG-NULL", "ACL-REG-SIZE-ZERO", "ACL-REG-FLAG-INVALID"}
    assert not al.success
    for status in (FEATURE_NOT_SUPPORT, *INVALID_PARAM, 507899):
        assert w.sem.judge(al, w.st, args, status, {}).conforms
    for status in (0, ALREADY_REGISTERED, NOT_REGISTERED):  # success, and codes no holding rule gives
        assert not w.sem.judge(al, w.st, args, status, {}).conforms


def test_acl_good_state_is_reachable_and_keeps_every_invariant():
    w = acl_good_state()
    assert w.sem.holds(w.st) == []
    assert len(w.rows("regs")) == 3


# ================================================================ cupva

REG, UNREG, DISABLE = "cupva::mem::Register", "cupva::mem::Unregister", "cupva::cuda::ForceDisableSupport"
OLD = {"driver_version": 2005}  # explicit registration (no automatic CUDA registration)
QNX = {"driver_version": 2006, "qnx_safety": True}


def pva(**env) -> World:
    return World("cupva", **env)


def pva_registered(**env) -> World:
    """A CUDA allocation at A, explicitly registered (driver 2005 unless env says otherwise)."""
    w = pva(**(env or OLD))
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    return w


def pva_good_state() -> World:
    w = pva_registered()
    w.do("cudaMalloc", {"devPtr": B}, size=SZ)
    w.do(REG, ptr=B + PAGE, size=PAGE, externalAllocType="CUDA")
    w.do("malloc", {"ptr": C}, size=SZ)
    return w


def _pva_alloc_and_reg(w, size=SZ, kind="CUDA"):
    w.put("cuda_allocs", A, size=SZ)
    w.put("regs", A, size=size, kind=kind)
    w.st.vars["cuda_interop_used"] = True


def _pva_bad_no_overlap(w):
    w.put("cuda_allocs", A, size=2 * SZ)
    w.put("regs", A, size=SZ, kind="CUDA")
    w.put("regs", A + PAGE, size=SZ, kind="CUDA")
    w.st.vars["cuda_interop_used"] = True


def _pva_bad_reg_in_alloc(w):
    w.put("cuda_allocs", A, size=PAGE)
    w.put("regs", A, size=SZ, kind="CUDA")
    w.st.vars["cuda_interop_used"] = True


def _pva_bad_regs_used(w):
    w.put("cuda_allocs", A, size=SZ)
    w.put("regs", A, size=SZ, kind="CUDA")


def _pva_bad_disabled_unused(w):
    w.st.vars["cuda_disabled"] = True
    w.st.vars["cuda_interop_used"] = True


PVA_INVARIANTS = {
    "PVA-INV-NO-OVERLAP": (OLD, _pva_bad_no_overlap),
    "PVA-INV-REG-IN-ALLOC": (OLD, _pva_bad_reg_in_alloc),
    "PVA-INV-CUDA-ONLY": (OLD, lambda w: _pva_alloc_and_reg(w, kind="HOST")),
    "PVA-INV-REG-NONEMPTY": (OLD, lambda w: _pva_alloc_and_reg(w, size=0)),
    # the same explicit registration is fine with driver 2005 or on QNX Safety
    "PVA-INV-AUTO-NO-EXPLICIT": ({"driver_version": 2006}, _pva_alloc_and_reg),
    "PVA-INV-REGS-USED": (OLD, _pva_bad_regs_used),
    "PVA-INV-DISABLED-UNUSED": (OLD, _pva_bad_disabled_unused),
}

_register_invariant_cases("cupva", PVA_INVARIANTS, pva_good_state)


def test_cupva_explicit_registrations_are_fine_without_automatic_registration():
    for env in (OLD, QNX):
        w = pva(**env)
        _pva_alloc_and_reg(w)
        assert w.sem.holds(w.st) == [], env


def test_cupva_default_configuration_state_keeps_every_invariant():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    w.do("vm_state", state="Operational")
    w.do("vm_state", state="DeInit")
    w.do(UNREG, ptr=A)
    assert w.sem.holds(w.st) == []


# ---- events

@case("cupva", "ENV-CUDAMALLOC-FRESH", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert w.judge("cudaMalloc", "ok", {"devPtr": A + SZ}, size=SZ).conforms


@case("cupva", "ENV-CUDAMALLOC-FRESH", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    for ptr, size in ((0, SZ), (A, SZ), (A + PAGE, PAGE), (A, 0), (2**64 - PAGE, 2 * PAGE)):
        j = w.judge("cudaMalloc", "ok", {"devPtr": ptr}, size=size)
        assert not j.conforms and j.rules == ("ENV-CUDAMALLOC-FRESH",), (ptr, size)


@case("cupva", "ENV-CUDAMALLOC-EFFECT", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert w.rows("cuda_allocs") == {A: {"size": SZ}} and w.rows("host_allocs") == {}


@case("cupva", "ENV-CUDAMALLOC-EFFECT", "holds")
def _():
    w = pva()
    j = w.judge("cudaMalloc", "InternalError", {"devPtr": A}, size=SZ)
    assert not j.conforms and j.rules == ("ENV-CUDAMALLOC-EFFECT",)
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("cudaMalloc", {"devPtr": B}, size=SZ)
    assert w.rows("host_allocs") == {A: {"size": SZ}}


@case("cupva", "ENV-CUDAFREE-UNKNOWN", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_kept(w, "cudaFree", "ENV-CUDAFREE-UNKNOWN", devPtr=A)
    assert_kept(w, "cudaFree", "ENV-CUDAFREE-UNKNOWN", devPtr=0)


@case("cupva", "ENV-CUDAFREE-UNKNOWN", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_broken(w, "cudaFree", "ENV-CUDAFREE-UNKNOWN", False, devPtr=B)
    assert_broken(w, "cudaFree", "ENV-CUDAFREE-UNKNOWN", False, devPtr=A + PAGE)


@case("cupva", "PVA-FREE-REGISTERED", "fires")
def _():
    assert_broken(pva_registered(), "cudaFree", "PVA-FREE-REGISTERED", True, devPtr=A)


@case("cupva", "PVA-FREE-REGISTERED", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    w.do(UNREG, ptr=A)
    assert_kept(w, "cudaFree", "PVA-FREE-REGISTERED", devPtr=A)
    # with automatic registration (driver 2006) nothing explicit is recorded, so nothing to unregister
    w2 = pva()
    w2.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w2.do(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    assert_kept(w2, "cudaFree", "PVA-FREE-REGISTERED", devPtr=A)


@case("cupva", "ENV-CUDAFREE-EFFECT", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do("cudaFree", devPtr=A)
    assert w.rows("cuda_allocs") == {}


@case("cupva", "ENV-CUDAFREE-EFFECT", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    before = w.snapshot()
    w.do("cudaFree", devPtr=0)
    assert w.snapshot() == before
    j = w.judge("cudaFree", "DriverAPIError", devPtr=A)
    assert not j.conforms and j.rules == ("ENV-CUDAFREE-EFFECT",)


@case("cupva", "ENV-MALLOC-FRESH", "holds")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("cudaMalloc", {"devPtr": B}, size=SZ)
    assert w.judge("malloc", "ok", {"ptr": B}, size=SZ).conforms  # host and device tables are separate


@case("cupva", "ENV-MALLOC-FRESH", "fires")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    for ptr, size in ((0, SZ), (A, 0), (A + SZ - 1, 2), (2**64 - 1, 2)):
        j = w.judge("malloc", "ok", {"ptr": ptr}, size=size)
        assert not j.conforms and j.rules == ("ENV-MALLOC-FRESH",), (ptr, size)


@case("cupva", "ENV-MALLOC-EFFECT", "fires")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert w.rows("host_allocs") == {A: {"size": SZ}}


@case("cupva", "ENV-MALLOC-EFFECT", "holds")
def _():
    w = pva()
    j = w.judge("malloc", "InternalError", {"ptr": A}, size=SZ)
    assert not j.conforms and j.rules == ("ENV-MALLOC-EFFECT",)
    w.do("malloc", {"ptr": A}, size=SZ)
    assert w.rows("cuda_allocs") == {} and w.rows("regs") == {}


@case("cupva", "ENV-FREE-UNKNOWN", "holds")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_kept(w, "free", "ENV-FREE-UNKNOWN", ptr=A)


@case("cupva", "ENV-FREE-UNKNOWN", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_broken(w, "free", "ENV-FREE-UNKNOWN", False, ptr=A)  # device memory is not free()'d


@case("cupva", "PVA-FREE-HOST-REGISTERED", "fires")
def _():
    # a host block that shares addresses with an explicitly registered range
    w = pva_registered()
    w.do("malloc", {"ptr": A + PAGE}, size=PAGE)
    assert_broken(w, "free", "PVA-FREE-HOST-REGISTERED", True, ptr=A + PAGE)


@case("cupva", "PVA-FREE-HOST-REGISTERED", "holds")
def _():
    w = pva_registered()
    w.do("malloc", {"ptr": B}, size=PAGE)
    assert_kept(w, "free", "PVA-FREE-HOST-REGISTERED", ptr=B)


@case("cupva", "ENV-FREE-EFFECT", "fires")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    w.do("free", ptr=A)
    assert w.rows("host_allocs") == {}


@case("cupva", "ENV-FREE-EFFECT", "holds")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    before = w.snapshot()
    w.do("free", ptr=0)
    assert w.snapshot() == before


@case("cupva", "ENV-VM-STATE", "fires")
def _():
    w = pva()
    assert w.sem.group_of(w.st) == ("Init",)
    for state, group in (("Operational", "Runtime"), ("DeInit", "DeInit"), ("Init", "Init")):
        w.do("vm_state", state=state)
        assert w.st.vars["vm"] == state and w.sem.group_of(w.st) == (group,)


@case("cupva", "ENV-VM-STATE", "holds")
def _():
    w = pva_registered()
    tables = {n: w.rows(n) for n in ("regs", "cuda_allocs", "host_allocs")}
    w.do("vm_state", state="Operational")
    assert {n: w.rows(n) for n in tables} == tables
    j = w.judge("vm_state", "InternalError", state="Init")
    assert not j.conforms and j.rules == ("ENV-VM-STATE",)


# ---- ForceDisableSupport

@case("cupva", "PVA-DISABLE-AFTER-USE", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    assert_fails(w, DISABLE, "PVA-DISABLE-AFTER-USE", {"InvalidState"})


@case("cupva", "PVA-DISABLE-AFTER-USE", "holds")
def _():
    w = pva()
    assert assert_not_fails(w, DISABLE, "PVA-DISABLE-AFTER-USE").success
    w.force(REG, ptr=A, size=SZ, externalAllocType="HOST")  # HOST memory does not use CUDA interop
    assert assert_not_fails(w, DISABLE, "PVA-DISABLE-AFTER-USE").success


@case("cupva", "PVA-DISABLE-EFFECT", "fires")
def _():
    w = pva()
    w.do(DISABLE)
    assert w.st.vars["cuda_disabled"] is True


@case("cupva", "PVA-DISABLE-EFFECT", "holds")
def _():
    w = pva()
    j = w.judge(DISABLE, "InternalError")
    assert not j.conforms and j.rules == ("PVA-DISABLE-EFFECT",)
    w.do(DISABLE)
    assert w.st.vars["cuda_interop_used"] is False and w.st.vars["vm"] == "Init"


# ---- Register

@case("cupva", "PVA-REG-THREAD-SAFETY", "fires")
def _():
    assert pva().sem.calls[REG].thread_rule == "PVA-REG-THREAD-SAFETY"  # the replayer checks the timing


@case("cupva", "PVA-REG-THREAD-SAFETY", "holds")
def _():
    # one call on its own breaks nothing: the rule is about overlapping calls from two threads
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_kept(w, REG, "PVA-REG-THREAD-SAFETY", ptr=A, size=SZ, externalAllocType="CUDA")
    assert w.sem.calls[DISABLE].thread_rule is None


@case("cupva", "PVA-REG-API-GROUP", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    for state in ("Operational", "DeInit"):
        w.do("vm_state", state=state)
        assert_broken(w, REG, "PVA-REG-API-GROUP", False, ptr=A, size=SZ, externalAllocType="CUDA")


@case("cupva", "PVA-REG-API-GROUP", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do("vm_state", state="DeInit")
    w.do("vm_state", state="Init")
    assert_kept(w, REG, "PVA-REG-API-GROUP", ptr=A, size=SZ, externalAllocType="CUDA")


@case("cupva", "PVA-REG-OVERLAP-UB", "fires")
def _():
    w = pva_registered()
    al = assert_broken(w, REG, "PVA-REG-OVERLAP-UB", False, ptr=A + PAGE, size=PAGE, externalAllocType="CUDA")
    assert "PVA-REG-OVERLAP" in error_rules(al)  # and the driver rejects it


@case("cupva", "PVA-REG-OVERLAP-UB", "holds")
def _():
    w = pva()  # driver 2006: aliasing CUDA registrations are accepted
    _pva_alloc_and_reg(w)
    assert_kept(w, REG, "PVA-REG-OVERLAP-UB", ptr=A, size=SZ, externalAllocType="CUDA")
    w2 = pva_registered()
    assert_kept(w2, REG, "PVA-REG-OVERLAP-UB", ptr=A + SZ, size=PAGE, externalAllocType="CUDA")


@case("cupva", "PVA-REG-ALLOCATED", "fires")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_broken(w, REG, "PVA-REG-ALLOCATED", True, ptr=B, size=PAGE, externalAllocType="CUDA")
    assert_broken(w, REG, "PVA-REG-ALLOCATED", True, ptr=A, size=SZ + 1, externalAllocType="CUDA")
    # the kinds swapped: a CUDA buffer passed as HOST memory, a host buffer passed as CUDA
    w.do("malloc", {"ptr": C}, size=SZ)
    assert_broken(w, REG, "PVA-REG-ALLOCATED", True, ptr=A, size=PAGE, externalAllocType="HOST")
    assert_broken(w, REG, "PVA-REG-ALLOCATED", True, ptr=C, size=PAGE, externalAllocType="CUDA")


@case("cupva", "PVA-REG-ALLOCATED", "holds")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_kept(w, REG, "PVA-REG-ALLOCATED", ptr=A + PAGE, size=PAGE, externalAllocType="CUDA")
    w.do("malloc", {"ptr": B}, size=SZ)
    assert_kept(w, REG, "PVA-REG-ALLOCATED", ptr=B, size=PAGE, externalAllocType="HOST")



@case("cupva", "PVA-REG-NULL", "fires")
def _():
    assert_fails(pva(**OLD), REG, "PVA-REG-NULL", {"InvalidArgument"}, ptr=0, size=SZ, externalAllocType="CUDA")


@case("cupva", "PVA-REG-NULL", "holds")
def _():
    al = assert_not_fails(pva(**OLD), REG, "PVA-REG-NULL", ptr=0, size=SZ, externalAllocType="HOST")
    assert error_rules(al) == {"PVA-REG-HOST-UNSUPPORTED"}


@case("cupva", "PVA-REG-SIZE-INVALID", "fires")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    for size in (0, -1, -(2**63)):
        assert_fails(w, REG, "PVA-REG-SIZE-INVALID", {"InvalidArgument"}, ptr=A, size=size, externalAllocType="CUDA")


@case("cupva", "PVA-REG-SIZE-INVALID", "holds")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert assert_not_fails(w, REG, "PVA-REG-SIZE-INVALID", ptr=A, size=1, externalAllocType="CUDA").success


@case("cupva", "PVA-REG-OPERATIONAL", "fires")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do("vm_state", state="Operational")
    assert_fails(w, REG, "PVA-REG-OPERATIONAL", {"NotAllowedInOperationalState"}, ptr=A, size=SZ,
                 externalAllocType="CUDA")


@case("cupva", "PVA-REG-OPERATIONAL", "holds")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do("vm_state", state="DeInit")  # the wrong group, but not the Operational state
    assert_not_fails(w, REG, "PVA-REG-OPERATIONAL", ptr=A, size=SZ, externalAllocType="CUDA")


@case("cupva", "PVA-REG-CUDA-DISABLED", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do(DISABLE)
    assert_fails(w, REG, "PVA-REG-CUDA-DISABLED", {"CUDADisabled"}, ptr=A, size=SZ, externalAllocType="CUDA")


@case("cupva", "PVA-REG-CUDA-DISABLED", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_not_fails(w, REG, "PVA-REG-CUDA-DISABLED", ptr=A, size=SZ, externalAllocType="CUDA")


@case("cupva", "PVA-REG-HOST-UNSUPPORTED", "fires")
def _():
    w = pva()
    w.do("malloc", {"ptr": A}, size=SZ)
    assert_fails(w, REG, "PVA-REG-HOST-UNSUPPORTED", {"UnsupportedFeature"}, ptr=A, size=SZ, externalAllocType="HOST")


@case("cupva", "PVA-REG-HOST-UNSUPPORTED", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert_not_fails(w, REG, "PVA-REG-HOST-UNSUPPORTED", ptr=A, size=SZ, externalAllocType="CUDA")


@pytest.mark.parametrize("env, fires", [
    ({"driver_version": 2005, "qnx_safety": False}, True),
    ({"driver_version": 2005, "qnx_safety": True}, True),
    ({"driver_version": 2006, "qnx_safety": True}, True),
    ({"driver_version": 2006, "qnx_safety": False}, False),
    ({"driver_version": 2007, "qnx_safety": False}, False),
])
def test_cupva_overlap_by_driver_and_qnx(env, fires):
    w = pva(**env)
    _pva_alloc_and_reg(w)  # an existing registration of [A, A + SZ)
    args = dict(ptr=A + PAGE, size=PAGE, externalAllocType="CUDA")
    if fires:
        assert_fails(w, REG, "PVA-REG-OVERLAP", {"InvalidArgument"}, **args)
    else:
        al = assert_not_fails(w, REG, "PVA-REG-OVERLAP", **args)
        assert al.success and al.broken == ()


def test_cupva_aliasing_cuda_registers_succeed_with_automatic_registration():
    w = pva()  # driver 2006, not QNX Safety
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    for _ in range(2):
        w.do(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    w.do(REG, ptr=A + PAGE, size=PAGE, externalAllocType="CUDA")
    assert w.rows("regs") == {} and w.st.vars["cuda_interop_used"] is True


def test_cupva_overlap_fires_again_after_disabling_cuda_interop():
    w = pva()
    _pva_alloc_and_reg(w)
    w.st.vars["cuda_interop_used"] = False
    w.do(DISABLE)
    al = w.allowed(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    assert {"PVA-REG-OVERLAP", "PVA-REG-CUDA-DISABLED"} <= error_rules(al)


@case("cupva", "PVA-REG-OVERLAP", "fires")
def _():
    test_cupva_overlap_by_driver_and_qnx({"driver_version": 2005, "qnx_safety": False}, True)
    test_cupva_overlap_by_driver_and_qnx(QNX, True)


@case("cupva", "PVA-REG-OVERLAP", "holds")
def _():
    test_cupva_overlap_by_driver_and_qnx({"driver_version": 2006, "qnx_safety": False}, False)
    w = pva_registered()
    assert_not_fails(w, REG, "PVA-REG-OVERLAP", ptr=A + SZ, size=SZ, externalAllocType="CUDA")  # adjacent


@case("cupva", "PVA-REG-DRIVER-API", "fires")
def _():
    for env, kind in ((OLD, "CUDA"), (QNX, "CUDA"), ({}, "HOST")):
        w = pva(**env)
        w.do("cudaMalloc", {"devPtr": A}, size=SZ)
        al = w.allowed(REG, ptr=A, size=SZ, externalAllocType=kind)
        assert ErrorOutcome("PVA-REG-DRIVER-API", frozenset({"DriverAPIError"})) in al.env_errors, (env, kind)
        assert w.judge(REG, "DriverAPIError", ptr=A, size=SZ, externalAllocType=kind).conforms


@case("cupva", "PVA-REG-DRIVER-API", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    al = w.allowed(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    assert "PVA-REG-DRIVER-API" not in env_rules(al) and al.env_errors == ()
    j = w.judge(REG, "DriverAPIError", ptr=A, size=SZ, externalAllocType="CUDA")
    assert not j.conforms and j.rules == ("PVA-REG-EFFECT",)


@case("cupva", "PVA-REG-INTERNAL", "fires")
def _():
    w = pva(**OLD)
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    al = w.allowed(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    assert ErrorOutcome("PVA-REG-INTERNAL", frozenset({"InternalError"})) in al.env_errors
    assert al.success


@case("cupva", "PVA-REG-INTERNAL", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    assert "PVA-REG-INTERNAL" not in env_rules(w.allowed(REG, ptr=A, size=SZ, externalAllocType="CUDA"))
    assert "PVA-REG-INTERNAL" not in env_rules(w.allowed(REG, ptr=A, size=SZ, externalAllocType="HOST"))


@case("cupva", "PVA-REG-AUTO-CHECKS", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    for args in (dict(ptr=0, size=SZ), dict(ptr=A, size=0)):
        al = w.allowed(REG, externalAllocType="CUDA", **args)
        assert al.unspecified == ("PVA-REG-AUTO-CHECKS",) and al.open
    w.do("vm_state", state="Operational")
    assert "PVA-REG-AUTO-CHECKS" in w.allowed(REG, ptr=A, size=SZ, externalAllocType="CUDA").unspecified


@case("cupva", "PVA-REG-AUTO-CHECKS", "holds")
def _():
    for env in (OLD, QNX):
        al = pva(**env).allowed(REG, ptr=0, size=SZ, externalAllocType="CUDA")
        assert al.unspecified == () and "PVA-REG-NULL" in error_rules(al)
    assert pva().allowed(REG, ptr=0, size=SZ, externalAllocType="HOST").unspecified == ()


@case("cupva", "PVA-REG-EFFECT", "fires")
def _():
    w = pva_registered()
    assert w.rows("regs") == {A: {"size": SZ, "kind": "CUDA"}}
    assert w.st.vars["cuda_interop_used"] is True


@case("cupva", "PVA-REG-EFFECT", "holds")
def _():
    w = pva()  # automatic registration: an explicit CUDA Register records nothing
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do(REG, ptr=A, size=SZ, externalAllocType="CUDA")
    assert w.rows("regs") == {} and w.st.vars["cuda_interop_used"] is True
    w2 = pva(**OLD)
    before = w2.snapshot()
    assert w2.sem.apply(w2.st, REG, {"ptr": A, "size": SZ, "externalAllocType": "HOST"}, {})
    assert w2.snapshot() == before  # a HOST register changes nothing


# ---- Unregister

@case("cupva", "PVA-UNREG-THREAD-SAFETY", "fires")
def _():
    assert pva().sem.calls[UNREG].thread_rule == "PVA-UNREG-THREAD-SAFETY"


@case("cupva", "PVA-UNREG-THREAD-SAFETY", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert_kept(w, UNREG, "PVA-UNREG-THREAD-SAFETY", ptr=A)
    assert w.sem.calls["vm_state"].thread_rule is None


@case("cupva", "PVA-UNREG-API-GROUP", "fires")
def _():
    w = pva_registered()
    assert_broken(w, UNREG, "PVA-UNREG-API-GROUP", False, ptr=A)  # still in Init
    w.do("vm_state", state="Operational")
    assert_broken(w, UNREG, "PVA-UNREG-API-GROUP", False, ptr=A)


@case("cupva", "PVA-UNREG-API-GROUP", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert_kept(w, UNREG, "PVA-UNREG-API-GROUP", ptr=A)


@case("cupva", "PVA-UNREG-OPERATIONAL", "fires")
def _():
    w = pva_registered()
    w.do("vm_state", state="Operational")
    assert_fails(w, UNREG, "PVA-UNREG-OPERATIONAL", {"NotAllowedInOperationalState"}, ptr=A)


@case("cupva", "PVA-UNREG-OPERATIONAL", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert assert_not_fails(w, UNREG, "PVA-UNREG-OPERATIONAL", ptr=A).success


@case("cupva", "PVA-UNREG-REGISTERED", "fires")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    for ptr in (0, B, A + SZ):
        al = assert_broken(w, UNREG, "PVA-UNREG-REGISTERED", False, ptr=ptr)
        assert "PVA-UNREG-INVALID" in error_rules(al)
    w.do(UNREG, ptr=A)
    assert_broken(w, UNREG, "PVA-UNREG-REGISTERED", False, ptr=A)  # twice


@case("cupva", "PVA-UNREG-REGISTERED", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert_kept(w, UNREG, "PVA-UNREG-REGISTERED", ptr=A)
    assert_kept(w, UNREG, "PVA-UNREG-REGISTERED", ptr=A + PAGE)  # interior: unspecified
    w2 = pva()  # driver 2006: a CUDA allocation is registered automatically
    w2.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w2.do("vm_state", state="DeInit")
    assert_kept(w2, UNREG, "PVA-UNREG-REGISTERED", ptr=A)


@case("cupva", "PVA-UNREG-INVALID", "fires")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    for ptr in (0, B, A + SZ):
        assert_fails(w, UNREG, "PVA-UNREG-INVALID", {"InvalidArgument"}, ptr=ptr)
    w.do(UNREG, ptr=A)
    assert_fails(w, UNREG, "PVA-UNREG-INVALID", {"InvalidArgument"}, ptr=A)  # twice


@case("cupva", "PVA-UNREG-INVALID", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert_not_fails(w, UNREG, "PVA-UNREG-INVALID", ptr=A)
    w2 = pva()  # driver 2006: a CUDA allocation is registered automatically
    w2.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w2.do("vm_state", state="DeInit")
    assert assert_not_fails(w2, UNREG, "PVA-UNREG-INVALID", ptr=A).success


@case("cupva", "PVA-UNREG-DRIVER-API", "fires")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert ErrorOutcome("PVA-UNREG-DRIVER-API", frozenset({"DriverAPIError"})) in w.allowed(UNREG, ptr=A).env_errors
    assert w.judge(UNREG, "DriverAPIError", ptr=A).conforms


@case("cupva", "PVA-UNREG-DRIVER-API", "holds")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do("vm_state", state="DeInit")
    assert w.allowed(UNREG, ptr=A).env_errors == ()
    assert not w.judge(UNREG, "DriverAPIError", ptr=A).conforms


@case("cupva", "PVA-UNREG-INTERIOR", "fires")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    al = w.allowed(UNREG, ptr=A + PAGE)
    assert al.unspecified == ("PVA-UNREG-INTERIOR",) and "PVA-UNREG-INVALID" not in error_rules(al)


@case("cupva", "PVA-UNREG-INTERIOR", "holds")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    assert w.allowed(UNREG, ptr=A).unspecified == ()


@case("cupva", "PVA-UNREG-AUTO-CHECKS", "fires")
def _():
    w = pva()
    w.do("cudaMalloc", {"devPtr": A}, size=SZ)
    w.do("vm_state", state="Operational")
    al = w.allowed(UNREG, ptr=A)
    assert "PVA-UNREG-AUTO-CHECKS" in al.unspecified and al.open


@case("cupva", "PVA-UNREG-AUTO-CHECKS", "holds")
def _():
    for env in (OLD, QNX):
        w = pva(**env)
        w.do("cudaMalloc", {"devPtr": A}, size=SZ)
        w.do("vm_state", state="Operational")
        al = w.allowed(UNREG, ptr=A)
        assert al.unspecified == () and "PVA-UNREG-OPERATIONAL" in error_rules(al), env


@case("cupva", "PVA-UNREG-EFFECT", "fires")
def _():
    w = pva_registered()
    w.do("vm_state", state="DeInit")
    w.do(UNREG, ptr=A)
    assert w.rows("regs") == {} and A in w.rows("cuda_allocs")


@case("cupva", "PVA-UNREG-EFFECT", "holds")
def _():
    w = pva_registered()
    before = w.snapshot()
    assert w.sem.apply(w.st, UNREG, {"ptr": A + PAGE}, {})
    assert w.snapshot() == before


# ---- the outcome set

def test_cupva_every_holding_error_is_allowed_and_nothing_else():
    w = pva(**OLD)
    w.do("vm_state", state="Operational")
    args = dict(ptr=0, size=0, externalAllocType="CUDA")
    al = w.allowed(REG, **args)
    assert error_rules(al) == {"PVA-REG-NULL", "PVA-REG-SIZE-INVALID", "PVA-REG-OPERATIONAL"}
    assert not al.success and not al.open
    judge = lambda status: w.sem.judge(al, w.st, args, status, {}).conforms  # noqa: E731
    assert judge("InvalidArgument") and judge("NotAllowedInOperationalState")
    assert judge("DriverAPIError") and judge("InternalError")  # environmental failures stay allowed
    assert not judge("ok") and not judge("UnsupportedFeature") and not judge("CUDADisabled")


# ================================================================ order, and the table of cases

ORDER_SPEC = """
spec demo "order"
source DOC "doc.txt" "a document"
status int success 0
call f(x: int) {
  fails DEMO-LOW: 1 when x < 10
    cite DOC "x below 10 fails with 1"
  fails DEMO-NEG: 2 when x < 0
    cite DOC "x below 0 fails with 2"
  fails DEMO-ODD: 3 when x % 2 == 1
    cite DOC "odd x fails with 3"
  ORDER
  effect DEMO-EFFECT: {
  }
    cite DOC "no state"
}
"""


def _order_sem(order: str) -> Semantics:
    return Semantics(check_spec(parse_spec(ORDER_SPEC.replace("ORDER", order), "order.spec")))


def test_without_order_every_holding_fails_is_allowed():
    sem = _order_sem("")
    al = sem.allowed(sem.initial_state(), "f", {"x": -3})
    assert error_rules(al) == {"DEMO-LOW", "DEMO-NEG", "DEMO-ODD"}
    assert {s for s in (0, 1, 2, 3, 4) if al.allows_status(s, 0)} == {1, 2, 3}
    assert sem.allowed(sem.initial_state(), "f", {"x": 12}).success


def test_order_keeps_only_the_first_holding_ranked_rule():
    sem = _order_sem("order DEMO-NEG > DEMO-LOW")
    st = sem.initial_state()
    al = sem.allowed(st, "f", {"x": -3})
    assert error_rules(al) == {"DEMO-NEG", "DEMO-ODD"}  # DEMO-ODD is not ranked: still allowed
    assert {s for s in (0, 1, 2, 3) if al.allows_status(s, 0)} == {2, 3}
    al = sem.allowed(st, "f", {"x": 4})
    assert error_rules(al) == {"DEMO-LOW"} and not al.success


def test_unknown_parameter_and_bad_value_are_input_errors():
    with pytest.raises(RegcheckError) as e:
        Semantics(ACL, {"kernel": "5.10"})
    assert e.value.diagnostics[0].code == "T0720"
    with pytest.raises(RegcheckError) as e:
        Semantics(ACL, {"os_kernel": "new"})
    assert e.value.diagnostics[0].code == "T0721"
    with pytest.raises(RegcheckError):
        Semantics(ACL, {"product": "AtlasA9"})


def test_configuration_defaults_and_versions():
    sem = Semantics(ACL)
    assert sem.config == {"os_kernel": (6, 6), "product": "AtlasA2"}
    assert Semantics(ACL, {"os_kernel": "5.10.0"}).config["os_kernel"] == Semantics(ACL, {"os_kernel": "5.10"}).config["os_kernel"]
    assert Semantics(CUPVA).config == {"driver_version": 2006, "qnx_safety": False}


@pytest.mark.parametrize("written, read", [
    ("5.10.0-136.oe2203.aarch64", (5, 10)), ("6.6.87.2-microsoft-standard-WSL2", (6, 6, 87, 2)),
    ("6.6.0+", (6, 6)), ("6.1.0~bpo11", (6, 1)), ("4.4.0_rc1", (4, 4)), (" 6.6 ", (6, 6)),
    ("6.6a", None), ("6..6", None), ("0x6.6", None), ("6.6.", None), ("x6.6", None),
])
def test_a_version_is_its_numbers_then_nothing_or_a_distribution_suffix(written, read):
    """Found by testing: "0x6.6" was read as kernel 0 and "6.6a" as 6.6 (a typo changing the findings)."""
    if read is None:
        with pytest.raises(RegcheckError, match="is not a version number"):
            Semantics(ACL, {"os_kernel": written})
    else:
        assert Semantics(ACL, {"os_kernel": written}).config["os_kernel"] == read


@pytest.mark.parametrize("t, value, problem", [
    (Type("int", "u32"), 0, None), (Type("int", "u32"), 2**32 - 1, None),
    (Type("int", "u32"), -1, "out of the range of u32 (0..4294967295)"),
    (Type("int", "u32"), 2**32, "out of the range of u32 (0..4294967295)"),
    (Type("int", "u64"), 2**64 - 1, None),
    (Type("int", "u64"), 2**64, "out of the range of u64 (0..18446744073709551615)"),
    (Type("int", "int"), -(2**70), None), (Type("int", "int"), 2**70, None),  # `int` is unbounded
    (Type("flags", "HostRegFlag"), MAPPED | PINNED, None), (Type("flags", "HostRegFlag"), 0, None),
    (Type("flags", "HostRegFlag"), 2**32, "out of the range of HostRegFlag (0..4294967295)"),
    (Type("flags", "HostRegFlag"), -1, "out of the range of HostRegFlag (0..4294967295)"),
    (Type("enum", "Origin"), "MALLOC_HOST", None), (Type("enum", "Origin"), "MALLOC", None),
    (Type("enum", "Origin"), "MMAP", "not a member of Origin"),  # cuda's Origin has it, acl's does not
    (Type("enum", "Origin"), "malloc", "not a member of Origin"),
    (Type("bool"), True, None), (Type("bool"), False, None),  # kinds are the callers' to check
])
def test_type_problem_says_why_a_value_is_outside_its_type(t, value, problem):
    """The one range and membership check of the driver's outputs and of the prover's TYPES property."""
    assert type_problem(ACL, t, value) == problem


@pytest.mark.parametrize("key", sorted(CASES), ids=lambda k: f"{k[0]}:{k[1]}:{k[2]}")
def test_rule(key):
    CASES[key]()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_rule_has_both_scenarios(name):
    rules = set(SPECS[name].rules)
    missing = sorted((r, side) for r in rules for side in SIDES if (name, r, side) not in CASES)
    assert not missing, f"rules of spec {name} without a semantics scenario: {missing}"
    stale = sorted(r for (spec, r, _) in CASES if spec == name and r not in rules)
    assert not stale, f"scenarios for rules spec {name} no longer has: {stale}"


MAY_RAISE_SPEC = """spec mr "what may raise"
source DOC "d" "d"
status int success 0
param level: int = 2
const PAGE: u64 = 4096
const NONE: u64 = 0
var n: int = 0
record R { d: int }
table rs: addr -> R
def half = n % 2
"""


@pytest.mark.parametrize("expr, level, raises", [
    ("n % PAGE == 0", 2, False),  # a divisor the configuration fixes, not 0
    ("aligned(n, PAGE)", 2, False),
    ("n + 2 ** 64 > 0", 2, False),  # a power the configuration fixes
    ("n % level == 0", 2, False),
    ("n % level == 0", 0, True),  # the same spec, another configuration
    ("n % NONE == 0", 2, True),
    ("PAGE % n == 0", 2, True),
    ("n ** 2 > 0", 2, True),  # not fixed by the configuration
    ("half == 0", 2, False),
    ("rs[4096].d == 0", 2, True),
    ("exists r in rs: 10 % r.d == 0", 2, True),
])
def test_may_raise_knows_what_the_configuration_fixes(expr, level, raises):
    """`Emitter.may_raise` decides which quantifiers are evaluated on every entry: never a no for
    what can raise (that would let a quantifier stop at the first entry that decides)."""
    spec = check_source(SourceFile.of("<mr>", MAY_RAISE_SPEC + f'invariant MR-INV: {expr} cite DOC "d"\n'))
    sem = Semantics(spec, {"level": level})
    assert Emitter(spec, sem.config).may_raise(spec.invariants[0].expr) is raises
