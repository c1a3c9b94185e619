"""Trace events: the header and event types, the checks of one line, and integer values (JSON Lines, format version 1).

A trace is a header line followed by one event per line; docs/trace-format.md is the public
contract and checker/schemas/trace-v1.schema.json describes one line. This module is
spec-agnostic: it checks the shape of each line and the JSON types of its fields and keeps
`args`/`out` values as written. Which calls exist, which arguments they take and what the
values mean is the spec's business, checked by the replayer.

Reading is streaming (one line in memory at a time) and fails closed: the first malformed
line raises `RegcheckError` with one diagnostic at `path:line:column`.

Error codes (stable):
  T0701 line is not valid JSON (also: lines that end in a carriage return alone)
  T0702 line is not a JSON object
  T0703 missing or misplaced header (empty trace, first line not a header, second header)
  T0704 required field missing
  T0705 field has the wrong JSON type (including null, floats, nested objects in args/out)
  T0706 bad integer: a numeric string that is not `0x` hex, or a value outside -2**63..2**64-1
  T0707 unsupported trace format version
  T0708 line is not valid UTF-8
  T0709 truncated last line: no newline at end of file and not valid JSON
  T0710 unknown field (header or event)
  T0711 bad timestamps: negative, only one of t0/t1, or t1 < t0
  T0712 trace file cannot be opened or read (also: not a regular file, such as a FIFO or a device)
  T0713 line longer than the maximum line length (`MAX_LINE_BYTES`, `--max-line-bytes`)

Integers in `args`, `out` and `ret` are JSON integers or `"0x..."` strings (optional leading
`-`, either case). Decimal strings are not integers: a string in `args`, `out` or `ret` whose
first character is a digit or `-` must be a well-formed `0x` integer (T0706), so `"4096"` is
rejected instead of being taken for a name. `parse_int` turns a value into an int.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

from ..language.diagnostics import RegcheckError, error, excerpt
from ..language.source import Span

TRACE_VERSION = 1
DEFAULT_MAX_LINE_BYTES = 1 << 20  # 1 MiB, without the line's end; `set_max_line_bytes` changes it
MAX_LINE_BYTES_LIMIT = 1 << 62  # the largest it may be set to: a line's buffer (limit + its end) stays addressable
EXCERPT_BYTES = 60  # how much of an over-long line a diagnostic quotes
INT_MIN = -(1 << 63)  # the range of a JSON integer in a trace: int64_t .. uint64_t
INT_MAX = (1 << 64) - 1

HEADER_KEYS = frozenset({"regcheck", "spec", "env", "meta"})
EVENT_KEYS = frozenset({"call", "args", "ret", "out", "tid", "t0", "t1", "expect"})
EXPECT_KEYS = frozenset({"rule", "outcome", "codes", "except"})  # the optional `expect` object of an event
EXPECT_OUTCOMES = ("success", "failure")

# At most 16 significant hex digits, so a match never exceeds INT_MAX; the negative bound is
# checked separately (rare).
HEX_INT = re.compile(r"-?0[xX]0*[0-9a-fA-F]{1,16}").fullmatch
# A "0x..." string of any length: one that is not HEX_INT lies outside the 64-bit range (more than 16
# significant digits), and is told so rather than "not an integer". (Not parsed: its length is unbounded.)
_LONG_HEX = re.compile(r"-?0[xX][0-9a-fA-F]+").fullmatch
_OUT_OF_RANGE = "is outside the 64-bit range -2**63 .. 2**64-1"
HEX_UINT = re.compile(r"0[xX]0*[0-9a-fA-F]{1,16}").fullmatch  # the fast path's non-negative case
NUMERIC_START = frozenset("0123456789-")  # a string starting so is read as an integer


# ---------------------------------------------------------------- values

class BadInteger(ValueError):
    """A value that is not a trace integer; callers report it as diagnostic `code` (T0706)."""

    code = "T0706"


def parse_int(value: object, *, what: str = "value") -> int:
    """The integer a trace value stands for: a JSON integer or a `"0x..."` string.

    Raises `BadInteger` (a ValueError) for anything else: booleans, floats, decimal strings,
    malformed hex, or a value outside -2**63 .. 2**64-1. `what` names the value in the message.
    """
    t = type(value)
    if t is int:
        n = value
    elif t is str and HEX_INT(value):
        n = int(value, 16)
    elif t is str and _LONG_HEX(value):
        raise BadInteger(f"{what}: {excerpt(value)} {_OUT_OF_RANGE}")
    elif t is str:
        raise BadInteger(f"{what}: {excerpt(value)} is not an integer; write a JSON number or a \"0x...\" hex string")
    else:
        raise BadInteger(f"{what}: expected an integer, got {_json_type(value)}")
    if not INT_MIN <= n <= INT_MAX:
        raise BadInteger(f"{what}: {excerpt(value)} {_OUT_OF_RANGE}")
    return n


def _not_a_name(value: object) -> str:
    """What a value given for a name is, for "must be a non-empty string, not ..."."""
    return "an empty one" if value == "" else _json_type(value)


def _json_type(value: object) -> str:
    t = type(value)
    if value is None:
        return "null"
    if t is bool:
        return "a boolean"
    if t is int:
        return "an integer"
    if t is float:
        return "a non-integer number (or an integer outside -2**63 .. 2**64-1)"
    if t is str:
        return "a string"
    if t is list or t is tuple:
        return "an array"
    if t is dict or isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# ---------------------------------------------------------------- data

@dataclass(frozen=True, slots=True)
class TraceHeader:
    """Line 1 of a trace: which spec to check against and the spec's parameters.

    `env` values are kept as written; missing parameters take the spec's defaults, applied by
    the spec loader, not here. `meta` is free-form (recorder name, host, ...).
    """

    spec: str
    env: Mapping[str, Any] = field(default_factory=dict)
    version: int = TRACE_VERSION
    meta: Mapping[str, Any] = field(default_factory=dict)
    line: int = field(default=1, compare=False)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One recorded call or environment event.

    `args` and `out` hold JSON values as written (integers, `"0x..."` strings, names, booleans,
    lists of integers/names); treat them as read-only. `ret` is None when the line has no
    `ret` (JSON null is rejected, so None always means absent); likewise `tid`, `t0`, `t1`.
    `line` is the 1-based line in the trace file (0 for events built in memory) and is not part
    of equality. Events hold dicts, so they are not hashable.

    `expect` (optional, None when absent) is what a conformance test expects of the call:
    `{"rule": ID, "outcome": "success" | "failure", "codes": [...], "except": [...]}` as written
    (see docs/trace-format.md). The replayer ignores it; `regcheck conform` checks a driver by it.
    """

    line: int = field(compare=False)
    call: str
    args: Mapping[str, Any] = field(default_factory=dict)
    ret: int | str | None = None
    out: Mapping[str, Any] = field(default_factory=dict)
    tid: int | str | None = None
    t0: int | None = None
    t1: int | None = None
    expect: Mapping[str, Any] | None = None


