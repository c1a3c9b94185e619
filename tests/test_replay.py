"""Focused tests of `regcheck replay` (checker/engines/replay.py, checker/cli/replay.py), run in-process.

Each test writes a small trace to a temporary directory, so the trace and the expectation sit
side by side. The corpus under traces/ is tested in tests/test_corpus.py.
"""

from __future__ import annotations

import json
from collections import deque
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.engines.replay import CALL_BITS, MadeLines, RemovalIndex, _python_remembering, _remembering
from checker.fast.fastpath import CountingWindow
from checker.model.state import NATIVE
from tests.helpers import outcome, run_cli

ACL = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
CUPVA = {"regcheck": 1, "spec": "cupva", "env": {"driver_version": 2005, "qnx_safety": False}}

BUF = "0x7f3a2c000000"
DEV = "0x302000000"
MB = 1048576


def malloc(ptr=BUF, size=MB, **kw):
    return {"call": "malloc", "args": {"size": size}, "out": {"ptr": ptr}, **kw}


def register(ptr=BUF, size=MB, flag=("ACL_HOST_REG_MAPPED",), ret=0, **kw):
    return {"call": "aclrtHostRegisterV2", "args": {"ptr": ptr, "size": size, "flag": list(flag)}, "ret": ret, **kw}


def unregister(ptr=BUF, ret=0, **kw):
    return {"call": "aclrtHostUnregister", "args": {"ptr": ptr}, "ret": ret, **kw}


def free(ptr=BUF, **kw):
    return {"call": "free", "args": {"ptr": ptr}, **kw}


def cuda_malloc(ptr=DEV, size=MB):
    return {"call": "cudaMalloc", "args": {"size": size}, "out": {"devPtr": ptr}}


def pva_register(ptr=DEV, size=MB, kind="CUDA", ret="ok", **kw):
    return {"call": "cupva::mem::Register", "args": {"ptr": ptr, "size": size, "externalAllocType": kind}, "ret": ret, **kw}


def pva_unregister(ptr=DEV, ret="ok", **kw):
    return {"call": "cupva::mem::Unregister", "args": {"ptr": ptr}, "ret": ret, **kw}


def vm(state):
    return {"call": "vm_state", "args": {"state": state}}


@pytest.fixture
def trace(tmp_path):
    """trace(header, *events, name=...) -> path of a new trace file (the header is line 1)."""
    count = 0

    def write(header, *events, name=None):
        nonlocal count
        count += 1
        path = tmp_path / (name or f"t{count}.jsonl")
        path.write_text("".join(json.dumps(x) + "\n" for x in (header, *events)), encoding="utf-8")
        return str(path)
    return write


def run(*argv: str) -> tuple[int, str, str]:
    return run_cli("replay", *argv)


def run_json(*argv: str) -> tuple[int, dict]:
    code, out, err = run("--format", "json", *argv)
    assert err == ""
    return code, json.loads(out)


def findings(path: str, *extra: str) -> list[dict]:
    return run_json(*extra, path)[1]["findings"]


# ---------------------------------------------------------------- input errors


