"""The Z3 encoding agrees with the concrete semantics (checker.model.semantics) on random states and calls.

The main property draws, per spec, at least 1000 random states (tables with up to three entries
drawn from pools of random rows over small, collision-prone sets of addresses and sizes; arbitrary
states, not only reachable ones),
configurations, calls, inputs and outputs, and compares: broken obligations, `undefined`,
`unspecified`, the documented errors (with their codes, after `order`), the environmental errors,
the success bit, broken `ensures`, every invariant, every API group, and the post-state of the
success effect. It uses the bounded (slot) tables, whose ground terms Z3 simplifies to constants;
a second, smaller property checks the quantified (array) tables the prover's induction uses,
deciding each formula with the solver.
"""

from __future__ import annotations

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.language.diagnostics import RegcheckError
from checker.symbolic.encode import Encoder, concrete_config, symbolic_config
from checker.symbolic.terms import Types, leaves
from checker.language.load import load_spec, check_source
from checker.engines.runs import semantics_for
from checker.model.state import Table
from checker.model.state import State
from checker.language.source import SourceFile
from checker.language.checked import Type

ADDRS = (0, 1, 0x1000, 0x1800, 0x2000, 0x3000, 2**64 - 0x1000, 2**64 - 1)
SIZES = (0, 1, 0x800, 0x1000, 0x2000, 2**64 - 1)
VERSIONS = ((4,), (5, 10), (5, 10, 0), (5, 10, 1), (5, 11), (6, 6))


def _or(xs):
    v = 0
    for x in xs:
        v |= x
    return v


def _pool(spec, types, n: int, seed: int) -> list:
    """n value tuples of the given types drawn once (Hypothesis then draws whole tuples: cheaper)."""
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        row = []
        for t in types:
            match t.kind:
                case "bool":
                    row.append(rng.random() < 0.5)
                case "enum":
                    row.append(rng.choice(spec.enums[t.name]))
                case "flags":
                    members = sorted(spec.flags[t.name].values()) + [1, 0x10, 2**31]
                    row.append(_or(rng.sample(members, rng.randrange(4))))
                case "version":
                    row.append(rng.choice(VERSIONS))
                case _:
                    row.append(rng.choice({"addr": ADDRS, "u64": SIZES, "i64": (-1, 0, 1, 0x1000, 2**63 - 1),
                                           "u32": (0, 1, 2)}.get(t.name, (-1, 0, 1, 2005, 2006, 2007))))
        out.append(tuple(row))
    return out


_POOLS: dict = {}


def pools(spec):
    """Per spec: rows per table, inputs and outputs per call, configurations, state scalars."""
    key = spec.name
    if key not in _POOLS:
        tables = {n: _pool(spec, [info.key] + [t for _, t in info.fields], 400, i)
                  for i, (n, info) in enumerate(spec.tables.items())}
        calls = {c: _pool(spec, [t for _, t in info.params + info.outputs], 400, 100 + i)
                 for i, (c, info) in enumerate(spec.calls.items())}
        envs = _pool(spec, [t for t, _ in spec.params.values()], 200, 200)
        scalars = _pool(spec, [t for t, _ in spec.vars.values()], 50, 300)
        _POOLS[key] = (tables, calls, envs, scalars)
    return _POOLS[key]


@st.composite
def situations(draw, spec):
    """A configuration, a state (up to three entries per table), a call with inputs and outputs."""
    tables_pool, calls_pool, envs, scalars = pools(spec)
    env = dict(zip(spec.params, draw(st.sampled_from(envs))))
    vars = dict(zip(spec.vars, draw(st.sampled_from(scalars))))
    tables = {}
    for name, info in spec.tables.items():
        table = Table(info.sized_by, name)
        for row in draw(st.lists(st.sampled_from(tables_pool[name]), max_size=3, unique_by=lambda r: r[0])):
            table.put(row[0], dict(zip([f for f, _ in info.fields], row[1:])))
        tables[name] = table
    call = draw(st.sampled_from(sorted(spec.calls)))
    info = spec.calls[call]
    io = dict(zip([n for n, _ in info.params + info.outputs], draw(st.sampled_from(calls_pool[call]))))
    inputs = {n: io[n] for n, _ in info.params}
    outputs = {n: io[n] for n, _ in info.outputs}
    return env, State(vars, tables), call, inputs, outputs


def truth(f) -> bool:
    r = z3.simplify(f)
    if z3.is_true(r):
        return True
    if z3.is_false(r):
        return False
    s = z3.Solver()
    s.set("timeout", 10000)
    if s.check(z3.Not(f)) == z3.unsat:
        return True
    assert s.check(f) == z3.unsat, f"undecided: {r}"
    return False


