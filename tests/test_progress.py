"""Progress bars (checker/cli/progress.py) for one long replay and for `regcheck prove`: drawn on a
terminal, nothing at all otherwise; the replay hook fires once per PROGRESS_EVERY events."""

from __future__ import annotations

import io
import json
import os

import pytest

from checker.engines import replay as replay_module
from checker.cli import main
from checker.language.load import load_spec
from checker.cli.progress import QuietBar, progress_bar
from checker.engines.prover import prove
from checker.engines.proof import ProveOptions
from checker.engines.replay import replay_events, replay_trace, semantics_for
from checker.model.state import NATIVE
from checker.trace.reader import read_trace

ACL = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
BASE = 0x7F3A_2C00_0000


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def long_trace(tmp_path, rounds: int, bad: bool = False) -> str:
    """malloc/free pairs (2 events per round); with bad, the last free is a double free. Every
    third round writes its pointers in hex, which the replayer's general path reads: the rest
    take the fast path."""
    lines = [json.dumps(ACL)]
    for i in range(rounds):
        ptr = BASE + i * 0x10000 if i % 3 else hex(BASE + i * 0x10000)
        lines += [json.dumps({"call": "malloc", "args": {"size": 4096}, "out": {"ptr": ptr}}),
                  json.dumps({"call": "free", "args": {"ptr": ptr}})]
    if bad:
        lines.append(lines[-1])
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run(*argv: str, stderr=None) -> tuple[int, str, str]:
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------- the replay hook


def test_the_hook_fires_once_per_65536_events():
    assert replay_module.PROGRESS_EVERY == 65536


LOOPS = [pytest.param(True, id="python-loop"),
         pytest.param(False, id="c-loop", marks=pytest.mark.skipif(NATIVE is None, reason="checker._native is not built"))]