INPUT_ERRORS = {
    "unknown call": (ACL, [malloc(), {"call": "aclrtHostRegister", "args": {"ptr": BUF, "size": MB, "type": 0}, "ret": 0}],
                     "T0730", 3),
    "missing argument": (ACL, [malloc(), {"call": "aclrtHostRegisterV2", "args": {"ptr": BUF, "size": MB}, "ret": 0}],
                         "T0731", 3),
    "unknown argument": (ACL, [{"call": "aclrtHostUnregister", "args": {"ptr": BUF, "flags": 0}, "ret": 0}], "T0732", 2),
    "unknown output": (ACL, [{"call": "malloc", "args": {"size": 4096}, "out": {"ptr": BUF, "usable": 4096}}], "T0732", 2),
    "enum member": (CUPVA, [cuda_malloc(), pva_register(kind="CUDAX")], "T0733", 3),
    "negative address": (ACL, [malloc(), register(ptr=-4096)], "T0733", 3),
    "unknown flag name": (ACL, [malloc(), register(flag=["ACL_HOST_REG_MAPED"])], "T0733", 3),
    "integer status for cupva": (CUPVA, [cuda_malloc(), pva_register(ret=0)], "T0733", 3),
    "name status for acl": (ACL, [malloc(), register(ret="ACL_SUCCESS")], "T0733", 3),
    "missing ret": (ACL, [malloc(), {"call": "aclrtHostUnregister", "args": {"ptr": BUF}}], "T0734", 3),
    "missing output of a successful call": (ACL, [{"call": "aclrtMallocHost", "args": {"size": 4096}, "ret": 0}], "T0735", 2),
    "missing output of an event": (ACL, [malloc(), {"call": "malloc", "args": {"size": 4096}}], "T0735", 3),
    "unknown env parameter": ({**ACL, "env": {"os_kernel": "6.6", "kernel": "6.6"}}, [malloc()], "T0720", 1),
    "bad env value": ({**ACL, "env": {"product": "Atlas9000"}}, [malloc()], "T0721", 1),
    "bad env version": ({**ACL, "env": {"os_kernel": "six"}}, [malloc()], "T0721", 1),
    "bad env type": ({**CUPVA, "env": {"qnx_safety": "yes"}}, [cuda_malloc()], "T0721", 1),
    # Found by testing: the header's unknown spec had no place at all (JSON path null, line 0).
    "unknown spec": ({**ACL, "spec": "nosuch"}, [malloc()], "E0601", 1),
    "missing spec file": ({**ACL, "spec": "missing.spec"}, [malloc()], "E0601", 1),
}


@pytest.mark.parametrize("case", INPUT_ERRORS)
def test_input_error_text(trace, case):
    header, events, code, line = INPUT_ERRORS[case]
    path = trace(header, *events, free() if header["spec"] == "acl" else vm("DeInit"))  # a later line is never reached
    rc, out, err = run(path)
    assert rc == 2
    assert out == ""
    assert err.startswith(f"{path}:{line}:1: error[{code}]: "), err
    assert "Traceback" not in err


@pytest.mark.parametrize("case", ["missing argument", "unknown env parameter", "unknown spec"])
def test_input_error_json_document(trace, case):
    header, events, code, line = INPUT_ERRORS[case]
    path = trace(header, *events)
    rc, out, err = run("--format", "json", path)
    assert rc == 2 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"error"}
    assert doc["error"]["trace"] == path
    (diag,) = doc["error"]["diagnostics"]
    assert (diag["code"], diag["path"], diag["line"], diag["severity"]) == (code, path, line, "error")
    assert diag["message"]


def test_spec_option_replaces_another_header_spec(trace):
    # --spec wins over the header (T0737, a warning, says so); the header's env is then checked
    # against the given spec: acl's parameters are unknown to cupva.
    path = trace(ACL, malloc(), free())
    rc, out, err = run("--spec", "cupva", path)
    assert rc == 2 and "error[T0720]" in err and "T0736" not in err, err
    path = trace({**ACL, "spec": "cupva", "env": {}}, malloc(), free())
    rc, out, err = run("--spec", "acl", path)
    assert rc == 0 and f"{path}:1: warning[T0737]: " in out and "'cupva'" in out, out + err


@pytest.mark.parametrize("command", ["itf", "shrink"])
def test_an_unknown_header_spec_is_located_at_the_header_by_itf_and_shrink(trace, tmp_path, command):
    path = trace({**ACL, "spec": "nosuch"}, malloc())
    rc, _, err = run_cli(command, path, "-o", str(tmp_path / "out"))
    assert rc == 2 and err.startswith(f"{path}:1:1: error[E0601]: unknown spec 'nosuch'"), err


def test_a_spec_option_that_cannot_be_read_is_not_the_headers_error(trace):
    rc, _, err = run("--spec", "nosuch", trace(ACL, malloc()))
    assert rc == 2 and err.startswith("regcheck: error[E0601]: unknown spec 'nosuch'"), err


def test_spec_option_naming_the_same_spec_is_fine(trace):
    assert run("--spec", "acl", trace(ACL, malloc(), free()))[0] == 0


def test_unreadable_trace(tmp_path):
    rc, out, err = run(str(tmp_path / "missing.jsonl"))
    assert rc == 2 and out == "" and "error[T0712]" in err