SLOTS = 3  # entries per table the strategy draws at most


class Harness:
    """Each call encoded once over a symbolic bounded state, symbolic configuration and io; an
    example fixes every symbol to its value and reads the formulas off the model. This checks the
    very terms the bounded model checker and the counterexample search build."""

    def __init__(self, spec):
        self.spec = spec
        self.types = Types(spec)
        self.config, _ = symbolic_config(spec, "h.cfg.")
        self.enc = Encoder(spec, self.config)
        self.pre = self.enc.fresh_state("h.pre.", slots=SLOTS)
        self.invariants = [(inv.rule, self.enc.invariant(inv, self.pre)) for inv in spec.invariants]
        self.groups = [(g, self.enc.group_active(g, self.pre)) for g in spec.groups]
        self.calls = {}

    def call(self, name):
        if name not in self.calls:
            env, _ = self.enc.fresh_io(name, f"h.{name}.")
            self.calls[name] = (env, self.enc.conditions(name, self.pre, env), self.enc.effect(name, self.pre, env))
        return self.calls[name]

    def bind(self, sym, value, t, out):
        out += list(zip(leaves(sym), leaves(self.types.const(t, value))))

    def model(self, env, state, call, inputs, outputs, terms):
        """Every term of `terms` with the example's values, by one substitution (an `eval`-able map)."""
        spec, pairs = self.spec, []
        io, _, _ = self.call(call)
        for n, (t, _) in spec.params.items():
            self.bind(self.config[n], env[n], t, pairs)
        for n, (t, _) in spec.vars.items():
            self.bind(self.pre.vars[n], state.vars[n], t, pairs)
        for n, info in spec.tables.items():
            rows = list(state.tables[n].rows.items())
            for i, slot in enumerate(self.pre.tables[n].slots):
                pairs.append((slot.present, z3.BoolVal(i < len(rows))))
                key, rec = rows[i] if i < len(rows) else (None, None)
                for sym, t, value in [(slot.key, info.key, key)] + [(slot.fields[f], ft, rec and rec[f])
                                                                     for f, ft in info.fields]:
                    if rec is not None:
                        self.bind(sym, value, t, pairs)
                    else:  # an unused slot: any well-typed value
                        pairs += [(x, z3.BoolVal(False) if z3.is_bool(x) else z3.IntVal(0)) for x in leaves(sym)]
        info = spec.calls[call]
        for n, t in info.params:
            self.bind(io[n], inputs[n], t, pairs)
        for n, t in info.outputs:
            self.bind(io[n], outputs[n], t, pairs)
        pack = z3.Function("pack!", *[x.sort() for x in terms], z3.BoolSort())
        done = z3.simplify(z3.substitute(pack(*terms), *pairs))
        return _Values({x.get_id(): done.arg(i) for i, x in enumerate(terms)})

    def outcome(self, env, state, call, inputs, outputs, post: bool = True):
        """The encoded verdicts of one call in one state; the post-state too unless `post` is False
        (an effect that cannot be evaluated concretely has no value here either: `0 % 0` stays a term)."""
        _, cc, post_state = self.call(call)
        terms = [c for _, c in cc.usage] + [c for _, _, c in cc.requires] + [c for _, c in cc.unspecified]
        terms += [c for _, _, c in cc.errors] + [c for _, _, c in cc.env_errors] + [cc.any_error]
        terms += [c for _, c in cc.ensures] + [f for _, f in self.invariants] + [f for _, f in self.groups]
        if post:
            terms += [x for v in post_state.vars.values() for x in leaves(v)]
            for tbl in post_state.tables.values():
                for slot in tbl.slots:
                    terms += [slot.present] + leaves(slot.key) + [x for v in slot.fields.values() for x in leaves(v)]
        m = self.model(env, state, call, inputs, outputs, terms)

        def holds(f):
            return z3.is_true(m.eval(f, model_completion=True))
        out = {**call_outcome(cc, holds),
               "invariants": {r for r, f in self.invariants if not holds(f)},
               "groups": {g for g, f in self.groups if holds(f)}}
        if post:
            out["post"] = self.enc.read_state(m, post_state)
        return out


def call_outcome(cc, holds) -> dict:
    """A call's rule verdicts from its encoded conditions `cc`, each formula decided by `holds`."""
    return {
        "broken": {r for r, c in cc.usage if not holds(c)} | {r for r, _, c in cc.requires if not holds(c)},
        "undefined": {r for r, u, c in cc.requires if u and not holds(c)},
        "unspecified": {r for r, c in cc.unspecified if holds(c)},
        "errors": {(r, codes) for r, codes, c in cc.errors if holds(c)},
        "env": {(r, codes) for r, codes, c in cc.env_errors if holds(c)},
        "success": not holds(cc.any_error),
        "ensures": {r for r, c in cc.ensures if not holds(c)},
    }


