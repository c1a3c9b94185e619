"""Reading traces: a stream of checked events, one line in memory at a time (fails closed at the first bad
line)."""

from __future__ import annotations

import dataclasses
import io
import os
from typing import BinaryIO, Iterable, Iterator

import orjson

from ..language.diagnostics import RegcheckError, error
from ..language.files import STDIN, CorruptInput, open_decompressed
from ..language.source import Span
from .events import (DEFAULT_MAX_LINE_BYTES, EXCERPT_BYTES, MAX_LINE_BYTES_LIMIT, BadLine, TraceEvent, TraceHeader,
                     located, to_event, to_header, undecodable)


# ---------------------------------------------------------------- reading
_max_line_bytes = DEFAULT_MAX_LINE_BYTES


def set_max_line_bytes(n: int) -> None:
    """The longest line (in bytes, without its end) that trace files opened from now on may have;
    a longer one is T0713. The default is DEFAULT_MAX_LINE_BYTES (1 MiB)."""
    global _max_line_bytes
    if not 1 <= n <= MAX_LINE_BYTES_LIMIT:
        raise ValueError(f"the maximum line length must be 1 to {MAX_LINE_BYTES_LIMIT} bytes, not {n}")
    _max_line_bytes = n


def max_line_bytes() -> int:
    return _max_line_bytes


class LineTooLong(OSError):
    """Reading stopped at a line longer than the limit (an OSError, so every reading loop passes it on)."""

    def __init__(self, limit: int, head: bytes):
        super().__init__(f"line longer than {limit} bytes")
        self.limit = limit
        self.head = head


def _bounded_lines(f: BinaryIO, limit: int) -> Iterator[bytes]:
    """The lines of `f`, each read with at most `limit` bytes (+ its `\n`) in memory: a longer
    line raises LineTooLong instead of being read whole."""
    cap = limit + 2  # room for "\r\n"
    readline = f.readline

    def checked(raw: bytes) -> bytes:
        """A line read with more than `limit` bytes (rare): itself if it fits without its end."""
        body = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw
        if len(body) > limit:
            raise LineTooLong(limit, raw[:EXCERPT_BYTES])
        return raw

    from ..model.state import NATIVE  # here: reading a trace's header needs no model
    if NATIVE is not None:  # the iterator below in C, without a Python call per line
        return NATIVE.Lines(readline, cap, limit, checked)

    def next_line() -> bytes:
        raw = readline(cap)
        return checked(raw) if len(raw) > limit else raw

    return iter(next_line, b"")


def _read_failure(exc: OSError, path: str, lineno: int) -> RegcheckError:
    """The diagnostic for a read that failed after line `lineno`."""
    if isinstance(exc, LineTooLong):
        head = exc.head.decode("utf-8", "replace")
        return RegcheckError([error(
            "T0713", f"line {lineno + 1} is longer than {exc.limit} bytes, the maximum line length "
                     f"(raise it with --max-line-bytes); it starts {head!r}...", Span(path, lineno + 1, 1))])
    if isinstance(exc, CorruptInput):
        where = f" after line {lineno}" if lineno else ""
        return RegcheckError([error("T0714", f"cannot read trace{where}: {exc}", Span(path, lineno, 1))])
    return RegcheckError([error("T0712", f"cannot read trace: {exc}", Span(path, lineno, 1))])


def read_trace(path: str | os.PathLike[str], shown: str | None = None) -> tuple[TraceHeader, "EventStream"]:
    """Open a trace file: its header now, its events as a lazy iterator.

    Only a regular file is read (a FIFO or a device is T0712), or standard input when the path is
    "-". A gzip, xz or zstd trace (told by its first bytes, whatever its name) is read as its
    decompressed lines; one cut short or damaged is T0714 at the last line read whole. No line may be
    longer than `max_line_bytes()` (T0713), compressed or not. Header errors raise here; event errors
    raise from the iterator at the bad line. The file stays open until the iterator is exhausted,
    fails or is closed (`events.close()`). `shown`: how the diagnostics name the trace (default:
    `path`; a worker opens an absolute path the user named otherwise).
    """
    where = os.fspath(path)
    named = where if shown is None else shown
    f, _ = open_decompressed(where, "T0712", "trace", stdin=where == STDIN, shown=named)
    lines = _bounded_lines(f, _max_line_bytes)
    try:
        header, lineno = _read_header(lines, named, True)
    except BaseException:
        f.close()
        raise
    return header, EventStream(lines, named, lineno, True, f)


def names_spec_file(spec: str) -> bool:
    """Whether a header's `spec` is a path (it has a '/' or ends in .spec), not a bundled name."""
    return "/" in spec or spec.endswith(".spec")


def header_spec_ref(header: TraceHeader, trace_path: str | os.PathLike[str]) -> str:
    """The header's spec as `load_spec` takes it. A relative path is relative to the trace's own
    directory, so a trace and its spec can move together; a bundled name (`acl`) stays a name, and so
    does any spec of a trace read from standard input or memory. A trace written before this rule
    named its spec from the working directory of the run that wrote it: when the path is not a file
    beside the trace but is one from here, that file is taken."""
    spec = header.spec
    where = os.fspath(trace_path)
    if not names_spec_file(spec) or os.path.isabs(spec) or where == STDIN or where.startswith("<"):
        return spec
    beside = os.path.join(os.path.dirname(where), spec)
    if os.path.isfile(beside) or not os.path.isfile(spec):
        return os.path.normpath(beside) if os.path.dirname(where) else spec
    return spec


