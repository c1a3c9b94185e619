"""Random simulation with the concrete semantics: deterministic, finds seeded bugs, writes traces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checker.language.load import load_spec
from checker.engines.replay import replay_trace
from checker.engines.runs import failing_invariants, replay_prefix, semantics_for
from checker.engines.simulate import SimulationOptions, simulate
from tests.helpers import run_cli

SEEDED = Path(__file__).parent / "seeded_bugs"


def test_simulation_does_not_use_the_solver():
    code = "import checker.engines.simulate, sys; sys.exit('z3' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent.parent).returncode == 0


@pytest.mark.parametrize("name", ["acl", "cupva", "cuda", "hip"])
def test_no_violation_in_the_bundled_specs(name):
    result = simulate(load_spec(name), name, SimulationOptions(runs=150, steps=40, seed=7))
    assert result.violation is None and result.runs == 150
    assert result.steps > 150 * 20 and result.successes > 0
    effects = {r.rule for r in load_spec(name).rules.values() if r.kind == "effect"}
    assert effects <= set(result.rules_seen)  # every success effect ran at least once


def test_same_seed_same_walk():
    spec = load_spec("acl")
    a = simulate(spec, "acl", SimulationOptions(runs=20, steps=30, seed=3))
    b = simulate(spec, "acl", SimulationOptions(runs=20, steps=30, seed=3))
    c = simulate(spec, "acl", SimulationOptions(runs=20, steps=30, seed=4))
    assert (a.steps, a.successes, a.rules_seen) == (b.steps, b.successes, b.rules_seen)
    assert (a.steps, a.rules_seen) != (c.steps, c.rules_seen)


@pytest.mark.parametrize("name, env, invariant", [
    ("acl_free_forgets_registrations", None, "ACL-INV-REG-IN-ALLOC"),
    ("acl_mallochost_pageable", None, "ACL-INV-MALLOC-HOST-LOCKED"),
    ("acl_devptr_kept_after_unregister", None, "ACL-INV-DEV-ONLY-MAPPED"),
    ("acl_overlap_start_only", {"product": "AtlasA2"}, "ACL-INV-NO-OVERLAP"),
    ("cupva_overlap_unchecked", {"driver_version": 2005}, "PVA-INV-NO-OVERLAP"),
    ("cupva_auto_cuda_recorded", None, "PVA-INV-AUTO-NO-EXPLICIT"),
])
def test_finds_seeded_bugs_with_a_short_replayable_run(name, env, invariant):
    path = str(SEEDED / f"{name}.spec")
    spec = load_spec(path)
    result = simulate(spec, path, SimulationOptions(runs=400, steps=50, seed=1, env=env))
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
