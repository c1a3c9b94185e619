"""Trace files: the line format of recorded and generated traces (events), read as a checked stream
(reader) and written canonically and atomically (writer). The names below are the documented API
(docs/trace-format.md)."""

from .events import BadInteger, TraceEvent, TraceHeader, parse_int
from .reader import EventStream, read_trace, read_trace_lines, read_trace_text
from .writer import TraceWriter, format_trace, write_trace

__all__ = ["BadInteger", "EventStream", "TraceEvent", "TraceHeader", "TraceWriter", "format_trace", "parse_int",
           "read_trace", "read_trace_lines", "read_trace_text", "write_trace"]
