"""`regcheck execute`: the recording, the spec and a real driver, three ways."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import checker.drivers.execute as execute_module
import checker.fast.fastpath as fastpath_mod
from checker.drivers.execute import ModelSteps, Relocator, execute_trace, output_problem
from checker.drivers.executor import ReferenceDriver
from checker.drivers.pinning import vmlck_bytes
from checker.drivers.protocol import Incident, IncidentKind, Result
from checker.engines.replay import Replayer, replay_trace, semantics_for
from checker.language.diagnostics import RegcheckError
from checker.language.load import load_spec
from checker.model.semantics import Semantics
from checker.model.state import NATIVE
from checker.trace.reader import read_trace_text
from tests.drivers import thirdparty
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from gen_mixes import cupva_timed, hex_and_names  # noqa: E402
from gen_trace import generate  # noqa: E402

_NEEDS_C = pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
# The corpus of the specs the reference driver implements (checker.drivers.executor); cuda and hip have no
# reference driver yet, so their traces are replayed (tests/test_corpus.py) but not executed.
CORPUS = sorted(p for spec in ("acl", "cupva") for p in (ROOT / "traces" / spec).glob("*.jsonl"))
ACL = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
PINNED, MAPPED = 0x10000000, 0x2
BASE = 0x7F3A_2C00_0000


def write(tmp_path, events, header=ACL, name="t.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(x) for x in [header, *events]) + "\n")
    return str(path)


def pinned_roundtrip(size=3 * 4096, offset=0):
    return [
        {"call": "malloc", "args": {"size": size + offset}, "out": {"ptr": BASE}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE + offset, "size": size, "flag": PINNED | MAPPED}, "ret": 0},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": BASE + offset, "flag": 0}, "ret": 0,
         "out": {"pDevice": 0x12C0000000}},
        {"call": "aclrtHostUnregister", "args": {"ptr": BASE + offset}, "ret": 0},
        {"call": "free", "args": {"ptr": BASE}},
    ]


def run(*argv: str) -> tuple[int, str, str]:
    return run_cli("execute", *argv)


def violations(report):
    return [(f.line, f.kind, f.rule) for f in report.findings if f.kind in ("usage", "conformance")]


@pytest.mark.parametrize("trace", CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_execute_agrees_with_replay_on_the_corpus(real_pinning, trace):
    executed = execute_trace(str(trace))
    replayed = replay_trace(str(trace))
    assert violations(executed) == violations(replayed)
    assert executed.verdict == replayed.verdict
    assert not [f for f in executed.findings if f.kind in ("executor", "pinning")], executed.findings


def test_pinned_registration_really_locks_and_unlocks(real_pinning, tmp_path):
    baseline = vmlck_bytes()
    report = execute_trace(write(tmp_path, pinned_roundtrip(offset=4096)))
    assert report.verdict == "conforms" and not report.findings
    assert vmlck_bytes() == baseline


def test_a_driver_that_does_not_pin_is_caught(real_pinning, tmp_path):
    code, out, _ = run("--driver", "tests.drivers.sloppy:PinnedDoesNotPin", write(tmp_path, pinned_roundtrip()))
    assert code == 1
    assert "pinning[ACL-PIN-REGISTERED]" in out


def test_a_driver_that_does_not_unpin_is_caught(real_pinning, tmp_path):
    baseline = vmlck_bytes()
    code, out, _ = run("--driver", "tests.drivers.sloppy:UnregisterKeepsLock", write(tmp_path, pinned_roundtrip()))
    assert code == 1
    assert "pinning[EXEC-LOCK-EXTRA]" in out
    assert vmlck_bytes() == baseline  # close() released the stray lock too


def test_a_driver_with_a_wrong_error_code_is_caught(real_pinning, tmp_path):
    events = [
        {"call": "malloc", "args": {"size": 8192}, "out": {"ptr": BASE}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 8192, "flag": MAPPED}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 4096, "flag": MAPPED}, "ret": 507910},
    ]
    code, out, _ = run("--driver", "tests.drivers.sloppy:WrongOverlapCode", "--format", "json", write(tmp_path, events))
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "violates"
    assert [(f["line"], f["kind"], f["rule"]) for f in doc["findings"] if f["kind"] == "executor"] == \
        [(4, "executor", "ACL-REG-OVERLAP")]


def test_hostile_addresses_are_refused_without_touching_memory(real_pinning, tmp_path):
    baseline = vmlck_bytes()
    events = [
        {"call": "malloc", "args": {"size": 4096}, "out": {"ptr": BASE}},
        # a stack address, a kernel address and an address past the end of the only allocation
        {"call": "aclrtHostRegisterV2", "args": {"ptr": 0x7FFD_0000_0000, "size": 4096, "flag": PINNED}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": 0xFFFF_8000_0000_0000, "size": 4096, "flag": PINNED}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 1 << 30, "flag": PINNED}, "ret": 0},
        {"call": "free", "args": {"ptr": BASE + 4096}},
    ]
    report = execute_trace(write(tmp_path, events))
    refused = [(f.line, f.rule) for f in report.findings if f.kind == "refused"]
    assert [line for line, _ in refused] == [3, 4, 5, 6]
    assert {rule for _, rule in refused} == {"EXEC-ADDRESS-UNOWNED"}
    assert vmlck_bytes() == baseline
    assert report.verdict == "violates"  # the caller broke its obligations (usage findings)


def test_mlock_failure_is_an_environmental_failure_and_leaves_nothing_locked(real_pinning, tmp_path):
    from checker.drivers.executor import ReferenceDriver

    baseline = vmlck_bytes()
    report = execute_trace(write(tmp_path, pinned_roundtrip(size=64 * 4096)),
                           driver_factory=lambda: ReferenceDriver(max_locked_bytes=4096))
    kinds = {f.kind for f in report.findings}
    assert "pinning" not in kinds and "executor" not in kinds
    assert any(f.kind == "divergence" and "cap" in f.message for f in report.findings)
    assert vmlck_bytes() == baseline


def test_relocation_keeps_offsets_inside_allocation_and_page():
    r = Relocator()
    r.add(0x7F00_0000_0123, 0x3000, 0x5000_0000)  # the driver handed out 0x50000000 (size + 0x123)
    assert r.relocate(0x7F00_0000_0123) == 0x5000_0123
    assert r.relocate(0x7F00_0000_1123) == 0x5000_1123  # interior address: same offset
    assert r.relocate(0x7F00_0000_0123 + 0x3000) is None  # one past the end
    assert r.relocate(0) == 0
    assert r.relocate_base(0x7F00_0000_0123) == 0x5000_0000  # a release names the driver's block
    assert r.displaced == 0
    r.add(0x7F00_0000_0000, 0x1000, 0x6000_0000)  # the recording reused overlapping memory
    assert r.relocate(0x7F00_0000_0123) == 0x6000_0123
    assert r.displaced == 1  # a live allocation was replaced (the fuzzer stops judging there)
    r.forget(0x7F00_0000_0000)
    r.add(0x7F00_0000_0000, 0x1000, 0x7000_0000)  # after a release: a reuse, nothing displaced
    assert r.displaced == 1


def test_execute_json_and_bad_driver_spec(tmp_path):
    code, out, err = run("--driver", "no_such_module:X", write(tmp_path, pinned_roundtrip()))
    assert code == 2 and "E0615" in err
    code, out, err = run("--driver", "justamodule", write(tmp_path, pinned_roundtrip()))
    assert code == 2 and "MODULE:FACTORY" in err


def test_a_released_allocation_no_longer_relocates():
    r = Relocator()
    r.add(0x7F00_0000_0000, 0x2000, 0x5000_0000)
    r.forget(0x7F00_0000_0000)
    assert r.relocate(0x7F00_0000_0010) is None


def test_memory_reused_by_the_recording_after_a_free(real_pinning, tmp_path):
    events = []
    for _ in range(3):  # the program's allocator hands out the same block each time
        events += [
            {"call": "malloc", "args": {"size": 8192}, "out": {"ptr": BASE}},
            {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 8192, "flag": PINNED}, "ret": 0},
            {"call": "aclrtHostUnregister", "args": {"ptr": BASE}, "ret": 0},
            {"call": "free", "args": {"ptr": BASE}},
        ]
    report = execute_trace(write(tmp_path, events))
    assert report.verdict == "conforms" and not report.findings, report.findings


# ---------------------------------------------------------------- the fast steps find what the general path finds

# execute takes the recording's lines the replayer's fast steps find nothing in, and the driver's results
# the same steps allow, on those steps (checker.drivers.execute.CheckedLines, ModelSteps); with
# FAST_STEPS False every event goes the general way, the reference. Both must give the same report.
MAPPED_PINNED_NAMES = ["ACL_HOST_REG_MAPPED", "ACL_HOST_REG_PINNED"]
DRIVER_ADDRESS = re.compile(r"0x[0-9a-f]{9,}")  # the driver's own addresses differ from run to run


def executed(path, fast: bool, driver=None, max_findings=None, machine: bool = True):
    saved = execute_module.FAST_STEPS, fastpath_mod.MACHINE_STEPS
    execute_module.FAST_STEPS, fastpath_mod.MACHINE_STEPS = fast, machine
    try:
        report = execute_trace(str(path), driver or ReferenceDriver, max_findings=max_findings)
    except RegcheckError as exc:
        return ("error", [(d.code, d.span.line, d.span.column, d.message) for d in exc.diagnostics])
    finally:
        execute_module.FAST_STEPS, fastpath_mod.MACHINE_STEPS = saved
    findings = [(f.line, f.kind, f.rule, f.call, DRIVER_ADDRESS.sub("ADDR", f.message), f.related, f.notes, f.rejected,
                 f.document) for f in report.findings]
    return ("report", report.events, report.verdict, report.truncated, findings)


def assert_same_both_ways(path, driver=None, max_findings=None, machine: bool = True):
    fast = executed(path, True, driver, max_findings, machine)
    assert fast == executed(path, False, driver, max_findings, machine)
    return fast


ALL_TRACES = sorted((ROOT / "traces").rglob("*.jsonl"))


@pytest.mark.parametrize("trace", ALL_TRACES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_executes_the_same_with_and_without_the_fast_steps(real_pinning, trace):
    assert_same_both_ways(trace)
    assert_same_both_ways(trace, max_findings=1)


class Counting:
    """Counts the general path's calls: the recording's normalisation, the driver's judgement."""

    def __init__(self, monkeypatch):
        self.normalised = self.allowed = 0
        normalise, allowed = Replayer.normalise, Semantics.allowed

        def counted_normalise(replayer, ev):
            self.normalised += 1
            return normalise(replayer, ev)

        def counted_allowed(sem, st, call, args):
            self.allowed += 1
            return allowed(sem, st, call, args)
        monkeypatch.setattr(Replayer, "normalise", counted_normalise)
        monkeypatch.setattr(Semantics, "allowed", counted_allowed)


