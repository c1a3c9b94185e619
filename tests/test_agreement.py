"""Agreement over random specs: the back ends give the same answers on specs nobody wrote by hand.

tests/test_encode.py, tests/test_fastpath.py and tests/test_stepcode.py check the Z3 encoding, the
replayer's fast path and the step machine on the bundled specs. Here the specs come from
tests/spec_strategies.py (random, well-typed, every clause and statement kind, the operators
with their edge cases), and on each one, with random configurations, states, calls and inputs:

- the Z3 encoding (the bounded harness of tests/test_encode.py) and the concrete semantics give
  the same broken obligations, outcome sets, broken `ensures`, invariants, API groups and success
  post-state (including the undo of an effect whose update finds no entry);
- a random JSONL trace replays to the same report, notes, final state and memory of which line
  made which entry through the general path and through the fast path: the C loop with the step
  machine, the C loop with the generated Python steps, and the Python loop;
- the step machine's mask of a call equals the Python semantics' mask;
- (slow) when `checker.engines.prover` proves every obligation, neither random simulation nor bounded
  model checking breaks an invariant.

What the encoding leaves out on purpose (docs/prover.md, checker/symbolic/encode.py: definedness) is left
out of the comparisons: a formula the concrete semantics cannot evaluate (a lookup of an absent
entry, a remainder by zero) is not compared. The post-state of an effect that fails to evaluate is
compared (both undo the effect), quantifiers whose body may fail included (both read them strictly:
defined only where the body is defined on every entry, docs/language.md "Quantifiers").

The disagreements these properties found are fixed; each has a regression test at the end of this
module (a constant boxed as two kinds in the step machine, a set with a local in it, a probe whose
predicate may raise). `&` of a state value an effect took past its declared type is left
unconstrained by the encoding on purpose, so the generator does not draw it (the flags at the top
of tests/spec_strategies.py). Set AGREEMENT_NO_SHRINK=1 to see the first failing spec at once
(shrinking one can take minutes).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter

import orjson
import pytest
import z3
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import checker.fast.fastpath as fastpath_mod
from checker.language import syntax as S
from checker.engines.bmc import search_violation
from checker.language.diagnostics import RegcheckError
from checker.fast.fastpath import fast_path
from checker.language.load import check_source
from checker.engines.prover import prove
from checker.engines.proof import ProveOptions, properties_of
from checker.engines.replay import Replayer
from checker.engines.runs import semantics_for, well_typed
from checker.model.semantics import Semantics
from checker.model.state import Table
from checker.model.outcomes import EvalError
from checker.model.state import NATIVE, State
from checker.engines.simulate import SimulationOptions, simulate
from checker.symbolic.solver import SolverOptions, Verdict, Witness
from checker.language.source import SourceFile
from checker.language.checked import value_bounds
from tests import helpers
from tests.spec_strategies import GenSpec, RandomChooser, gen_spec, specs
from tests.test_encode import Harness, quantified_outcome

# AGREEMENT_NO_SHRINK=1: report the first failing spec as found (shrinking one can take minutes)
SETTINGS = settings(derandomize=True, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[p for p in Phase if p is not Phase.shrink or not os.environ.get("AGREEMENT_NO_SHRINK")])
EXAMPLES = 500  # generated specs per property (the derandomized profile: about 330 distinct ones)
SITUATIONS = 16  # random states, calls and inputs per spec and property
STATS: Counter = Counter()  # what the properties saw: situations compared, events replayed, specs proved


# ---------------------------------------------------------------- one checked spec per text, compiled once


class Compiled:
    """A generated spec, checked; its Z3 harness and semantics are built on first use."""

    def __init__(self, gen: GenSpec):
        self.gen = gen
        try:
            self.spec = check_source(SourceFile.of("<gen>", gen.text))
        except RegcheckError as exc:
            self.spec, self.errors = None, exc.diagnostics
        self._harness = None

    @property
    def harness(self) -> Harness:
        if self._harness is None:
            self._harness = Harness(self.spec)
        return self._harness


_COMPILED: dict[str, Compiled] = {}
SEEN: set = set()


def compiled(gen: GenSpec) -> Compiled:
    hit = _COMPILED.get(gen.text)
    if hit is None:
        if len(_COMPILED) > 64:
            _COMPILED.clear()
        hit = _COMPILED[gen.text] = Compiled(gen)
    STATS["specs"] += 1
    SEEN.add(gen.text)
    STATS["distinct specs"] = len(SEEN)
    if hit.spec is None:
        STATS["rejected"] += 1
    return hit


def checked(gen: GenSpec) -> Compiled:
    c = compiled(gen)
    assume(c.spec is not None)  # rare: test_generated_specs_check shows how rare
    return c


# ---------------------------------------------------------------- random values, configurations, states

ADDRS = (0, 1, 0x1000, 0x1800, 0x2000, 0x3000, 2**64 - 0x1000)
VALUES = {
    "int": (-7, -3, -1, 0, 1, 2, 3, 5, 7, 4096, 2**63, -(2**63)),
    "i64": (-(2**63), -5, -3, -1, 0, 1, 3, 4096, 2**63 - 1),
    "u64": (0, 1, 3, 0x800, 0x1000, 0x2000, 2**64 - 1),
    "u32": (0, 1, 2, 3, 4096, 2**32 - 1),
    "addr": ADDRS,
}
CONFIG = {"cfg_lvl": (-3, 0, 2, 5, 7), "cfg_on": (False, True), "cfg_mode": ("M_IDLE", "M_SLOW", "M_FAST"),
          "cfg_ver": ("4.19.90", "5.10", "5.10.0", "5.10.1", "6.6")}


def value(rng: random.Random, spec, t, keys=()):
    """A well-typed value of type t; addresses and sizes often those of live entries."""
    if t.kind == "bool":
        return rng.random() < 0.5
    if t.kind == "enum":
        return rng.choice(spec.enums[t.name])
    if t.kind == "flags":
        v = 0
        for bit in list(spec.flags[t.name].values()) + [0x2, 0x80000000]:
            if rng.random() < 0.3:
                v |= bit
        return v
    keys = [k for k in keys if type(k) is int]  # (a table may be keyed by an enum or a boolean)
    if keys and t.name in ("addr", "u64", "int", "i64") and rng.random() < 0.4:
        k = rng.choice(keys)
        lo, hi = value_bounds(t) or (k, k)
        if lo <= k <= hi:
            return k
    return rng.choice(VALUES.get(t.name, VALUES["int"]))


def config(rng: random.Random, spec) -> dict:
    return {n: rng.choice(CONFIG[n]) for n in spec.params}


def random_state(rng: random.Random, spec, slots: int = 3) -> State:
    vars = {n: value(rng, spec, t) for n, (t, _) in spec.vars.items()}
    tables = {}
    for name, info in spec.tables.items():
        table = Table(info.sized_by, name)
        for _ in range(rng.randint(0, slots)):
            key = value(rng, spec, info.key)
            if key not in table.rows:
                table.put(key, {f: value(rng, spec, t) for f, t in info.fields})
        tables[name] = table
    return State(vars, tables)


def keys_of(st: State) -> list:
    return [k for t in st.tables.values() for k in t.rows]


def call_io(rng: random.Random, spec, call: str, keys) -> tuple[dict, dict]:
    info = spec.calls[call]
    return ({n: value(rng, spec, t, keys) for n, t in info.params},
            {n: value(rng, spec, t, keys) for n, t in info.outputs})


# ---------------------------------------------------------------- 1. the Z3 encoding and the concrete semantics


def concrete_outcome(sem: Semantics, state: State, call: str, inputs: dict, outputs: dict) -> dict:
    """The concrete semantics' answers (the keys of `Harness.outcome`), without those it cannot
    evaluate; `invariants` is (broken, evaluable)."""
    out: dict = {}
    try:
        al = sem.allowed(state, call, inputs)
        out.update({"broken": set(al.broken), "undefined": set(al.undefined), "unspecified": set(al.unspecified),
                    "errors": {(e.rule, e.codes) for e in al.errors},
                    "env": {(e.rule, e.codes) for e in al.env_errors}, "success": al.success})
    except RegcheckError:
        STATS["z3: conditions not evaluable"] += 1
    try:
        out["ensures"] = set(sem.ensures_broken(state, call, inputs, outputs))
    except RegcheckError:
        pass
    evaluable, broken = set(), set()
    for rule, f in sem.invariants:
        try:
            ok = f(state, {})
        except (EvalError, KeyError):
            continue
        evaluable.add(rule)
        if not ok:
            broken.add(rule)
    out["invariants"] = (broken, evaluable)
    try:
        out["groups"] = set(sem.group_of(state))
    except (EvalError, KeyError):
        pass
    failure = effect_failure(sem, state, call, inputs, outputs)
    out["post"] = sem.successor(state, call, inputs, outputs)  # an effect that raises: undone by both
    STATS["z3: effect undone"] += failure is not None
    return out


def effect_failure(sem: Semantics, state: State, call: str, inputs: dict, outputs: dict) -> str | None:
    """Why the success effect cannot be evaluated in `state` (None: it can)."""
    effect = sem.calls[call].effect
    if effect is None:
        return None
    try:
        effect(state.copy(), {**inputs, **outputs})
    except EvalError as exc:
        return str(exc)
    return None


def encoded_outcome(h: Harness, env, state: State, call: str, inputs: dict, outputs: dict, post: bool) -> dict:
    """`Harness.outcome` (tests/test_encode.py), reading the post-state only when asked."""
    return h.outcome(env, state, call, inputs, outputs, post)


def check_encoding(c: Compiled, rng: random.Random) -> None:
    spec = c.spec
    env = config(rng, spec)
    sem = semantics_for(spec, env)
    for _ in range(SITUATIONS):
        state = random_state(rng, spec)
        call = rng.choice(sorted(spec.calls))
        inputs, outputs = call_io(rng, spec, call, keys_of(state))
        want = concrete_outcome(sem, state, call, inputs, outputs)
        got = encoded_outcome(c.harness, sem.config, state, call, inputs, outputs, "post" in want)
        broken, evaluable = want.pop("invariants")
        got["invariants"] &= evaluable
        want["invariants"] = broken
        got = {k: v for k, v in got.items() if k in want}
        assert got == want, (call, inputs, outputs, state, env)
        STATS["z3: situations"] += 1


@settings(SETTINGS, max_examples=EXAMPLES)
@given(specs(), st.integers(0, 2**32 - 1))
def test_encoding_agrees_with_semantics_on_random_specs(gen, seed):
    check_encoding(checked(gen), random.Random(seed))


EVERY_VERDICT = {"broken", "undefined", "unspecified", "errors", "env", "success", "ensures", "groups"}


@pytest.mark.slow
@settings(SETTINGS, max_examples=EXAMPLES)
@given(specs(), st.integers(0, 2**32 - 1))
def test_quantified_encoding_agrees_with_semantics_on_random_specs(gen, seed):
    """The array (quantified) tables the prover's induction uses, each formula decided by Z3."""
    c = checked(gen)
    rng = random.Random(seed)
    sem = semantics_for(c.spec, config(rng, c.spec))
    for _ in range(4):
        state = random_state(rng, c.spec)
        call = rng.choice(sorted(c.spec.calls))
        inputs, outputs = call_io(rng, c.spec, call, keys_of(state))
        want = concrete_outcome(sem, state, call, inputs, outputs)
        want.pop("post", None)
        broken, evaluable = want.pop("invariants")
        if set(want) != EVERY_VERDICT or len(evaluable) != len(c.spec.invariants):
            continue  # the solver cannot decide what has no value (`0 % 0`): compare only what has
        want["invariants"] = broken
        got = quantified_outcome(c.spec, sem, state, call, inputs, outputs)
        assert got == want, (call, inputs, outputs, state, sem.config)
        STATS["z3 arrays: situations"] += 1


