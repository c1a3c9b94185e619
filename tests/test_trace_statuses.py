"""How replay reads `ret` and `call` (checker/engines/replay.py): a mistyped status or call name is an
input error with a did-you-mean, never a finding against the driver; an integer status written as
a name says which integer to write; a cuPVA trace's cudaMalloc / cudaFree may carry the 0 they
return; a spec expression that cannot be evaluated names the trace line and the clause.

Every trace is replayed both ways (the fast path first, and the general path alone): the two
must agree, so the fast path never takes a line the general path rejects."""

from __future__ import annotations

import json

import pytest

from checker.engines.replay import Replayer, _replay_iter, closest_name, semantics_for, status_names
from checker.language.diagnostics import RegcheckError
from checker.language.load import load_spec
from checker.model.outcomes import ClauseEvalError
from checker.model.semantics import Semantics
from checker.trace.reader import read_trace_text
from tests.helpers import outcome, run_cli

CUPVA = {"regcheck": 1, "spec": "cupva", "env": {"driver_version": 2006}}
ACL = {"regcheck": 1, "spec": "acl"}
CUDA = {"regcheck": 1, "spec": "cuda"}
HIP = {"regcheck": 1, "spec": "hip"}
DEV = "0x302000000"


def text(header: dict, *events: dict) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in (header, *events)).encode()


def replayed(data: bytes):
    """The outcome of one replay (see tests/helpers.py), after checking that the fast path and the
    general path agree on it."""
    fast, general = outcome(data, True), outcome(data, False)
    assert fast == general
    return fast


def diagnostic(data: bytes):
    """The one diagnostic a trace's replay stops with (on the general path, with its notes)."""
    header, events = read_trace_text(data, "t.jsonl")
    with pytest.raises(RegcheckError) as info:
        _replay_iter(Replayer(semantics_for(header, None, "t.jsonl"), "t.jsonl"), events, None, None)
    (d,) = info.value.diagnostics
    return d


def disable(ret) -> dict:
    return {"call": "cupva::cuda::ForceDisableSupport", "ret": ret}


# ---------------------------------------------------------------- cuPVA: statuses are names


@pytest.mark.parametrize("ret, suggestion", [
    ("InvalidArgumnet", "InvalidArgument"),
    ("cupva::Error::InvalidArgument", "InvalidArgument"),
    ("invalidstate", "InvalidState"),
    ("Success", None),
])
def test_an_unknown_cupva_status_is_an_input_error_with_a_suggestion(ret, suggestion):
    data = text(CUPVA, disable(ret))
    kind, ((code, line, column, message),) = replayed(data)
    assert (kind, code, line, column) == ("error", "T0733", 2, 1)
    assert repr(ret) in message and "'ok' for success" in message and "InvalidArgument" in message
    notes = [n.message for n in diagnostic(data).notes]
    assert notes == ([f"did you mean '{suggestion}'?"] if suggestion else [])


def test_a_known_cupva_status_is_still_judged_against_the_spec():
    # ForceDisableSupport must succeed before any CUDA interop: InvalidState is a conformance finding
    kind, report, *_ = replayed(text(CUPVA, disable("InvalidState")))
    assert kind == "report" and [f["kind"] for f in report["findings"]] == ["conformance"]


def test_an_integer_status_for_a_cupva_api_call_is_an_input_error():
    kind, ((code, line, _, message),) = replayed(text(CUPVA, disable(0)))
    assert (kind, code, line) == ("error", "T0733", 2) and "must be a status name such as 'ok'" in message


# ---------------------------------------------------------------- cuPVA: cudaMalloc / cudaFree may carry their cudaError_t


def cuda_malloc(**ret) -> dict:
    return {"call": "cudaMalloc", "args": {"size": 8192}, "out": {"devPtr": DEV}, **ret}


def cuda_free(**ret) -> dict:
    return {"call": "cudaFree", "args": {"devPtr": DEV}, **ret}