@pytest.mark.parametrize("machine", [pytest.param(True, id="step-machine", marks=_NEEDS_C),
                                     pytest.param(False, id="python-steps")])
def test_the_benchmark_mix_runs_on_the_fast_steps_with_the_same_report(real_pinning, tmp_path, monkeypatch, machine):
    path = tmp_path / "mix.jsonl"
    n = generate(str(path), 1500, live=40, seed=3)
    counts = Counting(monkeypatch)
    report = assert_same_both_ways(path, machine=machine)
    assert report[:3] == ("report", n, "conforms")
    # Only the run with FAST_STEPS False took the general path: every event once for the recording,
    # and once more for the driver's results.
    assert (counts.normalised, counts.allowed) == (n, 2 * n)


@pytest.mark.parametrize("machine", [pytest.param(True, id="step-machine", marks=_NEEDS_C),
                                     pytest.param(False, id="python-steps")])
def test_hex_and_flag_name_lines_run_on_the_fast_steps_with_the_same_report(real_pinning, tmp_path, monkeypatch,
                                                                             machine):
    """Recorders write addresses and statuses as "0x..." strings and flags as names: such lines go
    the fast steps too, read as the general path reads them, with the same report."""
    path = tmp_path / "hex.jsonl"
    n = hex_and_names(str(path), 1500, seed=3)
    text = path.read_bytes()
    assert b'"0x' in text and b'"ACL_HOST_REG_' in text and b'"ret":"0x0"' in text
    counts = Counting(monkeypatch)
    report = assert_same_both_ways(path, machine=machine)
    assert report[:3] == ("report", n, "conforms")
    assert (counts.normalised, counts.allowed) == (n, 2 * n)  # the general path: only the run without the steps