# ---------------------------------------------------------------- 2. the replayer's paths, and the machine's masks


def outcome(sem: Semantics, text: bytes, fast: bool, python_loop: bool = False, machine: bool = True,
            max_findings: int | None = None):
    """What one replay of `text` with `sem` produces (tests/helpers.py's `outcome`)."""
    return helpers.outcome(text, fast, max_findings, python_loop, machine, sem=sem)


def random_trace(rng: random.Random, spec, sem: Semantics, env: dict, n: int) -> bytes:
    """A header and up to n events, mostly with a status the outcome set allows (so that states
    grow), walked with the concrete semantics; a line that cannot be evaluated mostly dropped."""
    lines = [orjson.dumps({"regcheck": 1, "spec": "gen", "env": env})]
    st = sem.initial_state()
    calls = sorted(spec.calls)
    for _ in range(n):
        call = rng.choice(calls)
        info = spec.calls[call]
        careful = rng.random() < 0.8  # inputs redrawn until the caller keeps the obligations
        for _ in range(8):
            inputs, outputs = call_io(rng, spec, call, keys_of(st))
            try:
                al = sem.allowed(st, call, inputs)
            except RegcheckError:
                al = None
                continue
            if not careful or not (al.broken or al.unspecified):
                break
        if al is None and rng.random() < 0.97:  # kept, it ends the replay (E0310)
            continue
        if al is not None and info.outputs and al.success:
            for _ in range(8):  # outputs redrawn until they keep the call's promises
                try:
                    if not sem.ensures_broken(st, call, inputs, outputs):
                        break
                except RegcheckError:
                    pass
                outputs = call_io(rng, spec, call, keys_of(st))[1]
        event = info.decl.kind == "event"
        if al is not None and rng.random() < 0.8:
            failures = [e for e in al.errors + al.env_errors if e.codes] if not event else []
            status = 0 if (al.success or al.unspecified or not failures) and rng.random() < 0.8 else \
                (min(rng.choice(failures).codes) if failures else rng.choice([1, 2, 5]))
        else:
            status = rng.choice([0, 1, 2, 3, 4, 5, 7])
        ev: dict = {"call": call}
        written = inputs
        if info.defaults and rng.random() < 0.5:  # an input with a default left out: every path takes the default
            left_out = {n for n, _ in info.defaults}
            written = {n: v for n, v in inputs.items() if n not in left_out}
        if written or rng.random() < 0.5:
            ev["args"] = written
        if not event or status != 0:
            ev["ret"] = status
        if status == 0 and outputs:
            ev["out"] = outputs
        if rng.random() < 0.1 and ev.get("args"):  # a value in a form only the general path takes
            name = rng.choice(sorted(ev["args"]))
            v = ev["args"][name]
            if type(v) is int:
                ev["args"] = {**ev["args"], name: hex(v)}
        if rng.random() < 0.1:
            t0 = rng.randint(0, 9)
            ev.update(tid=rng.choice([1, 2]), t0=t0, t1=t0 + rng.randint(0, 3))
        lines.append(_json(ev))
        if status == 0 and al is not None:
            sem.apply(st, call, inputs, outputs)
    return b"\n".join(lines) + b"\n"


