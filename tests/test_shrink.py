"""Delta debugging of violating traces."""

import io
import json
from pathlib import Path

import pytest

from checker.cli import main
from checker.engines.replay import replay_trace
from checker.engines.shrink import ddmin

HEADER = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}


def write(path, events, header=HEADER):
    path.write_text("\n".join(json.dumps(x) for x in [header, *events]) + "\n")
    return str(path)


def noisy_overlap_trace(tmp_path):
    """An overlap accepted by the driver, buried among unrelated, conforming activity."""
    events = []
    for i in range(30):  # unrelated allocations and registrations
        base = 0x10_0000_0000 + i * 0x10000
        events += [
            {"call": "malloc", "args": {"size": 8192}, "out": {"ptr": base}},
            {"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": 4096, "flag": 2}, "ret": 0},
        ]
    events += [
        {"call": "malloc", "args": {"size": 16384}, "out": {"ptr": 0x7F00_0000_0000}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": 0x7F00_0000_0000, "size": 8192, "flag": 2}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": 0x7F00_0000_1000, "size": 4096, "flag": 2}, "ret": 0},
        {"call": "aclrtHostUnregister", "args": {"ptr": 0x7F00_0000_0000}, "ret": 0},
    ]
    return write(tmp_path / "noisy.jsonl", events)


def test_ddmin_finds_a_one_minimal_subsequence():
    items = list(range(40))
    result = ddmin(items, lambda xs: {3, 17, 29} <= set(xs))
    assert result == [3, 17, 29]


def test_shrink_keeps_the_first_finding_and_drops_the_noise(tmp_path):
    src = noisy_overlap_trace(tmp_path)
    out = tmp_path / "small.jsonl"
    code = main(["shrink", src, "-o", str(out)], stdout=io.StringIO(), stderr=io.StringIO())
    assert code == 0
    report = replay_trace(str(out))
    first = next(f for f in report.findings if f.kind != "unspecified")
    assert (first.kind, first.rule) == ("conformance", "ACL-REG-OVERLAP")
    assert report.events == 3  # malloc, the registration, the overlapping one


def test_shrunk_trace_is_one_minimal(tmp_path):
    src = noisy_overlap_trace(tmp_path)
    out = tmp_path / "small.jsonl"
    assert main(["shrink", src, "-o", str(out)], stdout=io.StringIO(), stderr=io.StringIO()) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 4  # the header and three events, which together still show the overlap
    assert [f.rule for f in replay_trace(str(out)).findings if f.kind != "unspecified"][:1] == ["ACL-REG-OVERLAP"]
    for drop in range(1, len(lines)):
        candidate = tmp_path / f"drop{drop}.jsonl"
        candidate.write_text("\n".join(lines[:drop] + lines[drop + 1:]) + "\n")
        report = replay_trace(str(candidate))
        first = next((f for f in report.findings if f.kind != "unspecified"), None)
        assert first is None or first.rule != "ACL-REG-OVERLAP"


def test_shrink_of_a_conforming_trace_is_an_input_error(tmp_path):
    src = write(tmp_path / "ok.jsonl", [{"call": "malloc", "args": {"size": 4096}, "out": {"ptr": 0x1000}}])
    err = io.StringIO()
    code = main(["shrink", src, "-o", str(tmp_path / "x.jsonl")], stdout=io.StringIO(), stderr=err)
    assert code == 2
    assert "T0740" in err.getvalue()


@pytest.mark.parametrize("fmt", ["json"])
def test_shrink_json_output(tmp_path, fmt):
    src = noisy_overlap_trace(tmp_path)
    buf = io.StringIO()
    assert main(["shrink", src, "-o", str(tmp_path / "s.jsonl"), "--format", fmt], stdout=buf, stderr=io.StringIO()) == 0
    doc = json.loads(buf.getvalue())
    assert doc["rule"] == "ACL-REG-OVERLAP" and doc["events"] == 3 and doc["original_events"] == 64


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_shrink_to_dash_writes_the_trace_to_standard_output(tmp_path, monkeypatch, fmt):
    """Found by testing: `-o -` wrote a file named `-`. The trace is standard output, alone (so that it
    pipes into `regcheck replay -`), and the report goes to standard error."""
    src = noisy_overlap_trace(tmp_path)
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["shrink", src, "-o", "-", "--format", fmt], stdout=out, stderr=err) == 0
    assert not (tmp_path / "-").exists()
    (tmp_path / "piped.jsonl").write_text(out.getvalue())
    first = next(f for f in replay_trace(str(tmp_path / "piped.jsonl")).findings if f.kind != "unspecified")
    assert first.rule == "ACL-REG-OVERLAP" and len(out.getvalue().splitlines()) == 1 + 3  # header and 3 events
    if fmt == "json":
        doc = json.loads(err.getvalue())
        assert (doc["output"], doc["rule"], doc["events"]) == ("-", "ACL-REG-OVERLAP", 3)
    else:
        assert err.getvalue().endswith("wrote standard output\n")


TERMINAL_CONTROLS = "\x7f\x9b2J\u202e"  # DEL, the 8-bit ESC [ (xterm acts on it in UTF-8 too), right-to-left


def test_json_to_standard_output_holds_no_raw_terminal_controls(tmp_path, monkeypatch):
    """A JSON writer escapes C0 controls itself, not DEL, C1 controls or bidirectional overrides: a
    trace's file name and its header's meta put them raw on standard output (`-o -`, `--format json`).
    They are written as \\u escapes instead, which every JSON reader reads as the same strings."""
    note = f"a{TERMINAL_CONTROLS} b"
    src = tmp_path / f"t{TERMINAL_CONTROLS}.jsonl"
    events = [json.loads(line) for line in Path(noisy_overlap_trace(tmp_path)).read_text().splitlines()[1:]]
    write(src, events, header={**HEADER, "meta": {"note": note}})
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["shrink", str(src), "-o", "-", "--format", "json"], stdout=out, stderr=err) == 0
    assert json.loads(out.getvalue().splitlines()[0])["meta"]["note"] == note
    assert json.loads(err.getvalue())["trace"] == str(src)
    for text in (out.getvalue(), err.getvalue()):
        assert "\\u202e" in text and not any(c in text for c in "\x7f\x9b\u202e")