# ---------------------------------------------------------------- exit codes and output shapes


def test_exit_codes(trace):
    ok = trace(ACL, malloc(), register(), unregister(), free())
    bad = trace(ACL, malloc(), register(), free(), unregister())
    broken = trace(ACL, malloc(), {"call": "aclrtHostUnregister", "args": {"ptr": BUF}})
    assert run(ok)[0] == 0
    assert run(bad)[0] == 1
    assert run(broken)[0] == 2
    assert run(ok, bad)[0] == 1
    assert run(ok, ok)[0] == 0
    assert run(ok, bad, broken)[0] == 2


def test_unspecified_findings_alone_conform(trace):
    path = trace(ACL, malloc(), register(), unregister(ptr="0x7f3a2c001000", ret=507911), unregister(), free())
    rc, doc = run_json(path)
    assert rc == 0 and doc["verdict"] == "conforms"
    assert [(f["line"], f["kind"], f["rule"]) for f in doc["findings"]] == [(4, "unspecified", "ACL-UNREG-INTERIOR")]


def test_json_shape_of_one_trace(trace):
    path = trace(ACL, malloc(), register(), free(), unregister())
    rc, doc = run_json(path)
    assert rc == 1
    assert set(doc) >= {"trace", "spec", "verdict", "events", "findings"}
    assert (doc["trace"], doc["spec"], doc["verdict"], doc["events"]) == (path, "acl", "violates", 4)
    assert "truncated" not in doc
    (f,) = doc["findings"]
    assert set(f) >= {"line", "kind", "rule", "message", "related"}
    assert (f["line"], f["kind"], f["rule"], f["related"]) == (4, "usage", "ACL-FREE-REGISTERED", [2, 3])
    assert isinstance(f["message"], str) and f["message"].startswith("free: ")


def test_json_shape_of_several_traces(trace):
    ok = trace(ACL, malloc(), free())
    bad = trace(CUPVA, cuda_malloc(), pva_register(), {"call": "cudaFree", "args": {"devPtr": DEV}})
    rc, doc = run_json(ok, bad)
    assert rc == 1
    assert set(doc) >= {"verdict", "traces", "errors"}
    assert doc["verdict"] == "violates" and doc["errors"] == []
    assert [(t["trace"], t["spec"], t["verdict"], t["events"]) for t in doc["traces"]] == \
        [(ok, "acl", "conforms", 2), (bad, "cupva", "violates", 3)]
    assert [f["rule"] for f in doc["traces"][1]["findings"]] == ["PVA-FREE-REGISTERED"]


def test_json_of_several_traces_with_an_input_error(trace):
    ok = trace(ACL, malloc(), free())
    broken = trace(ACL, {"call": "mmap", "args": {}})
    rc, doc = run_json(ok, broken)
    assert rc == 2
    assert doc["verdict"] == "error"
    assert [t["trace"] for t in doc["traces"]] == [ok]
    (e,) = doc["errors"]
    assert e["trace"] == broken and [d["code"] for d in e["diagnostics"]] == ["T0730"]


def test_text_report(trace):
    path = trace(ACL, malloc(), register(), free(), unregister())
    rc, out, err = run(path)
    lines = out.splitlines()
    assert rc == 1 and err == ""
    assert lines[0].startswith(f"{path}:4: usage[ACL-FREE-REGISTERED]: free: ")
    assert f"  note: {path}:2: related: the malloc recorded here" in lines
    assert f"  note: {path}:3: related: the aclrtHostRegisterV2 recorded here" in lines
    assert any(line.startswith("  note: spec/acl.spec:") for line in lines)
    assert lines[-1] == f"{path}: violates: 4 events, 1 usage"


# ---------------------------------------------------------------- --max-findings


def _three_bad_frees(trace):
    return trace(ACL, malloc(), free("0x1000"), free("0x2000"), free("0x3000"), free())


