"""Helpers shared by the subcommands: output streams, exit codes, diagnostics and JSON printing."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, TextIO

import orjson

from ..language.diagnostics import (CONTROL_CHARACTERS, Diagnostic, RegcheckError, error, escape_controls,
                                    escape_controls_in_json, render)
from ..language.source import SourceFile

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3

FORMATS = ("text", "json")


@dataclass
class Output:
    """The text streams. Text goes to the terminal with each control character but \\n and \\t written
    as its escape (`\\x1b`): a driver's message or a file name may hold `\\x1b[2J` or `\\x1b]0;title\\x07`.
    Only this Output's own colour (`paint`) reaches the terminal as ANSI codes."""

    stdout: TextIO
    stderr: TextIO
    colour: bool = False  # ANSI colour on stdout: see use_colour
    # What `paint` writes for the ANSI control sequence introducer (ESC [): text from elsewhere cannot hold it.
    # (os.urandom, not `secrets`: that import costs every command about 6 ms)
    csi_mark: str = field(default_factory=lambda: f"\x00{os.urandom(8).hex()}[", repr=False)

    def paint(self, text: str, role: str) -> str:
        """`text` in the colour of `role` (a finding kind, a verdict, "rule", ...) when colour is on."""
        return paint(text, role, self.csi_mark) if self.colour else text

    def out(self, text: str = "") -> None:
        self.stdout.write(self.shown(text) + "\n")

    def err(self, text: str) -> None:
        self.stderr.write(self.shown(text) + "\n")

    def shown(self, text: str) -> str:
        """`text` as the terminal gets it: control characters escaped, this Output's colour marks made ANSI."""
        if CONTROL_CHARACTERS.search(text) is None:
            return text
        return "\x1b[".join(escape_controls(part) for part in text.split(self.csi_mark))

    def json(self, obj) -> None:
        try:
            text = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:  # an integer past 64 bits (an `int` of a spec can be any size): the stdlib writes it
            import json
            text = json.dumps(obj, indent=2, ensure_ascii=False)
        self.stdout.write(escape_controls_in_json(text) + "\n")


def add_format(parser, choices: Iterable[str] = FORMATS) -> None:
    parser.add_argument("--format", choices=tuple(choices), default="text", help="output format (default: text)")


def render_all(diags: Iterable[Diagnostic], sources: dict[str, SourceFile] | None = None) -> str:
    return "\n".join(render(d, sources) for d in diags)


def print_input_error(out: Output, exc: RegcheckError, fmt: str, sources: dict[str, SourceFile] | None = None,
                      command: str = "") -> None:
    """Bad input: one JSON error document on stdout in JSON mode, a SARIF log whose one run holds the
    errors as tool notifications in SARIF mode (a CI step that uploads the log always has one), and
    compiler-style text on stderr otherwise."""
    if fmt == "json":
        out.json({"error": {"diagnostics": [d.to_json() for d in exc.diagnostics]}})
    elif fmt == "sarif":
        from ..emit.sarif import notifications_of, sarif_log_of_runs, sarif_run  # (only SARIF needs it)
        out.json(sarif_log_of_runs([sarif_run((), (), category=f"regcheck/{command}/" if command else "regcheck/",
                                              notifications=notifications_of(exc.diagnostics))]))
    else:
        out.err(render_all(exc.diagnostics, sources))


# The writer's codes for a value a trace line cannot carry (an `int` past 64 bits, say): the run
# found is still reported, without its trace.
_UNWRITABLE_VALUE = frozenset({"T0705", "T0706"})


def write_run_trace(run, path: str, spec) -> tuple[str | None, str | None]:
    """Write a found run (checker.engines.runs.Run) as a trace at `path`: (path, None) when written,
    else (None, why not), where one of its values is one no trace can carry. An output that cannot be
    written (E0603) raises, as for every command."""
    try:
        run.write(path, spec)
    except RegcheckError as exc:
        if not all(d.code in _UNWRITABLE_VALUE for d in exc.diagnostics):
            raise
        return None, f"{exc.diagnostics[0].message} ({exc.diagnostics[0].code}: a trace carries integers of 64 bits)"
    return path, None


def run_trace_line(path: str | None, unwritten: str | None) -> str:
    """The text line saying where `write_run_trace` wrote a run, or why it did not."""
    if unwritten is not None:
        return f"no trace written: {unwritten}"
    return f"trace written to {path} (`regcheck replay {path}`)"