class _Values:
    """Answers `eval(term)` for the terms one substitution evaluated (what `read_state` asks)."""

    def __init__(self, values: dict):
        self.values = values

    def eval(self, term, model_completion=True):
        return self.values[term.get_id()]


_HARNESS = {}


def harness(name):
    if name not in _HARNESS:
        _HARNESS[name] = Harness(load_spec(name))
    return _HARNESS[name]


def quantified_outcome(spec, sem, state, call, inputs, outputs):
    """The array (quantified) encoding over a concrete state, each formula decided by the solver."""
    enc = Encoder(spec, concrete_config(spec, sem.config))
    sst = enc.concrete_state(state, bounded=False)
    env = enc.io_const(call, {**inputs, **outputs})
    cc = enc.conditions(call, sst, env)
    return {**call_outcome(cc, truth),
            "invariants": {inv.rule for inv in spec.invariants if not truth(enc.invariant(inv, sst))},
            "groups": {g for g in spec.groups if truth(enc.group_active(g, sst))}}


def concrete_outcome(spec, sem, state, call, inputs, outputs):
    al = sem.allowed(state, call, inputs)
    return {
        "broken": set(al.broken), "undefined": set(al.undefined), "unspecified": set(al.unspecified),
        "errors": {(e.rule, e.codes) for e in al.errors}, "env": {(e.rule, e.codes) for e in al.env_errors},
        "success": al.success, "ensures": set(sem.ensures_broken(state, call, inputs, outputs)),
        "invariants": set(sem.holds(state)), "groups": set(sem.group_of(state)),
        "post": sem.successor(state, call, inputs, outputs),
    }


def check_agreement(name, situation, bounded=True):
    spec = load_spec(name)
    env, state, call, inputs, outputs = situation
    sem = semantics_for(spec, env)
    try:
        want = concrete_outcome(spec, sem, state, call, inputs, outputs)
    except RegcheckError:  # the concrete semantics cannot evaluate it (a lookup of a missing key)
        return
    if bounded:
        got = harness(name).outcome(sem.config, state, call, inputs, outputs)
    else:
        got = quantified_outcome(spec, sem, state, call, inputs, outputs)
        want.pop("post")
    assert got == want, (call, inputs, outputs, state, env)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(situations(load_spec("acl")))
def test_acl_encoding_agrees_with_semantics(situation):
    check_agreement("acl", situation)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(situations(load_spec("cupva")))
def test_cupva_encoding_agrees_with_semantics(situation):
    check_agreement("cupva", situation)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.sampled_from(["acl", "cupva"]).flatmap(lambda n: st.tuples(st.just(n), situations(load_spec(n)))))
def test_quantified_encoding_agrees_with_semantics(named):
    name, situation = named
    check_agreement(name, situation, bounded=False)


# ---------------------------------------------------------------- operators, one at a time

SNIPPET = """
spec t "t"
source D "d" "d"
param v: version = 5.10
flags F: u32 { A = 0x2, B = 0x10000000 }
var x: int = 0
status int success 0
call c(a: int, b: int, f: F, w: i64) {
  fails T-E: 1 when a % b == 1
    cite D "e"
  effect T-X: { x = a }
    cite D "c"
}
"""


OPERATOR_CASES = ("a % b == 1", "a % b == -1", "f & ~(A | B) != 0", "A in f", "(f | A) == f + A - (f & A)",
                  "~w < 0", "w & 0xff == 3", "v > 5.10", "v <= 5.10.1", "v == 5.10",
                  "min(a, b) == a", "aligned(a, b)", "range(a, b) overlaps range(b, a)", "range(a, 5) contains b")
_SNIPPETS: dict = {}


def _snippet(text):
    """The snippet spec with `text` as the condition of its `fails` clause, encoded once."""
    if text not in _SNIPPETS:
        spec = check_source(SourceFile.of("<t>", SNIPPET.replace("a % b == 1", text)))
        config, _ = symbolic_config(spec, "op.cfg.")
        enc = Encoder(spec, config)
        env, _ = enc.fresh_io("c", "op.")
        cc = enc.conditions("c", enc.initial_state(bounded=True), env)
        _SNIPPETS[text] = (spec, config, env, cc.errors[0][2])
    return _SNIPPETS[text]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(-20, 20), st.integers(-20, 20).filter(lambda b: b != 0),
       st.integers(0, 2**32 - 1), st.integers(-(2**63), 2**63 - 1), st.sampled_from(VERSIONS))
