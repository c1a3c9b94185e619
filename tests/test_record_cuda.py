"""Tests of `regcheck record --spec cuda` and `--spec hip` (checker/engines/record.py and the CUDA and
HIP wrappers of checker/engines/interposer/regcheck_preload.c).

Two kinds of library are recorded:

- stand-ins built here with the system compiler: tests/fixtures/record/fake_cudart.c (a
  libcudart.so that also holds the driver API's cuMemHostRegister_v2 / cuMemHostUnregister) and
  fake_hip.c (a libamdhip64.so), with the programs cuda_app.c and hip_app.c. The traces are
  compared with the calls the programs make, argument by argument, and replayed: the conforming
  runs conform, and the deliberate bugs (a free of registered memory, an unmap of a registered
  mapping) are each the one finding, at the right line;
- the real libcudart.so.12 of the nvidia-cuda-runtime-cu12 wheel (the `test` extra, x86_64 Linux),
  with real_cuda_app.c. Without a GPU and driver every runtime call fails; the trace must hold
  exactly the codes the program saw, and replay judges it. Skipped without the wheel.

All need a C compiler and are skipped, with the reason, where there is none.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from checker.engines.record import PROTECTIONS_LEFT_OUT, find_compiler, recorded_family, records_protections
from checker.language.diagnostics import RegcheckError
from checker.trace.reader import read_trace
from tests.helpers import run_cli
from tests.test_record import cache_home, private_cache  # noqa: F401 (fixtures: one build cache per module)

FIXTURES = Path(__file__).parent / "fixtures" / "record"
REPO = Path(__file__).parent.parent
COMPILER, WHY_NONE = find_compiler(os.environ)
needs_cc = pytest.mark.skipif(COMPILER is None,
                              reason=f"no C compiler to build the interposer and the test program: {WHY_NONE}")
PAGE = 4096

run = run_cli  # `regcheck ARGV...` in this process: (exit code, stdout, stderr)


def guarded(*argv) -> list[str]:
    """A command line that cannot hang the suite (`timeout` itself makes no registration call)."""
    prefix = ["timeout", "-s", "KILL", "300"] if shutil.which("timeout") else []
    return prefix + [str(a) for a in argv]


def build(out: Path, library: str, source: str, app: str) -> Path:
    """A stand-in library and the program linked against it, side by side in `out`."""
    cc = list(COMPILER.argv)
    inc = f"-I{FIXTURES}"
    subprocess.run([*cc, "-shared", "-fPIC", "-O2", "-Wall", "-pthread", inc, "-o", str(out / f"lib{library}.so"),
                    str(FIXTURES / source)], check=True)
    subprocess.run([*cc, "-O0", "-Wall", inc, "-o", str(out / app), str(FIXTURES / f"{app}.c"), f"-L{out}",
                    f"-l{library}", "-Wl,-rpath,$ORIGIN"], check=True)
    return out / app


@pytest.fixture(scope="module")
def cuda_app(tmp_path_factory) -> Path:
    if COMPILER is None:
        pytest.skip(f"no C compiler: {WHY_NONE}")
    return build(tmp_path_factory.mktemp("cuda"), "cudart", "fake_cudart.c", "cuda_app")


@pytest.fixture(scope="module")
def hip_app(tmp_path_factory) -> Path:
    if COMPILER is None:
        pytest.skip(f"no C compiler: {WHY_NONE}")
    return build(tmp_path_factory.mktemp("hip"), "amdhip64", "fake_hip.c", "hip_app")


def printed(text: str) -> dict[str, int]:
    """The program's `name=value` lines."""
    return {k: int(v) for k, _, v in (line.partition("=") for line in text.splitlines()) if v.lstrip("-").isdigit()}


def recorded(trace: Path):
    header, events = read_trace(trace)
    return header, list(events)


def as_rows(events) -> list[tuple]:
    return [(e.call, dict(e.args), e.ret, dict(e.out)) for e in events]