# The generated __init__ of a frozen dataclass sets each field through object.__setattr__,
# about twice the cost of the slot descriptors used here; the reader builds events this way.
_new = object.__new__
_set_line, _set_call, _set_args, _set_ret, _set_out, _set_tid, _set_t0, _set_t1, _set_expect = (
    TraceEvent.__dict__[name].__set__ for name in ("line", "call", "args", "ret", "out", "tid", "t0", "t1", "expect")
)


# ---------------------------------------------------------------- checking one line

class BadLine(Exception):
    """A problem in one line, before it has a place: code, message, the key to point at."""

    def __init__(self, code: str, message: str, key: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.key = key


def _check_values(values: dict, where: str) -> None:
    """`args`/`out` values: integers, names, `0x` strings, booleans, flat lists of int/str."""
    numeric = NUMERIC_START
    hex_int = HEX_UINT
    for v in values.values():
        t = type(v)
        if t is int or (t is str and (v[:1] not in numeric or hex_int(v))) or t is bool:
            continue
        if t is list:
            for x in v:
                tx = type(x)
                if not (tx is int or (tx is str and (x[:1] not in numeric or hex_int(x)))):
                    break
            else:
                continue
        # the slow path: find the culprit and say what is wrong with it (or accept a negative hex)
        return _explain_values(values, where)


def _explain_values(values: dict, where: str) -> None:
    for key, v in values.items():
        t = type(v)
        if t is int or t is bool:
            continue
        if t is str:
            if v and v[0] in NUMERIC_START:
                _check_int_string(v, f"{where}.{key}", key)
            continue
        if t is list:
            for x in v:
                tx = type(x)
                if tx is int:
                    continue
                if tx is str:
                    if x and x[0] in NUMERIC_START:
                        _check_int_string(x, f"{where}.{key}", key)
                    continue
                raise BadLine("T0705", f"{where}.{key}: list elements must be integers or strings, not {_json_type(x)}", key)
            continue
        raise BadLine(
            "T0705", f"{where}.{key} must be an integer, a string, a boolean or a list, not {_json_type(v)}", key
        )


def is_int_string(s: str) -> bool:
    """Whether a string is a trace integer: "0x..." hex within -2**63 .. 2**64-1."""
    return bool(HEX_INT(s)) and (s[0] != "-" or int(s, 16) >= INT_MIN)


def _check_int_string(s: str, what: str, key: str | None) -> None:
    if is_int_string(s):
        return
    if HEX_INT(s):
        raise BadLine("T0706", f"{what}: {excerpt(s)} is below -2**63", key)
    if _LONG_HEX(s):
        raise BadLine("T0706", f"{what}: {excerpt(s)} {_OUT_OF_RANGE}", key)
    # (a version, in args or out, is the list of its numbers: a string "5.11" would read as an integer)
    hint = "; a version is written there as the list of its numbers, e.g. [5, 11]" if _VERSIONISH(s) else ""
    raise BadLine(
        "T0706",
        f"{what}: {excerpt(s)} is not a valid integer; write a JSON number or a \"0x...\" hex string "
        f"(strings starting with a digit or '-' are read as integers){hint}",
        key,
    )


_VERSIONISH = re.compile(r"[0-9]+(\.[0-9]+)+").fullmatch


def to_event(obj: object, lineno: int) -> TraceEvent:
    """Check one decoded event line and build the event.

    The hot path: each field is type-checked once and counted; if the count of fields found
    differs from the line's, it has an unknown key or a null, and `_event_problem` says which.
    Anything unusual goes to a slow path that explains it.
    """
    if type(obj) is not dict:
        raise BadLine("T0702", f"an event must be a JSON object, not {_json_type(obj)}")
    get = obj.get
    call = get("call")
    if type(call) is not str or not call:
        raise _event_problem(obj)
    n = 1

    args = get("args")
    if type(args) is dict:
        n = 2
        if args:
            _check_values(args, "args")
    elif args is None:
        args = {}
    else:
        raise BadLine("T0705", f'"args" must be an object, not {_json_type(args)}', "args")

    out = get("out")
    if type(out) is dict:
        n += 1
        if out:
            _check_values(out, "out")
    elif out is None:
        out = {}
    else:
        raise BadLine("T0705", f'"out" must be an object, not {_json_type(out)}', "out")

    ret = get("ret")
    if ret is not None:
        n += 1
        t = type(ret)
        if t is str:
            if ret[:1] in NUMERIC_START:
                _check_int_string(ret, "ret", "ret")
        elif t is not int:
            raise BadLine("T0705", f'"ret" must be an integer or a string, not {_json_type(ret)}', "ret")

    tid = get("tid")
    if tid is not None:
        n += 1
        t = type(tid)
        if t is not int and t is not str:
            raise BadLine("T0705", f'"tid" must be an integer or a string, not {_json_type(tid)}', "tid")

    t0 = get("t0")
    t1 = get("t1")
    if t0 is not None or t1 is not None:
        if type(t0) is int and type(t1) is int and 0 <= t0 <= t1:
            n += 2
        else:
            _check_times(t0, t1, obj)

    expect = get("expect")
    if expect is not None:
        n += 1
        _check_expect(expect)

    if len(obj) != n:
        raise _event_problem(obj)

    ev = _new(TraceEvent)
    _set_line(ev, lineno)
    _set_call(ev, call)
    _set_args(ev, args)
    _set_ret(ev, ret)
    _set_out(ev, out)
    _set_tid(ev, tid)
    _set_t0(ev, t0)
    _set_t1(ev, t1)
    _set_expect(ev, expect)
    return ev


def _check_expect(expect: object) -> None:
    """The optional `expect` object: a rule ID, an outcome, and for a failure the allowed statuses
    (`codes`) or the excluded ones (`except`); each status is an integer or a name, as `ret`."""
    if type(expect) is not dict:
        raise BadLine("T0705", f'"expect" must be an object, not {_json_type(expect)}', "expect")
    for key in expect:
        if key not in EXPECT_KEYS:
            raise BadLine("T0710", f"unknown field {key!r} in \"expect\" (it has only {', '.join(sorted(EXPECT_KEYS))})",
                       "expect")
    for key in ("rule", "outcome"):
        if key not in expect:
            raise BadLine("T0704", f'"expect" has no "{key}"', "expect")
    rule, outcome = expect["rule"], expect["outcome"]
    if type(rule) is not str or not rule:
        raise BadLine("T0705", f'"expect.rule" must be a non-empty string (a rule ID), not {_json_type(rule)}', "expect")
    if outcome not in EXPECT_OUTCOMES:
        raise BadLine("T0705", f'"expect.outcome" must be "success" or "failure", not {outcome!r}', "expect")
    for key in ("codes", "except"):
        if key not in expect:
            continue
        if outcome != "failure":
            raise BadLine("T0705", f'"expect.{key}" is only allowed with "outcome": "failure"', "expect")
        items = expect[key]
        if type(items) is not list:
            raise BadLine("T0705", f'"expect.{key}" must be an array of statuses, not {_json_type(items)}', "expect")
        for x in items:
            tx = type(x)
            if tx is str and x[:1] in NUMERIC_START:
                _check_int_string(x, f"expect.{key}", "expect")
            elif tx is not int and tx is not str:
                raise BadLine("T0705", f'"expect.{key}" elements must be integers or names, not {_json_type(x)}', "expect")
    if "codes" in expect and "except" in expect:
        raise BadLine("T0705", '"expect" has both "codes" and "except"; "except" narrows "any failure" (no "codes")',
                   "expect")


def _check_times(t0: object, t1: object, obj: dict) -> None:
    for name, v in (("t0", t0), ("t1", t1)):
        if v is None and name not in obj:
            other = "t1" if name == "t0" else "t0"
            raise BadLine("T0711", f'"{other}" is given without "{name}"; give both or neither', other)
        if type(v) is not int:
            raise BadLine("T0705", f'"{name}" must be an integer (nanoseconds), not {_json_type(v)}', name)
        if v < 0:
            raise BadLine("T0711", f'"{name}" is negative ({v})', name)
    if t1 < t0:  # type: ignore[operator]
        raise BadLine("T0711", f'"t1" ({t1}) is before "t0" ({t0}); a call cannot end before it begins', "t1")


def _event_problem(obj: dict) -> BadLine:
    """The slow path: say what is wrong with an event whose `call` or key set is off."""
    if "regcheck" in obj:
        return BadLine("T0703", "a second header: a trace has exactly one header, on its first line", "regcheck")
    unknown = [k for k in obj if k not in EVENT_KEYS]
    if unknown:
        known = ", ".join(sorted(EVENT_KEYS))
        return BadLine("T0710", f"unknown event field {unknown[0]!r} (an event has only {known})", unknown[0])
    if "call" not in obj:
        return BadLine("T0704", 'event has no "call"')
    call = obj["call"]
    if type(call) is not str or not call:
        return BadLine("T0705", f'"call" must be a non-empty string, not {_not_a_name(call)}', "call")
    for key, v in obj.items():
        if v is None:
            return BadLine("T0705", f'"{key}" must not be null (leave it out instead)', key)
    raise AssertionError(f"_event_problem called on a good event: {obj!r}")


def to_header(obj: object, lineno: int) -> TraceHeader:
    if type(obj) is not dict:
        raise BadLine("T0702", f"the header must be a JSON object, not {_json_type(obj)}")
    if "regcheck" not in obj:
        if "call" in obj:
            raise BadLine("T0703", 'the trace has no header: the first line is an event; '
                       'start with {"regcheck": 1, "spec": ..., "env": {...}}')
        raise BadLine("T0703", 'the first line is not a trace header: it has no "regcheck" field')
    unknown = sorted(k for k in obj if k not in HEADER_KEYS)
    if unknown:
        raise BadLine("T0710", f"unknown header field {unknown[0]!r} (put extra information under \"meta\")", unknown[0])
    version = obj["regcheck"]
    if type(version) is not int:
        raise BadLine("T0705", f'"regcheck" (the format version) must be an integer, not {_json_type(version)}', "regcheck")
    if version != TRACE_VERSION:
        raise BadLine("T0707", f"unsupported trace format version {version}; this regcheck reads version {TRACE_VERSION}",
                   "regcheck")
    spec = obj.get("spec")
    if spec is None and "spec" not in obj:
        raise BadLine("T0704", 'the header has no "spec" (a bundled spec name such as "acl" or "cupva", or a path)')
    if type(spec) is not str or not spec:
        raise BadLine("T0705", f'"spec" must be a non-empty string, not {_not_a_name(spec)}', "spec")
    env = obj.get("env", {})
    if type(env) is not dict:
        raise BadLine("T0705", f'"env" must be an object, not {_json_type(env)}', "env")
    for key, v in env.items():
        t = type(v)
        if t is not str and t is not int and t is not bool:
            raise BadLine("T0705", f"env.{key} must be a string, an integer or a boolean, not {_json_type(v)}"
                       + (' (write versions as strings, e.g. "6.6")' if t is float else ""), key)
    meta = obj.get("meta", {})
    if type(meta) is not dict:
        raise BadLine("T0705", f'"meta" must be an object, not {_json_type(meta)}', "meta")
    return TraceHeader(spec=spec, env=env, version=version, meta=meta, line=lineno)


# ---------------------------------------------------------------- places

def _column(raw: bytes, key: str | None) -> int:
    """1-based column (in characters) of `"key"` in the line, or 1."""
    if key is None:
        return 1
    i = raw.find(orjson.dumps(key))
    if i < 0:
        return 1
    return len(raw[:i].decode("utf-8", "replace")) + 1


def located(bad: BadLine, raw: bytes, path: str, lineno: int) -> RegcheckError:
    return RegcheckError([error(bad.code, bad.message, Span(path, lineno, _column(raw, bad.key)))])


def undecodable(exc: orjson.JSONDecodeError, raw: bytes, path: str, lineno: int, at_eof_needs_newline: bool) -> RegcheckError:
    cr = _first_line_end_in_cr_alone(raw)
    if cr is not None:  # (the whole file reads as one line, so "truncated last line" would mislead)
        return RegcheckError([error(
            "T0701", "not valid JSON: lines end in a carriage return alone (\\r); a trace's lines end in \\n or \\r\\n",
            Span(path, lineno, len(raw[:cr].decode("utf-8", "replace")) + 1),
        )])
    if at_eof_needs_newline and not raw.endswith(b"\n"):
        return RegcheckError([error(
            "T0709",
            f"truncated last line: no newline at end of file and not valid JSON ({exc.msg})",
            Span(path, lineno, 1),
        )])
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        col = len(raw[: bad.start].decode("utf-8")) + 1
        return RegcheckError([error(
            "T0708", f"invalid UTF-8 (byte 0x{raw[bad.start]:02x})", Span(path, lineno, col)
        )])
    return RegcheckError([error("T0701", f"not valid JSON: {exc.msg}", Span(path, lineno, max(exc.colno, 1)))])


def _first_line_end_in_cr_alone(raw: bytes) -> int | None:
    """Where `raw` holds a JSON document ended by a carriage return alone with more after it (a file
    written with old Mac line ends): the offset of that \\r, or None. A \\r inside a JSON string is
    not one: the text before it is then no document."""
    found = re.search(rb"\r(?!\n)", raw)
    if found is None or not raw[found.end():].strip() or not _is_json(raw[:found.start()]):
        return None
    return found.start()


def _is_json(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True
