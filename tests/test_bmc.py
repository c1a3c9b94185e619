"""Bounded model checking: shortest violating runs, written as traces the replayer accepts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import orjson
import pytest

from checker.engines.bmc import search_violation
from checker.language.load import load_spec
from checker.engines.replay import replay_trace
from checker.engines.runs import failing_invariants, replay_prefix, semantics_for
from checker.symbolic.solver import Witness
from checker.trace.reader import read_trace
from tests.helpers import run_cli

SEEDED = Path(__file__).parent / "seeded_bugs"
SCHEMA = json.loads((Path(__file__).parent.parent / "checker" / "schemas" / "trace-v1.schema.json").read_text())


@pytest.mark.parametrize("name", ["acl", "cupva"])
def test_no_violation_in_the_bundled_specs(name):
    result = search_violation(load_spec(name), name, 3)
    assert result.witness is Witness.NONE and result.violation is None
    assert [d for d, _ in result.queries] == [0, 1, 2, 3] * 2  # the invariants at each depth, then TYPES


@pytest.mark.parametrize("table, field, value, typed", [
    ("regs", "flags", 2**32 - 1, True), ("regs", "flags", 2**32, False), ("regs", "size", -1, False),
    ("host_allocs", "origin", "MALLOC_HOST", True), ("host_allocs", "origin", "MMAP", False),
    ("host_allocs", "locked", 7, True),  # TYPES checks ranges and enum members, not a value's kind
])
def test_types_is_the_range_and_membership_of_every_stored_value(table, field, value, typed):
    sem = semantics_for(load_spec("acl"), {})
    st = sem.initial_state()
    row = {"regs": {"size": 4096, "flags": 2, "dev": 0},
           "host_allocs": {"size": 4096, "origin": "MALLOC", "locked": False}}
    st.tables[table].put(0x10_0000, {**row[table], field: value})
    assert ("TYPES" not in failing_invariants(sem, st)) is typed


def test_finds_the_shortest_violation_and_replays_it_concretely():
    path = str(SEEDED / "acl_overlap_start_only.spec")
    spec = load_spec(path)
    result = search_violation(spec, path, 4)
    assert result.witness is Witness.FOUND
    v = result.violation
    assert v.invariants == ("ACL-INV-NO-OVERLAP",)
    assert len(v.run.steps) == 3  # an allocation and two registrations: nothing shorter breaks it
    assert [s.call for s in v.run.steps[1:]] == ["aclrtHostRegisterV2"] * 2
    sem = semantics_for(spec, v.run.env)
    final = replay_prefix(sem, v.run.steps)
    assert final is not None and failing_invariants(sem, final) == ["ACL-INV-NO-OVERLAP"]
    assert len(v.states) == len(v.run.steps) + 1 and v.states[-1] == final


def test_one_step_violation():
    path = str(SEEDED / "acl_mallochost_pageable.spec")
    v = search_violation(load_spec(path), path, 3).violation
    assert [s.call for s in v.run.steps] == ["aclrtMallocHost"] and v.run.steps[0].status == 0


def test_a_fixed_configuration_decides_the_aliasing_rule():
    path = str(SEEDED / "cupva_overlap_unchecked.spec")
    spec = load_spec(path)
    auto = search_violation(spec, path, 4, env={"driver_version": 2006, "qnx_safety": False})
    assert auto.witness is Witness.NONE  # driver >= 2006: explicit CUDA registration has no effect
    old = search_violation(spec, path, 4, env={"driver_version": 2005})
    assert old.witness is Witness.FOUND and old.violation.run.env["driver_version"] == 2005


def test_depth_bounds_the_search():
    path = str(SEEDED / "acl_overlap_start_only.spec")
    assert search_violation(load_spec(path), path, 2).witness is Witness.NONE


def test_cli_writes_a_trace_the_replayer_accepts(tmp_path):
    spec_path = str(SEEDED / "acl_free_forgets_registrations.spec")
    out_path = tmp_path / "v.jsonl"
    code, out, _ = run_cli("bmc", spec_path, "--depth", "4", "--out", str(out_path))
    assert code == 1 and "violation: a run of 3 steps breaks ACL-INV-REG-IN-ALLOC" in out
    for line in out_path.read_bytes().splitlines():
        jsonschema.validate(orjson.loads(line), SCHEMA)
    header, events = read_trace(out_path)
    assert header.spec == spec_path and [e.call for e in events][-1] == "free"
    report = replay_trace(str(out_path))
    assert report.verdict == "conforms" and report.events == 3  # every step keeps its obligations


def test_cli_no_violation_and_json(tmp_path):
    code, out, _ = run_cli("bmc", "cupva", "--depth", "2")
    assert code == 0 and "no invariant violation in any run of up to 2 steps" in out
    code, out, _ = run_cli("bmc", str(SEEDED / "cupva_auto_cuda_recorded.spec"), "--depth", "2", "--format", "json",
                           "--out", str(tmp_path / "x.jsonl"), "--env", "driver_version=2006")
    data = json.loads(out)
    assert code == 1 and data["witness"] == "FOUND" and "PVA-INV-AUTO-NO-EXPLICIT" in data["invariants"]
    assert data["run"]["header"]["env"]["driver_version"] == 2006


def test_cli_bad_input_exits_2():
    assert run_cli("bmc", "acl", "--depth", "2", "--invariant", "NO-SUCH-RULE")[0] == 2
    assert run_cli("bmc", "acl", "--depth", "2", "--env", "bogus=1")[0] == 2
    assert run_cli("bmc", "acl", "--depth", "2", "--env", "noequals")[0] == 2
    assert run_cli("bmc", "acl")[0] == 2  # --depth is required


BIG_COUNTER = """spec big "a counter past 64 bits"
source DOC "doc.txt" "a document"
status int success 0
var total: int = 0
invariant B-SMALL: total < 2 ** 70
  cite DOC "small"