def schema_errors(trace: Path) -> list[str]:
    """Every line checked against checker/schemas/trace-v1.schema.json."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(files("checker").joinpath("schemas/trace-v1.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    lines = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return [f"{n}: {err.message}" for n, line in enumerate(lines, 1) for err in validator.iter_errors(line)]


def replay_json(trace: Path, *options: str) -> tuple[int, dict]:
    code, out, _ = run("replay", "--format", "json", *options, str(trace))
    return code, json.loads(out)


def rejected_probes(trace: Path) -> list[tuple[str, str, int]]:
    """(kind, rule, line) of the findings --ignore-rejected hides: the apps unregister p twice on
    purpose, and the second, answered with the documented 713, breaks the obligation (C2.1, H2.1)."""
    _, report = replay_json(trace)
    return [(f["kind"], f["rule"], f["line"]) for f in report["findings"] if f.get("rejected")]


# ---------------------------------------------------------------- what cuda_app.c and hip_app.c do


def cuda_calls(a: dict[str, int], bug: bool) -> list[tuple]:
    """cuda_app.c's calls, as (call, args, ret, out) rows, given the addresses it printed."""
    p, m, q = a["p"], a["m"], a["q"]
    unregister = [("cudaHostUnregister", {"ptr": p}, 0, {}), ("cudaHostUnregister", {"ptr": p}, 713, {})]
    free_p = [("free", {"ptr": p}, None, {})]
    return [
        ("cudaSetDeviceFlags", {"flags": 0x8}, 0, {}),
        ("cudaMalloc", {"size": 1 << 20}, 0, {"devPtr": a["d"]}),
        ("malloc", {"size": 4 * PAGE}, None, {"ptr": p}),  # written when the registration first touches it
        ("cudaHostRegister", {"ptr": p, "size": 4 * PAGE, "flags": 0x2}, 0, {}),
        ("cudaHostGetDevicePointer", {"pHost": p, "flags": 0}, 0, {"pDevice": a["dev"]}),
        ("cudaHostRegister", {"ptr": p + PAGE, "size": PAGE, "flags": 0}, 712, {}),
        ("cudaHostGetFlags", {"pHost": p}, 1, {}),  # failed: no `out`
        *(free_p + unregister if bug else unregister + free_p),
        # cudaMallocHost calls cudaHostAlloc inside the library: one event, not two
        ("cudaMallocHost", {"size": 2 * PAGE}, 0, {"ptr": a["h"]}),
        ("cudaHostGetFlags", {"pHost": a["h"]}, 0, {"pFlags": a["hflags"]}),
        ("cudaFreeHost", {"ptr": a["h"]}, 0, {}),
        ("cudaHostAlloc", {"size": PAGE, "flags": 0x2}, 0, {"pHost": a["ha"]}),
        ("cudaHostGetDevicePointer", {"pHost": a["ha"], "flags": 0}, 0, {"pDevice": a["hadev"]}),
        ("cudaFreeHost", {"ptr": a["ha"]}, 0, {}),
        ("mmap", {"length": 4 * PAGE}, None, {"addr": m}),
        ("cudaHostRegister", {"ptr": m, "size": 2 * PAGE, "flags": 0x1}, 0, {}),
        ("cudaHostUnregister", {"ptr": m}, 0, {}),
        ("munmap", {"addr": m + 2 * PAGE, "length": 2 * PAGE}, None, {}),  # the cut inside, exactly
        ("munmap", {"addr": m, "length": 2 * PAGE}, None, {}),
        # the driver API pair, written as the runtime's events
        ("malloc", {"size": PAGE}, None, {"ptr": q}),
        ("cudaHostRegister", {"ptr": q, "size": PAGE, "flags": 0x2}, 0, {}),
        ("cudaHostUnregister", {"ptr": q}, 0, {}),
        ("free", {"ptr": q}, None, {}),
        ("cudaFree", {"devPtr": a["d"]}, 0, {}),
        ("cudaFree", {"devPtr": a["d"]}, 1, {}),
    ]