def add_trace_limits(parser) -> None:
    """`--max-line-bytes N` for a command that reads traces (docs/trace-format.md, "Limits")."""
    parser.add_argument("--max-line-bytes", type=line_length, metavar="N",
                        help="the longest trace line accepted, in bytes (default: 1048576, 1 MiB); a longer "
                             "line is error T0713")


def add_spec_limits(parser) -> None:
    """`--max-spec-bytes N` and `--max-spec-nesting N`, on every command (docs/language.md, "Bounds")."""
    parser.add_argument("--max-spec-bytes", type=positive_int, metavar="N",
                        help="the largest spec file accepted, in bytes (default: 1048576, 1 MiB); larger is E0604")
    parser.add_argument("--max-spec-nesting", type=positive_int, metavar="N",
                        help="the deepest nesting of a spec's syntax accepted (default: 100); deeper is E0104")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    return _int_at_least(text, 1)


def line_length(text: str) -> int:
    """An argparse type: a maximum line length, 1 to MAX_LINE_BYTES_LIMIT (a line's buffer must
    stay addressable: past it the reader could not even ask for the line)."""
    from ..trace.events import MAX_LINE_BYTES_LIMIT  # here: importing checker.trace costs every command
    v = _int_at_least(text, 1)
    if v > MAX_LINE_BYTES_LIMIT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_LINE_BYTES_LIMIT} (2**62), not {v}")
    return v


def nonneg_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, low: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None
    if v < low:
        raise argparse.ArgumentTypeError("must be 0 or more" if low == 0 else f"must be at least {low}, not {v}")
    return v


def fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {v}")
    return v


# ---------------------------------------------------------------- colour

# SGR codes per role: finding kinds, verdicts and statuses, rule IDs.
_COLOURS = {
    "usage": "31", "conformance": "35", "unspecified": "33", "error": "31", "warning": "33",
    "violates": "1;31", "conforms": "1;32", "ok": "32", "fail": "31", "inconclusive": "33", "pass": "32",
    "PROVED": "32", "REFUTED": "1;31", "UNKNOWN": "33", "FAILURE": "1;31", "rule": "36", "dim": "2",
}


def plain(text: str, role: str) -> str:
    """`paint` without colour."""
    return text


def paint(text: str, role: str, csi: str = "\x1b[") -> str:
    """`text` wrapped in the ANSI colour of `role` (unchanged for a role without one); `csi` stands
    for ESC [ (Output writes a mark there, which it turns into ESC [ as it writes)."""
    code = _COLOURS.get(role)
    return f"{csi}{code}m{text}{csi}0m" if code else text


def use_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour text reports on a terminal. NO_COLOR (any non-empty value) turns it off and
    FORCE_COLOR (non-empty, not 0) turns it on even when the stream is not a terminal
    (https://no-color.org, https://force-color.org); NO_COLOR wins when both are set."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------- shared options


def add_output(parser, *aliases: str, metavar: str = "FILE", help: str, **kwargs) -> None:
    """`-o/--output`, the spelling every command that writes a file uses; `aliases` are older spellings
    kept working (e.g. --out)."""
    parser.add_argument("-o", "--output", *aliases, dest="output", metavar=metavar, help=help, **kwargs)


def add_verbosity(parser) -> None:
    """`-q/--quiet` (only the summary and the exit status) and `-v/--verbose` (more detail)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true",
                       help="print only the summary (text output; the exit status is the same)")
    group.add_argument("-v", "--verbose", action="store_true", help="print more detail (text output)")


def add_env(parser, help: str) -> None:
    """`--env NAME=VALUE`, repeatable: a spec parameter (see parse_env)."""
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help=help + " (repeatable)")


def parse_env(items: Iterable[str], spec=None) -> dict[str, Any]:
    """NAME=VALUE pairs as trace header values: true/false become booleans; a decimal VALUE (ASCII
    digits, optionally after `-`) becomes an integer when the parameter is an integer or flags one of `spec`
    (any parameter without a spec); everything else stays a string. The spec's own checks
    (semantics_for) then reject unknown names and bad values."""
    env: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise RegcheckError([error("T0721", f"--env {item!r}: expected NAME=VALUE")])
        if spec is not None:
            declared = spec.params.get(name)
            is_int = declared is not None and declared[0].numeric  # (a flags parameter is an integer too)
        else:
            is_int = True
        if is_int and _DECIMAL(value):
            env[name] = int(value)
        else:
            env[name] = {"true": True, "false": False}.get(value, value)
    return env


_DECIMAL = re.compile(r"-?[0-9]+").fullmatch