@pytest.mark.parametrize("machine", [pytest.param(True, id="step-machine", marks=_NEEDS_C),
                                     pytest.param(False, id="python-steps")])
def test_cupva_environment_events_with_their_c_status_run_on_the_fast_steps(real_pinning, tmp_path, monkeypatch,
                                                                           machine):
    """cuPVA's cudaMalloc and cudaFree with the C status 0 (as the recorder writes them) go the
    recording's fast steps, with the same report as the general path's."""
    path = tmp_path / "cupva.jsonl"
    n = cupva_timed(str(path), 1200, per_round=50, seed=3)
    assert b'"call":"cudaMalloc"' in path.read_bytes() and b'},"ret":0,' in path.read_bytes()
    counts = Counting(monkeypatch)
    report = assert_same_both_ways(path, machine=machine)
    assert report[:3] == ("report", n, "conforms")
    assert counts.normalised == n  # the recording's general path: only the run without the steps


def spelt_trace():
    """Lines of every kind among the fast steps' own: integers spelt as hex strings and flag names
    (read on the fast path where the step takes the line), a ret the decoder does not take, a blank
    line, an `expect`, a usage finding, a divergence, and the last event (the lock check reads smaps
    whole there): the lines the fast steps decline go the general path."""
    other = BASE + 0x10_0000
    return [
        {"call": "malloc", "args": {"size": 3 * 4096}, "out": {"ptr": BASE}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": hex(BASE), "size": 8192, "flag": MAPPED_PINNED_NAMES}, "ret": 0},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": BASE, "flag": 0}, "ret": 0, "out": {"pDevice": "0x12c0000000"}},
        None,
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": BASE, "flag": 0}, "ret": "0x0", "out": {"pDevice": 0x12C0000000}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 4096, "flag": PINNED}, "ret": 507910,
         "expect": {"rule": "ACL-REG-OVERLAP", "outcome": "failure"}},
        {"call": "malloc", "args": {"size": 4096}, "out": {"ptr": other}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": other, "size": 4096, "flag": "ACL_HOST_REG_PINNED"}, "ret": 0},
        {"call": "aclrtHostUnregister", "args": {"ptr": other}, "ret": 507911},  # recorded a failure: a divergence
        {"call": "free", "args": {"ptr": other}},  # freed while registered: a usage finding
        {"call": "aclrtHostUnregister", "args": {"ptr": "0x" + format(BASE, "x")}, "ret": 0},
        {"call": "free", "args": {"ptr": BASE}},
    ]