def hip_calls(a: dict[str, int], bug: bool) -> list[tuple]:
    p, m = a["p"], a["m"]
    unregister_m = [("hipHostUnregister", {"hostPtr": m}, 0, {})]
    munmap_m = [("munmap", {"addr": m, "length": 2 * PAGE}, None, {})]
    return [
        ("hipHostMalloc", {"size": 2 * PAGE, "flags": 0x2}, 0, {"ptr": a["h"]}),
        ("hipHostGetDevicePointer", {"hstPtr": a["h"], "flags": 0}, 0, {"devPtr": a["hdev"]}),
        ("malloc", {"size": 3 * PAGE}, None, {"ptr": p}),
        ("hipHostRegister", {"hostPtr": p, "sizeBytes": 3 * PAGE, "flags": 0}, 0, {}),
        ("hipHostRegister", {"hostPtr": p, "sizeBytes": PAGE, "flags": 0}, 712, {}),
        ("hipHostUnregister", {"hostPtr": p}, 0, {}),
        ("hipHostUnregister", {"hostPtr": p}, 713, {}),
        ("free", {"ptr": p}, None, {}),
        ("mmap", {"length": 2 * PAGE}, None, {"addr": m}),
        ("hipHostRegister", {"hostPtr": m, "sizeBytes": 2 * PAGE, "flags": 0x2}, 0, {}),
        *(munmap_m + unregister_m if bug else unregister_m + munmap_m),
        ("hipMalloc", {"size": PAGE}, 0, {"ptr": a["dv"]}),
        ("hipFree", {"ptr": a["dv"]}, 0, {}),
        ("hipHostFree", {"ptr": a["h"]}, 0, {}),
    ]


def record_app(app: Path, spec: str, trace: Path, capfd, *args: str) -> dict[str, int]:
    capfd.readouterr()
    code, _, err = run("record", "--spec", spec, "-o", str(trace), "--", *guarded(app, *args))
    assert code == 0, err
    return printed(capfd.readouterr().out)


# ---------------------------------------------------------------- the stand-ins


@needs_cc
def test_cuda_program_is_recorded_call_for_call_and_conforms(cuda_app, tmp_path, capfd):
    trace = tmp_path / "t.jsonl"
    addresses = record_app(cuda_app, "cuda", trace, capfd)
    header, events = recorded(trace)
    assert header.spec == "cuda"
    # the stand-in's cudaRuntimeGetVersion, read through the library the program links (ldd)
    assert dict(header.env) == {"cuda_runtime": "12.4"}
    assert header.meta["env_from_host"] == ["cuda_runtime"] and "env_not_from_host" not in header.meta
    # Exactly the program's calls: none of its 5,000 unrelated allocations or its unrelated mapping,
    # nothing the library did itself (its bookkeeping mallocs, its pinned mmaps, its nested calls).
    assert as_rows(events) == cuda_calls(addresses, bug=False)
    assert addresses["q"] == addresses["p"], "the allocator did not reuse p's address: the free of p proves less"
    for e in events:
        assert isinstance(e.tid, int) and e.tid > 0
        if e.call.startswith("cuda") or e.call in ("free", "munmap"):
            assert e.t0 is not None and e.t0 <= e.t1
        else:  # a deferred allocation event: its time was not kept
            assert e.t0 is None
    assert schema_errors(trace) == []
    code, report = replay_json(trace, "--ignore-rejected")
    assert (code, report["verdict"], report["findings"]) == (0, "conforms", [])
    again = [e.line for e in events if e.call == "cudaHostUnregister" and e.ret == 713]
    assert rejected_probes(trace) == [("usage", "CUDA-UNREG-REGISTERED", line) for line in again] and len(again) == 1


@needs_cc
def test_cuda_free_of_registered_memory_is_the_one_finding(cuda_app, tmp_path, capfd):
    trace = tmp_path / "t.jsonl"
    addresses = record_app(cuda_app, "cuda", trace, capfd, "--bug")
    _, events = recorded(trace)
    assert as_rows(events) == cuda_calls(addresses, bug=True)
    bad_free = events[7]
    assert (bad_free.call, bad_free.args["ptr"]) == ("free", addresses["p"])
    code, report = replay_json(trace, "--ignore-rejected")
    assert code == 1
    assert [(f["kind"], f["rule"], f["line"]) for f in report["findings"]] == \
        [("usage", "CUDA-FREE-REGISTERED", bad_free.line)]