def test_operators_agree(a, b, f, w, v):
    args = {"a": a, "b": b, "f": f, "w": w}
    for text in OPERATOR_CASES:
        spec, config, env, formula = _snippet(text)
        sem = semantics_for(spec, {"v": v})
        want = bool(sem.allowed(sem.initial_state(), "c", args).errors)
        types = Types(spec)
        pairs = [(env[n], types.const(t, args[n])) for n, t in spec.calls["c"].params]
        pairs += list(zip(config["v"], types.const(Type("version"), sem.config["v"])))
        assert z3.is_true(z3.simplify(z3.substitute(formula, *pairs))) == want, (text, args, v)


def test_symbolic_and_of_unbounded_ints_is_rejected():
    spec = check_source(SourceFile.of("<t>", SNIPPET.replace("a % b == 1", "a & b == 1")))
    enc = Encoder(spec, concrete_config(spec, semantics_for(spec, {}).config))
    env, _ = enc.fresh_io("c", "t.")
    try:
        enc.conditions("c", enc.initial_state(bounded=True), env)
    except RegcheckError as exc:
        assert exc.diagnostics[0].code == "P0901"
    else:
        raise AssertionError("expected P0901")


def test_versions_compare_like_the_semantics():
    """Canonical versions (5.10.0 is 5.10, as checker.model.semantics normalises them), padded with -1."""
    types = Types(load_spec("acl"))
    assert types.version_width == 3
    from checker.symbolic.encode import _version_cmp
    from checker.symbolic.terms import equal
    v = lambda parts: types.const(Type("version"), parts)  # noqa: E731
    assert z3.is_true(z3.simplify(_version_cmp("<", v((5, 10)), v((5, 10, 1)))))
    assert z3.is_true(z3.simplify(equal(v((5, 10)), v((5, 10, 0)))))
    assert z3.is_true(z3.simplify(_version_cmp(">", v((5, 10, 0, 0, 3)), v((5, 10)))))
    assert z3.is_true(z3.simplify(_version_cmp("<", v((5, 9, 9, 9)), v((5, 10)))))


@pytest.mark.parametrize("value", [0, -1, 2**8191, -(2**8192), 2**51_100 + 12345, -(3**40_000)],
                         ids=["0", "-1", "2**8191", "-2**8192", "2**51100+12345", "-3**40000"])
def test_an_integer_past_python_s_decimal_limit_is_exact_in_z3(value):
    """Z3 takes and gives numerals in decimal, and Python converts an int of more than 4,300 digits
    to or from decimal only on request: such a constant (a spec's may have 65,536 bits) crashed the
    encoder (ValueError, exit 3). `numeral` builds it exactly, and `int_value` reads it back."""
    from checker.symbolic.terms import int_value, numeral

    assert int_value(z3.simplify(numeral(value))) == value
    solver = z3.Solver()
    x = z3.Int("x")
    solver.add(x == numeral(value))
    assert solver.check() == z3.sat and int_value(solver.model()[x]) == value


WIDE_SPEC = """spec wide "integers wider than 4,300 digits"
source DOC "d" "d"
status int success 0
const BIG: int = (2 ** 511) ** 100
var n: int = 0
call setn(v: int) {
  effect WIDE-E: { n = v } cite DOC "d"
}
invariant WIDE-BIG: n < BIG cite DOC "d"
invariant WIDE-POWER: n < (2 ** 64) ** 4000 or n >= 0 cite DOC "d"
"""


@pytest.mark.parametrize("command", [["prove"], ["bmc", "--depth", "1"], ["simulate", "--runs", "3"]])
def test_a_spec_with_integers_wider_than_4300_digits_runs(tmp_path, monkeypatch, command):
    """Found by testing: a constant of 51,100 bits (the checker allows 65,536) and a power of
    constants wider than any value the semantics evaluates were a traceback (exit 3) in `prove`,
    `bmc` and `simulate`: the generated code and Z3 write integers in decimal. The power, which
    the concrete semantics cannot evaluate (E0310 where it is reached), is an unspecified value
    to the encoder, as `x % 0` is."""
    from tests.helpers import run_cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "wide.spec").write_text(WIDE_SPEC, encoding="utf-8")
    code, out, err = run_cli(command[0], "wide.spec", *command[1:])
    assert "Traceback" not in err and code in (0, 1), err
    if command[0] == "prove":
        assert "REFUTED  WIDE-BIG" in out  # n = BIG: an int holds it