def test_max_findings_stops_early(trace):
    path = _three_bad_frees(trace)
    assert len(findings(path)) == 3
    rc, doc = run_json("--max-findings", "2", path)
    assert rc == 1 and doc["verdict"] == "violates"
    assert [f["line"] for f in doc["findings"]] == [3, 4]
    assert doc["truncated"] is True
    assert doc["events"] == 3  # stopped after the event of the second finding
    rc, out, _ = run("--max-findings", "2", path)
    assert rc == 1 and out.splitlines()[-1].endswith("(stopped early: --max-findings)")


def test_max_findings_not_reached(trace):
    path = _three_bad_frees(trace)
    rc, doc = run_json("--max-findings", "4", path)
    assert rc == 1 and len(doc["findings"]) == 3 and doc["events"] == 5 and "truncated" not in doc


def test_max_findings_zero_never_hides_a_violation(trace):
    rc, _, _ = run("--max-findings", "0", _three_bad_frees(trace))
    assert rc != 0


# ---------------------------------------------------------------- thread safety


def _two_registrations(trace, first: dict, second: dict):
    a = pva_register(DEV, MB, **first)
    b = pva_register("0x302200000", MB, **second)
    return trace(CUPVA, cuda_malloc(), cuda_malloc("0x302200000"), a, b)


def _thread_findings(path):
    return [f for f in findings(path) if f["rule"].endswith("THREAD-SAFETY")]


def test_overlapping_calls_from_different_threads_are_flagged(trace):
    path = _two_registrations(trace, {"tid": 1, "t0": 100, "t1": 500}, {"tid": 2, "t0": 400, "t1": 900})
    (f,) = _thread_findings(path)
    assert (f["line"], f["kind"], f["rule"], f["related"]) == (5, "usage", "PVA-REG-THREAD-SAFETY", [4])
    assert "line 4" in f["message"]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "general"])
def test_a_call_is_compared_with_the_64_calls_of_its_function_before_it(trace, fast):
    """The documented bound (docs/trace-format.md, "Threads and time"): one long call from thread 1,
    then 100 short ones from thread 2 inside it; the first 64 are reported, the rest are missed."""
    bases = [f"{0x302000000 + i * 2 * MB:#x}" for i in range(101)]
    events = [cuda_malloc(b) for b in bases]
    events.append(pva_register(bases[0], tid=1, t0=0, t1=10**12))
    events += [pva_register(b, tid=2, t0=100 * i, t1=100 * i + 5) for i, b in enumerate(bases[1:], 1)]
    kind, doc, *_ = outcome(Path(trace(CUPVA, *events)).read_bytes(), fast)
    lines = [f["line"] for f in doc["findings"] if f["rule"] == "PVA-REG-THREAD-SAFETY"]
    assert kind == "report" and lines == list(range(104, 104 + 64))


def test_touching_intervals_overlap(trace):
    # [t0, t1] is closed: a call that begins the very nanosecond another ends still overlaps it.
    path = _two_registrations(trace, {"tid": 1, "t0": 100, "t1": 500}, {"tid": 2, "t0": 500, "t1": 900})
    assert len(_thread_findings(path)) == 1


def test_tids_compare_as_written(trace):
    path = _two_registrations(trace, {"tid": 5, "t0": 100, "t1": 500}, {"tid": "5", "t0": 200, "t1": 300})
    assert len(_thread_findings(path)) == 1


@pytest.mark.parametrize("first, second", [
    ({"tid": 1, "t0": 100, "t1": 500}, {"tid": 1, "t0": 200, "t1": 300}),  # same thread
    ({"tid": 1, "t0": 100, "t1": 500}, {"tid": 2, "t0": 501, "t1": 900}),  # disjoint in time
    ({"tid": 1, "t0": 100, "t1": 500}, {"tid": 2}),  # no timestamps: takes part in no overlap
    ({}, {}),  # no threads at all
], ids=["same-tid", "disjoint", "no-times", "no-tids"])
def test_calls_that_cannot_race_are_not_flagged(trace, first, second):
    path = _two_registrations(trace, first, second)
    rc, doc = run_json(path)
    assert rc == 0 and doc["findings"] == []


def test_different_functions_do_not_race(trace):
    # Register and Unregister are each non-thread-safe; the rule is per function.
    path = trace(CUPVA, cuda_malloc(), pva_register(tid=1, t0=100, t1=500), vm("DeInit"),
                 pva_unregister(tid=2, t0=200, t1=300))
    rc, doc = run_json(path)
    assert rc == 0 and doc["findings"] == []