@pytest.mark.parametrize("ret", [0, "0x0", "ok"])
def test_cudamalloc_and_cudafree_may_record_success_as_their_cudaerror(ret):
    register = {"call": "cupva::mem::Register", "args": {"ptr": DEV, "size": 8192, "externalAllocType": "CUDA"},
                "ret": "ok"}
    unregister = {"call": "cupva::mem::Unregister", "args": {"ptr": DEV}, "ret": "ok"}
    header = {**CUPVA, "env": {"driver_version": 2006, "qnx_safety": True}}
    deinit = [{"call": "vm_state", "args": {"state": s}} for s in ("Operational", "DeInit")]
    with_ret = replayed(text(header, cuda_malloc(ret=ret), register, *deinit, unregister, cuda_free(ret=ret)))
    without = replayed(text(header, cuda_malloc(), register, *deinit, unregister, cuda_free()))
    assert with_ret[0] == "report" and with_ret[1]["verdict"] == "conforms"
    assert with_ret == without  # the same findings, state and memory of which line made what


def test_a_failed_cudamalloc_in_a_cupva_trace_is_an_input_error():
    kind, ((code, line, _, message),) = replayed(text(CUPVA, cuda_malloc(ret=2)))
    assert (kind, code, line) == ("error", "T0733", 2)
    assert "cudaMalloc: ret 2" in message and "leave it out" in message


# ---------------------------------------------------------------- integer statuses written as names


@pytest.mark.parametrize("header, event, integer", [
    (ACL, {"call": "aclrtMallocHost", "args": {"size": 4096}, "ret": "ACL_SUCCESS", "out": {"hostPtr": "0x7f0000000000"}}, 0),
    (ACL, {"call": "aclrtMallocHost", "args": {"size": 0}, "ret": "ACL_ERROR_RT_PARAM_INVALID"}, 107000),
    (CUDA, {"call": "cudaMallocHost", "args": {"size": 4096}, "ret": "cudaSuccess", "out": {"ptr": "0x7f0000000000"}}, 0),
    (HIP, {"call": "hipFree", "args": {"ptr": 0}, "ret": "hipSuccess"}, 0),
])
def test_a_status_name_of_an_integer_spec_says_which_integer_to_write(header, event, integer):
    kind, ((code, line, _, message),) = replayed(text(header, event))
    assert (kind, code, line) == ("error", "T0733", 2)
    assert message.endswith(f"records statuses as integers; write {integer} ({event['ret']})"), message


def test_a_misspelt_integer_status_name_suggests_the_integer():
    data = text(ACL, {"call": "aclrtMallocHost", "args": {"size": 0}, "ret": "ACL_ERROR_RT_PARAM_INVALD"})
    kind, ((code, _, _, message),) = replayed(data)
    assert (kind, code) == ("error", "T0733") and "107000 (ACL_ERROR_RT_PARAM_INVALID)" in message
    assert [n.message for n in diagnostic(data).notes] == ["did you mean 107000 (ACL_ERROR_RT_PARAM_INVALID)?"]


def test_a_real_status_the_spec_does_not_name_gets_no_wrong_suggestion():
    # cudaErrorInvalidDevice (101) is spelt much like cudaErrorInvalidValue (1), but is another status
    data = text(CUDA, {"call": "cudaMallocHost", "args": {"size": 0}, "ret": "cudaErrorInvalidDevice"})
    kind, ((code, _, _, message),) = replayed(data)
    assert (kind, code) == ("error", "T0733") and "write the integer the function returned" in message
    assert diagnostic(data).notes == ()


def test_status_names_are_the_constants_a_spec_uses_as_statuses():
    acl = status_names(load_spec("acl"))
    assert acl["ACL_SUCCESS"] == 0 and acl["ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED"] == 507910
    assert "PAGE" not in acl  # a constant, but not a status
    assert status_names(load_spec("cuda"))["cudaErrorNotSupported"] == 801
    assert list(status_names(load_spec("cupva")))[0] == "ok"


# ---------------------------------------------------------------- unknown calls


