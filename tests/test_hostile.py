"""Hostile input (issue 19): no command crashes, hangs, eats memory or overwrites what it does not own.

Every case is fixed (no randomness). Commands run in-process through `main(argv)` where only the exit
code and the messages matter, and in a child process (with an RLIMIT_AS or RLIMIT_DATA and a timeout)
where memory or time is the point. Bad input exits 2 with a diagnostic and never a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from checker.trace import events as trace_events, reader as trace_reader
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
HEADER = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
BASE = 0x7F00_0000_0000
VIOLATING = [  # an overlapping registration: replay finds ACL-REG-OVERLAP, shrink has something to do
    {"call": "malloc", "args": {"size": 16384}, "out": {"ptr": BASE}},
    {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 8192, "flag": 2}, "ret": 0},
    {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE + 0x1000, "size": 4096, "flag": 2}, "ret": 0},
]
GiB = 1 << 30


def write_trace(path: Path, events, header=HEADER) -> str:
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *events]))
    return str(path)


def assert_input_error(code: int, out: str, err: str, *codes: str) -> None:
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    if codes:
        assert any(f"[{c}]" in err + out for c in codes), err + out


def devices_intact() -> None:
    for dev in ("/dev/full", "/dev/null"):
        assert stat.S_ISCHR(os.lstat(dev).st_mode), f"{dev} is no longer a character device"


def run_limited(argv: list[str], *, address_space: int | None = 3 * GiB, data: int | None = None,
                timeout: float = 60, cwd: str | None = None) -> subprocess.CompletedProcess:
    """`regcheck ARGV` in a child under memory limits and a timeout."""
    def limits():
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if data is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (data, data))

    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", "from checker.cli import entry; entry()", *argv], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limits, cwd=cwd, env=env)


@pytest.fixture
def violating(tmp_path) -> str:
    return write_trace(tmp_path / "v.jsonl", VIOLATING)


# ---------------------------------------------------------------- outputs (one writer, E0603)

# Each command that writes a file, as (argv before the output, the output option).
WRITERS = {
    "itf": lambda t: ["itf", t, "-o"],
    "shrink": lambda t: ["shrink", t, "-o"],
    "diagram": lambda t: ["diagram", "acl", "-o"],
    "timeline": lambda t: ["replay", t, "--timeline"],
    "bmc": lambda t: ["bmc", "tests/seeded_bugs/acl_devptr_kept_after_unregister.spec", "--depth", "4", "--out"],
    "fuzz": lambda t: ["fuzz", "acl", "--driver", "tests.mutants.acl:RegistrationTableOfThree", "--max-examples",
                       "100", "--steps", "40", "-o"],
    # generate creates the directories its outputs need (as `-o DIR` does): not for the missing-directory case
    "generate-pytest": lambda t: ["generate", "cupva", "--depth", "1", "--pytest"],
}


@pytest.mark.parametrize("command", ["itf", "shrink", "diagram", "timeline", "bmc", "fuzz", "generate-pytest"])
@pytest.mark.parametrize("target", ["/dev/full", "/nonexistent/x", "DIR", "/dev/full/x"])
def test_unwritable_outputs_are_E0603_and_devices_stay(command, target, violating, tmp_path, repo_root):
    if target == "DIR":
        target = str(tmp_path)
    if command == "generate-pytest" and target == "/nonexistent/x":
        target = str(tmp_path / "file") + "/x"  # a parent that is a file: it cannot be made a directory
        (tmp_path / "file").write_text("")
    argv = WRITERS[command](violating) + [target]
    code, out, err = run_cli(*argv)
    assert code == 2 and "Traceback" not in err
    assert "error[E0603]" in err + out
    devices_intact()


@pytest.mark.parametrize("command", ["itf", "shrink", "diagram", "timeline"])
def test_a_symlink_to_dev_null_stays_a_symlink(command, violating, tmp_path):
    link = tmp_path / "out"
    link.symlink_to("/dev/null")
    code, out, err = run_cli(*WRITERS[command](violating), str(link))
    assert code in (0, 1), err
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    devices_intact()


@pytest.mark.parametrize("command", ["itf", "shrink", "diagram"])
def test_a_fifo_output_is_written_in_place(command, violating, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, out, err = run_cli(*WRITERS[command](violating), str(fifo))
    reader.join(20)
    assert code in (0, 1), err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    assert got and got[0]


def test_a_regular_output_is_atomic_and_replaced(violating, tmp_path):
    out_path = tmp_path / "small.jsonl"
    out_path.write_text("old\n")
    code, _, err = run_cli("shrink", violating, "-o", str(out_path))
    assert code == 0, err
    assert out_path.read_text().startswith('{"regcheck"')
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []
    # A failing write keeps the old file.
    code, _, err = run_cli("shrink", violating, "-o", str(tmp_path / "no-dir" / "x.jsonl"))
    assert code == 2 and "error[E0603]" in err


def test_prove_witness_dir_under_a_device_is_E0603(tmp_path):
    code, out, err = run_cli("prove", "acl", "--no-consistency", "--witness-dir", "/dev/full/x")
    assert code == 2 and "error[E0603]" in err and "Traceback" not in err
    devices_intact()


def test_generate_into_an_unwritable_directory_is_E0603(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run_cli("generate", "acl", "--depth", "1", "-o", str(blocker / "suite"))
    assert code == 2 and "error[E0603]" in err and "Traceback" not in err
    assert f"{blocker} is not a directory" in err  # said before the suite is computed, not after


def test_generate_with_a_pytest_file_under_a_file_is_E0603_before_any_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run_cli("generate", "acl", "--depth", "1", "-o", str(tmp_path / "suite"),
                             "--pytest", str(blocker / "sub" / "test_acl.py"))
    assert code == 2 and f"error[E0603]: cannot write {blocker / 'sub'}: {blocker} is not a directory" in err
    assert not (tmp_path / "suite").exists()  # nothing generated, nothing written


# ---------------------------------------------------------------- giant pinned memory (bounded)


@pytest.mark.parametrize("events", [
    [{"call": "malloc", "args": {"size": 1 << 40}, "out": {"ptr": BASE}},
     {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 1 << 40, "flag": ["ACL_HOST_REG_PINNED"]}, "ret": 0},
     {"call": "free", "args": {"ptr": BASE}}],
    [{"call": "aclrtMallocHost", "args": {"size": 1 << 40}, "out": {"hostPtr": BASE}, "ret": 0}],
], ids=["pinned-registration", "malloc-host"])
def test_a_1_TiB_lock_is_refused_by_the_cap_without_a_page_list(events, tmp_path):
    path = write_trace(tmp_path / "big.jsonl", events)
    # RLIMIT_DATA counts the heap (where a per-page list would live), not the 1 TiB shared mapping.
    done = run_limited(["execute", path], address_space=None, data=1536 << 20, timeout=60)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert "X0802" in done.stdout + done.stderr or "X0805" in done.stdout + done.stderr


def test_range_lock_counts_agree_with_per_page_counts():
    """The arena's range-based counts against a per-page model, on a fixed sequence of operations."""
    from checker.drivers.lockcounts import LockCounts

    page = 4096
    ops = [(1, 0, 4), (1, 2, 6), (0, 7, 9), (-1, 0, 4), (1, 10, 12), (0, 3, 11), (1, 0, 20), (-1, 0, 20), (1, 5, 6)]
    counts, model = LockCounts(), {}
    for op, lo, hi in ops:
        if op == 0:
            held = {p * page for p in range(lo, hi) if p * page in model}
            dropped = counts.drop(lo * page, hi * page)
            assert {p for start, n in dropped for p in range(start, start + n, page)} == held
            for p in range(lo, hi):
                model.pop(p * page, None)
        else:
            counts.add(lo * page, hi * page, op)
            for p in range(lo, hi):
                model[p * page] = model.get(p * page, 0) + op
                if model[p * page] == 0:
                    del model[p * page]
        assert counts.pages(page) == dict(sorted(model.items()))
        assert counts.total == len(model) * page