def _json(o) -> bytes:
    return json.dumps(o, separators=(",", ":")).encode()  # json, not orjson: integers beyond 64 bits too


def check_masks(c: Compiled, sem: Semantics, rng: random.Random) -> None:
    """On random states: each machine step's mask (`Step.mask_of`) is the Python semantics' mask."""
    spec = c.spec
    for _ in range(SITUATIONS):
        r = Replayer(sem, "t.jsonl")
        st = random_state(rng, spec, slots=4)
        for name, table in st.tables.items():
            for k, rec in table.rows.items():
                r.state.tables[name].put(k, rec)
        r.state.vars.update(st.vars)
        fp = fast_path(sem, r.state, r._remember, r.recent)
        if fp is None:
            return
        call = rng.choice(sorted(spec.calls))
        inputs, _ = call_io(rng, spec, call, keys_of(st))
        line = _json({"call": call, "args": inputs, "ret": 1})
        try:
            o = fp.decode(line)
        except fastpath_mod.DECODE_ERRORS:
            continue
        step = fp.steps.get(type(o))
        if not isinstance(step, NATIVE.Step):
            continue
        try:
            expected = sem.calls[call].mask(r.state, dict(inputs))
        except (EvalError, KeyError):
            expected = None  # the machine gives up too
        got = step.mask_of(o)
        if got is None and expected is not None:  # it gave up (a value beyond int64): conservative
            STATS["machine masks: gave up"] += 1
            continue
        assert got == expected, (call, inputs, st)
        STATS["machine masks"] += 1