def write_lines(tmp_path, events, tail: bytes = b"", name="t.jsonl"):
    path = tmp_path / name
    lines = [json.dumps(ACL)] + ["   " if e is None else json.dumps(e) for e in events]
    path.write_bytes(("\n".join(lines) + "\n").encode() + tail)
    return path


def test_spelt_values_and_findings_execute_the_same_with_and_without_the_fast_steps(real_pinning, tmp_path):
    report = assert_same_both_ways(write_lines(tmp_path, spelt_trace()))
    assert report[0] == "report" and report[2] == "violates"
    assert {"usage", "divergence"} <= {f[1] for f in report[4]}
    for limit in (1, 2):
        assert assert_same_both_ways(write_lines(tmp_path, spelt_trace()), max_findings=limit)[3] is True


@pytest.mark.parametrize("tail", [b'{"call": "free", "args": {"ptr": 12}, "ret": 0, "bogus": 1}\n', b'{"call": "fre',
                                  b'{"call": "free", "args": {}}\n'], ids=["unknown-field", "cut-short", "missing-arg"])
def test_an_input_error_after_fast_lines_is_the_same_error(real_pinning, tmp_path, tail):
    outcome = assert_same_both_ways(write_lines(tmp_path, pinned_roundtrip(), tail))
    assert outcome[0] == "error"


