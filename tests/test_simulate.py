"""Random simulation with the concrete semantics: deterministic, finds seeded bugs, writes traces.

Both walks: the fast one (the default; successes on the fast path's steps, the C step machine
where it is built) and the pure one (`fast=False`, `Semantics` only)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as hs

from checker.fast import fastpath
from checker.language.load import load_spec
from checker.engines.replay import replay_events, replay_trace
from checker.engines.runs import Run, failing_invariants, replay_prefix, semantics_for, step_allowed
from checker.engines import simulate as simulate_module
from checker.language.load import check_source
from checker.language.diagnostics import RegcheckError
from checker.language.source import SourceFile
from checker.engines.simulate import SimulationOptions, simulate
from checker.model.state import NATIVE
from tests.helpers import run_cli
from tests.spec_strategies import specs
from tests.test_agreement import random_state, value

SEEDED = Path(__file__).parent / "seeded_bugs"


def test_simulation_does_not_use_the_solver():
    code = "import checker.engines.simulate, sys; sys.exit('z3' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent.parent).returncode == 0


SPECS = ["acl", "cupva", "cuda", "hip"]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pure"])
@pytest.mark.parametrize("name", SPECS)
def test_no_violation_in_the_bundled_specs(name, fast):
    result = simulate(load_spec(name), name, SimulationOptions(runs=150, steps=40, seed=7, fast=fast))
    assert result.violation is None and result.runs == 150
    assert result.steps > 150 * 20 and result.successes > 0
    effects = {r.rule for r in load_spec(name).rules.values() if r.kind == "effect"}
    assert effects <= set(result.rules_seen)  # every success effect ran at least once
    # the fast walk takes most successes on the fast path; the pure walk none
    assert result.fast_successes > result.successes // 2 if fast else result.fast_successes == 0


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pure"])
def test_same_seed_same_walk(fast):
    spec = load_spec("acl")
    a = simulate(spec, "acl", SimulationOptions(runs=20, steps=30, seed=3, fast=fast, keep_walks=True))
    b = simulate(spec, "acl", SimulationOptions(runs=20, steps=30, seed=3, fast=fast, keep_walks=True))
    c = simulate(spec, "acl", SimulationOptions(runs=20, steps=30, seed=4, fast=fast))
    assert (a.steps, a.successes, a.rules_seen, a.walks) == (b.steps, b.successes, b.rules_seen, b.walks)
    assert (a.steps, a.rules_seen) != (c.steps, c.rules_seen)


@pytest.mark.parametrize("name", SPECS)
def test_every_fast_walk_replays_as_conforming(name):
    """Failures included: each run the fast walk takes is a trace the replayer accepts."""
    spec = load_spec(name)
    result = simulate(spec, name, SimulationOptions(runs=25, steps=40, seed=11, keep_walks=True))
    assert len(result.walks) == 25 and sum(len(w.steps) for w in result.walks) == result.steps
    assert any(s.status not in (None, spec.success) for w in result.walks for s in w.steps)  # failures too
    for walk in result.walks:
        events = Run(name, walk.env, walk.steps).events(spec)
        report = replay_events(semantics_for(spec, walk.env), events, fast=False)
        assert report.verdict == "conforms", (walk.env, report.findings[:1])


def test_the_fast_walk_is_the_same_on_the_python_steps(monkeypatch):
    """Where the C module is not built the fast path's generated Python steps run instead: the
    walk they take is the same, step for step."""
    spec = load_spec("acl")
    options = SimulationOptions(runs=30, steps=40, seed=5, keep_walks=True)
    machine = simulate(spec, "acl", options)
    monkeypatch.setattr(fastpath, "MACHINE_STEPS", False)
    python = simulate(spec, "acl", options)
    assert python.walks == machine.walks and python.fast_successes == machine.fast_successes > 0


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
@pytest.mark.parametrize("name", SPECS)
def test_the_fast_walk_is_the_same_through_the_probes_and_fresh_events(name, monkeypatch):
    """The C steps read a draw's mask themselves (`Step.mask_of`) and are handed events kept from
    earlier draws of the same values: the walk is the one the probes' deciders read, with an event
    made for every draw."""
    spec = load_spec(name)
    options = SimulationOptions(runs=40, steps=60, seed=2, keep_walks=True)
    read = []
    mask_reader = simulate_module._mask_reader
    monkeypatch.setattr(simulate_module, "_mask_reader", lambda maker: read.append(maker) or mask_reader(maker))
    machine = simulate(spec, name, options)
    assert any(mask_reader(m) is not None for m in read)  # (the C steps' own reading was taken)
    monkeypatch.setattr(simulate_module, "_mask_reader", lambda maker: None)
    monkeypatch.setattr(simulate_module, "EVENTS_KEPT", 0)
    probed = simulate(spec, name, options)
    assert probed.walks == machine.walks and probed.fast_successes == machine.fast_successes > 0


@settings(max_examples=60)
@given(members=hs.lists(hs.integers(1, 2**40), max_size=6).map(tuple), seed=hs.integers(0, 2**32 - 1))
def test_the_spelt_out_flags_draw_is_the_pure_walks(members, seed):
    """The fast walk's flags draw, an expression, takes the values and `random()` calls of the pure
    walk's function."""
    spelt = eval("lambda rnd, keys: " + simulate_module._flags_draw(members).format("C[0]"), {"C": (members,)})
    pure = simulate_module._draw_flags(members)
    a, b = random.Random(seed), random.Random(seed)
    for _ in range(20):
        got = [None, None]
        for i, (draw, rng) in enumerate(((spelt, a), (pure, b))):
            try:
                got[i] = draw(rng.random, ())
            except IndexError:  # (no member to fall back on)
                got[i] = IndexError
        assert got[0] == got[1] and a.random() == b.random()