@pytest.mark.slow
@settings(SETTINGS, max_examples=2 * EXAMPLES)
@given(gen=specs(), seed=st.integers(0, 2**32 - 1))
def test_fast_and_general_paths_agree_on_random_specs(gen, seed):
    c = checked(gen)
    rng = random.Random(seed)
    env = config(rng, c.spec)
    sem = Semantics(c.spec, env)
    text = random_trace(rng, c.spec, sem, env, rng.randint(10, 60))
    sem = Semantics(c.spec, env)  # a fresh one: random_trace walked with the other
    limit = rng.choice([None, None, None, 1, 3])  # --max-findings: the replay stops after that many
    general = outcome(sem, text, False, max_findings=limit)
    modes = [(True, False)] + ([(False, True), (False, False)] if NATIVE is not None else [])
    for python_loop, machine in modes:
        assert outcome(sem, text, True, python_loop, machine, limit) == general, (python_loop, machine, text.decode())
    STATS["replay: traces"] += 1
    STATS["replay: events"] += general[1]["events"] if general[0] == "report" else 0
    if NATIVE is not None:
        check_masks(c, sem, rng)


# ---------------------------------------------------------------- 3. what the prover proves, the walks keep


def _may_fail(spec, e) -> bool:
    for x in S.subexpressions(e):
        if isinstance(x, S.Index) or (isinstance(x, S.Binary) and x.op in ("%", "**")):
            return True
        if isinstance(x, S.Builtin) and x.func == "aligned":
            return True
        if isinstance(x, S.Name) and x.name in spec.defs and _may_fail(spec, spec.defs[x.name]):
            return True
    return False


PROVER = ProveOptions(solver=SolverOptions(timeout_ms=1000, retries=0), consistency=False, guards=False,
                      reach_depth=0)


@pytest.mark.slow
@settings(SETTINGS, max_examples=300)
@given(specs(), st.integers(0, 2**16))
def test_what_the_prover_proves_simulation_and_bmc_do_not_break(gen, seed):
    c = checked(gen)
    spec = c.spec
    # an invariant that cannot always be evaluated breaks "concretely" where the encoding (which
    # leaves definedness out) proves it: not this property's business
    assume(not any(_may_fail(spec, inv.expr) for inv in spec.invariants))
    report = prove(spec, "<gen>", PROVER)
    STATS["prover: specs"] += 1
    if not report.proved:
        return
    STATS["prover: all proved"] += 1
    STATS["prover: all proved, with invariants"] += bool(spec.invariants)
    assert all(o.verdict is Verdict.PROVED for o in report.obligations)
    try:
        sim = simulate(spec, "<gen>", SimulationOptions(runs=10, steps=12, seed=seed))
    except RegcheckError:  # a condition that cannot be evaluated on the way
        sim = None
    if sim is not None:
        assert sim.violation is None, (sim.violation, gen.text)
        STATS["prover: simulated"] += 1
    try:
        bmc = search_violation(spec, "<gen>", 2, SolverOptions(timeout_ms=2000, retries=0))
    except RegcheckError:
        return
    assert bmc.witness is not Witness.FOUND, (bmc.violation, gen.text)
    STATS["prover: bmc"] += 1