# ---------------------------------------------------------------- trace inputs

TRACE_READERS = {
    "replay": lambda t: ["replay", t],
    "replay-j2": lambda t: ["replay", "-j", "2", t, t],
    "execute": lambda t: ["execute", t],
    "shrink": lambda t: ["shrink", t, "-o", os.devnull],
    "itf": lambda t: ["itf", t, "-o", os.devnull],
}


def hostile_traces(tmp_path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (path, acceptable diagnostic codes)."""
    def line(obj) -> str:
        return json.dumps(obj) + "\n"

    cases = {
        "deep-nesting": (line(HEADER) + '{"call":"malloc","args":{"size":' + "[" * 1100 + "]" * 1100 + "}}\n",
                         ("T0701",)),
        "long-line": (line(HEADER) + line({"call": "malloc", "args": {"size": 1, "x": "a" * (2 << 20)}}), ("T0713",)),
        "long-header": ('{"regcheck":1,"spec":"acl","meta":{"x":"' + "b" * (2 << 20) + '"}}\n', ("T0713",)),
        "long-spec-name": (line({"regcheck": 1, "spec": "x" * 300}), ("E0601",)),
        "spec-is-dev-zero": (line({"regcheck": 1, "spec": "/dev/zero"}), ("E0601",)),
        "plus-integer": (line(HEADER) + line({"call": "malloc", "args": {"size": "+8192"}, "out": {"ptr": BASE}}),
                         ("T0733", "T0706")),
        "space-integer": (line(HEADER) + line({"call": "malloc", "args": {"size": " 8192"}, "out": {"ptr": BASE}}),
                          ("T0733", "T0706")),
        "arabic-digits": (line(HEADER) + line({"call": "malloc", "args": {"size": "\u0668\u0661\u0669\u0662"},
                                               "out": {"ptr": BASE}}), ("T0733", "T0706")),
        "env-decimal-string": (line({"regcheck": 1, "spec": "cupva", "env": {"driver_version": "2006"}}), ("T0721",)),
        "cr-line-ends": ((line(HEADER) + line(VIOLATING[0])).replace("\n", "\r"), ("T0701",)),
    }
    out = {}
    for name, (text, codes) in cases.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_text(text)
        out[name] = (str(p), codes)
    return out


CASES = ["deep-nesting", "long-line", "long-header", "long-spec-name", "spec-is-dev-zero", "plus-integer",
         "space-integer", "arabic-digits", "env-decimal-string", "cr-line-ends"]


@pytest.mark.parametrize("reader", list(TRACE_READERS))
@pytest.mark.parametrize("case", CASES)
def test_hostile_traces_are_input_errors(reader, case, tmp_path):
    path, codes = hostile_traces(tmp_path)[case]
    code, out, err = run_cli(*TRACE_READERS[reader](path))
    assert_input_error(code, out, err, *codes)
    if case.startswith("long"):
        assert len(err) < 2000  # the line is quoted, not echoed
    if case == "cr-line-ends":  # (it was T0709, "truncated last line")
        assert "lines end in a carriage return alone" in err, err


@pytest.mark.parametrize("reader", ["replay", "execute", "shrink", "itf"])
@pytest.mark.parametrize("special", ["/dev/zero", "FIFO"])
def test_special_files_are_refused_not_read(reader, special, tmp_path):
    if special == "FIFO":
        special = str(tmp_path / "trace.fifo")
        os.mkfifo(special)
    argv = TRACE_READERS[reader](special)
    code, out, err = run_cli(*argv)
    assert_input_error(code, out, err, "T0712")


def test_long_lines_are_accepted_with_max_line_bytes(tmp_path):
    path = write_trace(tmp_path / "t.jsonl", [{"call": "malloc", "args": {"size": 4096}, "out": {"ptr": BASE}}])
    code, _, err = run_cli("replay", "--max-line-bytes", "20", path)
    assert code == 2 and "error[T0713]" in err and "maximum line length" in err
    code, _, err = run_cli("replay", "--max-line-bytes", "1000", path)
    assert code == 0, err
    assert trace_reader.max_line_bytes() == trace_events.DEFAULT_MAX_LINE_BYTES  # reset per run


@pytest.mark.parametrize("command", ["replay", "execute", "shrink", "itf"])
@pytest.mark.parametrize("value", [str(2**62 + 1), str(2**63 - 1), "99999999999999999999"])
def test_a_line_length_past_the_limit_is_a_usage_error(command, value, violating):
    """Found by testing: a length the line buffer cannot have was an OverflowError (exit 3)."""
    code, _, err = run_cli(command, "--max-line-bytes", value, violating)
    assert code == 2 and "at most 4611686018427387904" in err and "Traceback" not in err


def test_the_largest_line_length_is_accepted(violating):
    code, _, err = run_cli("replay", "--max-line-bytes", str(2**62), violating)
    assert code == 1, err


def test_a_corpus_with_one_deep_trace_replays_the_others(tmp_path, violating):
    deep = hostile_traces(tmp_path)["deep-nesting"][0]
    ok = write_trace(tmp_path / "ok.jsonl", [{"call": "malloc", "args": {"size": 4096}, "out": {"ptr": BASE}}])
    code, out, err = run_cli("replay", "-j", "2", "--format", "json", deep, ok, violating)
    assert code == 2 and "Traceback" not in err
    doc = json.loads(out)
    assert doc["summary"]["unreadable"] == 1 and doc["summary"]["conform"] == 1 and doc["summary"]["violate"] == 1


@pytest.mark.parametrize("value", ["0", "-1"])
def test_execute_max_findings_must_be_positive(value, violating):
    code, out, err = run_cli("execute", "--max-findings", value, violating)
    assert code == 2 and "at least 1" in err


def test_dev_zero_and_long_lines_use_bounded_memory(tmp_path):
    cases = hostile_traces(tmp_path)
    for name in ("long-line", "spec-is-dev-zero"):
        done = run_limited(["replay", cases[name][0]], address_space=2 * GiB, timeout=60)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    done = run_limited(["replay", "/dev/zero"], address_space=2 * GiB, timeout=60)
    assert done.returncode == 2 and "T0712" in done.stderr


# ---------------------------------------------------------------- specs

SPEC = '''spec h "hostile"
source DOC "none" "a test spec"
param level: int = 3
{decls}
status int success 0
call poke(a: int) {{
  fails H-1: 1 when {cond}
    cite DOC "{cite}"
}}
'''


def hostile_spec(tmp_path: Path, name: str, decls: str = "", cond: str = "a > 0", cite: str = "t") -> str:
    p = tmp_path / f"{name}.spec"
    p.write_text(SPEC.format(decls=decls, cond=cond, cite=cite))
    return str(p)


SPEC_CASES = {
    "251-ands": ({"cond": " and ".join(["a > 0"] * 251)}, ("E0104",)),
    "5000-nots": ({"cond": "not " * 5000 + "a > 0"}, ("E0104",)),
    "version-4400-digits": ({"decls": 'param os: version = "' + "1" * 4400 + '"'}, ("E0101", "E0102", "E0104")),
    "integer-5000-digits": ({"cond": "a > " + "9" * 5000}, ("E0101",)),
    "giant-const-power": ({"decls": "const BIG: int = 2 ** 4294967296", "cond": "a > BIG"}, ("E0303",)),
}


@pytest.mark.parametrize("command", ["check", "prove", "simulate"])
@pytest.mark.parametrize("case", list(SPEC_CASES))
def test_hostile_specs_are_errors_not_crashes(command, case, tmp_path):
    kwargs, codes = SPEC_CASES[case]
    spec = hostile_spec(tmp_path, case, **kwargs)
    argv = {"check": ["check", spec], "prove": ["prove", spec, "--no-consistency"],
            "simulate": ["simulate", spec, "--runs", "2", "--steps", "2"]}[command]
    code, out, err = run_cli(*argv)
    assert code in (1, 2) and "Traceback" not in err, err
    assert any(f"[{c}]" in err + out for c in codes), err + out


def test_a_spec_over_the_size_limit_is_E0604(tmp_path):
    spec = hostile_spec(tmp_path, "cite", cite="c" * (2 << 20))
    done = run_limited(["check", spec], address_space=2 * GiB, timeout=60)
    assert done.returncode == 2 and "E0604" in done.stderr and "Traceback" not in done.stderr


def test_a_giant_power_at_run_time_is_E0310_in_bounded_memory(tmp_path):
    spec = hostile_spec(tmp_path, "pow", cond="a > level ** 4294967296")
    done = run_limited(["simulate", spec, "--runs", "3", "--steps", "3"], address_space=2 * GiB, timeout=60)
    assert done.returncode == 2 and "E0310" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("step", ["K{i} * K{i}", "K{i} ** 511"])
def test_constants_that_square_the_one_above_are_E0303_in_bounded_time(step, tmp_path):
    """Found by testing: each line doubled the folded value's width (no one expression is deep), so
    forty lines of `const K: int = J * J` made `check` run for hours, and four of `** 511` ended in
    a MemoryError (exit 3)."""
    decls = "const K0: int = 3\n" + "".join(f"const K{i + 1}: int = {step.format(i=i)}\n" for i in range(40))
    spec = hostile_spec(tmp_path, "squares", decls=decls, cond="a > K40")
    done = run_limited(["check", spec], address_space=2 * GiB, timeout=30)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "error[E0303]" in done.stderr and "wider than 65,536 bits, the widest constant" in done.stderr


@pytest.mark.parametrize("command", [["check"], ["simulate", "--runs", "2", "--steps", "2"]])
def test_definitions_that_double_the_one_above_are_E0104_in_bounded_time(command, tmp_path):
    """Found by testing: every back end expands a definition in place, so forty lines of
    `def d2 = d1 + d1` checked fine and then made `simulate`, `prove` and `replay` run for ever."""
    decls = "def d0 = level + 1\n" + "".join(f"def d{i + 1} = d{i} + d{i}\n" for i in range(40))
    spec = hostile_spec(tmp_path, "doubling", decls=decls, cond="a > d40")
    done = run_limited([command[0], spec, *command[1:]], address_space=2 * GiB, timeout=30)
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.count("error[E0104]") == 1 and "definition 'd15' expands to 131,071 expressions" in done.stderr


DOUBLINGS = "def d0 = level + 1\n" + "".join(f"def d{i + 1} = d{i} + d{i}\n" for i in range(14))  # d14: 65,535


@pytest.mark.parametrize("command", [["check"], ["simulate", "--runs", "2", "--steps", "2"]])
def test_an_invariant_that_uses_a_large_definition_twice_is_E0104_in_bounded_time(command, tmp_path):
    """Found by testing: each definition was within its bound, but a clause that used one many
    times expanded past it (`d14 + d14 + ...`) and hung `simulate` and `prove`."""
    decls = DOUBLINGS + 'invariant INV-1: d14 + d14 > 0\n  cite DOC "t"'
    spec = hostile_spec(tmp_path, "twice", decls=decls)
    done = run_limited([command[0], spec, *command[1:]], address_space=2 * GiB, timeout=30)
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.count("error[E0104]") == 1, done.stderr[-2000:]
    assert "twice.spec:19:18: error[E0104]: invariant INV-1 expands to 131,073 expressions, more than 100,000" \
        in done.stderr


def thousands_of_invariants(tmp_path: Path, name: str, count: int) -> str:
    """`count` invariants, each using d14 (65,535 expressions) once: each within its own bound."""
    invariants = "".join(f'invariant INV-{i}: d14 > {i}\n  cite DOC "t"\n' for i in range(count))
    return hostile_spec(tmp_path, name, decls=DOUBLINGS + invariants)


@pytest.mark.parametrize("command", [["check"], ["simulate", "--runs", "2", "--steps", "2"]])
def test_thousands_of_invariants_each_within_its_bound_are_E0104_in_bounded_time(command, tmp_path):
    """Each invariant expanded to less than 100,000 expressions, but thousands of them added up without
    bound (simulate spent some 17 s on each): the whole spec expands to at most 200,000, and the
    error is at the fourth invariant, the one that takes the total past it (3 x 65,537 = 196,611)."""
    spec = thousands_of_invariants(tmp_path, "thousands", 1000)
    done = run_limited([command[0], spec, *command[1:]], address_space=2 * GiB, timeout=30)
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.count("error[E0104]") == 1, done.stderr[-2000:]
    assert ("thousands.spec:25:18: error[E0104]: invariant INV-3 expands to 65,537 expressions and takes the whole "
            "spec to 262,148, more than 200,000 (the 3 conditions, invariants and effects before it expand to "
            "196,611; each use of a definition is expanded in place)") in done.stderr


def test_a_spec_whose_parts_add_up_to_just_under_the_total_is_fine(tmp_path):
    assert run_cli("check", thousands_of_invariants(tmp_path, "three", 3))[0] == 0


def test_a_clause_that_uses_a_large_definition_once_is_fine(tmp_path):
    decls = DOUBLINGS + 'invariant INV-1: d14 > 0\n  cite DOC "t"'
    spec = hostile_spec(tmp_path, "once", decls=decls, cond="a > d14")
    assert run_cli("check", spec)[0] == 0


def test_a_constant_as_wide_as_allowed_still_folds(tmp_path):
    spec = hostile_spec(tmp_path, "wide", decls="const W: int = 2 ** 511 * 2 ** 511", cond="a > W")
    assert run_cli("check", spec)[0] == 0


def test_nesting_within_the_limit_works_everywhere(tmp_path):
    spec = hostile_spec(tmp_path, "deep-ok", cond=" and ".join(["a > 0"] * 90))
    assert run_cli("check", spec)[0] == 0
    assert run_cli("prove", spec, "--no-consistency")[0] == 0
    trace = write_trace(tmp_path / "t.jsonl", [{"call": "poke", "args": {"a": 5}, "ret": 1}],
                        header={"regcheck": 1, "spec": spec})
    code, out, err = run_cli("replay", trace)
    assert code == 0, err + out


def test_the_spec_limits_can_be_raised(tmp_path):
    deep = hostile_spec(tmp_path, "deep", cond=" and ".join(["a > 0"] * 120))
    code, _, err = run_cli("check", deep)
    assert code == 1 and "E0104" in err and "--max-spec-nesting" in err
    assert run_cli("check", "--max-spec-nesting", "200", deep)[0] == 0
    trace = write_trace(tmp_path / "t.jsonl", [{"call": "poke", "args": {"a": 5}, "ret": 1}],
                        header={"regcheck": 1, "spec": deep})
    assert run_cli("replay", trace)[0] == 2  # the spec a header names is held to the same limits
    assert run_cli("replay", "--max-spec-nesting", "200", trace)[0] == 0
    code, _, err = run_cli("check", "--max-spec-bytes", "64", deep)
    assert code == 2 and "E0604" in err and "--max-spec-bytes" in err
    assert run_cli("check", deep)[0] == 1  # the option holds for its own run only


@pytest.mark.parametrize("where", ["args", "ret"])
def test_a_long_value_is_not_echoed_whole(where, tmp_path):
    value = "0x" + "f" * 200_000  # within the line limit, far beyond any integer type
    event = {"call": "malloc", "args": {"size": value}, "out": {"ptr": 4096}} if where == "args" else \
        {"call": "aclrtHostUnregister", "args": {"ptr": 4096}, "ret": "x" * 200_000}
    code, out, err = run_cli("replay", write_trace(tmp_path / "long.jsonl", [event]))
    assert_input_error(code, out, err, "T0706", "T0733")
    assert len(err) < 2_000 and ("200002 characters" in err or "200000 characters" in err), err[:300]


def test_itf_output_is_bounded(tmp_path):
    # 400 registrations that stay live: the ITF output grows with events x entries.
    events = [{"call": "malloc", "args": {"size": 400 * 8192}, "out": {"ptr": 0x7F0000000000}}]
    events += [{"call": "aclrtHostRegisterV2", "args": {"ptr": 0x7F0000000000 + 8192 * i, "size": 4096, "flag": 2},
                "ret": 0} for i in range(400)]
    trace = write_trace(tmp_path / "grow.jsonl", events)
    out = tmp_path / "out.itf.json"
    code, _, err = run_cli("itf", trace, "-o", str(out), "--max-bytes", "200000")
    assert code == 2 and "E0605" in err and "Traceback" not in err and not out.exists()
    assert run_cli("itf", trace, "-o", str(out))[0] == 0 and out.stat().st_size > 200000


# ---------------------------------------------------------------- prover: a timeout is never a definite claim


@pytest.mark.slow
def test_tiny_solver_timeouts_claim_nothing_the_full_run_denies():
    def statuses(timeout: str) -> dict:
        code, out, err = run_cli("prove", "acl", "--timeout", timeout, "--retries", "0", "--format", "json")
        return {(c["kind"], c["subject"], c["call"]): c["status"] for c in json.loads(out)["consistency"]}

    full, tiny = statuses("5000"), statuses("1")
    definite = {"dead", "shadowed", "unreached", "live", "never", "vacuous", "reachable", "non-vacuous", "guarded"}
    wrong = {k: (v, full[k]) for k, v in tiny.items() if v in definite and full.get(k) != v}
    assert wrong == {}


# ---------------------------------------------------------------- Dask without workers


@pytest.mark.slow
def test_dask_with_no_worker_stops_and_names_the_traces(tmp_path, violating, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    from checker.engines import parallel

    monkeypatch.setattr(parallel, "DASK_NO_WORKERS_S", 2)
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        code, out, err = run_cli("replay", "--dask", cluster.scheduler_address, violating)
    assert code == 2 and "error[X0822]" in err and "v.jsonl" in err and "Traceback" not in err


# ---------------------------------------------------------------- record into a pipe or a FIFO


def _compiler() -> str | None:
    from checker.engines.record import find_compiler

    return find_compiler(dict(os.environ))[0]


@pytest.mark.skipif(_compiler() is None, reason="no C compiler to build the interposer")
def test_record_into_a_pipe_and_a_fifo_does_not_hang(tmp_path):
    done = subprocess.run(f"{sys.executable} -c 'from checker.cli import entry; entry()' record -o /dev/stdout "
                          "-- /bin/true | cat", shell=True, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0 and done.stdout.startswith('{"regcheck"'), done.stderr
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, out, err = run_cli("record", "-o", str(fifo), "--", "/bin/true")
    reader.join(20)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got and got[0].startswith(b'{"regcheck"')
    code, out, err = run_cli("record", "-o", "/dev/full", "--", "/bin/true")
    assert code == 2 and "error[X0813]" in err and "Traceback" not in err
    devices_intact()


@pytest.mark.parametrize("argv", [
    ["fuzz", "cupva", "--max-examples", "2", "--steps", "3", "-o", "{missing}/x.jsonl"],
    ["conform", "cupva", "--depth", "1", "--fuzz", "2", "--fuzz-output", "{missing}/f.jsonl"],
    ["replay", "{violating}", "--timeline", "{missing}/t.html"],
], ids=["fuzz", "conform", "replay-timeline"])
def test_an_output_that_cannot_be_written_is_found_before_the_work(argv, violating, tmp_path):
    """Found by testing: these ran to the end (a fuzz failure, a suite's results, a whole replay) and
    then reported only E0603, the results lost."""
    args = [a.format(missing=tmp_path / "no-such-dir", violating=violating) for a in argv]
    code, out, err = run_cli(*args)
    assert code == 2 and "error[E0603]" in err and "no such directory" in err and out == ""
