"""checker.fast.stepcode and the C step machine (`checker._native.Step`).

The replays of tests/test_fastpath.py run the machine's steps against the general path (corpus,
benchmark mix, random traces). Here: every bundled call compiles; the machine's mask of a call
equals the Python semantics' mask on random states and arguments (tests/data/ops.spec uses every
operator on unsigned and on signed values); each value instruction, run alone, computes what
Python's exact integers compute, and gives up exactly where the language raises or the value
leaves 128 bits; malformed code is refused."""

from __future__ import annotations

import functools
import operator
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.fast import stepcode
from checker.fast.fastpath import fast_path
from checker.language.load import load_spec
from checker.engines.replay import Replayer
from checker.model.semantics import Semantics
from checker.model.outcomes import EvalError
from checker.model.state import NATIVE
from checker.fast.stepcode import KIND_INT
from checker.language.checked import Type, value_bounds
from tests.helpers import outcome

pytestmark = pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")

REPO = Path(__file__).resolve().parent.parent
OPS = str(REPO / "tests" / "data" / "ops.spec")  # every operator the compiler emits, unsigned and signed
CONFIGS = {
    "acl": [{}, {"os_kernel": "5.10", "product": "AtlasInference"}, {"product": "Ascend950PR"}],
    "cupva": [{}, {"driver_version": 2006, "qnx_safety": True}, {"driver_version": 2005}],
    # cuda's cudaHostGetFlags promises with a `forall` whose counterexample is an index probe
    "cuda": [{}, {"cuda_runtime": "4.0", "observed": True, "can_map_host": False}],
    "hip": [{}, {"observed": True}],
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


POOL = [0, 1, 63, 64, 4095, 4096, 4097, 8192, 12288, 16384, 65536, 2**32, 2**63 - 1,
        -1, -2, -3, -7, -8, -4096, -(2**32), -(2**63) + 1, -(2**63)]


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
    small = st.integers(max(lo, -9), min(hi, 9))  # small values: comparisons and min/max meet
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


@pytest.mark.slow
@pytest.mark.parametrize("key", SEMS, ids=lambda k: f"{Path(k[0]).stem}-{k[1]}")
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
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
SIGNED = st.one_of(st.integers(-9, 9), st.sampled_from([-(2**63), 2**63 - 1, -4096, 4096]))
NONZERO = SIGNED.filter(bool)  # a remainder by zero ends the replay with an error (the mask test has them)
SIGNS = st.fixed_dictionaries({
    "call": st.just("signs"),
    "args": st.fixed_dictionaries({"x": SIGNED, "y": NONZERO, "z": SIGNED, "w": st.integers(1, 5)}),
    "ret": st.one_of(st.just(0), st.integers(1, 12)),
})


@pytest.mark.slow
@pytest.mark.parametrize("machine", [True, False], ids=["machine", "python-steps"])
@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(st.one_of(POKE, SIGNS), max_size=12))
def test_random_ops_traces_replay_the_same_on_the_machine(machine, events):
    """The ops spec's effects (a put, an update, variables, a remainder in an effect) on the fast
    path, against the general path."""
    text = orjson.dumps({"regcheck": 1, "spec": OPS, "env": {}}) + b"\n" + b"".join(
        orjson.dumps(e) + b"\n" for e in events)
    assert outcome(text, True, machine=machine) == outcome(text, False)


TWICE = str(REPO / "tests" / "data" / "probe_twice.spec")  # one `exists` in two clauses and, after a put, in the effect
MARK = st.fixed_dictionaries({
    "call": st.just("mark"),
    "args": st.fixed_dictionaries({"c": st.sampled_from([4096, 6144, 8192, 12288]), "s": st.sampled_from([0, 1, 4096]),
                                   "t": st.integers(0, 8)}),
    "ret": st.one_of(st.just(0), st.integers(1, 2)),
})


def test_one_exists_in_two_clauses_is_one_predicate():
    sem = Semantics(load_spec(TWICE), {})
    program = stepcode.compile_step(sem, "mark", NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
    probes = [operands for _, name, operands in stepcode.disassemble(program, NATIVE.OPCODES) if name == "PROBE"]
    assert len(probes) == 4 and len({p[-1] for p in probes}) == 1  # two clauses, two `if`s: one predicate


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(MARK, max_size=12))
def test_a_probe_asked_again_after_a_change_is_asked_afresh(events):
    """The machine remembers a probe's answer within a step only until the step changes a table or
    a variable: the effect's second `if` asks, after its put, what the clauses asked before it
    (a stale answer would leave `hits` short of the general path's)."""
    text = orjson.dumps({"regcheck": 1, "spec": TWICE, "env": {}}) + b"\n" + b"".join(
        orjson.dumps(e) + b"\n" for e in events)
    assert outcome(text, True) == outcome(text, False)


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