def spec_ref_for_output(spec_ref: str, output: str | os.PathLike[str], relative: bool = True) -> str:
    """How a trace written to `output` names the spec `spec_ref` (as load_spec takes it from the
    working directory): with `relative`, a path relative to the output's directory, which
    `header_spec_ref` reads back wherever the trace and spec move together; otherwise an absolute
    path. A bundled name stays a name, and an output that is no file in a directory (standard
    output, a device) gets the path as it is."""
    where = os.fspath(output)
    if not names_spec_file(spec_ref) or where == STDIN or where.startswith("/dev/"):
        return spec_ref
    if not relative:
        return os.path.abspath(spec_ref)
    return os.path.relpath(os.path.abspath(spec_ref), os.path.dirname(os.path.abspath(where)))


def header_written_to(header: TraceHeader, target) -> TraceHeader:
    """The header a trace written to `target` carries: written to a path, a spec file given by a
    relative path is named relative to the trace's directory (`spec_ref_for_output`), so the trace
    replays from anywhere; an absolute path, a bundled name or a stream target keep the name as is."""
    if not isinstance(target, (str, os.PathLike)):
        return header
    relative = not os.path.isabs(header.spec)  # an absolute path as the user gave it stays absolute
    return dataclasses.replace(header, spec=spec_ref_for_output(header.spec, target, relative))


def read_trace_lines(lines: Iterable[bytes | str], path: str = "<memory>") -> tuple[TraceHeader, "EventStream"]:
    """Like `read_trace` over in-memory lines, one line per item, line terminator optional."""
    it = (line.encode("utf-8", "surrogatepass") if type(line) is str else line for line in lines)
    header, lineno = _read_header(it, path, False)
    return header, EventStream(it, path, lineno, False, None)


def read_trace_text(data: bytes | str, path: str = "<memory>") -> tuple[TraceHeader, "EventStream"]:
    """Like `read_trace` over the whole text of a trace file (same truncation rule)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    it = iter(io.BytesIO(raw))
    header, lineno = _read_header(it, path, True)
    return header, EventStream(it, path, lineno, True, None)


class EventStream:
    """The events after a trace's header: an iterator of checked `TraceEvent`s, or raw lines.

    Iterating gives events (errors raise at the bad line, as `RegcheckError`). A reader that decodes
    lines itself (the replayer's fast path) takes `raw_lines()` instead, and hands every line it does
    not understand completely to `event(raw, obj, lineno)`, which checks it exactly as iteration would.
    The two ways of reading are exclusive: the stream is consumed by whichever starts first.
    """

    __slots__ = ("path", "lineno", "_lines", "_at_eof", "_owner", "_gen")

    def __init__(self, lines: Iterable[bytes], path: str, lineno: int, at_eof_needs_newline: bool,
                 owner: BinaryIO | None):
        self.path = path
        self.lineno = lineno  # the line before the first event (the header's)
        self._lines = lines
        self._at_eof = at_eof_needs_newline
        self._owner = owner
        self._gen: Iterator[TraceEvent] | None = None

    def __iter__(self) -> Iterator[TraceEvent]:
        if self._gen is None:
            self._gen = _events(self._lines, self.path, self.lineno, self._at_eof, self._owner)
        return self._gen

    def __next__(self) -> TraceEvent:
        return next(iter(self))

    def close(self) -> None:
        close = getattr(self._gen, "close", None)
        if close is not None:
            close()
        if self._owner is not None:
            self._owner.close()

    def raw_lines(self) -> Iterable[bytes]:
        """The undecoded event lines (line `self.lineno + 1` first); read errors raise OSError."""
        if self._gen is not None:
            raise RuntimeError("the stream is already being read as events")
        self._gen = iter(())
        return self._lines

    def event(self, raw: bytes, obj: object, lineno: int) -> TraceEvent | None:
        """The checked event of one line (`obj`: its decoded JSON, or `UNDECODED`); None for a
        blank line. Raises `RegcheckError` at path:lineno:column exactly as iteration does."""
        if obj is UNDECODED:
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if not raw.strip():
                    return None
                raise undecodable(exc, raw, self.path, lineno, self._at_eof) from None
        try:
            return to_event(obj, lineno)
        except BadLine as bad:
            raise located(bad, raw, self.path, lineno) from None

    def read_error(self, exc: OSError, lineno: int) -> RegcheckError:
        return _read_failure(exc, self.path, lineno)


UNDECODED = object()  # `EventStream.event`: the line has not been decoded yet


def _read_header(lines: Iterable[bytes], path: str, at_eof_needs_newline: bool) -> tuple[TraceHeader, int]:
    lineno = 0
    try:
        for raw in lines:
            lineno += 1
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if not raw.strip():
                    continue
                raise undecodable(exc, raw, path, lineno, at_eof_needs_newline) from None
            try:
                return to_header(obj, lineno), lineno
            except BadLine as bad:
                raise located(bad, raw, path, lineno) from None
    except OSError as exc:
        raise _read_failure(exc, path, lineno) from None
    raise RegcheckError([error(
        "T0703", 'the trace is empty: expected a header line {"regcheck": 1, "spec": ..., "env": {...}}',
        Span(path, 1, 1),
    )])


def _events(lines: Iterable[bytes], path: str, lineno: int, at_eof_needs_newline: bool,
            owner: BinaryIO | None) -> Iterator[TraceEvent]:
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    event_of = to_event  # a local name: looked up once per line
    try:
        for raw in lines:
            lineno += 1
            try:
                obj = loads(raw)
            except decode_error as exc:
                if not raw.strip():  # blank line: orjson rejects empty documents
                    continue
                raise undecodable(exc, raw, path, lineno, at_eof_needs_newline) from None
            try:
                event = event_of(obj, lineno)
            except BadLine as bad:
                raise located(bad, raw, path, lineno) from None
            yield event
    except OSError as exc:
        raise _read_failure(exc, path, lineno) from None
    finally:
        if owner is not None:
            owner.close()
