"""The command line as a whole: option spellings, help, usage errors, colour, completion, project defaults."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checker.cli import build_parser, main
from checker.cli.common import Output, paint, parse_env, use_colour
from checker.cli.config import load_project_config, resolve_spec
from helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
BAD_TRACE = str(ROOT / "traces" / "acl" / "bad_double_free.jsonl")
ACL_TRACES = str(ROOT / "traces" / "acl")


def all_arguments(parser, name="regcheck"):
    yield name, parser
    for command, sub in parser.commands.items():
        yield f"{name} {command}", sub


# ---------------------------------------------------------------- help, choices, usage


def test_every_argument_has_help():
    missing = [f"{where}: {a.option_strings or a.dest}" for where, p in all_arguments(build_parser())
               for a in p.arguments if not a.help]
    assert missing == []


def test_rules_kind_is_validated_by_choices():
    code, out, err = run_cli("rules", "acl", "--kind", "bogus")
    assert code == 2 and "invalid choice: 'bogus'" in err and "usage: regcheck rules" in err


def test_a_subcommand_usage_error_shows_that_subcommands_usage():
    code, out, err = run_cli("replay", "--max-findings", "0", "x.jsonl")
    assert code == 2
    assert err.startswith("usage: regcheck replay") and "regcheck replay: error: argument --max-findings" in err
    code, _, err = run_cli("--no-such-flag")
    assert code == 2 and err.startswith("usage: regcheck [-h]")


def test_record_usage_shows_the_output_as_required():
    code, _, err = run_cli("record", "--bogus")
    assert code == 2 and "usage: regcheck record -o TRACE" in err


def test_version_short_flag(capsys):
    assert main(["-V"]) == 0  # argparse's version action writes to sys.stdout itself
    assert capsys.readouterr().out.startswith("regcheck ")


def test_python_dash_m_checker_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "checker", "-V"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("regcheck ")


# ---------------------------------------------------------------- rules with several specs


def test_rules_takes_several_specs():
    code, out, _ = run_cli("rules", "acl", "cupva", "--kind", "invariant")
    assert code == 0 and "rules in spec acl" in out and "rules in spec cupva" in out
    code, out, _ = run_cli("rules", "acl", "cupva", "--format", "json")
    doc = json.loads(out)
    assert [s["spec"] for s in doc["specs"]] == ["acl", "cupva"]
    code, out, _ = run_cli("rules", "cupva", "--format", "json")
    assert json.loads(out)["spec"] == "cupva"  # one spec: the document as before


def test_rules_with_a_bad_spec_prints_nothing_and_exits_2():
    code, out, err = run_cli("rules", "acl", "no/such.spec")
    assert code == 2 and out == "" and "E0601" in err


# ---------------------------------------------------------------- -o/--output and its aliases


@pytest.mark.parametrize("command", [["fuzz", "acl"], ["simulate", "acl"], ["bmc", "acl", "--depth", "1"]])
@pytest.mark.parametrize("spelling", ["-o", "--output", "--out"])
def test_output_has_one_spelling_everywhere_and_the_old_ones_still_work(command, spelling):
    args = build_parser().parse_args([*command, spelling, "x.jsonl"])
    assert args.output == "x.jsonl"


def test_every_command_that_writes_a_file_takes_dash_o():
    writers = ("record", "shrink", "generate", "fuzz", "simulate", "bmc", "itf", "diagram")
    commands = build_parser().commands
    assert all({"-o", "--output"} <= {s for a in commands[c].arguments for s in a.option_strings} for c in writers)


# ---------------------------------------------------------------- quiet and verbose


def test_replay_quiet_prints_only_the_verdict_line():
    code, out, _ = run_cli("replay", "-q", BAD_TRACE)
    assert code == 1 and out.splitlines() == [f"{BAD_TRACE}: violates: 5 events, 1 usage"]
    code, out, _ = run_cli("replay", "-q", ACL_TRACES)
    assert len(out.splitlines()) == 1 and out.endswith("violate\n")


def test_replay_verbose_adds_the_findings_by_rule():
    _, normal, _ = run_cli("replay", BAD_TRACE)
    _, verbose, _ = run_cli("replay", "-v", BAD_TRACE)
    assert "findings by rule:" not in normal and "findings by rule:" in verbose


def test_quiet_and_verbose_exclude_each_other():
    assert run_cli("replay", "-q", "-v", BAD_TRACE)[0] == 2


def test_execute_quiet():
    code, out, _ = run_cli("execute", "-q", BAD_TRACE)
    assert code == 1 and len(out.splitlines()) == 1 and "violates" in out


def test_prove_quiet_prints_the_summary():
    code, out, _ = run_cli("prove", "cupva", "-q")
    assert code == 0 and len(out.splitlines()) == 1 and out.startswith("summary: ")


def test_conform_quiet_and_failures_only(tmp_path):
    code, out, _ = run_cli("conform", "cupva", "--depth", "1", "-q")
    assert code == 0 and len(out.splitlines()) == 1 and " passed, 0 failed" in out
    code, out, _ = run_cli("conform", "cupva", "--depth", "1", "--failures-only")
    assert code == 0 and "pass " not in out and out.count("\n") == 1
    code, out, _ = run_cli("conform", "cupva", "--depth", "1")
    assert out.count("pass ") > 1


# ---------------------------------------------------------------- --env


@pytest.mark.parametrize("command", [["generate", "acl"], ["conform", "acl"], ["fuzz", "acl"], ["simulate", "acl"],
                                     ["bmc", "acl", "--depth", "1"]])
def test_every_command_that_runs_a_spec_takes_env(command):
    args = build_parser().parse_args([*command, "--env", "a=1", "--env", "b=x"])
    assert args.env == ["a=1", "b=x"]


def test_parse_env_converts_by_the_specs_parameter_types():
    from checker.language.load import load_spec

    spec = load_spec("cupva")
    assert parse_env(["driver_version=2006", "qnx_safety=true"], spec) == {"driver_version": 2006, "qnx_safety": True}
    assert parse_env(["x=12", "y=-3", "z=1.5"]) == {"x": 12, "y": -3, "z": "1.5"}


def test_a_flags_parameter_takes_a_decimal_value_on_the_command_line(tmp_path):
    """Found by testing: `--env fl=3` for a flags parameter stayed the string "3", rejected as "not an
    integer" (T0721), while `--env fl=0x3` and an int parameter's `--env n=3` were taken."""
    spec = tmp_path / "f.spec"
    spec.write_text('spec f "flags parameter"\nsource DOC "d" "d"\nstatus int success 0\n'
                    'flags Fl: u32 { FA = 1, FB = 2 }\nparam fl: Fl = 0\nvar n: int = 0\n'
                    'call c() {\n  effect F-E: { n = fl }\n    cite DOC "d"\n}\n')
    for value in ("3", "0x3", "FB"):
        code, out, err = run_cli("simulate", str(spec), "--runs", "1", "--steps", "1", "--env", f"fl={value}")
        assert code == 0, (value, err)