@needs_cc
def test_hip_program_is_recorded_call_for_call_and_conforms(hip_app, tmp_path, capfd):
    trace = tmp_path / "t.jsonl"
    addresses = record_app(hip_app, "hip", trace, capfd)
    header, events = recorded(trace)
    assert (header.spec, dict(header.env)) == ("hip", {"hip_runtime": "6.2"})  # from 60241134
    assert as_rows(events) == hip_calls(addresses, bug=False)
    assert schema_errors(trace) == []
    code, report = replay_json(trace, "--ignore-rejected")
    assert (code, report["verdict"], report["findings"]) == (0, "conforms", [])
    again = [e.line for e in events if e.call == "hipHostUnregister" and e.ret == 713]
    assert rejected_probes(trace) == [("usage", "HIP-UNREG-REGISTERED", line) for line in again] and len(again) == 1


@needs_cc
def test_hip_unmap_of_a_registered_mapping_is_the_one_finding(hip_app, tmp_path, capfd):
    trace = tmp_path / "t.jsonl"
    addresses = record_app(hip_app, "hip", trace, capfd, "--bug")
    _, events = recorded(trace)
    assert as_rows(events) == hip_calls(addresses, bug=True)
    bad_unmap = events[10]
    assert bad_unmap.call == "munmap"
    code, report = replay_json(trace, "--ignore-rejected")
    assert code == 1
    assert [(f["kind"], f["rule"], f["line"]) for f in report["findings"]] == \
        [("usage", "HIP-MUNMAP-REGISTERED", bad_unmap.line)]


@pytest.fixture(scope="module")
def cuda_readonly_app(tmp_path_factory) -> Path:
    if COMPILER is None:
        pytest.skip(f"no C compiler: {WHY_NONE}")
    return build(tmp_path_factory.mktemp("cuda_ro"), "cudart", "fake_cudart.c", "cuda_readonly_app")


@needs_cc
def test_a_mappings_protection_and_its_changes_are_recorded(cuda_readonly_app, tmp_path, capfd):
    trace = tmp_path / "t.jsonl"
    a = record_app(cuda_readonly_app, "cuda", trace, capfd)
    r, w, x = a["r"], a["w"], a["x"]
    _, events = recorded(trace)
    read_only = 0x1
    assert as_rows(events) == [
        ("mmap", {"length": PAGE, "prot": read_only}, None, {"addr": r}),
        ("cudaHostRegister", {"ptr": r, "size": PAGE, "flags": 0x8}, 0, {}),
        ("cudaHostUnregister", {"ptr": r}, 0, {}),
        ("munmap", {"addr": r, "length": PAGE}, None, {}),
        ("mmap", {"length": 2 * PAGE}, None, {"addr": w}),  # read-write: no `prot`
        ("cudaHostRegister", {"ptr": w, "size": PAGE, "flags": 0}, 0, {}),
        ("cudaHostUnregister", {"ptr": w}, 0, {}),
        ("mprotect", {"addr": w, "length": 2 * PAGE, "prot": read_only}, None, {}),
        ("cudaHostRegister", {"ptr": w, "size": PAGE, "flags": 0}, 0, {}),
        ("cudaHostUnregister", {"ptr": w}, 0, {}),
        ("munmap", {"addr": w, "length": 2 * PAGE}, None, {}),
        # made read-only before any line named it: its `mmap`, written at the registration, says so
        ("mmap", {"length": PAGE, "prot": read_only}, None, {"addr": x}),
        ("cudaHostRegister", {"ptr": x, "size": PAGE, "flags": 0x8}, 0, {}),
        ("cudaHostUnregister", {"ptr": x}, 0, {}),
        ("munmap", {"addr": x, "length": PAGE}, None, {}),
    ]
    assert schema_errors(trace) == []
    code, report = replay_json(trace)
    assert code == 1
    assert [(f["kind"], f["rule"], f["line"]) for f in report["findings"]] == \
        [("usage", "CUDA-REG-READONLY-MAPPING", events[8].line)]


