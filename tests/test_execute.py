"""`regcheck execute`: the recording, the spec and a real driver, three ways."""

import json
from pathlib import Path

import pytest

from checker.drivers.execute import Relocator, execute_trace
from checker.drivers.pinning import vmlck_bytes
from checker.engines.replay import replay_trace
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
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
    r.add(0x7F00_0000_0000, 0x1000, 0x6000_0000)  # the recording reused overlapping memory
    assert r.relocate(0x7F00_0000_0123) == 0x6000_0123


def test_execute_json_and_bad_driver_spec(tmp_path):
    code, out, err = run("--driver", "no_such_module:X", write(tmp_path, pinned_roundtrip()))
    assert code == 2 and "E0603" in err
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