class OddResults(ReferenceDriver):
    """Results the fast steps must not be handed as they are (statuses of the wrong type or beyond what
    the decoder takes, an output within its type but beyond the decoder's int64), a wrong status (an
    executor finding), and a success the driver says it refused (so the model that follows the
    driver must not apply it). (An output outside its type stops the run: the test below.)"""

    def call(self, name, args):
        result = super().call(name, args)
        if name == "aclrtHostGetDevicePointer" and result.ret == 0:
            return Result(0, {"pDevice": (1 << 64) - 4096})
        if name == "aclrtHostUnregister":
            return Result(True if result.ret == 0 else result.ret)
        if name == "aclrtHostRegisterV2" and result.ret == 507910:
            return Result(1 << 200)
        if name == "aclrtHostRegisterV2" and args["flag"] == PINNED and result.ret == 0:
            self._note(Incident(IncidentKind.REFUSED, name, "X0803", "refused, yet carried out"))
        return result


def test_odd_driver_results_are_judged_the_same_with_and_without_the_fast_steps(real_pinning, tmp_path):
    events = pinned_roundtrip() + [
        {"call": "malloc", "args": {"size": 8192}, "out": {"ptr": BASE}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 8192, "flag": MAPPED}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 4096, "flag": MAPPED}, "ret": 507910},
        {"call": "malloc", "args": {"size": 8192}, "out": {"ptr": BASE + 0x10_0000}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE + 0x10_0000, "size": 8192, "flag": PINNED}, "ret": 0},
        {"call": "aclrtHostGetDevicePointer", "args": {"pHost": BASE, "flag": 0}, "ret": 0, "out": {"pDevice": 0x12C0000000}},
    ]
    report = assert_same_both_ways(write(tmp_path, events), OddResults)
    assert {"executor", "divergence", "refused"} <= {f[1] for f in report[4]}
    assert ("pinning", "EXEC-LOCK-EXTRA") in {f[1:3] for f in report[4]}  # the refused registration's lock


def test_model_steps_are_handed_only_what_the_decoder_would_give_them():
    header, _ = read_trace_text(json.dumps(ACL) + "\n", "t.jsonl")
    sem = semantics_for(header, None, "t.jsonl")
    st = sem.initial_state()
    steps = ModelSteps(sem, st)
    assert steps.took("malloc", {"size": 8192}, 0, {"ptr": BASE})
    assert steps.took("aclrtHostRegisterV2", {"ptr": BASE, "size": 8192, "flag": MAPPED}, 0, {})
    before = st.snapshot()
    # beyond the decoder's bounds (int64), a status of the wrong type, a bool for an integer: declined
    assert not steps.took("aclrtHostGetDevicePointer", {"pHost": BASE, "flag": 0}, 0, {"pDevice": 1 << 70})
    assert not steps.took("aclrtHostGetDevicePointer", {"pHost": BASE, "flag": 0}, "0", {"pDevice": 0x12C0000000})
    assert not steps.took("aclrtHostGetDevicePointer", {"pHost": BASE, "flag": False}, 0, {"pDevice": 0x12C0000000})
    assert not steps.took("aclrtHostUnregister", {"ptr": BASE}, True, {})
    assert not steps.took("aclrtHostUnregister", {"ptr": BASE}, 1 << 64, {})
    assert st.snapshot() == before
    assert steps.took("aclrtHostGetDevicePointer", {"pHost": BASE, "flag": 0}, 0, {"pDevice": 0x12C0000000})
    assert st.snapshot() != before  # the device pointer is stored
    assert not ModelSteps(sem, sem.initial_state(), enabled=False).took("malloc", {"size": 8192}, 0, {"ptr": BASE})


@pytest.mark.parametrize("driver, message", [("RegisterReturnsText", "TypeError: call() returned 0, not a"),
                                             ("RegisterRaises", "ValueError: boom")])
def test_a_driver_that_crashes_or_returns_no_result_is_a_finding_and_the_run_stops(real_pinning, tmp_path, driver,
                                                                                   message):
    """Found by testing: these were tracebacks (exit 3)."""
    path = write(tmp_path, pinned_roundtrip())
    code, out, err = run("--driver", f"tests.drivers.sloppy:{driver}", "--format", "json", path)
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "violates" and doc["events"] == 2, err
    last = doc["findings"][-1]
    assert (last["line"], last["kind"], last["rule"]) == (3, "executor", "EXEC-DRIVER-ERROR")
    assert message in last["message"] and "execution stops at this event" in last["message"]


