"""Where traces come from: compressed files, standard input, specs named relative to the trace,
`--spec` replacing the header's spec, and the host values `regcheck record` puts in the header
(checker/language/files.py, checker/trace/reader.py, checker/engines/record.py)."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from checker.engines.record import find_compiler, host_env
from checker.language.diagnostics import RegcheckError
from checker.language.files import compression_of, open_decompressed
from checker.trace.events import TraceHeader
from checker.trace.reader import header_spec_ref, read_trace, spec_ref_for_output
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
VIOLATING = (ROOT / "traces" / "acl" / "bad_double_free.jsonl").read_bytes()
ACL_SPEC = ROOT / "spec" / "acl.spec"


def zstd_frames(data: bytes, frames: int = 1) -> bytes:
    """`data` as zstd, cut into `frames` frames one after another (as `zstd` on a concatenation writes)."""
    step = max(1, len(data) // frames)
    parts = [data[i:i + step] for i in range(0, len(data), step)]
    return b"".join(zstandard.ZstdCompressor().compress(p) for p in parts)


COMPRESS = {
    "gzip": gzip.compress,
    "gzip, two members": lambda d: gzip.compress(d[:len(d) // 2]) + gzip.compress(d[len(d) // 2:]),
    "xz": lzma.compress,
    "zstd": zstd_frames,
    "zstd, three frames": lambda d: zstd_frames(d, 3),
}


def replay_json(*argv: str) -> tuple[int, dict, str]:
    code, out, err = run_cli("replay", "--format", "json", *argv)
    return code, json.loads(out), err


def with_header(data: bytes, **fields) -> bytes:
    """The trace `data` with its header's fields replaced."""
    first, rest = data.split(b"\n", 1)
    header = {**json.loads(first), **fields}
    return json.dumps(header).encode() + b"\n" + rest


# ---------------------------------------------------------------- compressed traces


@pytest.mark.parametrize("how", list(COMPRESS))
def test_a_compressed_trace_replays_as_the_plain_one_whatever_its_name(tmp_path, how):
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(VIOLATING)
    packed = tmp_path / "packed.jsonl"  # the name says nothing: the first bytes do
    packed.write_bytes(COMPRESS[how](VIOLATING))
    code, expected, _ = replay_json(str(plain))
    got_code, got, err = replay_json(str(packed))
    assert (got_code, err) == (code, "")
    assert {k: v for k, v in got.items() if k != "trace"} == {k: v for k, v in expected.items() if k != "trace"}
    assert code == 1 and got["events"] > 0


@pytest.mark.parametrize("how", ["gzip", "xz", "zstd"])
def test_a_compressed_trace_cut_short_is_T0714(tmp_path, how):
    packed = COMPRESS[how](VIOLATING)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[:len(packed) - 8])
    code, out, err = run_cli("replay", str(path))
    assert code == 2 and out == ""
    assert "error[T0714]" in err and "cut short" in err and how in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("how", ["gzip", "xz", "zstd"])
def test_a_damaged_compressed_trace_is_T0714(tmp_path, how):
    packed = bytearray(COMPRESS[how](VIOLATING * 4))
    head = {"gzip": 10, "xz": 12, "zstd": 6}[how]  # past the format's magic and flags
    for i in range(head, len(packed) - 4):
        packed[i] ^= 0x5A
    path = tmp_path / "bad.jsonl"
    path.write_bytes(bytes(packed))
    code, _, err = run_cli("replay", str(path))
    assert code == 2 and "error[T0714]" in err and how in err, err


def test_line_length_limit_holds_inside_a_compressed_trace(tmp_path):
    header = VIOLATING.split(b"\n", 1)[0]
    long_line = b'{"call":"malloc","args":{"size":1},"out":{"ptr":"0x' + b"0" * 5000 + b'1"}}'
    path = tmp_path / "long.jsonl"
    path.write_bytes(gzip.compress(header + b"\n" + long_line + b"\n"))
    code, _, err = run_cli("replay", "--max-line-bytes", "1000", str(path))
    assert code == 2 and "error[T0713]" in err and ":2:" in err, err