@pytest.mark.parametrize("header, call, suggestion", [
    (CUPVA, "Register", "cupva::mem::Register"),
    (CUPVA, "cupva::mem::register", "cupva::mem::Register"),
    (HIP, "hipMallocHost", "hipHostMalloc"),
    (ACL, "aclrtHostRegister", "aclrtHostRegisterV2"),
    (CUDA, "cudaHostRegistr", "cudaHostRegister"),
    (CUDA, "zzz", None),
])
def test_an_unknown_call_suggests_the_call_meant(header, call, suggestion):
    data = text(header, {"call": call, "args": {}, "ret": 0})
    kind, ((code, line, _, message),) = replayed(data)
    assert (kind, code, line) == ("error", "T0730", 2) and f"unknown call '{call}'" in message
    assert [n.message for n in diagnostic(data).notes] == ([f"did you mean '{suggestion}'?"] if suggestion else [])


def test_closest_name_prefers_the_namespace_and_the_word_order_over_spelling():
    assert closest_name("hipMallocHost", ["hipMalloc", "hipHostMalloc"]) == "hipHostMalloc"
    assert closest_name("Unregister", ["cupva::mem::Register", "cupva::mem::Unregister"]) == "cupva::mem::Unregister"
    assert closest_name("zzz", ["hipMalloc"]) is None


def test_the_cli_reports_a_misspelt_status_as_an_input_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(text(CUPVA, disable("InvalidArgumnet")))
    code, out, err = run_cli("replay", str(path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{path}:2:1: error[T0733]" in err and "did you mean 'InvalidArgument'?" in err


# ---------------------------------------------------------------- a spec that cannot be evaluated


SPEC = '''spec m "a spec with a remainder by a parameter"
source DOC "none" "a test spec"
param d: int = 0
status int success 0
call poke(a: int) {
  fails M-1: 1 when a > 5
    cite DOC "t"
  fails M-2: 2 when a % d == 1
    cite DOC "t"
}
event made() -> (p: addr) {
  ensures M-3: p % d == 0
    cite DOC "t"
}
'''


@pytest.fixture
def spec_path(tmp_path):
    path = tmp_path / "m.spec"
    path.write_text(SPEC)
    return str(path)


@pytest.mark.parametrize("event, rule, spec_line", [
    ({"call": "poke", "args": {"a": 1}, "ret": 0}, "M-2", 8),
    ({"call": "made", "out": {"p": 4096}}, "M-3", 12),
])
def test_an_unevaluable_clause_names_the_trace_line_and_the_rule(spec_path, event, rule, spec_line):
    data = text({"regcheck": 1, "spec": spec_path}, event).replace(b"\n", b"\n\n", 1)  # the event on line 3
    kind, ((code, line, column, message),) = replayed(data)
    assert (kind, code, line, column) == ("error", "E0310", 3, 1)
    assert f"rule {rule} ({spec_path}:{spec_line})" in message and "remainder by zero" in message
    (note,) = diagnostic(data).notes
    assert (note.span.path, note.span.line) == (spec_path, spec_line) and rule in note.message


MAY_FAIL_SPEC = '''spec n "a may-fail condition with a remainder by a parameter"
source DOC "none" "a test spec"
param d: int = 0
status int success 0
call poke(a: int) {
  fails N-1: 1 when a > 5
    cite DOC "t"
  may fail N-2: 2 when a % d == 1
    cite DOC "t"
}
'''


def test_the_semantics_locates_an_unevaluable_may_fail_condition(tmp_path):
    path = tmp_path / "n.spec"
    path.write_text(MAY_FAIL_SPEC)
    sem = Semantics(load_spec(str(path)))
    with pytest.raises(ClauseEvalError) as info:
        sem.allowed(sem.initial_state(), "poke", {"a": 1})
    assert (info.value.rule, info.value.span.line, info.value.reason) == ("N-2", 8, "remainder by zero")
    (d,) = info.value.diagnostics
    assert (d.code, d.span.path, d.span.line) == ("E0310", str(path), 8) and "rule N-2" in d.message