def unsound_steps(spec, report, rng: random.Random, tries: int) -> list:
    """Concrete induction steps that break what `report` proved: from random states that satisfy
    every invariant and TYPES (the prover's hypotheses; any number of entries, not only reachable
    states), a call whose caller keeps every obligation and whose success (documented or where the
    documents are silent) the semantics allows, with outputs that keep `ensures`. Each PROVED
    obligation (call, branch, property), by the solver, the frame argument or trivially, must hold
    after every such step. Far more sensitive than walks from the initial state: most unsound
    encodings break induction in a state no short walk reaches. Whatever cannot be evaluated (the
    encoding leaves definedness out of clauses and invariants) is skipped."""
    proved = {(o.property, o.call, o.branch) for o in report.obligations if o.verdict is Verdict.PROVED}
    props = properties_of(spec)
    sem = semantics_for(spec, config(rng, spec))
    found = []
    for _ in range(tries):
        pre = random_state(rng, spec, slots=rng.choice([1, 2, 3, 4]))
        call = rng.choice(sorted(spec.calls))
        inputs, outputs = call_io(rng, spec, call, keys_of(pre))
        try:
            if sem.holds(pre) or not well_typed(spec, pre):
                continue
            al = sem.allowed(pre, call, inputs)
            branch = "unspecified" if al.unspecified else "success" if al.success else None
            if al.broken or branch is None or sem.ensures_broken(pre, call, inputs, outputs):
                continue
        except (RegcheckError, EvalError, KeyError):
            continue
        post = sem.successor(pre, call, inputs, outputs)
        for prop in props:
            if (prop.id, call, branch) not in proved:
                continue
            try:
                sem.holds(post)  # (an invariant that raises after the step is definedness: skipped)
                holds = prop.concrete(sem, pre, call, post)
            except (RegcheckError, EvalError, KeyError):
                continue
            STATS["induction steps: checked"] += 1
            if not holds:
                found.append((prop.id, call, branch, sem.config, pre, inputs, outputs, post))
    return found


@pytest.mark.slow
@settings(SETTINGS, max_examples=150)
@given(specs(), st.integers(0, 2**16))
def test_what_the_prover_proves_no_concrete_induction_step_breaks(gen, seed):
    c = checked(gen)
    report = prove(c.spec, "<gen>", PROVER)
    assert unsound_steps(c.spec, report, random.Random(seed), 300) == [], gen.text


MOVE_SPEC = """spec move "an entry moved onto its own key is gone"
source DOC "d" "d"
status int success 0
record R { n: int }
table t: addr -> R
var live: int = 0
call add(p: addr) {
  requires MOVE-NEW: not (p in t) cite DOC "d"
  effect MOVE-ADD: { t[p] = { n: 1 }  live = live + 1 } cite DOC "d"
}
call move(p: addr, q: addr) {
  requires MOVE-HAS: p in t cite DOC "d"
  effect MOVE-MOVE: { t[q] = { n: t[p].n }  delete t[p] } cite DOC "d"
}
invariant MOVE-INV: live > 0 implies (exists r in t: true) cite DOC "d"
"""


def test_the_induction_step_property_can_fail(monkeypatch):
    """With the frame argument claiming every obligation (an effect read as writing nothing), the
    steps find what the prover then wrongly proves: `move(p, p)` empties the table."""
    from checker.engines import prover as prover_mod

    spec = check_source(SourceFile.of("<move>", MOVE_SPEC))
    assert unsound_steps(spec, prove(spec, "<move>", PROVER), random.Random(1), 2000) == []
    monkeypatch.setattr(prover_mod._Prover, "touches", lambda self, prop, call: False)
    report = prove(spec, "<move>", PROVER)
    assert report.proved
    found = unsound_steps(spec, report, random.Random(1), 2000)
    assert {(f[0], f[1]) for f in found} == {("MOVE-INV", "move")}


# ---------------------------------------------------------------- the generator itself


def test_generated_specs_check():
    """Almost every generated spec is well typed (the properties assume the others away)."""
    rejected = []
    for seed in range(300):
        c = Compiled(gen_spec(RandomChooser(seed)))
        if c.spec is None:
            rejected.append((seed, [d.message for d in c.errors][:2]))
    assert len(rejected) <= 3, rejected