@pytest.mark.parametrize("command", [["generate", "cupva", "--pytest", "t.py"], ["conform", "cupva"],
                                     ["simulate", "cupva"], ["bmc", "cupva", "--depth", "1"], ["fuzz", "cupva"]])
def test_an_unknown_env_parameter_is_an_input_error(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(*command, "--env", "bogus=1")
    assert code == 2 and "T0720" in err


def test_bad_env_syntax_is_t0721():
    code, _, err = run_cli("simulate", "cupva", "--env", "novalue")
    assert code == 2 and "T0721" in err


def test_generate_env_fixes_the_parameter_in_every_configuration(tmp_path):
    code, out, _ = run_cli("generate", "cupva", "--depth", "1", "--bmc-depth", "0", "--env", "qnx_safety=true",
                           "-o", str(tmp_path / "s"), "--format", "json")
    assert code == 0
    configs = json.loads(out)["configs"]
    assert configs and all(c["qnx_safety"] is True for c in configs)


# ---------------------------------------------------------------- generate into a directory that holds a suite


def test_generate_refuses_to_mix_suites_unless_forced(tmp_path):
    target = str(tmp_path / "s")
    base = ("generate", "cupva", "--depth", "1", "--bmc-depth", "0", "-o", target)
    assert run_cli(*base)[0] == 0
    stale = tmp_path / "s" / "OLD-1.jsonl"
    index = json.loads((tmp_path / "s" / "suite.json").read_text())
    index["tests"].append({**index["tests"][0], "name": "OLD-1", "file": stale.name})
    (tmp_path / "s" / "suite.json").write_text(json.dumps(index))
    stale.write_text("old\n")
    (tmp_path / "s" / "notes.txt").write_text("mine\n")
    code, _, err = run_cli(*base)
    assert code == 2 and "E0613" in err and "--force" in err and stale.exists()
    for flag in ("--force", "--overwrite"):
        assert run_cli(*base, flag)[0] == 0
    assert not stale.exists() and (tmp_path / "s" / "notes.txt").exists()  # the old suite's files only


def test_generate_into_a_non_empty_directory_without_a_suite(tmp_path):
    (tmp_path / "README").write_text("x")
    assert run_cli("generate", "cupva", "--depth", "1", "--bmc-depth", "0", "-o", str(tmp_path))[0] == 0


# ---------------------------------------------------------------- check --werror


def test_check_werror_says_why_it_exits_1(tmp_path):
    p = tmp_path / "warn.spec"
    p.write_text('spec w "warnings only"\nsource DOC "d" "never cited"\nstatus int success 0\n')
    code, _, err = run_cli("check", "--werror", str(p))
    assert code == 1 and "exit 1: 1 warning and --werror" in err
    code, _, err = run_cli("check", str(p))
    assert code == 0 and "--werror" not in err


# ---------------------------------------------------------------- colour


def test_colour_follows_the_terminal_and_the_environment():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert use_colour(Tty(), {}) and not use_colour(io.StringIO(), {})
    assert not use_colour(Tty(), {"NO_COLOR": "1"})
    assert use_colour(io.StringIO(), {"FORCE_COLOR": "1"}) and not use_colour(io.StringIO(), {"FORCE_COLOR": "0"})
    assert not use_colour(Tty(), {"NO_COLOR": "1", "FORCE_COLOR": "1"})


def test_captured_output_has_no_colour(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    _, out, _ = run_cli("replay", BAD_TRACE)
    assert "\x1b[" not in out


@pytest.mark.parametrize("colour", [False, True])
def test_text_output_escapes_control_characters_but_its_own_colour(colour):
    stdout, stderr = io.StringIO(), io.StringIO()
    out = Output(stdout, stderr, colour=colour)
    out.out(f"{out.paint('fail', 'fail')} \x1b]0;title\x07 \x1b[2J\r\x9b1m\x7f\tend\nnext")
    out.err("bad\x1b[31m name")
    painted = paint("fail", "fail") if colour else "fail"
    assert stdout.getvalue() == painted + " \\x1b]0;title\\x07 \\x1b[2J\\x0d\\x9b1m\\x7f\tend\nnext\n"
    assert stderr.getvalue() == "bad\\x1b[31m name\n"


def test_text_output_escapes_bidirectional_overrides_but_not_other_text():
    """A name holding U+202E (right-to-left override) would show its text reversed on the terminal."""
    stdout = io.StringIO()
    Output(stdout, io.StringIO()).out("trace-\u202egnp.jsonl \u2066x\u2069 \u05d0\u200f é")
    assert stdout.getvalue() == "trace-\\u202egnp.jsonl \\u2066x\\u2069 \u05d0\u200f é\n"


def test_force_color_colours_kinds_rule_ids_and_verdicts(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, out, _ = run_cli("replay", BAD_TRACE)
    assert paint("usage", "usage") in out and paint("ENV-FREE-UNKNOWN", "rule") in out
    assert paint("violates", "violates") in out
    _, out, _ = run_cli("replay", BAD_TRACE, "--format", "json")
    assert "\x1b[" not in out  # machine formats never
    assert Output(io.StringIO(), io.StringIO()).paint("x", "usage") == "x"
    _, out, _ = run_cli("prove", "cupva", "--no-consistency", "--no-guards")
    assert paint("PROVED", "PROVED") in out


# ---------------------------------------------------------------- completion


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_script_comes_from_the_parser(shell):
    code, out, _ = run_cli("completion", shell)
    assert code == 0
    for word in ("replay", "generate", "--failures-only", "--werror"):
        assert word in out
    if shell == "bash":
        assert "complete -o default -F _regcheck regcheck" in out and "text json sarif" in out
    else:  # zsh's own completion system, not bash's through bashcompinit
        assert "compdef _regcheck regcheck" in out and "bashcompinit" not in out
        assert "'--format[output format (default: text)]:format:(text json sarif)'" in out


# Types WORDS and a TAB into an interactive zsh on a pseudo-terminal and prints what completion offered
# (the matches given to compadd); the technique of zsh-capture-completion, written anew.
ZSH_CAPTURE = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT= RPROMPT= ; autoload -U compinit && compinit -u -D"
zpty -w z "source $1"
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a hits; builtin compadd -A hits "$@"; print -r -- "<<${(j: :)hits}>>" >&2; builtin compadd "$@" }'
zpty -w z "exec 2>$3"
zpty -w -n z "$2"$'\t'
for i in {1..150}; do [[ -s $3 ]] && break; sleep 0.2; done
sleep 0.3
zpty -d z
cat $3
"""


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_completes_commands_and_choices(tmp_path):
    script, capture = tmp_path / "c.zsh", tmp_path / "capture.zsh"
    script.write_text(run_cli("completion", "zsh")[1])
    capture.write_text(ZSH_CAPTURE)

    def offered(words: str, n: int) -> str:
        out = tmp_path / f"out{n}.txt"
        r = subprocess.run(["zsh", "-f", str(capture), str(script), words, str(out)],
                           capture_output=True, text=True, timeout=60)
        return r.stdout.strip()

    assert offered("regcheck rep", 1) == "<<replay>>"
    assert offered("regcheck rules acl --kind inv", 2) == "<<invariant>>"
    assert "--failures-only" in offered("regcheck conform --fail", 3)


# As ZSH_CAPTURE, but prints the descriptions completion lists (the -d array given to compadd; zsh
# gives none for a unique match), on a terminal wide enough that zsh cuts none (the help texts are
# shorter; much wider, and zsh lists nothing).
DESCRIPTIONS_HOOK = ("""zpty -w z 'compadd () { local d=${@[(i)-d]}; (( d < $# )) && """
                     """print -r -- "${(pj:\\n:)${(P)@[d+1]}}" >&2; builtin compadd "$@" }'""")
ZSH_CAPTURE_DESCRIPTIONS = "\n".join(
    DESCRIPTIONS_HOOK if line.startswith("zpty -w z 'compadd")
    else line.replace('"source $1"', '"COLUMNS=2000; source $1"') for line in ZSH_CAPTURE.splitlines())


def zsh_descriptions(script: Path, capture: Path, words: str, out: Path) -> str:
    """What zsh's completion lists after WORDS and a TAB, one `option -- description` a line."""
    subprocess.run(["zsh", "-f", str(capture), str(script), words, str(out)], capture_output=True, text=True,
                   timeout=60)
    return out.read_text() if out.exists() else ""


def test_zsh_option_descriptions_are_whole_help_texts():
    """Found by testing: the --ints description was cut at its first `: ` (zsh specs treat `:` and
    brackets specially, and the generator cut the text there); each option's is its whole help."""
    out = run_cli("completion", "zsh")[1]
    assert ("""'--ints[integers as {"#bigint": "..."} always (default, as Quint writes them) or as JSON numbers """
            """when they fit in 53 bits (auto)]:ints:(bigint auto)'""") in out


def parser_with_a_tricky_help() -> tuple[object, str]:
    root = build_parser()
    help_text = r"""a [bracketed] note: it's 100% $HOME's `x`, or C:\temp\new ] [ \ end"""
    root.commands["diagram"].add_argument("--tricky", help=help_text)
    return root, help_text


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_shows_a_help_text_with_colons_brackets_quotes_and_backslashes_whole(tmp_path):
    from checker.cli.completion import completion_script

    root, help_text = parser_with_a_tricky_help()
    script, capture = tmp_path / "c.zsh", tmp_path / "capture.zsh"
    script.write_text(completion_script(root, "zsh"))
    capture.write_text(ZSH_CAPTURE_DESCRIPTIONS)
    shown = zsh_descriptions(script, capture, "regcheck diagram --", tmp_path / "out.txt")
    assert re.search(r"^--tricky +-- " + re.escape(help_text) + "$", shown, re.M), shown
    shown = zsh_descriptions(script, capture, "regcheck itf --", tmp_path / "out2.txt")
    ints = ("""integers as {"#bigint": "..."} always (default, as Quint writes them) or as JSON numbers """
            """when they fit in 53 bits (auto)""")
    assert re.search(r"^--ints +-- " + re.escape(ints) + "$", shown, re.M), shown


# Types WORDS and a TAB into an interactive zsh on a pseudo-terminal COLUMNS wide and writes what the
# terminal then received (the listing as zsh draws it, escapes and all) once the line is drawn again.
ZSH_SCREEN = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT= RPROMPT= ; autoload -U compinit && compinit -u -D"
zpty -w z "stty columns $4 rows 500; COLUMNS=$4 LINES=500; source $1"
zpty -w -n z "$2"$'\t'
screen="" chunk=""
for i in {1..300}; do
  zpty -r -t z chunk && screen+=$chunk
  [[ $screen == *' -- '*"$2"* ]] && break
  sleep 0.1
done
zpty -d z
print -r -- "$screen" > $3
"""
TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def zsh_listing(script: Path, capture: Path, words: str, out: Path) -> dict[frozenset[str], str]:
    """What zsh shows on the terminal after WORDS and a TAB: the options of each line of its listing
    (`--output  --out  -- description`: zsh puts spellings with one description on one line) -> the
    description shown. The terminal is wider than any help text, so zsh cuts none."""
    capture.write_text(ZSH_SCREEN)
    subprocess.run(["zsh", "-f", str(capture), str(script), words, str(out), "400"], capture_output=True, text=True,
                   timeout=60)
    shown = {}
    for line in (out.read_text() if out.exists() else "").split("\n"):
        drawn = TERMINAL_ESCAPE.sub("", line.split("\r")[0])  # after a \r: the line redrawn over it
        names, sep, description = drawn.partition(" -- ")
        if sep and names.startswith("-"):
            shown[frozenset(names.split())] = description.rstrip()
    return shown


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_shows_the_description_of_an_option_with_two_long_spellings(tmp_path):
    """-o/--output/--out (bmc, simulate, fuzz) and --force/--overwrite (generate): zsh lists the
    spellings on one line with the option's whole help text (read from the terminal; the compadd
    capture above sees the descriptions apart from the names)."""
    script = tmp_path / "c.zsh"
    script.write_text(run_cli("completion", "zsh")[1])
    root = build_parser()
    doubled = {name: a for name, parser in root.commands.items() for a in parser.arguments
               if sum(s.startswith("--") for s in a.option_strings) > 1}
    assert sorted(doubled) == ["bmc", "fuzz", "generate", "simulate"]
    for n, (name, a) in enumerate(doubled.items()):
        shown = zsh_listing(script, tmp_path / "screen.zsh", f"regcheck {name} --", tmp_path / f"out{n}.txt")
        longs = frozenset(s for s in a.option_strings if s.startswith("--"))
        assert shown.get(longs) == " ".join(a.help.split()), (name, shown)
        assert not any(names & longs for names in shown if names != longs), (name, shown)  # listed once


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_shows_every_options_whole_help_text(tmp_path):
    script = tmp_path / "c.zsh"
    script.write_text(run_cli("completion", "zsh")[1])
    root = build_parser()
    for n, (name, parser) in enumerate(root.commands.items()):
        shown = zsh_listing(script, tmp_path / "screen.zsh", f"regcheck {name} --", tmp_path / f"out{n}.txt")
        for a in parser.arguments:
            longs = frozenset(s for s in a.option_strings if s.startswith("--"))
            if longs and a.help:
                assert shown.get(longs) == " ".join(a.help.split()), (name, sorted(longs), shown)


def test_bash_completion_completes_commands_and_choices(tmp_path):
    script = tmp_path / "c.sh"
    script.write_text(run_cli("completion", "bash")[1])
    probe = (f'source {script}; COMP_WORDS=(regcheck rep); COMP_CWORD=1; _regcheck; echo "${{COMPREPLY[@]}}"; '
             'COMP_WORDS=(regcheck rules acl --kind inv); COMP_CWORD=4; _regcheck; echo "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert r.stdout.splitlines() == ["replay", "invariant"]


def bash_line_after_tab(script: Path, folder: Path, words: str) -> str:
    """Types WORDS and a TAB into an interactive bash (no rc files) on a pseudo-terminal in FOLDER,
    with the completion script loaded, and returns what the line then reads."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes the shell
        os.chdir(folder)
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], {**os.environ, "INPUTRC": "/dev/null"})

    def read_for(seconds: float) -> bytes:
        got, end = b"", time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.05)[0]:
                try:
                    got += os.read(fd, 4096)
                except OSError:
                    break
        return got

    try:
        os.write(fd, f"PS1='>'; source {script}; echo re''ady\n".encode())  # (the echo of the line is no "ready")
        seen = b""
        for _ in range(100):
            seen += read_for(0.1)
            if b"ready\r\n" in seen:
                break
        seen += read_for(0.2)  # the prompt
        os.write(fd, words.encode() + b"\t")
        line = read_for(1.5).decode(errors="replace")
        os.write(fd, b"\x15exit\n")
        read_for(0.3)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    return line


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_file_names_with_spaces_and_directories(tmp_path):
    """Found by testing: COMPREPLY=($(compgen -f ...)) split `my trace.jsonl` into two words and ended a
    directory with a space, not /."""
    script = tmp_path / "c.sh"
    script.write_text(run_cli("completion", "bash")[1])
    folder = tmp_path / "work"
    (folder / "sub dir").mkdir(parents=True)
    (folder / "my trace.jsonl").write_text("")
    (folder / "a*b.jsonl").write_text("")
    probe = (f"source {script}; compopt() {{ echo \"compopt $*\"; }}; "
             'COMP_WORDS=(regcheck replay my); COMP_CWORD=2; _regcheck; printf "<%s>\\n" "${COMPREPLY[@]}"; '
             'COMP_WORDS=(regcheck replay a); COMP_CWORD=2; _regcheck; printf "<%s>\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "-c", probe], cwd=folder, capture_output=True, text=True, timeout=30)
    assert r.stdout.splitlines() == ["compopt -o filenames", "<my trace.jsonl>",
                                     "compopt -o filenames", "<a*b.jsonl>"]
    # What a user sees: readline quotes the name and ends a directory with /.
    assert bash_line_after_tab(script, folder, "regcheck replay my").endswith("regcheck replay my\\ trace.jsonl ")
    assert bash_line_after_tab(script, folder, "regcheck replay su").endswith("regcheck replay sub\\ dir/")


# ---------------------------------------------------------------- [tool.regcheck]


def write_pyproject(folder: Path, table: str) -> None:
    (folder / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.regcheck]\n{table}\n")


def test_project_format_default_and_the_flag_wins(tmp_path, monkeypatch):
    write_pyproject(tmp_path, 'format = "json"')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found by walking up
    code, out, _ = run_cli("rules", "cupva")
    assert code == 0 and json.loads(out)["spec"] == "cupva"
    _, out, _ = run_cli("rules", "cupva", "--format", "text")
    assert out.endswith("rules in spec cupva\n")
    _, out, _ = run_cli("diagram", "cupva")  # diagram has no json format: its own default stays
    assert "flowchart LR" in out


def test_project_spec_path(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "mine.spec").write_text((ROOT / "spec" / "cupva.spec").read_text())
    write_pyproject(tmp_path, 'spec_path = ["specs"]')
    monkeypatch.chdir(tmp_path)
    assert resolve_spec("mine", load_project_config().spec_path) == str(tmp_path / "specs" / "mine.spec")
    assert resolve_spec("acl", load_project_config().spec_path) == "acl"
    code, out, _ = run_cli("check", "mine")
    assert code == 0 and "ok: spec cupva" in out


def test_project_spec_path_finds_a_spec_named_in_a_trace_header(tmp_path, monkeypatch):
    # The header names the spec as the command line would; -j workers find it too (they inherit the path).
    from checker.language.load import SPEC_PATH_VARIABLE
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "mine.spec").write_text((ROOT / "spec" / "cupva.spec").read_text())
    write_pyproject(tmp_path, 'spec_path = ["specs"]')
    (tmp_path / "t.jsonl").write_text(json.dumps({"regcheck": 1, "spec": "mine"}) + "\n"
                                      + json.dumps({"call": "malloc", "args": {"size": 64}, "out": {"ptr": 4096}}) + "\n")
    shutil.copy(tmp_path / "t.jsonl", tmp_path / "u.jsonl")  # (one file named twice counts once)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(SPEC_PATH_VARIABLE, raising=False)
    code, out, err = run_cli("replay", "t.jsonl", "u.jsonl", "-j", "2")
    assert code == 0, err
    assert "2 traces: 2 conform, 0 violate" in out
    assert SPEC_PATH_VARIABLE not in os.environ  # the run put the variable back as it found it
    from checker.cli import config
    assert config.SPEC_PATH_VARIABLE == SPEC_PATH_VARIABLE  # the CLI's copy of the name (it skips the loader)
    (tmp_path / "pyproject.toml").unlink()
    code, _, err = run_cli("replay", "t.jsonl")
    assert code == 2 and "unknown spec 'mine'" in err  # without the project's path the name is unknown