call poke(x: int) {
  effect B-EFF: { total = x }
    cite DOC "set"
}
"""


def test_a_violation_whose_run_no_trace_can_carry_is_still_reported(tmp_path):
    """Found by testing: a run with an `int` past 64 bits lost its violation to the trace writer's
    T0706 (exit 2), and --format json to a traceback."""
    spec = tmp_path / "big.spec"
    spec.write_text(BIG_COUNTER)
    out_path = tmp_path / "v.jsonl"
    code, out, err = run_cli("bmc", str(spec), "--depth", "2", "--out", str(out_path))
    assert code == 1 and "violation: a run of 1 step breaks B-SMALL" in out, err
    assert "no trace written: cannot write: Integer exceeds 64-bit range (T0706" in out and not out_path.exists()
    code, out, err = run_cli("bmc", str(spec), "--depth", "2", "--out", str(out_path), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["invariants"] == ["B-SMALL"] and doc["trace"] is None
    assert "T0706" in doc["trace_not_written"]
    assert doc["run"]["events"][0]["args"]["x"] >= 2**70 and not out_path.exists()


def test_an_itf_output_that_cannot_be_written_leaves_no_trace_either(tmp_path):
    """Found by testing: the trace was written, then the ITF output failed (exit 2)."""
    out_path, itf = tmp_path / "v.jsonl", tmp_path / "a-directory"
    itf.mkdir()
    code, _, err = run_cli("bmc", str(SEEDED / "acl_free_forgets_registrations.spec"), "--depth", "4",
                           "--out", str(out_path), "--itf", str(itf))
    assert code == 2 and "error[E0603]" in err and "it is a directory" in err and not out_path.exists()


ABSENT_READS = """\
spec absent "read of an absent entry in an effect"
source DOC "doc.txt" "a document"
status int success 0
record R { size: u64 }
table T: u64 -> R
var n: int = 0
call put(k: u64) {
  effect A-PUT: { T[k] = { size: 5 } }
    cite DOC "put"
}
call rd(k: u64) {
  effect A-RD: { n = T[k].size }
    cite DOC "rd"
}
call upd(k: u64, j: u64) {
  effect A-UPD: { T[k].size = T[j].size + 1 }
    cite DOC "upd"
}
invariant A-N: n == 0 or n == 5
  cite DOC "n"
invariant A-S: forall r in T: r.size == 5 or r.size == 6 or r.size == 7
  cite DOC "s"
"""


def test_an_effect_that_reads_an_absent_entry_is_undone_as_in_replay(tmp_path):
    """Found by testing: the encoding read an absent `T[j]` as 0 where the semantics undoes the
    effect, so the solver's run did not replay and bmc said UNKNOWN (encoding bug) where simulate
    found put, upd, rd."""
    path = tmp_path / "absent.spec"
    path.write_text(ABSENT_READS)
    spec = load_spec(str(path))
    result = search_violation(spec, str(path), 3)
    assert result.witness is Witness.FOUND and result.violation.invariants == ("A-N",)
    assert [s.call for s in result.violation.run.steps] == ["put", "upd", "rd"]


COUNTER_AT_MAX = """\
spec ovf "u32 counter at max"
source DOC "doc.txt" "a document"
status int success 0
var c: u32 = 4294967295
call inc() {
  effect O-EFF: { c = c + 1 }
    cite DOC "adds"
}
"""


def test_a_value_outside_its_type_is_a_types_violation(tmp_path):
    """Found by testing: bmc searched for broken invariants only, so it found nothing where simulate
    and prove found the u32 overflow (TYPES), though docs/prover.md says bmc checks TYPES."""
    path = tmp_path / "ovf.spec"
    path.write_text(COUNTER_AT_MAX)
    spec = load_spec(str(path))
    result = search_violation(spec, str(path), 2)
    assert result.witness is Witness.FOUND and result.violation.invariants == ("TYPES",)
    assert [s.call for s in result.violation.run.steps] == ["inc"]
    assert result.violation.states[-1].vars == {"c": 2**32}
    assert search_violation(spec, str(path), 2, invariants=["TYPES"]).witness is Witness.FOUND
    assert search_violation(spec, str(path), 2, invariants=[]).witness is Witness.NONE
    out_path = tmp_path / "v.jsonl"
    code, out, err = run_cli("bmc", str(path), "--depth", "2", "--out", str(out_path), "--invariant", "TYPES")
    assert code == 1 and "breaks TYPES" in out, err
    report = replay_trace(str(out_path))
    assert report.verdict == "conforms" and report.events == 1


VERSION_ARGUMENT = """\
spec vgap "a version argument"
source DOC "doc.txt" "a document"
status int success 0
var hit: bool = false
call g(w: version) {
  requires G-W: w > 1.2 and w < 1.3
    cite DOC "w between"
  effect G-EFF: { hit = true }
    cite DOC "hit"
}
invariant G-HIT: not hit
  cite DOC "never hit"