def replayed_state(spec, walk):
    """The walk's steps re-applied with the pure Semantics, each checked to be allowed there and
    every invariant to hold after each success; the final state."""
    sem = semantics_for(spec, walk.env)
    st = sem.initial_state()
    for s in walk.steps:
        if s.status is None or s.status == sem.success:
            assert step_allowed(sem, st, s) is not None, s
            assert sem.apply(st, s.call, s.inputs, s.outputs), s
            assert failing_invariants(sem, st) == [], s
        else:
            al = sem.allowed(st, s.call, s.inputs)
            assert not al.broken and al.allows_status(s.status, sem.success), s
    return st.snapshot()


@settings(max_examples=15)
@given(seed=hs.integers(0, 2**32 - 1), name=hs.sampled_from(SPECS))
def test_fast_walk_states_are_the_pure_semantics_states(seed, name):
    spec = load_spec(name)
    result = simulate(spec, name, SimulationOptions(runs=3, steps=40, seed=seed, keep_walks=True))
    assert result.violation is None
    for walk in result.walks:
        assert replayed_state(spec, walk) == walk.final


@pytest.mark.parametrize("name, env, invariant", [
    ("acl_free_forgets_registrations", None, "ACL-INV-REG-IN-ALLOC"),
    ("acl_mallochost_pageable", None, "ACL-INV-MALLOC-HOST-LOCKED"),
    ("acl_devptr_kept_after_unregister", None, "ACL-INV-DEV-ONLY-MAPPED"),
    ("acl_overlap_start_only", {"product": "AtlasA2"}, "ACL-INV-NO-OVERLAP"),
    ("cupva_overlap_unchecked", {"driver_version": 2005}, "PVA-INV-NO-OVERLAP"),
    ("cupva_auto_cuda_recorded", None, "PVA-INV-AUTO-NO-EXPLICIT"),
])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pure"])
def test_finds_seeded_bugs_with_a_short_replayable_run(name, env, invariant, fast):
    path = str(SEEDED / f"{name}.spec")
    spec = load_spec(path)
    result = simulate(spec, path, SimulationOptions(runs=400, steps=50, seed=1, env=env, fast=fast))
    assert result.violation is not None, name
    v = result.violation
    assert invariant in v.invariants and len(v.run.steps) <= 5
    sem = semantics_for(spec, v.run.env)
    assert invariant in failing_invariants(sem, replay_prefix(sem, v.run.steps))


def test_cli_writes_a_violation_trace(tmp_path):
    path = str(SEEDED / "acl_devptr_kept_after_unregister.spec")
    out_path = tmp_path / "sim.jsonl"
    code, out, _ = run_cli("simulate", path, "--runs", "400", "--steps", "50", "--seed", "1", "--out", str(out_path))
    assert code == 1 and "breaks ACL-INV-DEV-ONLY-MAPPED" in out and "steps/s" in out
    report = replay_trace(str(out_path))
    assert report.verdict == "conforms"