LOCAL = re.compile(r"\b(?:a\d+_\d+|o\d+_\d+|qv\d+|qa|qb|qiR\d+)\b")
GLOBAL = re.compile(r"\b(?:v_\w+|K_[A-Z]+|cfg_[a-z]+|tbl\d|dfn\d|M_[A-Z]+|F_[A-D]|Mode|Fl|Rec\d|grp_[ab])\b")


@settings(SETTINGS, max_examples=EXAMPLES)
@given(specs(), st.data())
def test_a_local_named_like_a_global_is_rejected(gen, data):
    """The front door that makes name resolution unambiguous in every back end: a generated spec
    with one local (input, output, quantified variable) renamed to a global's name (variable,
    constant, parameter, table, definition, enum or flag member, type, group) does not check (E0209).
    The agreement properties cannot see a back end that resolves a local to a global of the same
    name, since the specs they are given never have one."""
    assume(compiled(gen).spec is not None)
    locals_ = sorted(set(LOCAL.findall(gen.text)))
    assume(locals_)
    local = data.draw(st.sampled_from(locals_))
    name = data.draw(st.sampled_from(sorted(set(GLOBAL.findall(gen.text)))))
    text = re.sub(rf"\b{local}\b", name, gen.text)
    with pytest.raises(RegcheckError) as exc:
        check_source(SourceFile.of("<renamed>", text))
    assert "E0209" in {d.code for d in exc.value.diagnostics}, (local, name, exc.value.diagnostics)


def test_coverage_of_the_generator():
    """The generated specs reach what the properties are for: machine steps, probes, effects that
    fail midway, `%` by negative constants and by values, and every clause kind."""
    seen: Counter = Counter()
    for seed in range(150):
        gen = gen_spec(RandomChooser(seed))
        c = Compiled(gen)
        if c.spec is None:
            continue
        text = gen.text
        for word in ("requires", "undefined", "fails", "may fail", "unspecified", "ensures", "order", "only in",
                     "forall", "exists", "delete", "else", "**", "~", "min(", "max(", "% (-", "aligned("):
            seen[word] += word in text
        for t in c.spec.tables.values():  # keys and sizes the bundled specs never have
            seen["key " + str(t.key)] += 1
            seen["signed size"] += t.sized_by is not None and dict(t.fields)[t.sized_by].name == "i64"
        seen["default"] += any(info.defaults for info in c.spec.calls.values())  # inputs a line may leave out
        sem = Semantics(c.spec, {})
        if NATIVE is not None:
            r = Replayer(sem, "t.jsonl")
            fp = fast_path(sem, r.state, r._remember, r.recent)
            seen["machine"] += fp is not None and any(isinstance(s, NATIVE.Step) for s in fp.steps.values())
        rng = random.Random(seed)
        for _ in range(20):
            st = random_state(rng, c.spec)
            call = rng.choice(sorted(c.spec.calls))
            inputs, outputs = call_io(rng, c.spec, call, keys_of(st))
            why = effect_failure(sem, st, call, inputs, outputs)
            if why is not None:
                seen["undone" if "for key" in why else "unevaluable effect"] += 1
    print(dict(seen))
    for word, at_least in {"requires": 40, "undefined": 25, "fails": 100, "may fail": 40, "unspecified": 25,
                           "ensures": 15, "order": 5, "only in": 5, "forall": 30, "exists": 60, "delete": 40,
                           "else": 30, "**": 20, "~": 40, "min(": 20, "% (-": 40, "aligned(": 20,
                           "undone": 100, "unevaluable effect": 50, "key Mode": 2, "key bool": 2, "key i64": 15,
                           "signed size": 15, "default": 40}.items():
        assert seen[word] >= at_least, (word, dict(seen))
    if NATIVE is not None:
        assert seen["machine"] >= 60, dict(seen)


# ---------------------------------------------------------------- real disagreements found, kept until fixed

BOX_SPEC = """spec box "a constant boxed as two kinds"
source DOC "d" "d"
status int success 0
enum Mode { M_IDLE, M_SLOW }
record Rec { on: bool, md: Mode }
table recs: addr -> Rec
call put(p: addr) {
  effect BOX-PUT: { recs[p] = { on: true, md: M_SLOW } }
    cite DOC "d"
}
"""


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_a_constant_boxed_as_two_kinds():
    sem = Semantics(check_source(SourceFile.of("<box>", BOX_SPEC)), {})
    text = b'{"regcheck":1,"spec":"box","env":{}}\n{"call":"put","args":{"p":4096},"ret":0}\n'
    general = outcome(sem, text, False)
    assert general[4][1] == (("recs", ((4096, (("md", "M_SLOW"), ("on", True))),)),)
    assert outcome(sem, text, True, False, True) == general