def test_unregister_race(trace):
    path = trace(CUPVA, cuda_malloc(), cuda_malloc("0x302200000"), pva_register(), pva_register("0x302200000"),
                 vm("DeInit"), pva_unregister(tid="a", t0=10, t1=50), pva_unregister("0x302200000", tid="b", t0=40, t1=60))
    assert [(f["line"], f["rule"], f["related"]) for f in findings(path)] == [(8, "PVA-UNREG-THREAD-SAFETY", [7])]


# ---------------------------------------------------------------- the state follows the recorded result


def test_wrongly_accepted_registration_is_then_registered(trace):
    inner = "0x7f3a2c080000"
    path = trace(ACL, malloc(), register(), register(inner, 262144), unregister(inner), unregister(), free())
    fs = findings(path)
    assert [(f["line"], f["kind"], f["rule"], f["related"]) for f in fs] == [(4, "conformance", "ACL-REG-OVERLAP", [3])]


def test_cupva_wrongly_accepted_overlap_is_then_registered(trace):
    inner = "0x302080000"
    path = trace(CUPVA, cuda_malloc(), pva_register(), pva_register(inner, 65536), vm("DeInit"),
                 pva_unregister(inner), pva_unregister(), {"call": "cudaFree", "args": {"devPtr": DEV}})
    assert [(f["line"], f["kind"], f["rule"]) for f in findings(path)] == [
        (4, "usage", "PVA-REG-OVERLAP-UB"), (4, "conformance", "PVA-REG-OVERLAP")]


def test_recorded_failure_leaves_the_state_unchanged(trace):
    # The registration failed (an allowed environment error), so nothing is registered: a later
    # successful unregister is the runtime's bug, a 507911 is right. Either way the caller broke
    # ACL-UNREG-REGISTERED (the obligations policy); the runtime rejected it only in `right`.
    wrong = trace(ACL, malloc(), register(ret=507899), unregister(), free())
    right = trace(ACL, malloc(), register(ret=507899), unregister(ret=507911), free())
    assert [(f["line"], f["rule"], f.get("rejected", False)) for f in findings(wrong)] == [
        (4, "ACL-UNREG-REGISTERED", False), (4, "ACL-UNREG-NOT-REGISTERED", False)]
    assert [(f["line"], f["rule"], f.get("rejected", False)) for f in findings(right)] == [(4, "ACL-UNREG-REGISTERED", True)]


def test_replay_goes_on_after_a_finding(trace):
    path = trace(ACL, malloc(), register(), free(), unregister(), free())
    assert [(f["line"], f["rule"]) for f in findings(path)] == [(4, "ACL-FREE-REGISTERED"), (6, "ENV-FREE-UNKNOWN")]


# ---------------------------------------------------------------- related lines


def test_overlap_names_the_earlier_registration(trace):
    second = "0x7f3a2c100000"
    path = trace(ACL, malloc(size=2 * MB), register(), register(second), register("0x7f3a2c180000", 65536))
    (f,) = findings(path)
    assert (f["line"], f["rule"], f["related"]) == (5, "ACL-REG-OVERLAP", [4])  # not line 3: that one is disjoint


def test_refused_overlap_conforms(trace):
    path = trace(ACL, malloc(size=2 * MB), register(), register("0x7f3a2c080000", 65536, ret=507910), unregister(), free())
    rc, doc = run_json(path)
    assert rc == 0 and doc["findings"] == []


def test_free_while_registered_names_the_malloc_and_the_registration(trace):
    path = trace(ACL, malloc("0x7f3a2c400000", 4096), malloc(), register(), free(), unregister())
    (f,) = findings(path)
    assert (f["line"], f["rule"], f["related"]) == (5, "ACL-FREE-REGISTERED", [3, 4])


def test_cudafree_while_registered_names_the_cudamalloc_and_the_registration(trace):
    path = trace(CUPVA, cuda_malloc(), pva_register(), {"call": "cudaFree", "args": {"devPtr": DEV}})
    (f,) = findings(path)
    assert (f["line"], f["rule"], f["related"]) == (4, "PVA-FREE-REGISTERED", [2, 3])