@pytest.mark.parametrize("driver, what", [("no_driver", "the driver factory raised RuntimeError: no device"),
                                          ("StartRaises", "the driver's start() raised OSError: no device"),
                                          ("CloseRaises", "the driver's close() raised RuntimeError: close failed")])
def test_a_driver_that_cannot_be_made_started_or_closed_is_an_error_not_a_traceback(real_pinning, tmp_path, driver,
                                                                                     what):
    path = write(tmp_path, pinned_roundtrip())
    code, out, err = run("--driver", f"tests.drivers.sloppy:{driver}", path)
    assert code == 2 and f"{path}:1:1: error[X0809]: {what}" in err and "Traceback" not in err


def test_a_driver_module_that_fails_to_import_is_E0615(tmp_path, monkeypatch):
    """Found by testing: only ImportError was caught; a module raising anything else was a traceback."""
    (tmp_path / "broken_driver.py").write_text("raise RuntimeError('no device here')\n")
    (tmp_path / "bad_syntax_driver.py").write_text("def make(:\n")
    monkeypatch.chdir(tmp_path)
    trace = write(tmp_path, pinned_roundtrip())
    code, _, err = run("--driver", "broken_driver:make", trace)
    assert code == 2 and "error[E0615]: cannot load driver factory 'broken_driver:make': RuntimeError: no device" in err
    code, _, err = run("--driver", "bad_syntax_driver:make", trace)
    assert code == 2 and "error[E0615]" in err and "SyntaxError" in err and "Traceback" not in err


def test_an_event_the_driver_cannot_carry_out_is_an_error_at_its_line(real_pinning, tmp_path):
    """Found by testing: X0805 came without the trace or line, and with Python's own words."""
    path = write(tmp_path, [{"call": "malloc", "args": {"size": 4096}, "out": {"ptr": BASE}},
                            {"call": "malloc", "args": {"size": 2**64 - 1}, "out": {"ptr": BASE + 2**20}}])
    code, _, err = run(path)
    assert code == 2 and f"{path}:3:1: error[X0805]: a buffer of {2**64} bytes is larger than a file can be" in err