def test_project_env_defaults_and_the_command_line_wins(tmp_path, monkeypatch):
    write_pyproject(tmp_path, "env = { qnx_safety = true, os_kernel = '5.10' }")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("generate", "cupva", "--depth", "1", "--bmc-depth", "0", "--pytest", "t.py",
                           "--format", "json")
    assert code == 0 and all(c["qnx_safety"] is True for c in json.loads(out)["configs"])  # os_kernel: not cupva's
    _, out, _ = run_cli("generate", "cupva", "--depth", "1", "--bmc-depth", "0", "--pytest", "t.py",
                        "--format", "json", "--env", "qnx_safety=false")
    assert all(c["qnx_safety"] is False for c in json.loads(out)["configs"])


@pytest.mark.parametrize("table", ['format = 3', 'spec_path = "specs"', 'colour = true', 'env = { a = [1] }',
                                   'format = "json"\nformat = "text"', 'format = "xml"'])
def test_a_bad_project_table_is_e0614(tmp_path, monkeypatch, table):
    write_pyproject(tmp_path, table)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("rules", "cupva")
    assert code == 2 and "E0614" in err
    assert run_cli("--version")[0] == 0  # --help and --version still work
    code, out, _ = run_cli("completion", "bash")  # found by testing: a typo in the project broke the shell's set-up
    assert code == 0 and "complete" in out