SET_SPEC = """spec sets "a set with a local in it"
source DOC "d" "d"
status int success 0
var n: int = 0
call c(a: int, b: int) {
  fails SET-IN: 1 when a in {1, b}
    cite DOC "d"
  effect SET-E: { n = a }
    cite DOC "d"
}
"""


def test_a_set_with_a_local_in_it():
    spec = check_source(SourceFile.of("<sets>", SET_SPEC))
    sem = Semantics(spec, {})
    assert [e.rule for e in sem.allowed(sem.initial_state(), "c", {"a": 2, "b": 2}).errors] == ["SET-IN"]
    assert not sem.allowed(sem.initial_state(), "c", {"a": 2, "b": 3}).errors


PROBE_SPEC = """spec probe "a probe whose predicate may raise"
source DOC "d" "d"
status int success 0
record Rec { sz: u64 }
table recs: addr -> Rec sized by sz
event put(p: addr, s: u64) {
  effect PROBE-PUT: { recs[p] = { sz: s } }
    cite DOC "d"
}
call c(n: int) {
  fails PROBE-FAILS: 1 when exists r in recs: aligned(4096, n) and r.range contains 4096
    cite DOC "d"
}
"""


def test_a_probe_predicate_that_may_raise():
    sem = Semantics(check_source(SourceFile.of("<probe>", PROBE_SPEC)), {})
    text = (b'{"regcheck":1,"spec":"probe","env":{}}\n{"call":"put","args":{"p":4096,"s":0}}\n'
            b'{"call":"c","args":{"n":0},"ret":0}\n')
    general = outcome(sem, text, False)
    assert general[0] == "error" and "remainder by zero" in general[1][0][3]
    modes = [(True, False)] + ([(False, True), (False, False)] if NATIVE is not None else [])
    for python_loop, machine in modes:
        assert outcome(sem, text, True, python_loop, machine) == general, (python_loop, machine)


WIDE_SPEC = """spec wide "a bounded variable past its bound"
source DOC "d" "d"
status int success 0
var n: u64 = 0
var m: int = 0
call bump() {
  effect WIDE-E: { n = n + 1  m = n & n }
    cite DOC "d"
}
"""


def test_bits_of_a_variable_past_its_bound_are_not_claimed():
    """`n = n + 1` takes a u64 past 2**64 within the effect. The semantics computes `n & n` exactly
    (2**64); the encoding decomposes `&` into the bits of the declared types, which is exact only
    within them, so there it leaves the result unconstrained instead of claiming the 64-bit answer 0
    (the TYPES obligation refutes such an effect anyway)."""
    from checker.symbolic.encode import Encoder, concrete_config
    spec = check_source(SourceFile.of("<wide>", WIDE_SPEC))
    sem = Semantics(spec, {})
    pre = State({"n": 2**64 - 1, "m": 0}, {})
    assert sem.successor(pre, "bump", {}, {}).vars == {"n": 2**64, "m": 2**64}
    enc = Encoder(spec, concrete_config(spec, sem.config))
    st = enc.fresh_state("wide.", slots=0)  # a symbolic n: `&` of it is not folded to a constant
    m = enc.effect("bump", st, {}).vars["m"]
    for value in (2**64, 0):  # both are possible: the encoding says nothing about m there
        solver = z3.Solver()
        solver.add(st.vars["n"] == 2**64 - 1, m == value)
        assert solver.check() == z3.sat, value
    solver = z3.Solver()  # within the bounds the bits are exact: 5 + 1 = 6, and 6 & 6 is 6 only
    solver.add(st.vars["n"] == 5, m != 6)
    assert solver.check() == z3.unsat


STRICT_SPEC = """spec strict "quantifiers whose body may fail"
source DOC "d" "d"
status int success 0
var hit: bool = false
record Rec { d: int }
record Blk { sz: u64 }
table recs: addr -> Rec
table blks: addr -> Blk sized by sz
event put(p: addr, d: int) {
  effect STRICT-PUT: { recs[p] = { d: d } }
    cite DOC "d"
}
event blk(p: addr, s: u64) {
  effect STRICT-BLK: { blks[p] = { sz: s } }
    cite DOC "d"
}
call some() {
  effect STRICT-SOME: { if exists r in recs: 10 % r.d == 0 { hit = true } }
    cite DOC "d"
}
call every() {
  effect STRICT-EVERY: { if forall r in recs: 10 % r.d == 5 { hit = false } else { hit = true } }
    cite DOC "d"
}
call near(k: addr) {
  effect STRICT-NEAR: { hit = true  if exists b in blks: b.range overlaps blks[k].range { hit = false } }
    cite DOC "d"
}
call guard() {
  fails STRICT-GUARD: 1 when exists r in recs: 10 % r.d == 0
    cite DOC "d"
}
"""


def _strict_state(sem: Semantics, rows: list[tuple[str, dict]]) -> State:
    st = sem.initial_state()
    for call, args in rows:
        sem.apply(st, call, args, {})
    return st


