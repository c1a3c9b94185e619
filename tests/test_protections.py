"""Page protections in traces (docs/trace-format.md: `mmap`'s `prot`, `mprotect`) and C1.8 in the
CUDA spec (CUDA-REG-READONLY-MAPPING): a range the CPU maps read-only is registered with
cudaHostRegisterReadOnly where pageable memory does not use the host page tables.

Also the language feature they rest on: an input with a default (`prot: Prot = PROT_READ |
PROT_WRITE`), which a trace line may leave out, so that every trace written before `prot` existed
keeps its meaning.
"""

from __future__ import annotations

import json

import pytest

from checker.drivers.protocol import CallArgs
from checker.language.diagnostics import RegcheckError
from checker.language.load import load_spec
from checker.language.parser import parse_spec
from checker.language.printer import print_spec
from checker.language.typecheck import check_spec
from checker.model.state import NATIVE
from tests.helpers import outcome, run_cli

BASE = "0x7f5e3c000000"
PROT_READ, PROT_RW = 1, 3


def trace(*events: dict, env: dict | None = None, spec: str = "cuda") -> str:
    header = {"regcheck": 1, "spec": spec, **({"env": env} if env else {})}
    return "\n".join(json.dumps(x) for x in (header, *events)) + "\n"


def mmap(length: int = 8192, prot=None, addr: str = BASE) -> dict:
    args = {"length": length} if prot is None else {"length": length, "prot": prot}
    return {"call": "mmap", "args": args, "out": {"addr": addr}}


def mprotect(length: int, prot, addr: str = BASE) -> dict:
    return {"call": "mprotect", "args": {"addr": addr, "length": length, "prot": prot}}


def register(flags=0, size: int = 4096, ret: int = 0, ptr: str = BASE) -> dict:
    return {"call": "cudaHostRegister", "args": {"ptr": ptr, "size": size, "flags": flags}, "ret": ret}


def replay(tmp_path, text: str, *options: str) -> tuple[int, dict | str, str]:
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_cli("replay", "--format", "json", *options, str(path))
    return code, (json.loads(out) if out else out), err


def rules(report: dict) -> list[tuple[str, str, int]]:
    return [(f["kind"], f["rule"], f["line"]) for f in report["findings"]]


# ---------------------------------------------------------------- the trace field and event


def test_a_line_without_prot_means_read_write(tmp_path):
    # the trace every earlier recorder wrote: a flags-0 registration of a mapping is fine
    code, report, _ = replay(tmp_path, trace(mmap(), register()))
    assert (code, rules(report)) == (0, [])


@pytest.mark.parametrize("prot", [["PROT_READ"], PROT_READ, "0x1", ["PROT_READ", "PROT_EXEC"]])
def test_a_read_only_mapping_registered_without_readonly_is_the_callers_bug(tmp_path, prot):
    code, report, _ = replay(tmp_path, trace(mmap(prot=prot), register()))
    assert (code, rules(report)) == (1, [("usage", "CUDA-REG-READONLY-MAPPING", 3)])
    assert report["findings"][0]["related"] == [2]  # the mmap that made it read-only


@pytest.mark.parametrize("ret", [0, 1, 2, 801])
def test_whatever_the_driver_answers_then_conforms(tmp_path, ret):
    # C1.8 names no error: vllm-omni#6240's InvalidValue is no conformance finding, nor a success
    code, report, _ = replay(tmp_path, trace(mmap(prot=["PROT_READ"]), register(ret=ret)))
    assert rules(report) == [("usage", "CUDA-REG-READONLY-MAPPING", 3)]


@pytest.mark.parametrize("case", [
    dict(prot=["PROT_READ"], flags=["cudaHostRegisterReadOnly"], env=None),  # the flag C1.8 asks for
    dict(prot=["PROT_READ"], flags=0, env={"host_page_tables": True}),  # C1.8 applies only without it
    dict(prot=["PROT_READ", "PROT_WRITE"], flags=0, env=None),  # writable
    dict(prot=0, flags=0, env=None),  # PROT_NONE is not "mapped read-only": C1.8 says nothing of it
])
def test_the_rule_does_not_fire(tmp_path, case):
    code, report, _ = replay(tmp_path, trace(mmap(prot=case["prot"]), register(case["flags"]), env=case["env"]))
    assert (code, rules(report)) == (0, [])


