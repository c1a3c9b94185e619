"""ITF export (checker/emit/itf.py, `regcheck itf`): the document's shape, its values, and the model
states along a trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker.emit.itf import SAFE_INT, counterexample_to_itf, encode_value, run_to_itf, trace_to_itf
from checker.language.load import load_spec
from checker.engines.runs import Run, Step
from checker.model.semantics import Semantics
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
ACL = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
CUPVA = {"regcheck": 1, "spec": "cupva", "env": {"driver_version": 2005, "qnx_safety": False}}
BUF = 0x7F3A2C000000
MB = 1 << 20


def write(tmp_path, header, *events, name="t.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in (header, *events)), encoding="utf-8")
    return str(path)


def acl_trace(tmp_path) -> str:
    return write(tmp_path, ACL,
                 {"call": "malloc", "args": {"size": MB}, "out": {"ptr": hex(BUF)}},
                 {"call": "aclrtHostRegisterV2", "args": {"ptr": hex(BUF), "size": MB, "flag": ["ACL_HOST_REG_MAPPED"]}, "ret": 0},
                 {"call": "aclrtHostGetDevicePointer", "args": {"pHost": hex(BUF), "flag": 0}, "ret": 0, "out": {"pDevice": "0x12c0000000"}},
                 {"call": "aclrtHostRegisterV2", "args": {"ptr": hex(BUF), "size": MB, "flag": 2}, "ret": 507910},
                 {"call": "free", "args": {"ptr": hex(BUF)}},
                 {"call": "aclrtHostUnregister", "args": {"ptr": hex(BUF)}, "ret": 0})


def itf_cli(*argv: str) -> tuple[int, str, str]:
    return run_cli("itf", *argv)


def bare_ints(x, path="$") -> list[str]:
    """Places where an integer is a plain JSON number (outside #meta)."""
    found = []
    if isinstance(x, bool):
        return found
    if isinstance(x, int):
        return [path]
    if isinstance(x, dict):
        for k, v in x.items():
            if k != "#meta":
                found += bare_ints(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            found += bare_ints(v, f"{path}[{i}]")
    return found


def check_itf_shape(doc: dict) -> None:
    """The structural rules of ITF (ADR-015) that every export must keep."""
    assert set(doc) <= {"#meta", "params", "vars", "states", "loop"}
    assert isinstance(doc["vars"], list) and len(set(doc["vars"])) == len(doc["vars"])
    for i, st in enumerate(doc["states"]):
        assert st["#meta"]["index"] == i
        assert set(st) == {"#meta", *doc["vars"]}, f"state {i} has other variables"

    def value(v):
        if isinstance(v, (bool, str)):
            return
        if isinstance(v, int):
            assert -SAFE_INT < v < SAFE_INT
            return
        if isinstance(v, list):
            for x in v:
                value(x)
            return
        assert isinstance(v, dict)
        if "#bigint" in v:
            assert set(v) == {"#bigint"} and isinstance(v["#bigint"], str)
            int(v["#bigint"])
        elif "#map" in v:
            assert set(v) == {"#map"}
            for pair in v["#map"]:
                assert len(pair) == 2
                value(pair[0]), value(pair[1])
        elif "#set" in v or "#tup" in v:
            assert len(v) == 1
            for x in next(iter(v.values())):
                value(x)
        else:
            assert not any(k.startswith("#") for k in v)
            for x in v.values():
                value(x)
    for st in doc["states"]:
        for k, v in st.items():
            if k != "#meta":
                value(v)


def decode(v):
    """ITF value -> Python (the inverse of encode_value, for checking)."""
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if "#bigint" in v:
            return int(v["#bigint"])
        if "#map" in v:
            return {decode(k): decode(x) for k, x in v["#map"]}
        if "#set" in v:
            return [decode(x) for x in v["#set"]]
        if "#tup" in v:
            return tuple(decode(x) for x in v["#tup"])
        return {k: decode(x) for k, x in v.items()}
    return v


# ---------------------------------------------------------------- the document


def test_shape_and_bigints(tmp_path):
    doc = trace_to_itf(acl_trace(tmp_path))
    check_itf_shape(doc)
    assert doc["vars"] == ["os_kernel", "product", "host_allocs", "regs", "action", "last_call", "findings"]
    assert len(doc["states"]) == 7  # the initial state and one per event
    assert bare_ints(doc["states"]) == []  # every integer is a #bigint by default
    meta = doc["#meta"]
    assert meta["format"] == "ITF" and meta["spec"] == "acl" and meta["verdict"] == "violates" and meta["events"] == 6


def test_states_follow_the_semantics(tmp_path):
    states = [decode({k: v for k, v in s.items() if k != "#meta"}) for s in trace_to_itf(acl_trace(tmp_path))["states"]]
    s0, s1, s2, s3, s4, s5, s6 = states
    assert (s0["action"], s0["host_allocs"], s0["regs"]) == ("init", {}, {})
    assert s0["os_kernel"] == (6, 6) and s0["product"] == "AtlasA2"
    assert s1["host_allocs"] == {BUF: {"size": MB, "origin": "MALLOC", "locked": False}}
    assert s2["regs"] == {BUF: {"size": MB, "flags": 2, "dev": 0}}
    assert s3["regs"][BUF]["dev"] == 0x12C0000000 and s3["last_call"]["out"] == {"pDevice": 0x12C0000000}
    # A recorded failure leaves the state as it was.
    assert s4["last_call"]["ret"] == 507910 and s4["last_call"]["applied"] is False and s4["regs"] == s3["regs"]
    # Freeing registered memory is a usage finding; the free still happens, the registration stays.
    assert s5["host_allocs"] == {} and s5["regs"] == s3["regs"]
    assert [(f["kind"], f["rule"]) for f in s5["findings"]] == [("usage", "ACL-FREE-REGISTERED")]
    assert s6["regs"] == {} and s6["findings"] == [] and s6["last_call"]["line"] == 7
    assert s2["last_call"]["args"] == {"ptr": BUF, "size": MB, "flag": 2}


def test_ints_auto_keeps_precision(tmp_path):
    big = 0xFFFF_FFFF_FFF0_0000
    path = write(tmp_path, ACL, {"call": "malloc", "args": {"size": 4096}, "out": {"ptr": hex(big)}})
    doc = trace_to_itf(path, ints="auto")
    check_itf_shape(doc)
    last = doc["states"][-1]
    assert last["host_allocs"]["#map"][0][0] == {"#bigint": str(big)}  # above 2**53: never a JSON number
    assert last["host_allocs"]["#map"][0][1]["size"] == 4096
    assert encode_value(SAFE_INT - 1, "auto") == SAFE_INT - 1 and encode_value(-SAFE_INT, "auto") == {"#bigint": str(-SAFE_INT)}
    with pytest.raises(ValueError):
        trace_to_itf(path, ints="json")


def test_cupva_enums_bools_and_vars(tmp_path):
    path = write(tmp_path, {**CUPVA, "env": {"driver_version": 2006, "qnx_safety": True}},
                 {"call": "cudaMalloc", "args": {"size": MB}, "out": {"devPtr": "0x302000000"}},
                 {"call": "cupva::mem::Register", "args": {"ptr": "0x302000000", "size": MB, "externalAllocType": "CUDA"}, "ret": "ok"},
                 {"call": "vm_state", "args": {"state": "Operational"}})
    doc = trace_to_itf(path)
    check_itf_shape(doc)
    assert doc["vars"][:5] == ["driver_version", "qnx_safety", "vm", "cuda_disabled", "cuda_interop_used"]
    last = decode(doc["states"][-1])
    assert last["vm"] == "Operational" and last["cuda_interop_used"] is True and last["qnx_safety"] is True
    assert last["regs"] == {0x302000000: {"size": MB, "kind": "CUDA"}}
    assert decode(doc["states"][2])["last_call"]["ret"] == "ok"


def test_max_events(tmp_path):
    doc = trace_to_itf(acl_trace(tmp_path), max_events=2)
    assert len(doc["states"]) == 3 and doc["#meta"]["truncated"] is True and doc["#meta"]["events"] == 2


def test_a_reader_of_the_format_reads_it(tmp_path):
    itf_py = pytest.importorskip("itf_py", reason="itf-py (an independent ITF reader) is not installed")
    trace = itf_py.trace_from_json(trace_to_itf(acl_trace(tmp_path)))
    assert len(trace.states) == 7
    assert dict(trace.states[2].values["regs"])[BUF].flags == 2


# ---------------------------------------------------------------- runs and counterexamples


def test_run_to_itf_applies_successes_only():
    spec = load_spec("acl")
    run = Run("acl", {}, (
        Step("malloc", {"size": 4096}, {"ptr": 0x10000}),
        Step("aclrtHostRegisterV2", {"ptr": 0x10000, "size": 4096, "flag": 2}, {}, 0),
        Step("aclrtHostUnregister", {"ptr": 0x10000}, {}, 107000),
    ))
    doc = run_to_itf(spec, run)
    check_itf_shape(doc)
    regs = [decode(s["regs"]) for s in doc["states"]]
    assert regs == [{}, {}, {0x10000: {"size": 4096, "flags": 2, "dev": 0}}, {0x10000: {"size": 4096, "flags": 2, "dev": 0}}]
    assert [s["action"] for s in doc["states"]] == ["init", "malloc", "aclrtHostRegisterV2", "aclrtHostUnregister"]


def test_counterexample_to_itf():
    spec = load_spec("acl")
    sem = Semantics(spec, {})
    pre = sem.initial_state()
    sem.apply(pre, "malloc", {"size": 4096}, {"ptr": 0x10000})
    post = sem.successor(pre, "aclrtHostRegisterV2", {"ptr": 0x10000, "size": 4096, "flag": 2})
    cex = type("Cex", (), dict(env={}, pre=pre, call="aclrtHostRegisterV2", inputs={"ptr": 0x10000, "size": 4096, "flag": 2},
                               outputs={}, post=post, rules=("ACL-REG-EFFECT",), failing=("ACL-INV-X",)))()
    doc = counterexample_to_itf(spec, cex)
    check_itf_shape(doc)
    assert len(doc["states"]) == 2 and doc["#meta"]["failing"] == ["ACL-INV-X"]
    assert decode(doc["states"][0]["regs"]) == {} and 0x10000 in decode(doc["states"][1]["regs"])


# ---------------------------------------------------------------- the command


def test_cli_writes_a_file(tmp_path):
    out = tmp_path / "run.itf.json"
    code, stdout, err = itf_cli(acl_trace(tmp_path), "-o", str(out))
    assert code == 0 and stdout == ""
    assert err.strip() == f"{out}: 7 states (6 events; the trace violates)"
    doc = json.loads(out.read_text())
    check_itf_shape(doc)
    assert doc == json.loads(json.dumps(trace_to_itf(acl_trace(tmp_path))))


def test_cli_stdout_and_auto_ints(tmp_path):
    code, stdout, _ = itf_cli(acl_trace(tmp_path), "--ints", "auto")
    doc = json.loads(stdout)
    assert code == 0
    check_itf_shape(doc)
    assert doc["states"][1]["host_allocs"]["#map"][0][0] == BUF


def test_cli_stdout_holds_no_raw_terminal_controls(tmp_path):
    """The trace's name is in #meta: DEL, the 8-bit ESC [ and U+202E in it went to standard output raw
    (the JSON writer escapes only C0 controls); they are \\u escapes now, the same string to a reader."""
    src = tmp_path / "t\x7f\x9b2J\u202e.jsonl"
    Path(acl_trace(tmp_path)).rename(src)
    code, stdout, _ = itf_cli(str(src))
    assert code == 0 and str(src) in json.dumps(json.loads(stdout)["#meta"], ensure_ascii=False)
    assert "\\u202e" in stdout and not any(c in stdout for c in "\x7f\x9b\u202e")


def test_cli_input_error_leaves_no_file(tmp_path):
    path = write(tmp_path, ACL, {"call": "malloc", "args": {"size": 4096}, "out": {"ptr": "0x10000"}},
                 {"call": "mmap", "args": {}})
    out = tmp_path / "x.itf.json"
    code, stdout, err = itf_cli(path, "-o", str(out))
    assert code == 2 and "error[T0730]" in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.glob("*.partial")) == []
    code, stdout, err = itf_cli(str(tmp_path / "missing.jsonl"))
    assert code == 2 and stdout == "" and "error[T0712]" in err


def test_cli_bad_max_events(tmp_path):
    code, _, err = itf_cli(acl_trace(tmp_path), "--max-events", "-1")
    assert code == 2 and "must be 0 or more" in err


def test_corpus_traces_all_export(tmp_path):
    # Every trace of the corpus exports to a well-formed document with one state per event + 1.
    sample = sorted((REPO / "traces").glob("*/*.jsonl"))[::7]
    assert len(sample) >= 5 and {t.parent.name for t in sample} >= {"acl", "cupva"}
    for trace in sample:
        doc = trace_to_itf(str(trace))
        check_itf_shape(doc)
        assert len(doc["states"]) == doc["#meta"]["events"] + 1


# ---------------------------------------------------------------- counterexamples from the command line

SEEDED = REPO / "tests" / "seeded_bugs"


cli = run_cli  # `regcheck ARGV...` in this process: (exit code, stdout, stderr)


def test_bmc_itf_is_the_violating_run(tmp_path):
    spec_path = str(SEEDED / "acl_free_forgets_registrations.spec")
    trace, itf = tmp_path / "ff.jsonl", tmp_path / "ff.itf.json"
    code, out, _ = cli("bmc", spec_path, "--depth", "3", "--out", str(trace), "--itf", str(itf))
    assert code == 1 and f"ITF written to {itf}" in out
    doc = json.loads(itf.read_text())
    check_itf_shape(doc)
    assert bare_ints(doc["states"]) == []
    events = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    # One state per step of the trace bmc wrote, plus the initial state; the same calls in order.
    assert [s["action"] for s in doc["states"]] == ["init"] + [e["call"] for e in events]
    assert [decode(s["last_call"]["args"]) for s in doc["states"][1:]] == [e["args"] for e in events]
    # The last state breaks the invariant: a registration with no allocation holding it.
    last = decode(doc["states"][-1])
    assert last["regs"] and not last["host_allocs"]
    assert "ACL-INV-REG-IN-ALLOC" in doc["#meta"]["description"]
    # The same run, replayed by the replayer from the trace bmc wrote, gives the same final state.
    replayed = decode(trace_to_itf(str(trace))["states"][-1])
    assert (replayed["regs"], replayed["host_allocs"]) == (last["regs"], last["host_allocs"])


def test_bmc_itf_json_and_no_violation(tmp_path):
    itf = tmp_path / "none.itf.json"
    code, out, _ = cli("bmc", "acl", "--depth", "1", "--itf", str(itf))
    assert code == 0 and not itf.exists() and "no ITF written" in out
    spec_path = str(SEEDED / "acl_free_forgets_registrations.spec")
    code, out, _ = cli("bmc", spec_path, "--depth", "3", "--out", str(tmp_path / "t.jsonl"), "--itf", str(itf),
                       "--format", "json")
    assert code == 1 and json.loads(out)["itf"] == str(itf) and itf.exists()


def test_prove_itf_writes_each_counterexample(tmp_path):
    spec_path = str(SEEDED / "acl_free_forgets_registrations.spec")
    out_dir = tmp_path / "cex"
    code, out, _ = cli("prove", spec_path, "--no-consistency", "--no-guards", "--reach-depth", "3",
                       "--itf", str(out_dir), "--format", "json")
    report = json.loads(out)
    assert code == 1
    refuted = [o for o in report["obligations"] if o["verdict"] != "PROVED"]
    assert refuted and all(o["itf"] for o in refuted if o["counterexample"])
    assert all(o["itf"] is None for o in report["obligations"] if o["verdict"] == "PROVED")
    for o in refuted:
        doc = json.loads(Path(o["itf"]).read_text())
        check_itf_shape(doc)
        pre, post = (decode(s) for s in doc["states"])
        cex = o["counterexample"]
        assert post["action"] == o["call"] == cex["call"] and pre["action"] == "init"
        assert post["last_call"]["args"] == cex["args"]
        assert doc["#meta"]["failing"] == cex["fails"] and o["property"] in doc["#meta"]["failing"]
        for table in ("host_allocs", "regs"):  # the states are the counterexample's
            assert sorted(pre[table]) == sorted(row["key"] for row in cex["pre"][table])
            assert sorted(post[table]) == sorted(row["key"] for row in cex["post"][table])
    reached = [r for r in report["reach"] if r["itf"]]
    assert reached and Path(reached[0]["itf"]).exists()
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(
        {Path(o["itf"]).name for o in refuted} | {Path(r["itf"]).name for r in reached})


def test_prove_itf_text_names_the_files(tmp_path):
    code, out, _ = cli("prove", str(SEEDED / "acl_overlap_start_only.spec"), "--no-consistency", "--no-guards",
                       "--reach-depth", "0", "--itf", str(tmp_path))
    assert code == 1
    named = [line.split("itf:", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("itf:")]
    assert named and all(Path(p).exists() for p in named)


def test_a_reader_of_the_format_reads_counterexamples(tmp_path):
    itf_py = pytest.importorskip("itf_py", reason="itf-py (an independent ITF reader) is not installed")
    itf = tmp_path / "ff.itf.json"
    cli("bmc", str(SEEDED / "acl_free_forgets_registrations.spec"), "--depth", "3", "--out", str(tmp_path / "t.jsonl"),
        "--itf", str(itf))
    trace = itf_py.trace_from_json(json.loads(itf.read_text()))
    assert [s.values["action"] for s in trace.states][0] == "init" and len(trace.states) == 4
    assert len(dict(trace.states[-1].values["regs"])) == 1 and dict(trace.states[-1].values["host_allocs"]) == {}
    cli("prove", str(SEEDED / "acl_overlap_start_only.spec"), "--no-consistency", "--no-guards", "--reach-depth", "0",
        "--itf", str(tmp_path / "cex"))
    for path in (tmp_path / "cex").iterdir():
        cex = itf_py.trace_from_json(json.loads(path.read_text()))
        assert len(cex.states) == 2 and cex.states[1].values["action"] == "aclrtHostRegisterV2"


def test_a_success_whose_effect_was_undone_is_not_applied(tmp_path):
    """`applied` is false for a recorded success whose effect could not be evaluated (an update of an
    absent entry: the effect is undone, docs/language.md), true once the entry is there."""
    from tests.test_prover import UPDATE_OF_ABSENT
    spec = tmp_path / "m.spec"
    spec.write_text(UPDATE_OF_ABSENT)
    trace = tmp_path / "t.jsonl"
    lines = [{"regcheck": 1, "spec": "m.spec"}, {"call": "poke", "args": {"m": "On"}, "ret": 0},
             {"call": "init", "args": {"m": "On"}, "ret": 0}, {"call": "poke", "args": {"m": "On"}, "ret": 0}]
    trace.write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc = trace_to_itf(str(trace))
    assert [s["last_call"]["applied"] for s in doc["states"][1:]] == [False, True, True]


def test_a_spec_name_like_an_event_variable_keeps_its_own(tmp_path):
    """Found by testing: a spec's `action`, `last_call` or `findings` was overwritten by the event's,
    and `vars` named them twice."""
    spec = tmp_path / "clash.spec"
    spec.write_text('spec clash "names"\nsource DOC "d.txt" "doc"\nstatus int success 0\nparam findings: int = 7\n'
                    'var action: bool = false\nvar last_call: int = 0\n'
                    'call reg(x: int) {\n  effect C-E: { action = true\n last_call = x }\n    cite DOC "e"\n}\n')
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"regcheck":1,"spec":"clash.spec"}\n{"call":"reg","args":{"x":5},"ret":0}\n')
    doc = trace_to_itf(str(trace), ints="auto")
    assert len(doc["vars"]) == len(set(doc["vars"]))
    last = doc["states"][-1]
    assert (last["findings"], last["action"], last["last_call"]) == (7, True, 5)
    assert last["regcheck_action"] == "reg" and last["regcheck_last_call"]["call"] == "reg"
    assert "regcheck_findings" in last