def test_compression_is_told_by_magic_bytes():
    assert compression_of(gzip.compress(b"x")) == "gzip"
    assert compression_of(lzma.compress(b"x")) == "xz"
    assert compression_of(zstd_frames(b"x")) == "zstd"
    assert compression_of(b'{"regcheck":1}') is None
    assert compression_of(b"") is None


def test_a_special_file_is_still_refused(tmp_path):
    with pytest.raises(RegcheckError) as caught:
        open_decompressed("/dev/zero", "T0712", "trace")
    assert caught.value.diagnostics[0].code == "T0712"
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    code, _, err = run_cli("replay", str(fifo))
    assert code == 2 and "error[T0712]" in err and "FIFO" in err


@pytest.mark.parametrize("command", ["shrink", "itf"])
def test_other_readers_take_compressed_traces(tmp_path, command):
    path = tmp_path / "t.jsonl.xz"
    path.write_bytes(lzma.compress(VIOLATING))
    out = tmp_path / "out"
    code, _, err = run_cli(command, str(path), "-o", str(out))
    assert code == 0, err
    assert out.stat().st_size > 0


def test_execute_takes_a_compressed_trace(tmp_path):
    plain = tmp_path / "t.jsonl"
    plain.write_bytes(VIOLATING)
    packed = tmp_path / "t.zst"
    packed.write_bytes(zstd_frames(VIOLATING, 2))
    a = run_cli("execute", "--format", "json", str(plain))
    b = run_cli("execute", "--format", "json", str(packed))
    assert a[0] == b[0] and a[0] in (0, 1), b[2]
    drop = lambda doc: {k: v for k, v in json.loads(doc).items() if k != "trace"}  # noqa: E731
    assert drop(a[1]) == drop(b[1])


# ---------------------------------------------------------------- standard input