def test_a_registration_touching_the_read_only_mapping_in_part_breaks_it(tmp_path):
    # one page of the two-page read-only mapping, not its base
    code, report, _ = replay(tmp_path, trace(mmap(prot=["PROT_READ"]), register(size=4096, ptr="0x7f5e3c001000")))
    assert rules(report) == [("usage", "CUDA-REG-READONLY-MAPPING", 3)]


def test_mprotect_over_a_whole_mapping_is_followed(tmp_path):
    text = trace(mmap(), mprotect(8192, ["PROT_READ"]), register(),
                 {"call": "cudaHostUnregister", "args": {"ptr": BASE}, "ret": 0},
                 mprotect(8192, ["PROT_READ", "PROT_WRITE"]), register())
    code, report, _ = replay(tmp_path, text)
    assert rules(report) == [("usage", "CUDA-REG-READONLY-MAPPING", 4)]  # not line 7: writable again


def test_a_partial_mprotect_is_followed_only_where_it_cannot_make_a_false_finding(tmp_path):
    # a read-only prefix: not followed (the mapping's record stays writable: a finding missed)
    code, report, _ = replay(tmp_path, trace(mmap(), mprotect(4096, ["PROT_READ"]), register()))
    assert (code, rules(report)) == (0, [])
    # a writable prefix of a read-only mapping: the whole is taken for writable (none taken for
    # read-only that may not be)
    code, report, _ = replay(tmp_path, trace(mmap(prot=["PROT_READ"]), mprotect(4096, ["PROT_READ", "PROT_WRITE"]),
                                             register(ptr="0x7f5e3c001000")))
    assert (code, rules(report)) == (0, [])


def test_the_rest_of_a_read_only_mapping_stays_read_only_after_a_munmap_of_its_prefix(tmp_path):
    text = trace(mmap(prot=["PROT_READ"]), {"call": "munmap", "args": {"addr": BASE, "length": 4096}},
                 register(ptr="0x7f5e3c001000"))
    code, report, _ = replay(tmp_path, text)
    assert rules(report) == [("usage", "CUDA-REG-READONLY-MAPPING", 4)]


def test_hip_reads_protections_and_judges_none(tmp_path):
    text = trace(mmap(prot=["PROT_READ"]), {"call": "hipHostRegister", "args": {"hostPtr": BASE, "sizeBytes": 4096,
                                                                                "flags": 0}, "ret": 0},
                 mprotect(8192, 7), spec="hip")
    code, report, _ = replay(tmp_path, text)
    assert (code, rules(report)) == (0, [])


@pytest.mark.parametrize("event, code, message", [
    (mmap(prot=["PROT_RAED"]), "T0733", "mmap: argument 'prot'"),  # an unknown name (with a did-you-mean note)
    (mmap(prot="4096"), "T0706", "args.prot: '4096' is not a valid integer"),  # a decimal string is no integer
    (mmap(prot=True), "T0733", "mmap: argument 'prot'"),
    (mprotect(4096, ["PROT_READ", 2.5]), "T0705", "args.prot"),
    ({"call": "mprotect", "args": {"addr": BASE, "length": 4096}}, "T0731", "missing argument 'prot'"),  # no default
])
def test_a_bad_prot_is_a_located_input_error(tmp_path, event, code, message):
    path = tmp_path / "t.jsonl"
    path.write_text(trace(mmap(), event), encoding="utf-8")
    exit_code, out, err = run_cli("replay", str(path))
    assert exit_code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:3:") and f": error[{code}]: " in first and message in first, err


