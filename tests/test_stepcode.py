"""checker.stepcode and the C step machine (`checker._native.Step`).

The replays of tests/test_fastpath.py run the machine's steps against the general path (corpus,
benchmark mix, random traces). Here: every bundled call compiles; the machine's mask of a call
equals the Python semantics' mask on random states and arguments; malformed code is refused."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker import stepcode
from checker.fastpath import fast_path
from checker.load import load_spec
from checker.replay import Replayer
from checker.semantics import NATIVE, EvalError, Semantics
from checker.typecheck import Type, value_bounds
from tests.helpers import outcome

pytestmark = pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")

REPO = Path(__file__).resolve().parent.parent
OPS = str(REPO / "tests" / "data" / "ops.spec")  # every operator the compiler emits, in one call
CONFIGS = {
    "acl": [{}, {"os_kernel": "5.10", "product": "AtlasInference"}, {"product": "Ascend950PR"}],
    "cupva": [{}, {"driver_version": 2006, "qnx_safety": True}, {"driver_version": 2005}],
    OPS: [{}, {"level": -5}],
}
SEMS = {(name, k): Semantics(load_spec(name), env) for name, envs in CONFIGS.items() for k, env in enumerate(envs)}


def machine_calls(sem: Semantics) -> list[str]:
    return [c for c, cc in sem.calls.items() if cc.thread_rule is None]


@pytest.mark.parametrize("key", SEMS, ids=lambda k: f"{Path(k[0]).stem}-{k[1]}")
def test_every_bundled_call_compiles(key):
    sem = SEMS[key]
    for call in machine_calls(sem):
        program = stepcode.compile_step(sem, call, NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
        assert program is not None, call
        assert program.entries[5] == len(sem.calls[call].bits)


@pytest.mark.parametrize("name", CONFIGS, ids=lambda n: Path(n).stem)
def test_the_fast_path_runs_every_bundled_call_on_the_machine(name):
    sem = SEMS[(name, 0)]
    r = Replayer(sem, "t.jsonl")
    steps = fast_path(sem, r.state, r._remember).steps
    machine = [s for s in steps.values() if isinstance(s, NATIVE.Step)]
    assert len(machine) == len(machine_calls(sem))


# ---------------------------------------------------------------- the mask, against the Python semantics


POOL = [0, 1, 63, 64, 4095, 4096, 4097, 8192, 12288, 16384, 65536, 2**32, 2**63 - 1]


def value_of(sem: Semantics, t: Type):
    """A strategy for a value of type t, crowded into a few pages so that ranges meet."""
    if t.kind == "bool":
        return st.booleans()
    if t.kind == "enum":
        return st.sampled_from(sem.spec.enums[t.name])
    if t.kind == "flags":
        bits = sorted({v for _, (ft, v) in sem.spec.flag_member.items() if ft == t.name})
        return st.one_of(st.lists(st.sampled_from(bits), max_size=3).map(lambda xs: sum(set(xs))),
                         st.integers(0, 2**31 - 1))
    lo, hi = value_bounds(t) or (-(2**63), 2**63 - 1)
    lo, hi = max(lo, -(2**63)), min(hi, 2**63 - 1)
    pool = [v for v in POOL if lo <= v <= hi]
    small = st.integers(max(lo, -4), min(hi, 9))  # small values: comparisons and min/max meet
    return st.one_of(st.sampled_from(pool), small, st.integers(lo, hi)) if pool else st.integers(lo, hi)


@st.composite
def state_and_call(draw, key):
    sem = SEMS[key]
    r = Replayer(sem, "t.jsonl")
    for name, info in sem.spec.tables.items():
        for _ in range(draw(st.integers(0, 4))):
            record = {f: draw(value_of(sem, t)) for f, t in info.fields}
            r.state.tables[name].put(draw(value_of(sem, info.key)), record)
    for name, (t, _) in sem.spec.vars.items():
        if t.kind in ("bool", "enum", "int", "flags"):
            r.state.vars[name] = draw(value_of(sem, t))
    call = draw(st.sampled_from(machine_calls(sem)))
    args = {p: draw(value_of(sem, t)) for p, t in sem.calls[call].info.params}
    return sem, r, call, args


def failure_status(sem: Semantics):
    """A recorded status other than success: the step then needs no outputs to reach its mask."""
    t = sem.spec.status_type
    return next(m for m in sem.spec.enums[t.name] if m != sem.success) if t.kind == "enum" else 1


@pytest.mark.parametrize("key", SEMS, ids=lambda k: f"{Path(k[0]).stem}-{k[1]}")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_machine_mask_is_the_python_mask(key, data):
    sem, r, call, args = data.draw(state_and_call(key))
    try:
        expected = sem.calls[call].mask(r.state, dict(args))
    except (EvalError, KeyError):
        expected = None  # the Python step gives up too (the general path explains it)
    fp = fast_path(sem, r.state, r._remember)
    line = orjson.dumps({"call": call, "args": args, "ret": failure_status(sem)})
    o = fp.decode(line)
    assert fp.steps[type(o)].mask_of(o) == expected


def test_the_specs_here_reach_every_instruction():
    """The ops spec and the bundled specs together reach every instruction of the machine, so the
    tests of this module and tests/test_fastpath.py run each of them."""
    used = set()
    for key, sem in SEMS.items():
        for call in machine_calls(sem):
            program = stepcode.compile_step(sem, call, NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
            used |= {name for _, name, _ in stepcode.disassemble(program, NATIVE.OPCODES)}
    assert used == set(NATIVE.OPCODES)


POKE = st.fixed_dictionaries({
    "call": st.just("poke"),
    "args": st.fixed_dictionaries({"a": st.integers(-3, 8), "b": st.integers(-3, 8),
                                   "c": st.sampled_from([0, 4096, 4100, 8192]), "s": st.sampled_from([0, 1, 64, 4096]),
                                   "flag": st.booleans()}),
    "ret": st.one_of(st.just(0), st.integers(1, 16)),
})


@pytest.mark.parametrize("machine", [True, False], ids=["machine", "python-steps"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(POKE, max_size=12))
def test_random_ops_traces_replay_the_same_on_the_machine(machine, events):
    """The ops spec's effects (a put, an update, variables) on the fast path, against the general path."""
    text = orjson.dumps({"regcheck": 1, "spec": OPS, "env": {}}) + b"\n" + b"".join(
        orjson.dumps(e) + b"\n" for e in events)
    assert outcome(text, True, machine=machine) == outcome(text, False)