def spec_without(tmp_path: Path, family: str, event: bool = True, arg: bool = True) -> Path:
    """The bundled cuda or hip spec without the `mprotect` event (`event`) and/or `mmap`'s `prot`
    (`arg`), as a spec written for that family before stop 41 read."""
    text = (REPO / "spec" / f"{family}.spec").read_text()
    if event:
        start = text.index("event mprotect(")
        text = text[:start] + text[text.index("\n}\n", start) + 3:]
    if arg:
        text = text.replace("event mmap(length: u64, prot: Prot = PROT_READ | PROT_WRITE)", "event mmap(length: u64)")
        text = text.replace("dev: 0, prot: prot }", "dev: 0, prot: PROT_READ | PROT_WRITE }")
    spec = tmp_path / f"{family}_{'no_event' if event else ''}{'no_prot' if arg else ''}.spec"
    spec.write_text(text)
    return spec


@needs_cc
def test_a_spec_without_protections_is_recorded_without_their_lines(cuda_readonly_app, tmp_path, capfd):
    # The program of the test above, for a spec with neither `mprotect` nor mmap's `prot`: the same
    # calls, every mapping written as read-write, and the header says protections were left out.
    spec = spec_without(tmp_path, "cuda")
    trace = tmp_path / "t.jsonl"
    a = record_app(cuda_readonly_app, str(spec), trace, capfd)
    header, events = recorded(trace)
    assert "mprotect" in header.meta[PROTECTIONS_LEFT_OUT]
    r, w, x = a["r"], a["w"], a["x"]
    reg = [("cudaHostRegister", {"ptr": w, "size": PAGE, "flags": 0}, 0, {}), ("cudaHostUnregister", {"ptr": w}, 0, {})]
    assert as_rows(events) == [
        ("mmap", {"length": PAGE}, None, {"addr": r}),
        ("cudaHostRegister", {"ptr": r, "size": PAGE, "flags": 0x8}, 0, {}),
        ("cudaHostUnregister", {"ptr": r}, 0, {}),
        ("munmap", {"addr": r, "length": PAGE}, None, {}),
        ("mmap", {"length": 2 * PAGE}, None, {"addr": w}),
        *reg, *reg,  # (no `mprotect` line between them)
        ("munmap", {"addr": w, "length": 2 * PAGE}, None, {}),
        ("mmap", {"length": PAGE}, None, {"addr": x}),
        ("cudaHostRegister", {"ptr": x, "size": PAGE, "flags": 0x8}, 0, {}),
        ("cudaHostUnregister", {"ptr": x}, 0, {}),
        ("munmap", {"addr": x, "length": PAGE}, None, {}),
    ]
    code, report = replay_json(trace, "--spec", str(spec))
    assert (code, report["verdict"]) == (0, "conforms")  # C1.8 is not seen without protections


@pytest.mark.parametrize("family", ["cuda", "hip"])
def test_protections_are_recorded_with_both_parts_or_neither(tmp_path, family):
    assert records_protections(family, family) is True
    assert records_protections(str(spec_without(tmp_path, family)), family) is False
    assert records_protections("acl", "acl") is False


@pytest.mark.parametrize("event, arg, says", [
    (True, False, "declares mmap's argument 'prot' but not the event 'mprotect'"),
    (False, True, "declares the event 'mprotect' but not mmap's argument 'prot'"),
])
def test_a_spec_with_half_of_the_protections_is_X0812(tmp_path, event, arg, says):
    spec = spec_without(tmp_path, "hip", event=event, arg=arg)
    code, _, err = run("record", "--spec", str(spec), "-o", str(tmp_path / "t.jsonl"), "--", "/bin/true")
    assert code == 2
    assert "error[X0812]" in err and says in err
    assert not (tmp_path / "t.jsonl").exists()  # refused before anything was written


