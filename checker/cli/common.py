"""Helpers shared by the subcommands: output streams, exit codes, diagnostics and JSON printing."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Iterable, TextIO

import orjson

from ..language.diagnostics import Diagnostic, RegcheckError, render
from ..language.source import SourceFile

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3

FORMATS = ("text", "json")


@dataclass
class Output:
    stdout: TextIO
    stderr: TextIO

    def out(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def err(self, text: str) -> None:
        self.stderr.write(text + "\n")

    def json(self, obj) -> None:
        self.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")


def add_format(parser, choices: Iterable[str] = FORMATS) -> None:
    parser.add_argument("--format", choices=tuple(choices), default="text", help="output format (default: text)")


def render_all(diags: Iterable[Diagnostic], sources: dict[str, SourceFile] | None = None) -> str:
    return "\n".join(render(d, sources) for d in diags)


def print_input_error(out: Output, exc: RegcheckError, fmt: str, sources: dict[str, SourceFile] | None = None) -> None:
    """Bad input: one JSON error document on stdout in JSON mode, compiler-style text on stderr otherwise."""
    if fmt == "json":
        out.json({"error": {"diagnostics": [d.to_json() for d in exc.diagnostics]}})
    else:
        out.err(render_all(exc.diagnostics, sources))


def add_trace_limits(parser) -> None:
    """`--max-line-bytes N` for a command that reads traces (docs/trace-format.md, "Limits")."""
    parser.add_argument("--max-line-bytes", type=positive_int, metavar="N",
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