def test_double_free_names_only_the_first_free(trace):
    path = trace(ACL, malloc(), register(), unregister(), free(), free())
    (f,) = findings(path)
    assert (f["line"], f["rule"], f["related"]) == (6, "ENV-FREE-UNKNOWN", [5])


def test_bundled_spec_name_is_not_shadowed_by_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "run.jsonl").write_text(json.dumps(ACL) + "\n" + json.dumps(malloc()) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    from checker.language.load import clear_spec_cache
    clear_spec_cache()
    try:
        assert run("acl/run.jsonl")[0] == 0
    finally:
        clear_spec_cache()


# ---- which line made each entry: the C `remember` is the Python one

journals = st.lists(st.lists(st.tuples(st.sampled_from(["regs", "allocs", None]), st.integers(0, 5),
                                       st.sampled_from(["put", "remove"])), max_size=6), max_size=30)


def reference_remember(created: dict, removed: list, journal: list):
    """What remember does, spelt out on a dict and a list."""
    def remember(line, call):
        for table, key, op, old in journal:
            if table is not None and op == "put":
                if old is None:  # (an update's entry is in `created` already)
                    created.setdefault((table, key), (line, call))
            elif table is not None:
                created.pop((table, key), None)
                removed.append((table, key, line, call))
    return remember


@settings(max_examples=300, deadline=None)
@given(journals, st.integers(0, 2))
def test_the_c_remember_and_the_python_remember_are_the_reference(events, calls):
    """Event after event (each a journal of changes), each notes the same creating lines, keeps an
    update's creating line, and lists the same removals as the reference; the replayers' windows
    (the C Ring, and the CountingWindow, whose pushes the Python remember counts itself) count the
    same pushes. The Python remember's MadeLines reads as the dict (`calls`: the events name 1 or
    3 calls, or each its own)."""
    ways, pushes = [], []
    makers = [(reference_remember, dict, list),
              (_python_remembering, MadeLines, partial(deque, maxlen=4)),
              (_python_remembering, MadeLines, partial(CountingWindow, maxlen=4))]  # the pure replayer's
    if NATIVE is not None:
        makers += [(_remembering, dict, partial(deque, maxlen=4)),
                   (_remembering, NATIVE.Made, partial(NATIVE.Ring, 4))]  # as the replayer's
    for make, made, window in makers:
        created = made()
        removed = window()
        journal: list = []
        remember = make(created, removed, journal)
        live: set = set()
        for line, changes in enumerate(events, 2):
            journal[:] = [(table, key, op, _previous(live, table, key, op)) for table, key, op in changes]
            remember(line, "call" if calls == 0 else f"call{line % 3}" if calls == 1 else f"call{line}")
        ways.append((dict(created), list(removed)[-4:], len(created), sorted(created),
                     [(where in created, created.get(where)) for where in [("regs", k) for k in range(7)]]))
        pushes.append(getattr(removed, "pushed", None))
    assert all(way == ways[0] for way in ways)
    removals = sum(op == "remove" and table is not None for changes in events for table, _, op in changes)
    assert pushes[2] == removals and (NATIVE is None or pushes[4] == removals)


def _previous(live: set, table, key, op: str):
    """The previous record a table journals for this change (a stand-in; None: the entry was not
    live), as the tables of a replay keep it, with `live` the entries live so far."""
    if table is None:
        return None
    was = (table, key) in live
    if op == "put":
        live.add((table, key))
    else:
        live.discard((table, key))
    return {"size": 1} if was else None


def test_an_update_is_not_looked_up_in_created():
    """A put journalled with its previous record updates an entry the replay made earlier, which
    `created` holds already: each remember leaves `created` as it is for it, without looking it
    up, where a new entry is noted (so an entry `created` lacks stays absent after an update)."""
    ways = [(_python_remembering, MadeLines, partial(deque, maxlen=4))]
    if NATIVE is not None:
        ways += [(_remembering, dict, partial(deque, maxlen=4)), (_remembering, NATIVE.Made, partial(NATIVE.Ring, 4))]
    for make, made, window in ways:
        created, journal = made(), []
        remember = make(created, window(), journal)
        journal[:] = [("regs", 5, "put", None)]
        remember(2, "register")
        journal[:] = [("regs", 5, "put", {"size": 1}), ("regs", 6, "put", {"size": 1})]
        remember(3, "update")
        assert dict(created) == {("regs", 5): (2, "register")}, made


def test_made_lines_reads_as_a_dict_of_lines_and_calls():
    made, journal = MadeLines(), []
    remember = _python_remembering(made, deque(maxlen=4), journal)
    for line in range(2, 2 + (1 << CALL_BITS) + 3):  # past the call numbers: (line, call) held as it is
        journal[:] = [("t", line, "put", None)]
        remember(line, f"call{line}")
    journal[:] = [("t", 2, "put", None), ("u", -7, "put", None)]
    remember(-5, "call3")  # an update keeps line 2; a negative line decodes too
    assert made[("t", 2)] == (2, "call2") and made[("u", -7)] == (-5, "call3")
    last = 1 + (1 << CALL_BITS) + 3
    assert made.get(("t", last)) == (last, f"call{last}") and made.calls[-1] == f"call{1 + (1 << CALL_BITS)}"
    assert len(made) == (1 << CALL_BITS) + 4 and ("t", 99) in made and ("t", 1) not in made
    assert made.get(("t",)) is None and made.get(("t", [])) is None and made.get(7, "none") == "none"
    journal[:] = [("u", "k", "put", None)]
    remember(9, "call3")
    assert ("u", "k") in made and "uk" not in made and made.get(["u", "k"]) is None  # only a (table, key) tuple
    with pytest.raises(KeyError):
        made[("v", 1)]
    assert dict(made)[("t", 99)] == (99, "call99")


# ---- the latest removal of an entry: the index is the scan of the window it replaced

def _scan_newest_first(items: list, table: str, key: int):
    """What `_related` did before RemovalIndex: the window, newest first, to the first match."""
    for t, k, line, call in reversed(items):
        if (t, k) == (table, key):
            return line, call
    return None


TABLE_KEYS = [(table, key) for table in ("regs", "host_allocs") for key in range(5)]
window_ops = st.lists(st.one_of(st.tuples(st.just("push"), st.sampled_from(TABLE_KEYS)),
                                st.just(("ask", None)), st.just(("clear", None))), max_size=80)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 7), window_ops)