@needs_cc
@pytest.mark.parametrize("spec", ["acl", "hip"])
def test_only_the_specs_family_is_written(cuda_app, tmp_path, capfd, spec):
    # The CUDA program's calls are forwarded, unrecorded, when the trace is for another family.
    trace = tmp_path / "t.jsonl"
    record_app(cuda_app, spec, trace, capfd)
    header, events = recorded(trace)
    assert header.spec == spec and events == []


@needs_cc
def test_the_runtime_version_is_left_to_the_spec_when_the_library_cannot_be_found(cuda_app, tmp_path, monkeypatch):
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    trace = tmp_path / "t.jsonl"
    behind_a_shell = guarded("sh", "-c", f"'{cuda_app}' >/dev/null")
    # Behind a shell, ldd sees the shell, not the program, and LD_LIBRARY_PATH does not name the library.
    code, _, err = run("record", "--spec", "cuda", "-o", str(trace), "--", *behind_a_shell)
    assert code == 0, err
    header, events = recorded(trace)
    assert dict(header.env) == {} and "env_from_host" not in header.meta
    assert "libcudart.so not found" in header.meta["env_not_from_host"]["cuda_runtime"]
    assert len(events) == 27
    # Through LD_LIBRARY_PATH it is found; a value the user gives always wins.
    monkeypatch.setenv("LD_LIBRARY_PATH", str(cuda_app.parent))
    code, _, err = run("record", "--spec", "cuda", "-o", str(trace), "--", *behind_a_shell)
    assert code == 0, err
    assert dict(recorded(trace)[0].env) == {"cuda_runtime": "12.4"}
    code, _, err = run("record", "--spec", "cuda", "--env", "cuda_runtime=11.8", "-o", str(trace), "--",
                       *behind_a_shell)
    header, _ = recorded(trace)
    assert code == 0 and dict(header.env) == {"cuda_runtime": "11.8"} and "env_from_host" not in header.meta


def test_each_bundled_spec_but_cupva_has_a_recorded_family():
    assert [recorded_family(s) for s in ("acl", "cuda", "hip")] == ["acl", "cuda", "hip"]
    with pytest.raises(RegcheckError) as caught:
        recorded_family("cupva")
    assert caught.value.diagnostics[0].code == "X0812"


def test_a_spec_missing_a_familys_call_is_X0812(tmp_path):
    text = (REPO / "spec" / "hip.spec").read_text()
    start = text.index("call hipFree(")
    end = text.index("\n}\n", start) + 3
    spec = tmp_path / "no_hipfree.spec"
    spec.write_text(text[:start] + text[end:])
    code, _, err = run("record", "--spec", str(spec), "-o", str(tmp_path / "t.jsonl"), "--", "/bin/true")
    assert code == 2
    assert "error[X0812]" in err and "the closest, hip, lacks hipFree" in err


# ---------------------------------------------------------------- the real libcudart.so.12


def cuda_wheel() -> Path | None:
    """nvidia/cuda_runtime of the nvidia-cuda-runtime-cu12 wheel, if it is installed."""
    try:
        found = importlib.util.find_spec("nvidia.cuda_runtime")
    except (ImportError, ValueError):
        return None
    for place in (found.submodule_search_locations or []) if found else []:
        if (Path(place) / "lib" / "libcudart.so.12").is_file():
            return Path(place)
    return None


def crt_headers() -> Path | None:
    """The include directory of the nvidia-cuda-nvcc-cu12 wheel, if installed: the runtime wheel's
    cuda_runtime_api.h includes crt/host_defines.h, which ships with nvcc, not with the runtime.
    (A CUDA toolkit's crt/ is of its own release, not the wheel's, so it is not mixed in.)"""
    try:
        nvcc = importlib.util.find_spec("nvidia.cuda_nvcc")
    except (ImportError, ValueError):
        return None
    places = [Path(p) / "include" for p in (nvcc.submodule_search_locations or [])] if nvcc else []
    return next((p for p in places if (p / "crt" / "host_defines.h").is_file()), None)