def regcheck(*argv: str, data: bytes, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "checker", *argv], input=data, capture_output=True, cwd=cwd,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("how", ["plain", "gzip", "zstd"])
def test_replay_reads_standard_input(tmp_path, how):
    data = VIOLATING if how == "plain" else COMPRESS[how](VIOLATING)
    done = regcheck("replay", "--format", "json", "-", data=data, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["trace"] == "-" and doc["verdict"] == "violates" and doc["events"] > 0


def test_standard_input_among_other_traces_on_worker_processes(tmp_path):
    for i in range(2):
        (tmp_path / f"t{i}.jsonl").write_bytes(VIOLATING)
    done = regcheck("replay", "-j", "2", "--format", "json", "t0.jsonl", "-", "t1.jsonl",
                    data=gzip.compress(VIOLATING), cwd=tmp_path)
    doc = json.loads(done.stdout)
    assert [t["trace"] for t in doc["traces"]] == ["t0.jsonl", "-", "t1.jsonl"], done.stderr
    assert doc["errors"] == [] and {t["verdict"] for t in doc["traces"]} == {"violates"}


def test_a_timeline_of_compressed_standard_input(tmp_path):
    """The timeline reads its trace twice; a gzip stream on standard input is spooled once and read twice."""
    done = regcheck("replay", "--timeline", str(tmp_path / "t.html"), "-", data=gzip.compress(VIOLATING), cwd=tmp_path)
    assert done.returncode == 1 and done.stdout.decode().startswith("-:"), done.stderr
    assert "regcheck timeline" in (tmp_path / "t.html").read_text()


def test_a_cut_gzip_on_standard_input_is_T0714(tmp_path):
    data = gzip.compress(VIOLATING)[:-8]
    done = regcheck("replay", "-", data=data, cwd=tmp_path)
    assert done.returncode == 2 and b"error[T0714]" in done.stderr and b"Traceback" not in done.stderr


# ---------------------------------------------------------------- the header's spec


@pytest.fixture
def moved(tmp_path, monkeypatch):
    """A trace in runs/ whose header names ../specs/mine.spec, read from another working directory."""
    (tmp_path / "specs").mkdir()
    shutil.copy(ACL_SPEC, tmp_path / "specs" / "mine.spec")
    (tmp_path / "runs").mkdir()
    trace = tmp_path / "runs" / "t.jsonl"
    trace.write_bytes(with_header(VIOLATING, spec="../specs/mine.spec"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return trace


def test_a_relative_spec_path_is_read_from_the_trace_directory(moved):
    code, doc, err = replay_json(str(moved))
    assert code == 1 and doc["verdict"] == "violates" and "notes" not in doc, err
    rel = os.path.relpath(moved)
    assert replay_json(rel)[0] == 1


def test_a_relative_spec_path_on_worker_processes(moved):
    other = moved.with_name("u.jsonl")
    shutil.copy(moved, other)
    code, doc, err = replay_json("-j", "2", "--format", "sarif", str(moved), str(other))
    assert code == 1, err
    assert doc["runs"][0]["properties"]["spec"] == "acl"


def test_execute_itf_and_shrink_read_a_relative_spec_path(moved, tmp_path):
    assert run_cli("execute", str(moved))[0] in (0, 1)
    assert run_cli("itf", str(moved), "-o", str(tmp_path / "t.itf.json"))[0] == 0
    out = tmp_path / "elsewhere" / "small.jsonl"
    code, _, err = run_cli("shrink", str(moved), "-o", str(out))
    assert code == 0, err
    header, events = read_trace(out)
    events.close()
    assert header.spec == os.path.join("..", "specs", "mine.spec")  # from the output's directory
    assert replay_json(str(out))[0] == 1


def test_header_spec_ref_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.spec").write_text("")
    (tmp_path / "old.spec").write_text("")
    ref = lambda spec, path: header_spec_ref(TraceHeader(spec), path)  # noqa: E731
    assert ref("acl", "d/t.jsonl") == "acl"  # a bundled name stays a name
    assert ref("x.spec", "d/t.jsonl") == os.path.join("d", "x.spec")
    assert ref("x.spec", "t.jsonl") == "x.spec"
    assert ref("/abs/x.spec", "d/t.jsonl") == "/abs/x.spec"
    assert ref("x.spec", "-") == "x.spec"  # standard input has no directory
    assert ref("old.spec", "d/t.jsonl") == "old.spec"  # an older trace, named from the working directory
    assert ref("gone.spec", "d/t.jsonl") == os.path.join("d", "gone.spec")  # the error names the expected place


def test_spec_ref_for_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spec_ref_for_output("specs/a.spec", "out/t.jsonl") == os.path.join("..", "specs", "a.spec")
    assert spec_ref_for_output("acl", "out/t.jsonl") == "acl"
    assert spec_ref_for_output("specs/a.spec", "/dev/stdout") == "specs/a.spec"


# ---------------------------------------------------------------- --spec replaces the header's spec


@pytest.fixture
def misnamed(tmp_path):
    """An Ascend trace whose header names a spec file that is not there."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(with_header(VIOLATING, spec="nowhere/acl-old.spec"))
    return path


def test_without_spec_a_missing_header_spec_is_an_input_error(misnamed):
    code, _, err = run_cli("replay", str(misnamed))
    assert code == 2 and "E0601" in err


def test_spec_replaces_the_header_spec_with_a_warning(misnamed):
    code, out, err = run_cli("replay", "--spec", "acl", str(misnamed))
    assert code == 1, err
    assert f"{misnamed}:1: warning[T0737]: " in out and "nowhere/acl-old.spec" in out
    code, doc, _ = replay_json("--spec", "acl", str(misnamed))
    (note,) = doc["notes"]
    assert (note["code"], note["severity"], note["line"]) == ("T0737", "warning", 1)


def test_spec_replaces_a_bundled_header_spec(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(with_header(VIOLATING, spec="cupva"))
    code, doc, err = replay_json("--spec", str(ACL_SPEC), str(path))
    assert code == 1 and [n["code"] for n in doc["notes"]] == ["T0737"], err


def test_spec_naming_the_header_spec_gives_no_warning(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(VIOLATING)
    for given in ("acl", str(ACL_SPEC)):
        code, doc, _ = replay_json("--spec", given, str(path))
        assert code == 1 and "notes" not in doc


def test_spec_replaces_the_header_spec_on_worker_processes(misnamed):
    other = misnamed.with_name("u.jsonl")
    shutil.copy(misnamed, other)
    code, doc, err = replay_json("-j", "2", "--spec", "acl", str(misnamed), str(other))
    assert code == 1 and doc["errors"] == [], err
    assert [[n["path"] for n in t["notes"]] for t in doc["traces"]] == [[str(misnamed)], [str(other)]]


def test_execute_with_spec_replacing_the_header(misnamed):
    code, out, err = run_cli("execute", "--spec", "acl", str(misnamed))
    assert code in (0, 1), err
    assert "warning[T0737]" in out


@pytest.mark.parametrize("command", ["shrink", "itf"])
def test_shrink_and_itf_warn_when_spec_replaces_the_header(misnamed, tmp_path, command):
    code, _, err = run_cli(command, "--spec", "acl", str(misnamed), "-o", str(tmp_path / "out"))
    assert code == 0 and "warning[T0737]" in err, err


# ---------------------------------------------------------------- record: env from the host


def test_record_takes_the_kernel_version_from_the_host():
    assert host_env("acl", {}, release="5.10.0-136.oe2203.aarch64") == {"os_kernel": "5.10.0-136.oe2203.aarch64"}


def test_record_never_overrides_what_the_user_gave():
    assert host_env("acl", {"os_kernel": "6.6"}, release="5.10.0") == {}


def test_record_leaves_out_a_kernel_release_that_is_no_version():
    assert host_env("acl", {}, release="custom-kernel") == {}
    assert host_env("acl", {}, release="") == {}


def test_record_fills_nothing_for_a_spec_without_a_kernel_parameter():
    assert host_env("cuda", {}, release="6.6.0") == {}


def test_spec_ref_for_output_keeps_an_absolute_path_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spec_ref_for_output("specs/a.spec", "out/t.jsonl", relative=False) == str(tmp_path / "specs" / "a.spec")
    assert spec_ref_for_output(str(tmp_path / "s" / "a.spec"), "out/t.jsonl") == os.path.join("..", "s", "a.spec")


@pytest.mark.skipif(find_compiler(os.environ)[0] is None, reason="no C compiler to build the interposer")
def test_record_writes_the_host_kernel_into_the_header_unless_given(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    trace = tmp_path / "t.jsonl"
    code, _, err = run_cli("record", "-o", str(trace), "--", "/bin/true")
    assert code == 0, err
    header, events = read_trace(trace)
    events.close()
    assert header.env.get("os_kernel") == platform.release()
    assert header.meta["env_from_host"] == ["os_kernel"]
    code, _, err = run_cli("record", "-o", str(trace), "--env", "os_kernel=5.10", "--", "/bin/true")
    header, events = read_trace(trace)
    events.close()
    assert code == 0 and dict(header.env) == {"os_kernel": "5.10"} and "env_from_host" not in header.meta


def test_standard_input_redirected_from_a_file_is_read_from_where_it_stands(tmp_path):
    # `(skip-a-line; regcheck replay -) < file`: standard input is a regular file already read part-way.
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"not a trace line\n" + VIOLATING)
    with open(path, "rb") as f:
        f.seek(len(b"not a trace line\n"))
        done = subprocess.run([sys.executable, "-m", "checker", "replay", "--format", "json", "-"], stdin=f,
                              capture_output=True, cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["verdict"] == "violates"


def test_a_run_written_elsewhere_names_its_spec_relative_to_the_trace(tmp_path, monkeypatch):
    """bmc --out and simulate write runs with Run.write: the header's spec path is relative to the
    trace's directory, so the trace replays from any working directory."""
    from checker.engines.runs import Run, Step
    from checker.language.load import load_spec
    (tmp_path / "specs").mkdir()
    (tmp_path / "out").mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "spec" / "acl.spec", tmp_path / "specs" / "mine.spec")
    monkeypatch.chdir(tmp_path)
    run = Run("specs/mine.spec", {}, (Step("malloc", {"size": 4096}, {"ptr": 0x10000}),))
    run.write("out/run.jsonl", load_spec("specs/mine.spec"))
    header, _ = read_trace("out/run.jsonl")
    assert header.spec == os.path.join("..", "specs", "mine.spec")
    monkeypatch.chdir("/")
    code, out, err = run_cli("replay", str(tmp_path / "out" / "run.jsonl"))
    assert code == 0, out + err