def test_the_removal_index_finds_what_a_scan_of_the_window_finds(maxlen, ops):
    """Pushes, questions and clears in any order, windows small enough that removals leave them
    (and the index is rebuilt): each answer, for every entry, is the newest matching removal the
    window still holds."""
    for make in (lambda n: CountingWindow(maxlen=n), *([NATIVE.Ring] if NATIVE is not None else [])):
        window = make(maxlen)
        index = RemovalIndex(window)
        for line, (op, entry) in enumerate(ops, 2):
            if op == "push":
                window.append((*entry, line, f"call{line}"))
            elif op == "clear":
                window.clear()
            else:
                held = list(window)
                assert [index.latest(*e) for e in TABLE_KEYS] == [_scan_newest_first(held, *e) for e in TABLE_KEYS]
            assert len(index.index) <= 3 * max(maxlen, 1)  # bounded by the window, not by the pushes


def test_windows_count_what_was_ever_pushed():
    for window in (CountingWindow(maxlen=2), *([NATIVE.Ring(2)] if NATIVE is not None else [])):
        for i in range(5):
            window.append(("regs", i, i, "free"))
        window.clear()
        assert (window.pushed, len(window)) == (5, 0)


def test_many_findings_each_name_the_unregister_before_them(trace):
    """A double unregister again and again, thousands of removals apart: each finding names the
    unregister before it (the index answers what the scan of the window answered)."""
    events, expected = [], []
    for i in range(300):
        ptr = hex(0x7F3A_0000_0000 + i * 0x10000)
        events += [malloc(ptr, 4096), register(ptr, 4096), unregister(ptr)]
        if i % 3 == 0:
            expected.append([len(events) + 1])  # the first unregister's line (the header is line 1)
            events.append(unregister(ptr))
    got = [f["related"] for f in findings(trace(ACL, *events)) if f["rule"] == "ACL-UNREG-REGISTERED"]
    assert got == expected