def record_real(app: Path, tmp_path: Path, capfd) -> tuple[int, list[tuple[str, str]], str]:
    """Run the program alone, then record it: (its exit status, its `name=value` lines, record's stderr)."""
    alone = subprocess.run([str(app)], capture_output=True, text=True, timeout=300)
    capfd.readouterr()
    code, _, err = run("record", "--spec", "cuda", "-o", str(tmp_path / "t.jsonl"), "--", *guarded(app))
    said = [tuple(line.split("=", 1)) for line in capfd.readouterr().out.splitlines()]
    assert code == alone.returncode, err  # the program's own status: 1 unless every call succeeded
    by_itself = [tuple(line.split("=", 1)) for line in alone.stdout.splitlines()]
    assert [kv for kv in said if kv[0] != "p"] == [kv for kv in by_itself if kv[0] != "p"]  # same codes recorded or not
    return code, said, err


def check_real_trace(trace: Path, said: list[tuple[str, str]]) -> None:
    """The trace holds exactly the calls and codes the program printed, the one host block it
    registered, the runtime's version, and replays as judged."""
    codes = [(call, int(ret)) for call, ret in said if call.startswith("cuda") and call not in
             ("cudaRuntimeGetVersion", "cudaMemcpy")]  # calls the interposer does not record
    header, events = recorded(trace)
    assert [(e.call, e.ret) for e in events if e.ret is not None] == codes
    p = int(dict(said)["p"])
    assert [(e.call, dict(e.args), dict(e.out)) for e in events if e.ret is None] == \
        [("malloc", {"size": 16 * PAGE}, {"ptr": p}), ("free", {"ptr": p}, {})]
    version = int(dict(said)["version"])
    assert dict(header.env) == {"cuda_runtime": f"{version // 1000}.{version % 1000 // 10}"}
    assert schema_errors(trace) == []
    code, report = replay_json(trace)
    if all(ret == 0 for _, ret in codes):  # a GPU: scripts/gpu_record_check.sh checks this case
        assert report["verdict"] == "conforms", report
    else:  # no GPU: each call fails with an environmental error the spec allows
        assert {ret for _, ret in codes} <= {35, 100}, codes
        assert (code, report["verdict"], report["findings"]) == (0, "conforms", [])


@needs_cc
def test_a_program_using_the_wheels_libcudart_is_recorded_as_it_ran(tmp_path, capfd):
    wheel = cuda_wheel()
    if wheel is None:
        pytest.skip("the nvidia-cuda-runtime-cu12 wheel is not installed "
                    "(the `test` extra installs it on x86_64 Linux)")
    lib = wheel / "lib"
    crt = crt_headers()
    # The real header where it compiles (with nvcc's crt/); else the documented prototypes.
    header_flags = ["-DREGCHECK_REAL_CUDA_HEADER", f"-I{wheel / 'include'}", f"-I{crt}"] if crt else []
    app = tmp_path / "real_cuda_app"
    subprocess.run([*COMPILER.argv, "-O0", "-Wall", *header_flags, f"-I{FIXTURES}", "-o", str(app),
                    str(FIXTURES / "real_cuda_app.c"), f"-L{lib}", "-l:libcudart.so.12", f"-Wl,-rpath,{lib}"],
                   check=True)
    _, said, _ = record_real(app, tmp_path, capfd)
    check_real_trace(tmp_path / "t.jsonl", said)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc (CUDA toolkit) on PATH")


@needs_cc
@needs_nvcc
def test_a_program_built_by_nvcc_with_the_shared_runtime_is_recorded(tmp_path, capfd):
    app = tmp_path / "real_cuda_app"
    subprocess.run(["nvcc", "-cudart", "shared", "-DREGCHECK_REAL_CUDA_HEADER", f"-I{FIXTURES}", "-o", str(app),
                    str(FIXTURES / "real_cuda_app.c")], check=True, timeout=300)
    _, said, _ = record_real(app, tmp_path, capfd)
    check_real_trace(tmp_path / "t.jsonl", said)