def test_a_float_prot_is_t0705(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(trace() + '{"call":"mmap","args":{"length":4096,"prot":1.0},"out":{"addr":"0x1000"}}\n')
    code, _, err = run_cli("replay", str(path))
    assert code == 2 and f"{path}:2:" in err and "T0705" in err, err


# ---------------------------------------------------------------- the fast path agrees


LOOPS = [(False, True), (False, False), (True, False)] if NATIVE is not None else [(True, False)]


@pytest.mark.parametrize("loop", LOOPS)
def test_the_fast_and_general_paths_agree_on_protections(loop):
    lines = [mmap(), mmap(prot=["PROT_READ"], addr="0x7f5e3d000000"), mmap(prot=1, addr="0x7f5e3e000000"),
             register(), register(ptr="0x7f5e3d000000"), register(ret=1, ptr="0x7f5e3e000000"),
             mprotect(8192, 1), {"call": "cudaHostUnregister", "args": {"ptr": BASE}, "ret": 0},
             register(["cudaHostRegisterReadOnly"]), mprotect(8192, "0x3", addr="0x7f5e3d000000")]
    for env in (None, {"host_page_tables": True}):
        text = trace(*lines, env=env).encode()
        fast, slow = outcome(text, True, None, *loop), outcome(text, False)
        assert fast == slow and fast[0] == "report"
        # with host page tables the read-only mapping registers under the documented rules, so the
        # InvalidValue of line 7 is held against the driver
        expected = [("conformance", "CUDA-REG-EFFECT", 7)] if env else \
            [("usage", "CUDA-REG-READONLY-MAPPING", 6), ("usage", "CUDA-REG-READONLY-MAPPING", 7)]
        assert rules(fast[1]) == expected


# ---------------------------------------------------------------- inputs with defaults (the language)


def check(text: str):
    return check_spec(parse_spec(text, "m.spec"))


SPEC = """spec m "m"
source DOC "d" "d"
status int success 0
flags F: u32 { A = 1, B = 2 }
call poke(p: addr, f: F = A | B) {
  fails M-1: 1 when f == 0
    cite DOC "d"
}
"""


def test_an_input_default_is_folded_and_printed():
    spec = check(SPEC)
    assert dict(spec.calls["poke"].defaults) == {"f": 3}
    assert "call poke(p: addr, f: F = A | B) {" in print_spec(parse_spec(SPEC, "m.spec"))


@pytest.mark.parametrize("signature, code, words", [
    ("call poke(f: F = A, p: addr) {", "E0301", "put the arguments with defaults last"),
    ("call poke(p: addr, f: F = p) {", "E0303", "must be a constant expression"),
    ("call poke(p: addr, f: F = true) {", "E0301", ""),  # a default of another type
    ("call poke(p: addr, f: F) -> (o: addr = 0) {", "E0301", "cannot have a default"),
])
def test_a_bad_default_is_an_error(signature, code, words):
    text = SPEC.replace("call poke(p: addr, f: F = A | B) {", signature)
    with pytest.raises(RegcheckError) as exc:
        check(text)
    assert any(d.code == code and words in d.message for d in exc.value.diagnostics), exc.value.diagnostics


def test_the_reference_driver_takes_an_mmap_without_prot():
    assert CallArgs("mmap", {"length": 1}).integer_or("prot", PROT_RW) == PROT_RW
    assert CallArgs("mmap", {"length": 1, "prot": 1}).integer_or("prot", PROT_RW) == 1
    with pytest.raises(RegcheckError):
        CallArgs("mmap", {"prot": "x"}).integer_or("prot", PROT_RW)


def test_execute_reproduces_the_refusal_of_vllm_omni_6240(tmp_path):
    # the reference driver answers InvalidValue, as driver 610.43.02 did: no divergence
    code, out, err = run_cli("execute", "traces/cuda/bad_vllm_omni_6240_register_readonly_mapping.jsonl")
    assert "divergence" not in out and "1 usage" in out, (out, err)
    code, out, err = run_cli("execute", "traces/cuda/ok_vllm_omni_6240_register_readonly_flag.jsonl")
    assert (code, out.strip().endswith("conforms: 4 events, no findings")) == (0, True), (out, err)


def test_the_bundled_cuda_spec_models_it():
    spec = load_spec("cuda")
    assert spec.rules["CUDA-REG-READONLY-MAPPING"].kind == "undefined"
    assert spec.rules["CUDA-REG-READONLY-MAPPING"].cite.clause.startswith("C1.8:")
    assert dict(spec.calls["mmap"].defaults) == {"prot": PROT_RW}
    assert spec.params["host_page_tables"][1] is False


def test_the_schema_takes_prot_and_mprotect_and_nothing_else_new():
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files
    schema = json.loads(files("checker").joinpath("schemas/trace-v1.schema.json").read_text(encoding="utf-8"))
    v = jsonschema.Draft202012Validator(schema)
    assert v.is_valid(mmap(prot=["PROT_READ"])) and v.is_valid(mmap()) and v.is_valid(mprotect(4096, 1))
    assert not v.is_valid({"call": "mprotect", "args": {"addr": BASE, "length": 4096}})  # prot required
    assert not v.is_valid({"call": "mmap", "args": {"length": 1, "protection": 1}, "out": {"addr": BASE}})
    assert not v.is_valid({**mprotect(4096, 1), "ret": 0})  # an environment event: no ret
    header = {"regcheck": 1, "spec": "cuda", "env": {"host_page_tables": True}}
    assert v.is_valid(header) and not v.is_valid({**header, "env": {"host_page_tables": "yes"}})