# ---- citations a user can follow

REPO = Path(__file__).resolve().parent.parent


def _document_note(path: str) -> str:
    (note,) = [n for n in run(path)[1].splitlines() if n.startswith("  note: document: ")]
    return note


def test_a_bundled_documents_citation_links_its_sources_entry(trace):
    path = trace(ACL, malloc(), register(ptr="0x7f3a2c000010", size=4096))
    (f,) = [f for f in findings(path) if f["rule"] == "ACL-REG-ALIGN"]
    doc = f["document"]
    assert doc["title"] == "aclrtHostRegisterV2 reference page, the seed"
    assert doc["link"] == "docs/sources.md#acl-register_v2"
    sources = (REPO / "docs" / "sources.md").read_text(encoding="utf-8")
    assert "\n### acl-REGISTER_V2\n" in sources  # the anchor's heading: the link resolves
    note = [n for n in run(path)[1].splitlines() if "<docs/sources.md#acl-register_v2>" in n]
    assert note and "seeds/" not in note[0] and doc["clause"] in note[0]


def test_a_document_with_a_url_is_linked_by_its_url(trace):
    path = trace(CUPVA, cuda_malloc(), {"call": "cudaFree", "args": {"devPtr": DEV}},
                 {"call": "cudaFree", "args": {"devPtr": DEV}})
    assert _document_note(path) == ("  note: document: CUDA runtime API, memory management "
                                    "<https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html>: "
                                    "cudaFree takes a pointer returned by cudaMalloc (or null)")
    (f,) = findings(path)
    assert f["document"]["link"].startswith("https://docs.nvidia.com/")


def test_a_users_own_spec_keeps_its_documents_location(trace, tmp_path):
    own = tmp_path / "acl.spec"
    own.write_text((REPO / "spec" / "acl.spec").read_text(encoding="utf-8"), encoding="utf-8")
    path = trace({**ACL, "spec": str(own)}, malloc(), register(ptr="0x7f3a2c000010", size=4096))
    (f,) = [f for f in findings(path) if f["rule"] == "ACL-REG-ALIGN"]
    assert f["document"]["link"] == "seeds/001_8b884f9a7c0d2d5e.txt"  # no sources.md entry for it


GROUPS_SPEC = """spec groups "a group that cannot be evaluated"
source DOC "d" "d"
status int success 0
var n: int = 0
var on: bool = false
group Ready when on
group Odd when 10 % n == 0
call c() {
  usage G-U: only in Ready cite DOC "outside Ready"
  effect G-E: { n = n } cite DOC "nothing"
}
"""


def test_a_usage_finding_lists_the_active_groups_past_one_that_cannot_be_evaluated(tmp_path):
    """Found by testing: the finding for a call outside its API group lists the active groups, and a
    group the rule does not name whose condition cannot be evaluated (`10 % n` with n 0) raised out
    of the replay: a traceback, exit 3 (with REGCHECK_PURE_PYTHON=1 too). Every replay path agrees."""
    spec = tmp_path / "groups.spec"
    spec.write_text(GROUPS_SPEC, encoding="utf-8")
    path = tmp_path / "t.jsonl"
    path.write_text('{"regcheck":1,"spec":"groups","env":{}}\n{"call":"c","ret":0}\n', encoding="utf-8")
    code, out, err = run_cli("replay", "--spec", str(spec), str(path))
    assert code == 1 and "Traceback" not in err, err
    assert "usage[G-U]: c: called outside its API group (active group: none; Odd cannot be evaluated: remainder " \
           "by zero)" in out
    text = path.read_bytes()
    general = outcome(text, False, sem=_semantics(GROUPS_SPEC))
    for python_loop, machine in [(True, False)] + ([(False, True), (False, False)] if NATIVE is not None else []):
        assert outcome(text, True, None, python_loop, machine, sem=_semantics(GROUPS_SPEC)) == general


def _semantics(text: str):
    from checker.language.load import check_source
    from checker.language.source import SourceFile
    from checker.model.semantics import Semantics

    return Semantics(check_source(SourceFile.of("<groups>", text)), {})