def test_a_project_table_that_is_not_toml_is_e0614_at_its_place(tmp_path, monkeypatch):
    write_pyproject(tmp_path, 'format = "json"\nenv = {')
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("rules", "cupva")
    assert code == 2 and re.search(r"pyproject\.toml:\d+:\d+: error\[E0614\]", err), err


def test_the_formats_a_project_may_name_are_those_the_commands_offer():
    from checker.cli import build_parser
    from checker.cli.config import FORMATS_OFFERED
    offered = {c for command in build_parser().commands.values() for action in command._actions
               if action.dest == "format" and action.choices for c in action.choices}
    assert offered == set(FORMATS_OFFERED)


# ---- colour in fuzz, simulate and bmc: their verdict words and rule IDs, on a terminal only

_SEEDED = Path(__file__).parent / "seeded_bugs"


def _found_and_clean(tmp_path, command: str) -> tuple[list[str], list[str]]:
    """The argv of a run of `command` that finds something and of one that finds nothing."""
    out = ["--out", str(tmp_path / f"{command}.jsonl")]
    return {
        "fuzz": (["fuzz", "acl", "--driver", "tests.mutants.acl:ZeroSizeRegistered", "--max-examples", "50", *out],
                 ["fuzz", "cupva", "--max-examples", "3", "--steps", "5", *out]),
        "simulate": (["simulate", str(_SEEDED / "acl_devptr_kept_after_unregister.spec"), "--runs", "400",
                      "--seed", "1", *out], ["simulate", "cupva", "--runs", "3", "--steps", "5", *out]),
        "bmc": (["bmc", str(_SEEDED / "acl_free_forgets_registrations.spec"), "--depth", "4", *out],
                ["bmc", "cupva", "--depth", "1", *out]),
    }[command]