def test_cli_json_and_exit_codes():
    code, out, _ = run_cli("simulate", "cupva", "--runs", "20", "--steps", "20", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["violation"] is None and data["steps"] > 0 and data["steps_per_second"] > 0
    assert run_cli("simulate", "cupva", "--env", "driver_version=abc")[0] == 2
    assert run_cli("simulate", "cupva", "--runs", "0")[0] == 2


INITIALLY_BROKEN = """spec gen "an invariant the initial state breaks"
source DOC "generated" "generated"
status int success 0
var v_n: int = 0
table tbl0: addr -> Rec0 sized by sz
record Rec0 { sz: u64 }
invariant INV-NEVER: v_n > 0 cite DOC "generated"
event op0() -> (o0_0: addr) {
}
"""


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pure"])
def test_an_invariant_the_initial_state_breaks_is_found_at_the_first_success(tmp_path, fast):
    """The fast walk re-checks after a success only what it changed, which assumes the invariants
    held before: a success that changes nothing must still report one the initial state breaks."""
    path = tmp_path / "broken.spec"
    path.write_text(INITIALLY_BROKEN)
    result = simulate(load_spec(str(path)), str(path), SimulationOptions(runs=3, steps=5, fast=fast))
    assert result.violation is not None and result.violation.invariants == ("INV-NEVER",)
    assert result.runs == 1


# A table keyed by any address: the walk's last address (a page below 2**64) becomes a live key,
# and "a page after a live key" would be 2**64, outside the addr type.
TOP_KEY = """spec topkey "a live key on the last page"
source D "d.txt" "doc"
status int success 0
record R { size: u64 }
table regs: addr -> R sized by size
call reg(p: addr) {
  requires M-FRESH: not (p in regs)
    cite D "fresh"
  effect M-REG: { regs[p] = { size: 1 } }
    cite D "e"
}
"""


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pure"])
def test_addresses_drawn_near_the_top_stay_in_the_addr_type(tmp_path, fast):
    """Found by testing a user's spec: an address drawn a page past a live key on the last page was
    2**64; the walk then reported a TYPES break no trace can make, and its trace could not be written."""
    path = tmp_path / "topkey.spec"
    path.write_text(TOP_KEY)
    options = SimulationOptions(runs=60, steps=20, seed=0, fast=fast, keep_walks=True)
    result = simulate(load_spec(str(path)), str(path), options)
    assert result.violation is None
    drawn = [s.inputs["p"] for w in result.walks for s in w.steps if s.call == "reg"]
    assert max(drawn) == 2**64 - 1  # the clamp was met (so the test would see a draw past it)
    assert all(0 <= p <= 2**64 - 1 for p in drawn)
    out = tmp_path / "sim.jsonl"
    code, _, err = run_cli("simulate", str(path), "--runs", "60", "--steps", "20", "--out", str(out))
    assert code == 0, err


# ---------------------------------------------------------------- the fast walk's re-check after a success

# Invariants of the shapes the re-check treats in part, over a generated spec's tables: `exists`
# that new entries keep true (and a negated one they do not), pairs checked in one orientation
# where the test is symmetric (and an asymmetric one), a definition that may raise.
RECHECK_SHAPES = (
    "forall a in {T}: exists b in {U}: b.range contains a.range",
    "forall a in {T}: not (exists b in {U}: b.range overlaps a.range and a.key != b.key)",
    "forall a in {T}: forall b in {T}: a.key != b.key implies not a.range overlaps b.range",
    "forall a in {T}: forall b in {T}: a.key != b.key implies not a.range contains b.range",
    "(exists a in {T}: a.sz > 4096) implies (exists b in {U}: b.key == 4096 or b.range contains range(0, 1))",
    "forall a in {T}: (exists b in {U}: b.key % 4096 == a.key) or a.sz == 0",
)


def with_recheck_shapes(spec_text: str, rng: random.Random) -> str:
    """The generated spec with two of RECHECK_SHAPES over its sized tables (`tbl0` always is)."""
    sized = ["tbl0"] + (["tbl1"] if re.search(r"^table tbl1: .* sized by sz$", spec_text, re.M) else [])
    lines = [spec_text.rstrip("\n")]
    for i in range(2):
        shape = rng.choice(RECHECK_SHAPES)
        lines.append(f"invariant INV-RECHECK-{i}: {shape.format(T=rng.choice(sized), U=rng.choice(sized))} "
                     'cite DOC "generated"')
    return "\n".join(lines) + "\n"


def recheck_disagreements(spec, rng: random.Random, situations: int = 24) -> list:
    """Random states where every invariant holds, each changed once (an entry put, changed or
    removed, or a variable set) as an effect would: the changes after which the walk's re-check
    (`_FastWalker.broken_after`) finds nothing broken where the whole check (`failing_invariants`)
    does, with the state before and after."""
    sem = semantics_for(spec, {})
    bound = simulate_module._Bound(simulate_module._Plan.of(spec), sem)
    walker = simulate_module._FastWalker(bound, random.Random(0), 8)
    found = []
    for _ in range(situations):
        st = bound.initial_state()
        drawn = random_state(rng, spec)
        for name, table in drawn.tables.items():
            for key, record in table.rows.items():
                st.tables[name].put(key, dict(record))
        st.vars.update(drawn.vars)
        st.journal.clear()
        if failing_invariants(sem, st):
            continue
        before = st.snapshot()
        keys = [k for t in st.tables.values() for k in t.rows]
        name = rng.choice(sorted(spec.tables) + sorted(spec.vars))
        if name in spec.vars:
            st.journal.append((None, name, "set", st.vars[name]))
            st.vars[name] = value(rng, spec, spec.vars[name][0], keys)
        else:
            info, table = spec.tables[name], st.tables[name]
            live = table.rows and rng.random() < 0.5
            key = rng.choice(list(table.rows)) if live else value(rng, spec, info.key, keys)
            if key in table.rows and rng.random() < 0.5:
                table.remove(key)
            else:
                table.put(key, {f: value(rng, spec, t, keys) for f, t in info.fields})
        if failing_invariants(sem, st) and not walker.broken_after():
            found.append((before, st.snapshot(), failing_invariants(sem, st)))
    return found


@settings(max_examples=300)
@given(gen=specs(), seed=hs.integers(0, 2**16))
def test_the_walks_recheck_finds_every_broken_invariant_on_random_specs(gen, seed):
    """The re-check looks only at what a change can break: a pair in one orientation where the
    test is symmetric (`analysis.symmetric_in`), nothing of an invariant new entries keep true
    (`analysis.true_after_inserts`), the changed entries of `forall v in T` shapes. After random
    changes of random states of random specs, it finds broken whatever the whole check does."""
    rng = random.Random(seed)
    try:
        spec = check_source(SourceFile.of("<gen>", with_recheck_shapes(gen.text, rng)))
    except RegcheckError:
        assume(False)
    assert recheck_disagreements(spec, rng) == []


@pytest.mark.parametrize("invariant, claim", [
    ("forall a in tbl0: not (exists b in tbl1: b.range overlaps a.range)", "true_after_inserts"),
    ("forall a in tbl0: forall b in tbl0: a.key != b.key implies not a.range contains b.range", "symmetric_in"),
])
def test_the_recheck_property_can_fail(invariant, claim, monkeypatch):
    """With new entries claimed to keep every invariant true, or every pair test claimed
    symmetric, the property above finds changes the re-check misses."""
    text = _TWO_TABLES + f'invariant INV-CLAIMED: {invariant} cite DOC "generated"\n'
    assert recheck_disagreements(check_source(SourceFile.of("<gen>", text)), random.Random(1), 300) == []
    monkeypatch.setattr(simulate_module, claim, lambda *args: True)
    # (a spec checked afresh: the walk keeps its plans per semantics)
    assert recheck_disagreements(check_source(SourceFile.of("<gen>", text)), random.Random(1), 300) != []


_TWO_TABLES = """spec gen "two sized tables"
source DOC "generated" "generated"
status int success 0
record Rec0 { sz: u64 }
table tbl0: addr -> Rec0 sized by sz
record Rec1 { sz: u64 }
table tbl1: addr -> Rec1 sized by sz
event op0() -> (o0_0: addr) {
}
"""