# ---------------------------------------------------------------- each instruction, against Python's integers
#
# A program of one instruction (or a jump and its two ends) runs as the effect of an ops-spec
# `poke` event; its operands are the program's constants (any 128-bit value, where the compiler
# keeps its own below 2**126), and `SET count` boxes the result back into a Python int. The
# reference is the language's integers: exact, `%` the floor remainder (Python's), a remainder by
# zero an EvalError (`_mod` in checker.model.semantics); the machine must give up exactly there and where
# the exact result leaves its 128 bits, and nowhere else.

GAVE_UP = "gave up"
LOW, HIGH = -(2**127), 2**127  # a register holds LOW <= v < HIGH


def language_mod(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("remainder by zero")
    return a % b


VALUE_OPS = {  # instruction: the Python operation it stands for (a truth as 0/1)
    "ADD": operator.add, "SUB": operator.sub, "MUL": operator.mul, "AND": operator.and_, "OR": operator.or_,
    "MOD": language_mod, "EQ": operator.eq, "NE": operator.ne, "LT": operator.lt, "LE": operator.le,
    "GT": operator.gt, "GE": operator.ge, "MIN": min, "MAX": max,
}
UNARY_OPS = {"NEG": operator.neg, "INV": operator.invert, "NOT": operator.not_, "MOV": lambda a: a}
BRANCHES = {"JEQ": operator.eq, "JNE": operator.ne, "JLT": operator.lt, "JLE": operator.le, "JGT": operator.gt,
            "JGE": operator.ge}
UNARY_BRANCHES = {"JZ": operator.not_, "JNZ": bool}
# Checked by the tests above and tests/test_fastpath.py (the ops spec and the bundled specs reach
# each of them, test_the_specs_here_reach_every_instruction), not alone here: they read and write
# tables and predicates rather than compute integers.
STATE_OPS = {"INTAB", "HASKEY", "PROBE", "EKEY", "EROWF", "RET", "MASK", "PUT", "DEL", "UPD"}
# Run alone below too: END, JMP, GIVEUP, SET (every program here), VAR, ROWF, INSET.
OTHER_OPS = {"END", "JMP", "GIVEUP", "SET", "VAR", "ROWF", "INSET"}

EDGES = sorted({v for base in (0, 2**31, 2**32, 2**63, 2**64, 2**126, 2**127) for d in (-2, -1, 0, 1, 2)
                for v in (base + d, -(base + d)) if LOW <= v < HIGH})
CORNERS = [0, 1, -1, 2, -2, 7, -7, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, -(2**64),
           2**126, -(2**126), HIGH - 1, LOW, LOW + 1]
WIDE = st.one_of(st.sampled_from(EDGES), st.integers(-9, 9), st.integers(-(2**63), 2**64),
                 st.integers(LOW, HIGH - 1))


def expected(f, *xs):
    """What the machine must give for f(*xs): the exact value, or GAVE_UP."""
    try:
        v = int(f(*xs))
    except EvalError:
        return GAVE_UP
    return v if LOW <= v < HIGH else GAVE_UP


def _args_out(struct) -> tuple:
    """The args and out structs of an event struct."""
    hints = struct.__annotations__
    return tuple(next(a for a in getattr(hints[f], "__args__", (hints[f],)) if isinstance(a, type) and
                      hasattr(a, "__struct_fields__")) for f in ("args", "out"))


class Bench:
    """Runs hand-written code on the machine as the effect of a `poke` event. An operand is a
    number (a table, a name, a kind), "k<i>" (the register of constant i: the parameters' five
    come first), "t<i>" (of temporary i) or "@<label>"; a line that is a string places a label."""

    TEMPS = 4

    def __init__(self):
        sem = SEMS[(OPS, 0)]
        self.r = Replayer(sem, "t.jsonl")
        fp = fast_path(sem, self.r.state, self.r._remember)
        args = {"a": 0, "b": 0, "c": 0, "s": 0, "flag": False}
        self.event = fp.decode(orjson.dumps({"call": "poke", "args": args, "ret": 0}))
        self.program = stepcode.compile_step(sem, "poke", NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
        self.structs = (type(self.event), *_args_out(type(self.event)))
        self.tables = tuple(self.r.state.tables[t] for t in sem.spec.tables)
        self.opcodes = {name: code for name, (code, _) in NATIVE.OPCODES.items()}

    def assemble(self, lines, nconsts: int) -> list[int]:
        """The code: position 0 is the mask (an END), the effect `lines` start at 1."""
        base = len(self.program.param_kinds)
        at, pc = {}, 1
        for line in lines:
            if isinstance(line, str):
                at["@" + line] = pc
            else:
                pc += len(line)

        def number(x) -> int:
            if isinstance(x, int):
                return x
            if x[0] == "@":
                return at[x]
            return base + int(x[1:]) + (nconsts if x[0] == "t" else 0)
        return [self.opcodes["END"]] + [n for line in lines if not isinstance(line, str)
                                        for n in (self.opcodes[line[0]], *map(number, line[1:]))]

    def run(self, lines, consts, sets=(), names=("count",), before=0):
        """The value `count` holds after the effect `lines` ran, or GAVE_UP (and then `count` is
        still `before`: nothing changed)."""
        st_ = self.r.state
        binding = (self.tables, st_.vars, st_.journal, st_, self.r._remember, lambda *a: True, {}, {}, "poke",
                   msgspec.UNSET, (EvalError, KeyError))
        nregs = len(self.program.param_kinds) + len(consts) + self.TEMPS
        entries = (0, -1, 1, nregs, 0, 0, False, self.program.entries[7])
        step = NATIVE.Step(self.assemble(lines, len(consts)), tuple(consts), sets, names, entries,
                           self.program.param_kinds, (), self.structs, self.program.enums, self.program.success,
                           binding)
        st_.vars["count"] = before
        if not step(self.event, 1):
            assert st_.vars["count"] == before and not st_.journal
            return GAVE_UP
        return st_.vars["count"]

    def value(self, name: str, *xs):
        """The machine's `name` on the operands xs (a jump: 1 when it is taken, else 0)."""
        operands = [f"k{i}" for i in range(len(xs))]
        if name in VALUE_OPS or name in UNARY_OPS:
            return self.run([(name, "t0", *operands), ("SET", 0, "t0", KIND_INT), ("END",)], xs)
        n = len(xs)
        lines = [(name, *operands, "@taken"), ("SET", 0, f"k{n}", KIND_INT), ("END",),
                 "taken", ("SET", 0, f"k{n + 1}", KIND_INT), ("END",)]
        return self.run(lines, (*xs, 0, 1))


@functools.cache
def bench() -> Bench:
    return Bench()


REFERENCE = {**VALUE_OPS, **UNARY_OPS, **BRANCHES, **UNARY_BRANCHES}


def test_every_instruction_is_checked():
    """Each instruction of the machine is either run alone here or listed as checked elsewhere."""
    alone = set(REFERENCE) | OTHER_OPS
    assert alone.isdisjoint(STATE_OPS)
    assert alone | STATE_OPS == set(NATIVE.OPCODES)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_each_instruction_on_the_edges(name):
    """Every pair (every value, for one operand) of 0, +-1, and values at and around 2**63,
    2**64, 2**126 and the 128-bit ends."""
    f = REFERENCE[name]
    k = 1 if name in UNARY_OPS or name in UNARY_BRANCHES else 2
    cases = [(a,) for a in CORNERS] if k == 1 else [(a, b) for a in CORNERS for b in CORNERS]
    wrong = [(xs, got, want) for xs in cases if (got := bench().value(name, *xs)) != (want := expected(f, *xs))]
    assert not wrong, f"{name}: (operands, machine, Python) {wrong[:5]}"


@pytest.mark.parametrize("name", sorted(REFERENCE))
@settings(max_examples=150, deadline=None, derandomize=True)
@given(a=WIDE, b=WIDE)
def test_each_instruction_is_python_arithmetic(name, a, b):
    xs = (a,) if name in UNARY_OPS or name in UNARY_BRANCHES else (a, b)
    assert bench().value(name, *xs) == expected(REFERENCE[name], *xs)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(a=WIDE, b=st.one_of(st.sampled_from([0, 1, -1, 2, -2, 3, -3, 4096, -4096, 2**63, -(2**63)]), WIDE))
def test_the_remainder_is_the_floor_remainder(a, b):
    """`%` on signed values and every divisor (-1 and LOW % -1 included): Python's `%`; a
    remainder by zero gives up."""
    got = bench().value("MOD", a, b)
    assert got == (GAVE_UP if b == 0 else a % b)
    if b != 0:
        assert got == a - (a // b) * b and (got == 0 or (got < 0) == (b < 0))


def test_the_machine_gives_up_past_128_bits():
    """At the edge: the last value that fits is computed, the first that does not gives up
    (never wrapped around)."""
    top, bottom, value = HIGH - 1, LOW, bench().value
    assert value("ADD", top - 1, 1) == top and value("ADD", top, 1) == GAVE_UP
    assert value("SUB", bottom + 1, 1) == bottom and value("SUB", bottom, 1) == GAVE_UP
    assert value("MUL", 2**63, 2**63) == 2**126 and value("MUL", 2**64, 2**63) == GAVE_UP
    assert value("MUL", -(2**64), 2**63) == bottom and value("MUL", bottom, -1) == GAVE_UP
    assert value("NEG", top) == -top and value("NEG", bottom) == GAVE_UP
    assert value("MOD", bottom, -1) == 0 and value("MOD", bottom, 0) == GAVE_UP


def test_a_give_up_in_an_effect_undoes_it():
    """SET, then GIVEUP: `count` is restored and the journal is empty; JMP over GIVEUP runs on."""
    run = bench().run
    assert run([("SET", 0, "k0", KIND_INT), ("GIVEUP",), ("END",)], (42,), before=5) == GAVE_UP
    lines = [("JMP", "@over"), ("GIVEUP",), "over", ("SET", 0, "k0", KIND_INT), ("END",)]
    assert run(lines, (2**100,), before=5) == 2**100
    lines = [("SET", 0, "k0", KIND_INT), ("MOD", "t0", "k0", "k1"), ("END",)]
    assert run(lines, (42, 0), before=5) == GAVE_UP  # a remainder by zero after a change


@settings(max_examples=100, deadline=None, derandomize=True)
@given(v=st.one_of(st.sampled_from(EDGES), WIDE, st.integers(-(2**70), 2**70)))
def test_a_value_loaded_from_the_state_fits_64_bits_or_gives_up(v):
    """VAR and ROWF hold what a variable or a record field holds; beyond 64 bits they give up
    (the general path computes with the exact value)."""
    want = v if -(2**63) <= v < 2**63 else GAVE_UP
    assert bench().run([("VAR", "t0", 0, KIND_INT), ("SET", 0, "t0", KIND_INT), ("END",)], (), before=v) == want
    table = bench().tables[0]
    table.put(4096, {"size": 1, "tag": v, "on": False, "mode": "SLOW"})
    try:
        rowf = [("ROWF", "t0", 0, "k0", 1, KIND_INT), ("SET", 0, "t0", KIND_INT), ("END",)]
        assert bench().run(rowf, (4096,), names=("count", "tag")) == want
    finally:
        table.remove(4096)
        bench().r.state.journal.clear()


@settings(max_examples=150, deadline=None, derandomize=True)
@given(items=st.lists(WIDE, max_size=6, unique=True), v=WIDE)
def test_set_membership_on_wide_values(items, v):
    items = sorted(set(items) | ({v} if len(items) % 2 else set()))
    lines = [("INSET", "t0", "k0", 0), ("SET", 0, "t0", KIND_INT), ("END",)]
    assert bench().run(lines, (v,), sets=(tuple(items),)) == int(v in items)


# ---------------------------------------------------------------- give-up paths of compiled steps

WIDE_SPEC = """
spec wide "values beyond 128 bits"
source DOC "none" "a test spec"
param level: int = 3
status int success 0
var total: int = 0
call grow(x: i64, y: i64) {
  fails WIDE-PRODUCT: 1 when x * y * x * y == level + 1
    cite DOC "test"
  fails WIDE-MOD: 2 when x % (y - 1) == 1
    cite DOC "test"
  effect WIDE-EFFECT: { total = x * x * x }
    cite DOC "test"
}
call power(x: i64, n: i64) {
  fails WIDE-POW: 1 when x ** n > 0
    cite DOC "test"
  effect WIDE-POW-EFFECT: { total = x }
    cite DOC "test"
}
call scale(x: i64) {
  fails WIDE-SCALE: 1 when 2 ** level > x
    cite DOC "test"
  effect WIDE-SCALE-EFFECT: { total = x }
    cite DOC "test"
}
"""


@pytest.fixture(scope="module")
def wide_spec(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("wide") / "wide.spec"
    path.write_text(WIDE_SPEC)
    return str(path)


FACTOR = st.one_of(st.sampled_from([2**63 - 1, -(2**63), 2**40, 2]), SIGNED.filter(lambda v: v != 1))


def grow(y=FACTOR):
    """`grow` events (by default with no remainder by zero: that ends a replay)."""
    return st.fixed_dictionaries({
        "call": st.just("grow"),
        "args": st.fixed_dictionaries({"x": st.one_of(st.sampled_from([2**63 - 1, -(2**63), 2**40, -(2**40)]), SIGNED),
                                       "y": y}),
        "ret": st.one_of(st.just(0), st.integers(1, 2)),
    })


@settings(max_examples=150, deadline=None, derandomize=True)
@given(event=grow(st.one_of(st.just(1), FACTOR)))
def test_a_compiled_step_gives_up_where_a_value_leaves_128_bits(wide_spec, event):
    """x * y * x * y passes 128 bits for large x, y: the machine gives up exactly where one of
    its partial products does, or where the remainder is by zero, and agrees elsewhere."""
    sem = Semantics(load_spec(wide_spec), {})
    r = Replayer(sem, "t.jsonl")
    fp = fast_path(sem, r.state, r._remember)
    o = fp.decode(orjson.dumps({**event, "ret": 1}))
    step = fp.steps[type(o)]
    assert isinstance(step, NATIVE.Step)
    x, y = event["args"]["x"], event["args"]["y"]
    partial = [x * y, x * y * x, x * y * x * y]
    try:
        python = sem.calls["grow"].mask(r.state, dict(event["args"]))
    except EvalError:
        python = None
    assert step.mask_of(o) == (None if python is None or not all(LOW <= p < HIGH for p in partial) else python)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(events=st.lists(grow(), max_size=6))
def test_wide_traces_replay_the_same_on_the_machine(wide_spec, events):
    """Where the effect's x * x * x leaves 128 bits the machine gives up and the general path
    computes it exactly."""
    text = orjson.dumps({"regcheck": 1, "spec": wide_spec, "env": {}}) + b"\n" + b"".join(
        orjson.dumps(e) + b"\n" for e in events)
    assert outcome(text, True, machine=True) == outcome(text, False)


def test_a_power_reaches_the_machine_only_as_a_constant(wide_spec):
    """`x ** n` of a parameter keeps the call's Python step (and its EvalError for a negative
    exponent), as does a power that the configuration makes negative (`2 ** level`, level -1);
    a power that the configuration fixes is a constant of the program."""
    spec = load_spec(wide_spec)
    for level in (3, -1):
        sem = Semantics(spec, {"level": level})
        compiled = {c: stepcode.compile_step(sem, c, NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
                    for c in ("power", "scale")}
        assert compiled["power"] is None
        assert (compiled["scale"] is None) == (level < 0) and (level < 0 or 2**level in compiled["scale"].consts)
        events = [{"call": "scale", "args": {"x": x}, "ret": ret} for x, ret in [(1, 1), (9, 0), (-(2**63), 1)]]
        events += [{"call": "power", "args": {"x": x, "n": n}, "ret": ret}
                   for x, n, ret in [(2, 3, 1), (-2, 3, 0), (0, 0, 1), (-3, 2, 0), (2, -1, 1)]]
        for end in (len(events) - 1, len(events)):  # the last: a negative exponent, an error of the replay
            text = orjson.dumps({"regcheck": 1, "spec": wide_spec, "env": {"level": level}}) + b"\n" + b"".join(
                orjson.dumps(e) + b"\n" for e in events[:end])
            fast = outcome(text, True, machine=True)
            assert fast == outcome(text, False) and (fast[0] == "error") == (end == len(events) or level < 0)
    ops = {k: stepcode.compile_step(SEMS[(OPS, k)], "signs", NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)
           for k in (0, 1)}
    assert -343 in ops[0].consts and -8 in ops[0].consts  # CUBE = STRIDE ** 3, (-2) ** 3
    assert 3**2 - 3 - 2**62 in ops[0].consts and (-5)**2 + 5 - 2**62 in ops[1].consts  # spread - 2 ** 62


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