def test_a_probe_the_python_table_answers_gets_the_predicate():
    """An entry whose size is beyond 64 bits sends the probe to the Python table; the machine's
    predicate (the entry's origin) goes with it as a callable."""
    sem = SEMS[("acl", 1)]  # kernel 5.10: registering pageable memory asks for a MALLOC_HOST entry
    r = Replayer(sem, "t.jsonl")
    r.state.tables["host_allocs"].put(4096, {"size": 2**64, "origin": "MALLOC", "locked": False})
    args = {"ptr": 4096, "size": 4096, "flag": 2}
    fp = fast_path(sem, r.state, r._remember)
    o = fp.decode(orjson.dumps({"call": "aclrtHostRegisterV2", "args": args, "ret": 1}))
    mask = fp.steps[type(o)].mask_of(o)
    assert mask == sem.calls["aclrtHostRegisterV2"].mask(r.state, args)
    pageable_bit = [rule for _, rule, _ in sem.calls["aclrtHostRegisterV2"].bits].index("ACL-REG-PAGEABLE-OLD-KERNEL")
    assert mask >> pageable_bit & 1  # the entry is not MALLOC_HOST: the requirement is broken


# ---------------------------------------------------------------- malformed code is refused


def test_malformed_code_is_refused():
    sem = SEMS[("acl", 0)]
    call = "aclrtHostUnregister"
    program = stepcode.compile_step(sem, call, NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
    r = Replayer(sem, "t.jsonl")
    fp = fast_path(sem, r.state, r._remember)
    op = {name: code for name, (code, _) in NATIVE.OPCODES.items()}
    tables = tuple(r.state.tables[t] for t in sem.spec.tables)
    binding = (tables, r.state.vars, r.state.journal, r.state, r._remember, lambda *a: True, {}, {}, call, None,
               (EvalError, KeyError))
    (struct,) = [t for t in fp.steps if getattr(t, "__struct_config__", None) and t.__struct_config__.tag == call]
    structs = (struct, *_args_out(struct))

    def make(code=program.code, entries=program.entries):
        return NATIVE.Step(code, program.consts, program.sets, program.names, entries, program.param_kinds,
                           program.output_kinds, structs, program.enums, program.success, binding)
    make()  # the compiled code itself is accepted
    nregs = program.entries[3]
    bad = [
        (op["GIVEUP"] + 1000,),                      # no such opcode
        (op["MOV"], nregs, 0, op["END"]),            # a register out of range
        (op["JMP"], 1, op["END"]),                   # a jump into the middle of an instruction
        (op["MASK"], 1 << 20, op["END"]),            # a mask bit beyond the call's bits
        (op["MOV"], 0),                              # an instruction cut short
    ]
    for code in bad:
        with pytest.raises(ValueError, match="malformed code"):
            make(code=code, entries=(0, -1, -1, *program.entries[3:]))
    with pytest.raises(ValueError):
        make(entries=(0, -1, -1, 1, *program.entries[4:]))  # too few registers


def _args_out(struct) -> tuple:
    """The args and out structs of an event struct."""
    hints = struct.__annotations__
    return tuple(next(a for a in getattr(hints[f], "__args__", (hints[f],)) if isinstance(a, type) and
                      hasattr(a, "__struct_fields__")) for f in ("args", "out"))