@pytest.mark.parametrize("rows, call, args, hit", [
    # d=5 decides `exists` before d=0 fails, in one order only: the effect is undone in both
    ([("put", {"p": 1, "d": 5}), ("put", {"p": 2, "d": 0})], "some", {}, False),
    ([("put", {"p": 2, "d": 0}), ("put", {"p": 1, "d": 5})], "some", {}, False),
    ([("put", {"p": 1, "d": 3}), ("put", {"p": 2, "d": 0})], "every", {}, False),
    ([("put", {"p": 1, "d": 5}), ("put", {"p": 2, "d": 2})], "some", {}, True),  # defined everywhere
    # an index probe's `blks[k].range`, read on every entry: none in an empty table
    ([], "near", {"k": 4096}, True),
    ([("blk", {"p": 4096, "s": 16})], "near", {"k": 8192}, False),
    ([("blk", {"p": 4096, "s": 16}), ("blk", {"p": 8192, "s": 0})], "near", {"k": 8192}, True),
    ([("blk", {"p": 4096, "s": 16})], "near", {"k": 4096}, False),
])
def test_a_quantifier_whose_body_may_fail_is_read_strictly(rows, call, args, hit):
    """A quantifier is defined only where its body is defined on every entry: the concrete semantics
    no longer stops at the first entry that decides (the Z3 encoding's `defined` always read it so;
    before, the first two cases set `hit` in one semantics and not in the other)."""
    spec = check_source(SourceFile.of("<strict>", STRICT_SPEC))
    sem = Semantics(spec, {})
    st = _strict_state(sem, rows)
    post = sem.successor(st, call, args, {})
    assert post.vars == {"hit": hit}
    assert Harness(spec).outcome(sem.config, st, call, args, {}, True)["post"] == post


def _strict_trace(rows: list[tuple[str, dict]], call: str) -> bytes:
    lines = [b'{"regcheck":1,"spec":"strict","env":{}}']
    lines += [_json({"call": c, "args": a}) for c, a in rows] + [_json({"call": call, "args": {}, "ret": 0})]
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("first, second", [(5, 0), (0, 5)])
def test_a_quantifier_whose_body_may_fail_is_read_strictly_by_every_replay_path(first, second):
    """In an effect the failure undoes the effect; in a guard it is a spec error (E0310), whichever
    entry comes first, on the general path and on every fast path."""
    sem = Semantics(check_source(SourceFile.of("<strict>", STRICT_SPEC)), {})
    rows = [("put", {"p": 1, "d": first}), ("put", {"p": 2, "d": second})]
    modes = [(True, False)] + ([(False, True), (False, False)] if NATIVE is not None else [])
    effect = outcome(sem, _strict_trace(rows, "some"), False)
    assert effect[0] == "report" and effect[4][0] == (("hit", False),)
    guard = outcome(sem, _strict_trace(rows, "guard"), False)
    assert guard[0] == "error" and guard[1][0][0] == "E0310" and "remainder by zero" in guard[1][0][3]
    for general, call in ((effect, "some"), (guard, "guard")):
        for python_loop, machine in modes:
            assert outcome(sem, _strict_trace(rows, call), True, python_loop, machine) == general, (call, machine)


UPDATE_SPEC = """spec update "an update whose value looks an entry up"
source DOC "d" "d"
status int success 0
record Rec { sz: u64, on: bool }
table recs: addr -> Rec sized by sz
call put(p: addr, s: u64) {
  effect UPD-PUT: { recs[p] = { sz: s, on: true } }
    cite DOC "d"
}
call upd(p: addr, q: addr) {
  effect UPD-UPD: { recs[p].on = not (recs[q].range.size > 0) }
    cite DOC "d"
}
"""


def test_an_update_goes_to_its_own_key_when_its_value_looks_another_entry_up():
    """Found by the agreement properties on generated specs: the fast path's inline update kept its
    key in the local `_k`, which the value's code (`recs[q].range`) reassigned, so that the update
    of the absent recs[8192] (an effect the general path undoes) set recs[4096].on instead."""
    sem = Semantics(check_source(SourceFile.of("<update>", UPDATE_SPEC)), {})
    text = (b'{"regcheck":1,"spec":"update","env":{}}\n{"call":"put","args":{"p":4096,"s":16},"ret":0}\n'
            b'{"call":"upd","args":{"p":8192,"q":4096},"ret":0}\n')
    general = outcome(sem, text, False)
    assert general[4][1] == (("recs", ((4096, (("on", True), ("sz", 16))),)),)  # the update undone
    modes = [(True, False)] + ([(False, True), (False, False)] if NATIVE is not None else [])
    for python_loop, machine in modes:
        assert outcome(sem, text, True, python_loop, machine) == general, (python_loop, machine)