_PAINTED = {  # what each command colours when it finds something, and when it finds nothing
    "fuzz": ([("FAILURE", "FAILURE"), ("ACL-REG-SIZE-ZERO", "rule")], [("no failure", "ok")]),
    "simulate": ([("violation", "violates"), ("ACL-INV-DEV-ONLY-MAPPED", "rule")], [("no invariant broken", "ok")]),
    "bmc": ([("violation", "violates"), ("ACL-INV-REG-IN-ALLOC", "rule")], [("no invariant violation", "ok")]),
}


@pytest.mark.parametrize("command", ["fuzz", "simulate", "bmc"])
def test_search_commands_colour_verdicts_and_rule_ids_on_a_terminal(command, tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    for argv, painted, exit_code in zip(_found_and_clean(tmp_path, command), _PAINTED[command], (1, 0)):
        monkeypatch.setenv("FORCE_COLOR", "1")
        code, out, _ = run_cli(*argv)
        assert code == exit_code and all(paint(text, role) in out for text, role in painted), out
        monkeypatch.delenv("FORCE_COLOR")
        code, out, _ = run_cli(*argv)
        assert "\x1b[" not in out and all(text in out for text, _ in painted)


def test_a_suite_and_its_spec_move_together(tmp_path, monkeypatch):
    # Traces and index name the spec "own.spec", from the suite's own directory: conform finds it
    # from anywhere, as replay does for a trace.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "own.spec").write_text((ROOT / "spec" / "cupva.spec").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(suite)
    assert run_cli("generate", "own.spec", "--depth", "1", "-o", ".")[0] == 0
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("conform", "suite/own.spec", "--suite", "suite", "-q")
    assert code == 0 and " 0 failed" in out, err


@pytest.mark.slow
@pytest.mark.parametrize("command", [["itf", "-", "-o", "OUT"], ["replay", "-j", "2", "-", "TRACE"]])
def test_sigterm_stops_like_sigint_leaving_no_partial_output_or_workers(tmp_path, command):
    """Found by testing: SIGTERM (the default action) left a partial ITF file and `-j` workers running."""
    import signal
    import time
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"regcheck":1,"spec":"acl"}\n{"call":"malloc","args":{"size":4096},"out":{"ptr":1048576}}\n')
    argv = [str(tmp_path / "out.json") if a == "OUT" else str(trace) if a == "TRACE" else a for a in command]
    child = subprocess.Popen([sys.executable, "-m", "checker", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=Path(__file__).parent.parent, start_new_session=True)
    try:
        child.stdin.write(trace.read_bytes())  # then stdin stays open: the command waits for more
        child.stdin.flush()
        time.sleep(4)  # started, and waiting for more of the trace (and the replay's workers started)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=60)
        left = subprocess.run(["pgrep", "-s", str(child.pid)], capture_output=True, text=True).stdout.split()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 128 + signal.SIGTERM and b"regcheck: terminated" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"] and left == []


NONLINEAR = """\
spec nl "nonlinear"
source DOC "doc.txt" "a document"
status int success 0
var x: int = 0
call f(p: u32, q: u32, r: u32) {
  requires N-FERMAT: p > 0 and q > 0 and r > 0 and p * p * p + q * q * q == r * r * r
    cite DOC "fermat"
  effect N-EFF: { x = 1 }
    cite DOC "set"
}
invariant N-X: x == 0
  cite DOC "never"
"""


@pytest.mark.slow
@pytest.mark.parametrize("signame, code, message", [("SIGINT", 130, b"regcheck: interrupted"),
                                                    ("SIGTERM", 143, b"regcheck: terminated")])
def test_a_signal_stops_a_solver_query_at_once(tmp_path, signame, code, message):
    """Found by testing: Z3's check runs in C, so Ctrl-C and SIGTERM waited for the query to end (with
    --timeout 60000 and retries, minutes), and Z3 took SIGINT itself as a timeout to retry."""
    import signal
    import time
    from helpers import default_sigint
    spec = tmp_path / "nl.spec"
    spec.write_text(NONLINEAR)
    child = subprocess.Popen([sys.executable, "-m", "checker", "prove", str(spec), "--timeout", "60000",
                              "--no-consistency", "--no-guards"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=Path(__file__).parent.parent, preexec_fn=default_sigint)
    try:
        time.sleep(4)  # started, and in the query that takes the whole timeout
        sent = time.monotonic()
        child.send_signal(getattr(signal, signame))
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == code and message in err and b"Exception ignored" not in err, err
    assert time.monotonic() - sent < 10 and b"PROVED" not in out