@pytest.mark.parametrize("python_loop", LOOPS)
@pytest.mark.parametrize("rounds", [5, 8, 9])  # 10, 16 (a multiple of the step) and 18 events
def test_the_hook_counts_every_event_in_steps(tmp_path, monkeypatch, rounds, python_loop):
    monkeypatch.setattr(replay_module, "PROGRESS_EVERY", 4)
    monkeypatch.setattr(replay_module, "_PYTHON_LOOP", python_loop)
    path = long_trace(tmp_path, rounds)
    header, events = read_trace(path)
    calls: list[int] = []
    report = replay_events(semantics_for(header, None, path), events, path, None, calls.append)
    assert sum(calls) == report.events == 2 * rounds
    assert all(n == 4 for n in calls[:-1]) and 0 < calls[-1] <= 4
    assert len(calls) == -(-report.events // 4)  # one call per started batch
    assert report == replay_trace(path)  # the hook changes nothing in the report


@pytest.mark.parametrize("python_loop", LOOPS)
def test_the_hook_stops_with_max_findings(tmp_path, monkeypatch, python_loop):
    monkeypatch.setattr(replay_module, "PROGRESS_EVERY", 4)
    monkeypatch.setattr(replay_module, "_PYTHON_LOOP", python_loop)
    path = long_trace(tmp_path, 6, bad=True)
    header, events = read_trace(path)
    calls: list[int] = []
    report = replay_events(semantics_for(header, None, path), events, path, 1, calls.append)
    # The last, partial batch of a replay stopped early need not be reported (the bar closes anyway).
    assert report.truncated and report.events == 13 and 12 <= sum(calls) <= 13
    assert report == replay_trace(path, max_findings=1)


# ---------------------------------------------------------------- the bars


def test_bars_are_quiet_off_a_terminal():
    stream = io.StringIO()
    with progress_bar(stream, None, "proving") as bar:
        assert isinstance(bar, QuietBar)
        bar.update(3, 10, "x")
        bar.advance(5)
    assert stream.getvalue() == ""


def test_a_bar_can_be_moved_to_a_position_on_a_terminal():
    stream = Terminal()
    with progress_bar(stream, None, "proving") as bar:
        bar.update(7, 9, "acl: induction")
    assert "acl: induction" in stream.getvalue()


def test_single_replay_prints_nothing_on_stderr_off_a_terminal(tmp_path):
    path = long_trace(tmp_path, 10)
    for fmt in ("text", "json", "sarif"):
        code, out, err = run("replay", "--format", fmt, path)
        assert code == 0 and err == "" and "\x1b" not in out


def test_single_replay_draws_a_bar_on_a_terminal(tmp_path):
    path = long_trace(tmp_path, 10)
    code, out, err = run("replay", path, stderr=Terminal())
    assert code == 0 and "replaying long.jsonl" in err and "20/20" in err
    assert out == run("replay", path)[1]  # the report is the same; the bar only goes to stderr


def test_single_replay_with_a_bar_reports_input_errors_the_same(tmp_path):
    missing = str(tmp_path / "missing.jsonl")
    assert run("replay", missing, stderr=Terminal())[0] == run("replay", missing)[0] == 2
    path = long_trace(tmp_path, 3, bad=True)
    for argv in (("--max-findings", "1"), ("--spec", "acl"), ()):
        on_tty = run("replay", "--format", "json", *argv, path, stderr=Terminal())
        plain = run("replay", "--format", "json", *argv, path)
        assert on_tty[:2] == plain[:2] and plain[0] == 1


# ---------------------------------------------------------------- prove


def test_prove_progress_counts_every_obligation_and_guard():
    calls: list[tuple[str, int, int]] = []
    report = prove(load_spec("cupva"), "cupva", ProveOptions(consistency=False, reach_depth=0),
                   progress=lambda *a: calls.append(a))
    by_phase: dict[str, list[tuple[int, int]]] = {}
    for phase, done, planned in calls:
        by_phase.setdefault(phase, []).append((done, planned))
    assert list(by_phase) == ["induction", "guards", "reach"]
    assert by_phase["induction"][-1] == (len(report.obligations), len(report.obligations))
    assert [d for d, _ in by_phase["induction"]] == list(range(len(report.obligations) + 1))
    assert by_phase["guards"][-1] == (len(report.guards), len(report.guards))


def test_prove_prints_nothing_on_stderr_off_a_terminal():
    code, out, err = run("prove", "cupva", "--no-consistency", "--no-guards")
    assert code == 0 and err == "" and "\x1b" not in out


def test_prove_draws_a_bar_on_a_terminal():
    code, out, err = run("prove", "cupva", "--no-consistency", "--no-guards", "--format", "json", stderr=Terminal())
    # rich redraws ten times a second and once more when it stops, so the phases seen in between
    # depend on speed; the last one (no consistency checks: the reachability search) is always drawn.
    assert code == 0 and "cupva: reach" in err and "1/1" in err
    assert json.loads(out)["proved"] is True  # stdout stays clean JSON


def test_generation_reports_each_configuration():
    from checker.testgen.generate import generate_suite

    seen = []
    suite = generate_suite("cupva", progress=lambda done, total, label: seen.append((done, total)))
    assert seen == [(i, len(suite.configs)) for i in range(1, len(suite.configs) + 1)]


def test_generate_prints_no_bar_when_stderr_is_not_a_terminal(tmp_path):
    import io

    from checker.cli import main

    err = io.StringIO()
    assert main(["generate", "cupva", "-o", str(tmp_path / "s")], stdout=io.StringIO(), stderr=err) == 0
    assert err.getvalue() == ""


# ---------------------------------------------------------------- what a bar's description may hold


@pytest.mark.parametrize("name, shown", [
    ("a[bold]b.jsonl", "a[bold]b.jsonl"),  # rich read it as markup: "ab.jsonl" in bold
    ("x\x1b]0;title\x07y.jsonl", "x\\x1b]0;title\\x07y.jsonl"),  # a terminal's title set
    ("c\x1b[2Jd.jsonl", "c\\x1b[2Jd.jsonl"),  # the screen cleared
    ("r\u202eevil.jsonl", "r\\u202eevil.jsonl"),  # the rest of the line read right to left
])
def test_a_bar_shows_a_file_name_as_written_with_control_characters_escaped(tmp_path, name, shown):
    path = tmp_path / name
    os.rename(long_trace(tmp_path, 3), path)
    code, out, err = run("replay", str(path), stderr=Terminal())
    assert code == 0 and f"replaying {shown} " in err, repr(err)
    for raw in ("\x1b]", "\x1b[2J", "\x07", "\u202e"):
        assert raw not in err


MINIMAL_SPEC = """spec tiny "one call"
source DOC "doc.txt" "a document"
status int success 0
var n: int = 0
call poke(a: int) {
  fails TINY-ONE: 1 when a == 1
    cite DOC "one fails"
  effect TINY-EFFECT: { n = n + 1 }
    cite DOC "counts"
}
"""


def test_a_bar_takes_brackets_in_a_path_for_text_not_markup(tmp_path, monkeypatch):
    """`[/b]` closed no open rich tag: generate's bar raised MarkupError (a traceback, exit 3)."""
    monkeypatch.chdir(tmp_path)
    os.mkdir("dir[")
    with open("dir[/b]x.spec", "w") as f:
        f.write(MINIMAL_SPEC)
    code, out, err = run("generate", "dir[/b]x.spec", "--bmc-depth", "0", "--pytest", "t.py", stderr=Terminal())
    assert code == 0 and "generating dir[/b]x.spec" in err, err