def test_many_live_allocations_run_under_a_low_soft_limit_of_open_files(real_pinning, tmp_path):
    """Found by testing: a buffer holds a descriptor, and a soft limit of 1,024 stopped an execution at
    about 600 live allocations; the arena raises the soft limit to the hard one."""
    import resource
    events = [{"call": "malloc", "args": {"size": 4096}, "out": {"ptr": BASE + i * 2**20}} for i in range(200)]
    path = write(tmp_path, events)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 400:
        pytest.skip(f"the hard limit of open files here is {hard}")

    def low_soft_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (100, hard))

    done = subprocess.run([sys.executable, "-m", "checker", "execute", path], capture_output=True, text=True,
                          preexec_fn=low_soft_limit, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and "conforms: 200 events" in done.stdout, done.stderr


@pytest.mark.parametrize("name", ["cuda/ok_mmap_partial_munmap", "cuda/ok_ucx_unregister_on_munmap",
                                  "hip/ok_mmap_partial_munmap",
                                  "cuda/bad_checkpoint_engine_67_munmap_while_registered"])
def test_mmap_memory_relocates_whole_pages_and_what_a_partial_munmap_leaves(real_pinning, name):
    """Found by testing: mmap sizes its entry by the length rounded up to whole pages, which the
    executor did not take for an allocation, so every later event on that memory was refused."""
    report = execute_trace(str(ROOT / "traces" / f"{name}.jsonl"))
    assert [f for f in report.findings if f.kind == "refused"] == []
    assert report.verdict == replay_trace(str(ROOT / "traces" / f"{name}.jsonl")).verdict


def test_a_mapping_registered_twice_is_caught_on_mmap_memory_too(real_pinning, tmp_path):
    """The same driver bug as on malloc'd memory (a second registration of the same pages accepted)."""
    events = [{"call": "mmap", "args": {"length": 65536}, "out": {"addr": 0x7F00_0000_0000}},
              {"call": "cudaHostRegister", "args": {"ptr": 0x7F00_0000_0000, "size": 65536, "flags": 0}, "ret": 0},
              {"call": "cudaHostRegister", "args": {"ptr": 0x7F00_0000_0000, "size": 4096, "flags": 0}, "ret": 712}]
    from tests.mutants.cuda import CudaNoOverlapCheck
    path = write(tmp_path, events, header={"regcheck": 1, "spec": "cuda"})
    report = execute_trace(path, driver_factory=CudaNoOverlapCheck)
    assert ("executor", "CUDA-REG-OVERLAP") in {(f.kind, f.rule) for f in report.findings}


@pytest.mark.parametrize("driver, rule", [("NeverPins", "ACL-PIN-REGISTERED"), ("KeepsLocks", "EXEC-LOCK-EXTRA")])
def test_a_third_party_drivers_page_locks_are_checked(real_pinning, tmp_path, driver, rule):
    """docs/drivers.md: a driver without the reference driver's lock reports gets the whole
    comparison after every event (its locks read from smaps, inside the memory it handed out)."""
    path = write(tmp_path, pinned_roundtrip())
    assert execute_trace(path, thirdparty.Plain).findings == ()
    report = execute_trace(path, getattr(thirdparty, driver))
    line = 3 if rule == "ACL-PIN-REGISTERED" else 5  # the registration; the unregistration
    assert (line, "pinning", rule) in [(f.line, f.kind, f.rule) for f in report.findings]


@pytest.mark.parametrize("call, output, value, line", [
    ("aclrtHostGetDevicePointer", "pDevice", -1, 4), ("aclrtHostGetDevicePointer", "pDevice", 1 << 70, 4),
    ("aclrtHostGetDevicePointer", "pDevice", None, 4), ("aclrtHostGetDevicePointer", "pDevice", thirdparty.MISSING, 4),
    ("malloc", "ptr", "0x7f0000000000", 2), ("malloc", "ptr", thirdparty.MISSING, 2), ("malloc", "ptr", True, 2)])
def test_a_drivers_output_missing_or_outside_its_type_is_the_drivers_error(real_pinning, tmp_path, call, output,
                                                                          value, line):
    """Not a traceback, not an input error blaming the recording, not a pass: EXEC-DRIVER-ERROR."""
    driver = type("Odd", (thirdparty.OddOutput,), {"CALL": call, "OUTPUT": output, "VALUE": value})
    report = execute_trace(write(tmp_path, pinned_roundtrip()), driver)
    assert [(f.line, f.kind, f.rule) for f in report.findings] == [(line, "executor", "EXEC-DRIVER-ERROR")]
    assert output in report.findings[0].message


@pytest.mark.parametrize("value, problem", [
    (4096, None), (0, None), (2**64 - 1, None),
    (True, "not an int"), ("0x10", "not an int"), (4096.0, "not an int"), (None, "not an int"),
    (-1, "out of the range of addr"), (2**64, "out of the range of addr"),
])
def test_an_int_output_is_an_exact_int_within_its_range(value, problem):
    """The driver's rule is stricter than a trace's: no bool, no "0x..." string (the range check is
    model.values.type_problem, shared with the prover's TYPES)."""
    said = output_problem(Semantics(load_spec("acl")), "malloc", {"ptr": value})
    assert said is None if problem is None else problem in said


@pytest.mark.parametrize("driver", ["HandsOutMallocMemory", "Misaligned"])
def test_an_allocations_promises_are_judged_on_the_drivers_own_address(real_pinning, tmp_path, driver):
    """The recorded address stands for the driver's in the model, so ACL-MALLOCHOST-FRESH (fresh
    among the live blocks, 64-byte aligned) is judged on the driver's own among its own blocks."""
    host = {"call": "aclrtMallocHost", "args": {"size": 4096}, "ret": 0, "out": {"hostPtr": BASE * 2}}
    path = write(tmp_path, [{"call": "malloc", "args": {"size": 4 * 4096}, "out": {"ptr": BASE}}, host,
                            {"call": "aclrtFreeHost", "args": {"hostPtr": BASE * 2}, "ret": 0}, host])
    assert [f for f in execute_trace(path, thirdparty.Plain).findings if f.kind != "divergence"] == []
    report = execute_trace(path, getattr(thirdparty, driver))
    assert (3, "executor", "ACL-MALLOCHOST-FRESH") in [(f.line, f.kind, f.rule) for f in report.findings]