@needs_cc
@needs_nvcc
def test_nvccs_default_static_runtime_cannot_be_seen(tmp_path, capfd):
    # nvcc links libcudart_static unless told `-cudart shared`: the calls never reach a dynamic
    # symbol, so nothing is recorded (docs/recording.md says so).
    app = tmp_path / "static_cuda_app"
    subprocess.run(["nvcc", "-DREGCHECK_REAL_CUDA_HEADER", f"-I{FIXTURES}", "-o", str(app),
                    str(FIXTURES / "real_cuda_app.c")], check=True, timeout=300)
    _, said, err = record_real(app, tmp_path, capfd)
    assert any(call == "cudaHostRegister" for call, _ in said)  # it did call the runtime
    assert "no registration calls were recorded" in err
    assert recorded(tmp_path / "t.jsonl")[1] == []


# ---------------------------------------------------------------- scripts/gpu_record_check.sh


def has_gpu() -> bool:
    """The script's own test: nvidia-smi lists a GPU, or /dev/nvidia0 exists."""
    if os.path.exists("/dev/nvidia0"):
        return True
    if shutil.which("nvidia-smi") is None:
        return False
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    return any(line.startswith("GPU ") for line in listed.stdout.splitlines())


@pytest.mark.skipif(shutil.which("sh") is None, reason="no sh")
def test_the_gpu_check_skips_without_a_gpu():
    if has_gpu():
        pytest.skip("this machine has an NVIDIA GPU: run scripts/gpu_record_check.sh itself")
    script = REPO / "scripts" / "gpu_record_check.sh"
    done = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("skipped: no GPU"), done.stdout


@needs_cc
@pytest.mark.skipif(shutil.which("sh") is None, reason="no sh")
@pytest.mark.parametrize("with_nvcc", [False, True], ids=["wheel", "nvcc"])
def test_the_gpu_check_builds_its_program(tmp_path, with_nvcc):
    if with_nvcc and shutil.which("nvcc") is None:
        pytest.skip("no nvcc (CUDA toolkit) on PATH")
    if not with_nvcc and cuda_wheel() is None:
        pytest.skip("the nvidia-cuda-runtime-cu12 wheel is not installed")
    env = {**os.environ, "PYTHON": sys.executable, **({} if with_nvcc else {"NVCC": ""})}
    done = subprocess.run(["sh", str(REPO / "scripts" / "gpu_record_check.sh"), "--build-only", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"built {tmp_path / 'real_cuda_app'} " + ("with nvcc" if with_nvcc else "against"))
    ran = subprocess.run([str(tmp_path / "real_cuda_app")], capture_output=True, text=True, timeout=300)
    assert "cudaHostRegister=" in ran.stdout


@needs_cc
@pytest.mark.skipif(shutil.which("sh") is None, reason="no sh")
def test_the_gpu_checks_run_records_and_replays(tmp_path):
    # A pretend nvidia-smi takes the script past its GPU test: on this machine, without a real
    # GPU, the program's CUDA calls fail, so the check must fail, having recorded and replayed.
    if has_gpu():
        pytest.skip("this machine has an NVIDIA GPU: run scripts/gpu_record_check.sh itself")
    if cuda_wheel() is None and shutil.which("nvcc") is None:
        pytest.skip("neither nvcc nor the nvidia-cuda-runtime-cu12 wheel: nothing to build with")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: a pretend GPU (UUID: GPU-0)'\n")
    (fake / "nvidia-smi").chmod(0o755)
    env = {**os.environ, "PYTHON": sys.executable, "PATH": f"{fake}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(["sh", str(REPO / "scripts" / "gpu_record_check.sh")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "recorded 8 events" in done.stderr  # no unregister: the registration failed
    assert done.stdout.splitlines()[-1].startswith("FAILED: the program exited with status 1")
    assert done.stdout.splitlines()[-1].endswith("verdict: conforms")
