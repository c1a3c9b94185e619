"""Diagnostics: what every stage returns instead of printing.

Codes are stable and grouped by stage:
  E01xx lexical and syntax errors       E02xx names and declarations
  E03xx types                           E04xx rules and citations
  W05xx lints (warnings)                E06xx spec loading / files
  T07xx trace input errors              X08xx solver / executor environment errors
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable

from .source import NO_SPAN, SourceFile, Span


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Note:
    message: str
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span = NO_SPAN
    severity: Severity = Severity.ERROR
    notes: tuple[Note, ...] = ()

    def __post_init__(self) -> None:
        if self.span is None:  # "no place" is NO_SPAN everywhere a diagnostic is rendered or written
            object.__setattr__(self, "span", NO_SPAN)

    def to_json(self) -> dict:
        out: dict = {
            "path": self.span.path if self.span.path != NO_SPAN.path else None,  # (null: no place)
            "line": self.span.line,
            "column": self.span.column,
            "severity": self.severity.value,
            "code": self.code,
            "message": self.message,
        }
        if self.notes:
            out["notes"] = [
                {"message": n.message, **({"path": n.span.path, "line": n.span.line, "column": n.span.column} if n.span else {})}
                for n in self.notes
            ]
        return out


class RegcheckError(Exception):
    """The one root exception for user-caused errors: bad spec, bad trace, bad arguments."""

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(f"{_place(d.span)}{d.code}: {d.message}" for d in self.diagnostics))

    def located(self, span: Span) -> "RegcheckError":
        """This error with `span` given to its diagnostics that have no place (raised below the
        expression, the trace line, ... that the caller knows)."""
        return RegcheckError([replace(d, span=span) if d.span == NO_SPAN else d for d in self.diagnostics])


def _place(span: Span) -> str:
    """`path:line:col: `, `path: ` without a line, nothing without a path (not `<none>:0:0: `)."""
    if span.line > 0:
        return f"{span}: "
    return f"{span.path}: " if span.path != NO_SPAN.path else ""


def error(code: str, message: str, span: Span = NO_SPAN, *notes: Note) -> Diagnostic:
    return Diagnostic(code, message, span, Severity.ERROR, tuple(notes))


def warning(code: str, message: str, span: Span = NO_SPAN, *notes: Note) -> Diagnostic:
    return Diagnostic(code, message, span, Severity.WARNING, tuple(notes))


def did_you_mean(name: str, candidates: Iterable[str]) -> tuple[Note, ...]:
    """A note suggesting the candidate closest to a misspelt `name`, or no note when none is close.
    Case is ignored in the comparison (`mod` is close to `Mode`), and a candidate that differs only
    in case wins outright: `size` for `SIZE` is surely what was meant."""
    by_folded: dict[str, str] = {}
    for c in sorted(set(candidates) - {name}):
        by_folded.setdefault(c.casefold(), c)
    folded = name.casefold()
    close = [folded] if folded in by_folded else difflib.get_close_matches(folded, by_folded, n=1)
    return (Note(f"did you mean '{by_folded[close[0]]}'?"),) if close else ()


def excerpt(value: object, limit: int = 60) -> str:
    """repr(value) for a message, cut to about `limit` characters: a hostile input's value must not
    be echoed whole into its diagnostic."""
    if type(value) is str and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    text = repr(value) if type(value) is not int or value.bit_length() < 200 else f"an integer of {value.bit_length()} bits"
    return text if len(text) <= limit + 20 else text[:limit] + f"... ({len(text)} characters)"


# C0 controls but \n and \t (the lines and columns of a report), DEL and C1 controls (\x9b is an 8-bit ESC [),
# and the bidirectional overrides and isolates, which make a line read in another order than it is
# written ("Trojan Source", CVE-2021-42574): a file name, a spec's text or a driver's message may hold them.
CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """`text` with each of CONTROL_CHARACTERS written as its escape (`\\x1b`, `\\u202e`): what every
    text the CLI writes for a terminal goes through, so that no input can move the cursor, retitle
    the window or reorder a line."""
    return CONTROL_CHARACTERS.sub(_escaped_control, text)


def _escaped_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# What a JSON writer leaves raw of CONTROL_CHARACTERS (it writes C0 controls as \u00XX itself).
_RAW_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls_in_json(text: str) -> str:
    """JSON text with DEL, the C1 controls and the bidirectional overrides and isolates written as
    `\\u` escapes: the same document to every JSON reader (they occur only inside strings), but none
    of them raw on a terminal (xterm takes a UTF-8 U+009B for ESC [)."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diags)


def render(diag: Diagnostic, sources: dict[str, SourceFile] | None = None) -> str:
    """Compiler-style text: `path:line:col: error[CODE]: message`, the source line, a caret, notes."""
    sources = sources or {}
    if diag.span.line > 0:
        where = str(diag.span)
    else:  # no position: name the file if there is one, else the tool
        where = diag.span.path if diag.span.path != NO_SPAN.path else "regcheck"
    lines = [f"{where}: {diag.severity.value}[{diag.code}]: {diag.message}"]
    src = sources.get(diag.span.path)
    if src is not None and diag.span.line > 0:
        text = src.line_text(diag.span.line)
        width = 1
        if diag.span.end_line == diag.span.line and diag.span.end_column > diag.span.column:
            width = diag.span.end_column - diag.span.column
        lines.append(f"  {text}")
        lines.append("  " + " " * (diag.span.column - 1) + "^" + "~" * (width - 1))
    for note in diag.notes:
        where = f"{note.span}: " if note.span else ""
        lines.append(f"  note: {where}{note.message}")
    return "\n".join(lines)
