"""Writing traces: canonical JSON lines, every line checked as the reader would check it, files written
atomically."""

from __future__ import annotations

import io
import os
from typing import Any, BinaryIO, Iterable

import orjson

from ..language.diagnostics import RegcheckError, error
from ..language.files import OutputFile
from ..language.source import Span
from .events import HEX_INT, INT_MIN, NUMERIC_START, BadLine, TraceEvent, TraceHeader, to_event, to_header


# ---------------------------------------------------------------- writing

def _canonical(value: Any) -> Any:
    """Hex strings become JSON integers, tuples become lists; everything else as given."""
    t = type(value)
    if t is str:
        if value and value[0] in NUMERIC_START and HEX_INT(value):
            n = int(value, 16)
            return n if n >= INT_MIN else value
        return value
    if t is list or t is tuple:
        return [_canonical(x) for x in value]
    return value


def header_to_json(header: TraceHeader) -> dict:
    """The header line as a JSON-ready dict (`meta` left out when empty)."""
    obj: dict = {"regcheck": header.version, "spec": header.spec, "env": dict(header.env)}
    if header.meta:
        obj["meta"] = dict(header.meta)
    return obj


def event_to_json(event: TraceEvent) -> dict:
    """An event as a JSON-ready dict in canonical form: `0x` strings written as integers,
    absent fields (None, empty `out`) left out, keys in the order call, args, ret, out, tid, t0, t1, expect."""
    obj: dict = {"call": event.call, "args": {k: _canonical(v) for k, v in event.args.items()}}
    if event.ret is not None:
        obj["ret"] = _canonical(event.ret)
    if event.out:
        obj["out"] = {k: _canonical(v) for k, v in event.out.items()}
    if event.tid is not None:
        obj["tid"] = event.tid
    if event.t0 is not None:
        obj["t0"] = event.t0
    if event.t1 is not None:
        obj["t1"] = event.t1
    if event.expect is not None:
        obj["expect"] = {k: (_canonical(v) if k in ("codes", "except") else v) for k, v in event.expect.items()}
    return obj


class TraceWriter:
    """Writes a trace line by line: the header on opening, then `write(event)` per event.

    `target` is a path (written through `checker.language.files.OutputFile`: atomically for a regular file,
    in place for a device or FIFO; E0603 when it cannot be written) or a binary file object (left
    open). Every line
    is checked as the reader would check it, so a written trace always reads back; a bad event
    raises `RegcheckError` naming the output path and the line it would have had.
    """

    def __init__(self, target: str | os.PathLike[str] | BinaryIO, header: TraceHeader):
        if hasattr(target, "write"):
            self._file: BinaryIO = target  # type: ignore[assignment]
            self._owns = False
            self.path = str(getattr(target, "name", "<stream>"))
        else:
            self.path = os.fspath(target)
            self._output = OutputFile(self.path)  # atomic for a regular file; E0603 when unwritable
            self._file = self._output.file
            self._owns = True
        self.lines_written = 0
        try:
            self._put(header_to_json(header), to_header)
        except BaseException:
            self.abort()
            raise

    def _put(self, obj: dict, check) -> None:
        lineno = self.lines_written + 1
        try:
            check(obj, lineno)
            line = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
        except BadLine as bad:
            raise RegcheckError([error(bad.code, f"cannot write: {bad.message}", Span(self.path, lineno, 1))]) from None
        except TypeError as exc:  # orjson: integer beyond 64 bits, or a non-JSON value
            code = "T0706" if "Integer" in str(exc) else "T0705"
            raise RegcheckError([error(code, f"cannot write: {exc}", Span(self.path, lineno, 1))]) from None
        if self._owns:
            self._output.write(line)
        else:
            self._file.write(line)
        self.lines_written = lineno

    def write(self, event: TraceEvent) -> None:
        self._put(event_to_json(event), to_event)

    def write_all(self, events: Iterable[TraceEvent]) -> int:
        """Write every event; returns how many."""
        n = 0
        for event in events:
            self.write(event)
            n += 1
        return n

    def close(self) -> None:
        """Finish the trace: a path is then complete in place (E0603 if it cannot be written)."""
        if self._owns:
            self._output.commit()
        else:
            self._file.flush()

    def abort(self) -> None:
        """Stop without finishing: a path keeps what it held before (a regular file) or what was written."""
        if self._owns:
            self._output.abort()
        else:
            self._file.flush()

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


def write_trace(target: str | os.PathLike[str] | BinaryIO, header: TraceHeader, events: Iterable[TraceEvent]) -> int:
    """Write a whole trace (streaming over `events`); returns the number of events written."""
    with TraceWriter(target, header) as writer:
        return writer.write_all(events)


def format_trace(header: TraceHeader, events: Iterable[TraceEvent]) -> bytes:
    """A whole trace as bytes, for tests and for emitters that embed traces."""
    buf = io.BytesIO()
    write_trace(buf, header, events)
    return buf.getvalue()