"""


def test_a_version_argument_is_written_as_the_list_of_its_numbers(tmp_path):
    """Found by testing: bmc wrote a version argument as "1.2.1", which the trace reader rejects as a
    bad integer (docs/trace-format.md: a version in `args` is the array of its numbers), so no trace
    was written."""
    path = tmp_path / "vgap.spec"
    path.write_text(VERSION_ARGUMENT)
    out_path = tmp_path / "v.jsonl"
    code, out, err = run_cli("bmc", str(path), "--depth", "2", "--out", str(out_path))
    assert code == 1 and "breaks G-HIT" in out and out_path.exists(), out + err
    w = orjson.loads(out_path.read_bytes().splitlines()[1])["args"]["w"]
    assert isinstance(w, list) and (1, 2) < tuple(w) < (1, 3)
    report = replay_trace(str(out_path))
    assert report.verdict == "conforms" and report.events == 1


VERSION_PARAMETER = """\
spec vgap "a version parameter longer than the literals"
source DOC "doc.txt" "a document"
status int success 0
param kv: version = 1.2
var hit: bool = false
call g(w: version) {
  requires G-W: w > 1.2 and w < kv
    cite DOC "w between"
  effect G-EFF: { hit = true }
    cite DOC "hit"
}
invariant G-HIT: not hit
  cite DOC "never hit"
"""


@pytest.mark.parametrize("kv", ["1.2.3.4", "1.2.3.4.5.6.7.8"])
def test_a_configured_version_longer_than_the_literals_is_encoded_exactly(tmp_path, kv):
    """Found by testing: versions had room for the spec's literals only, so kv=1.2.3.4 was encoded
    as 1.2.1, no version lay between 1.2 and it, and bmc missed the violation (and printed kv=1.2.1)."""
    path = tmp_path / "vgap.spec"
    path.write_text(VERSION_PARAMETER)
    result = search_violation(load_spec(str(path)), str(path), 2, env={"kv": kv})
    assert result.witness is Witness.FOUND and result.violation.invariants == ("G-HIT",)
    want = tuple(int(p) for p in kv.split("."))
    assert result.violation.run.env["kv"] == want
    assert (1, 2) < result.violation.run.steps[0].inputs["w"] < want


UNEVALUABLE_INVARIANT_SPEC = """spec unevaluable "an invariant that cannot be evaluated where bmc finds it broken"
source DOC "d" "d"
status int success 0
var n: int = 1
call setn(v: int) {
  effect UNEV-E: { n = v } cite DOC "d"
}
invariant UNEV-I: 10 % n != 7 cite DOC "d"
"""


@pytest.mark.parametrize("command", [["bmc", "--depth", "2"], ["prove", "--no-consistency", "--no-guards"]])
def test_an_invariant_that_cannot_be_evaluated_where_the_search_finds_it_is_broken(tmp_path, monkeypatch, command):
    """Found by testing: the encoding leaves definedness out, so the solver may take `10 % 0` to be 7
    and find UNEV-I broken at n = 0; confirming that run with the concrete semantics raised
    EvalError out of `bmc` and `prove`'s reachability search (a traceback, exit 3). An invariant that
    cannot be evaluated breaks them all, as `simulate` has it (`failing_invariants`)."""
    monkeypatch.chdir(tmp_path)  # (bmc writes its trace here)
    path = tmp_path / "unevaluable.spec"
    path.write_text(UNEVALUABLE_INVARIANT_SPEC, encoding="utf-8")
    code, out, err = run_cli(command[0], str(path), *command[1:])
    assert code == 1 and "Traceback" not in err, err
    assert "setn(v=0)" in out and "breaks UNEV-I" in out
