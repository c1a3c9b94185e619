"""Trace I/O: round trips, streaming, fail-closed errors, the schema and the documented examples."""

from __future__ import annotations

import io
import json
import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.language.diagnostics import RegcheckError
from checker.trace.events import INT_MAX, INT_MIN, BadInteger, TraceEvent, TraceHeader, parse_int
from checker.trace.reader import read_trace, read_trace_lines, read_trace_text
from checker.trace.writer import TraceWriter, event_to_json, format_trace, header_to_json, write_trace

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "checker" / "schemas" / "trace-v1.schema.json"
DOC_PATH = ROOT / "docs" / "trace-format.md"

HEADER = b'{"regcheck":1,"spec":"acl","env":{"os_kernel":"6.6","product":"AtlasA2"}}\n'
REGISTER = b'{"call":"aclrtHostRegisterV2","args":{"ptr":"0x1000","size":4096,"flag":["ACL_HOST_REG_MAPPED"]},"ret":0}\n'


def read_all(data: bytes, path: str = "t.jsonl") -> tuple[TraceHeader, list[TraceEvent]]:
    header, events = read_trace_text(data, path)
    return header, list(events)


def only_diagnostic(exc: pytest.ExceptionInfo[RegcheckError]):
    (diag,) = exc.value.diagnostics
    return diag


# ---------------------------------------------------------------- reading valid traces

def test_reads_header_and_events_as_written():
    header, events = read_all(HEADER + REGISTER + b'{"call":"free","args":{"ptr":4096},"tid":"main","t0":5,"t1":5}\n')
    assert header == TraceHeader("acl", {"os_kernel": "6.6", "product": "AtlasA2"})
    assert header.version == 1 and header.line == 1 and header.meta == {}
    reg, free = events
    assert reg.call == "aclrtHostRegisterV2" and reg.line == 2
    assert reg.args == {"ptr": "0x1000", "size": 4096, "flag": ["ACL_HOST_REG_MAPPED"]}  # kept as written
    assert reg.ret == 0 and reg.out == {} and reg.tid is None and reg.t0 is None
    assert free.ret is None and free.tid == "main" and (free.t0, free.t1) == (5, 5) and free.line == 3


def test_blank_lines_are_ignored_and_line_numbers_count_them():
    data = b"\n  \n" + HEADER + b"\n\t\r\n" + REGISTER + b"   \n" + REGISTER + b"\n"
    header, events = read_all(data)
    assert header.line == 3
    assert [e.line for e in events] == [6, 8]


def test_crlf_and_missing_final_newline_are_accepted():
    data = HEADER.replace(b"\n", b"\r\n") + REGISTER.rstrip(b"\n")
    _, events = read_all(data)
    assert len(events) == 1


def test_environment_event_without_args_or_ret():
    _, (event,) = read_all(HEADER + b'{"call":"cupva::cuda::ForceDisableSupport"}\n')
    assert event.args == {} and event.ret is None and event.out == {}


def test_negative_and_large_integers():
    line = b'{"call":"x","args":{"size":-1,"a":18446744073709551615,"b":"-0x8000000000000000","c":"0XfF"}}\n'
    _, (event,) = read_all(HEADER + line)
    assert event.args["size"] == -1 and event.args["a"] == INT_MAX
    assert parse_int(event.args["b"]) == INT_MIN and parse_int(event.args["c"]) == 255


def test_read_trace_from_file(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(HEADER + REGISTER)
    header, events = read_trace(path)
    assert header.spec == "acl"
    assert [e.call for e in events] == ["aclrtHostRegisterV2"]


def test_read_trace_lines_accepts_str_and_bytes_without_terminators():
    header, events = read_trace_lines([HEADER.decode().strip(), "", REGISTER.strip()], "mem")
    assert header.spec == "acl" and [e.line for e in events] == [3]


# ---------------------------------------------------------------- streaming

def test_events_are_lazy():
    pulled = 0

    def lines():
        nonlocal pulled
        yield HEADER
        for _ in range(1_000_000):
            pulled += 1
            yield REGISTER

    _, events = read_trace_lines(lines())
    assert isinstance(events, Iterator) and not isinstance(events, (list, tuple))
    taken = [e for _, e in zip(range(10), events)]
    assert [e.call for e in taken] == ["aclrtHostRegisterV2"] * 10 and 10 <= pulled <= 11


@pytest.mark.slow
def test_reading_200k_lines_streams_in_bounded_memory(tmp_path):
    path = tmp_path / "big.jsonl"
    n = 200_000
    with open(path, "wb") as f:
        f.write(HEADER)
        for i in range(n):
            f.write(b'{"call":"aclrtHostUnregister","args":{"ptr":%d},"ret":0,"tid":%d,"t0":%d,"t1":%d}\n'
                    % (0x7F0000000000 + i * 4096, i % 8, 2 * i, 2 * i + 1))
    size = path.stat().st_size
    header, events = read_trace(path)
    assert isinstance(events, Iterator) and not isinstance(events, (list, tuple))
    tracemalloc.start()
    try:
        count = 0
        last = None
        for event in events:
            count += 1
            last = event
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == n and last is not None and last.line == n + 1
    assert peak < min(size // 10, 2_000_000), (peak, size)


def test_closing_the_iterator_early_is_fine(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(HEADER + REGISTER * 3)
    _, events = read_trace(path)
    next(events)
    events.close()  # type: ignore[attr-defined]
    with pytest.raises(StopIteration):
        next(events)


# ---------------------------------------------------------------- malformed input

MALFORMED = [
    # (id, trace bytes, code, line, column or None)
    ("bad-json", HEADER + REGISTER + b'{"call":"x",,}\n', "T0701", 3, 13),
    ("truncated-last-line", HEADER + REGISTER + b'{"call":"aclrtHostUnreg', "T0709", 3, 1),
    ("invalid-utf8", HEADER + b'{"call":"x","args":{"s":"ab\xff"}}\n', "T0708", 2, 28),
    ("non-object", HEADER + b"[1, 2]\n", "T0702", 2, 1),
    ("scalar-line", HEADER + b"42\n", "T0702", 2, 1),
    ("missing-header", REGISTER + REGISTER, "T0703", 1, 1),
    ("header-not-a-header", b'{"spec":"acl"}\n', "T0703", 1, 1),
    ("second-header", HEADER + REGISTER + HEADER, "T0703", 3, 2),
    ("header-wrong-version", b'{"regcheck":2,"spec":"acl"}\n', "T0707", 1, 2),
    ("header-version-string", b'{"regcheck":"1","spec":"acl"}\n', "T0705", 1, 2),
    ("header-missing-spec", b'{"regcheck":1,"env":{}}\n', "T0704", 1, 1),
    ("header-env-float", b'{"regcheck":1,"spec":"acl","env":{"os_kernel":6.6}}\n', "T0705", 1, 35),
    ("header-unknown-key", b'{"regcheck":1,"spec":"acl","extra":1}\n', "T0710", 1, 28),
    ("header-not-object", b'["regcheck", 1]\n', "T0702", 1, 1),
    ("missing-call", HEADER + b'{"args":{}}\n', "T0704", 2, 1),
    ("call-not-string", HEADER + b'{"call":7}\n', "T0705", 2, 2),
    ("call-empty", HEADER + b'{"call":""}\n', "T0705", 2, 2),
    ("args-not-object", HEADER + REGISTER + b'{"call":"free","args":[1]}\n', "T0705", 3, 16),
    ("out-not-object", HEADER + b'{"call":"malloc","out":"0x10"}\n', "T0705", 2, 18),
    ("bad-hex-int", HEADER + b'{"call":"free","args":{"ptr":"0xZZ"}}\n', "T0706", 2, 24),
    ("decimal-string", HEADER + b'{"call":"free","args":{"ptr":"4096"}}\n', "T0706", 2, 24),
    ("hex-too-big", HEADER + b'{"call":"free","args":{"ptr":"0x10000000000000000"}}\n', "T0706", 2, 24),
    ("hex-too-small", HEADER + b'{"call":"free","args":{"ptr":"-0x8000000000000001"}}\n', "T0706", 2, 24),
    ("bad-hex-in-list", HEADER + b'{"call":"r","args":{"flag":["A","0xG"]}}\n', "T0706", 2, 21),
    ("json-int-too-big", HEADER + b'{"call":"free","args":{"ptr":18446744073709551616}}\n', "T0705", 2, 24),
    ("float-arg", HEADER + b'{"call":"free","args":{"ptr":1.5}}\n', "T0705", 2, 24),
    ("null-arg", HEADER + b'{"call":"free","args":{"ptr":null}}\n', "T0705", 2, 24),
    ("nested-object-arg", HEADER + b'{"call":"free","args":{"ptr":{"a":1}}}\n', "T0705", 2, 24),
    ("nested-list-arg", HEADER + b'{"call":"r","args":{"flag":[[1]]}}\n', "T0705", 2, 21),
    ("ret-null", HEADER + b'{"call":"free","ret":null}\n', "T0705", 2, 16),
    ("ret-float", HEADER + b'{"call":"free","ret":0.0}\n', "T0705", 2, 16),
    ("ret-decimal-string", HEADER + b'{"call":"free","ret":"0"}\n', "T0706", 2, 16),
    ("tid-bool", HEADER + b'{"call":"free","tid":true}\n', "T0705", 2, 16),
    ("t0-not-int", HEADER + b'{"call":"free","t0":"5","t1":6}\n', "T0705", 2, 16),
    ("t0-bool", HEADER + b'{"call":"free","t0":true,"t1":6}\n', "T0705", 2, 16),
    ("t1-before-t0", HEADER + REGISTER + b'{"call":"free","t0":10,"t1":9}\n', "T0711", 3, 24),
    ("t0-without-t1", HEADER + b'{"call":"free","t0":10}\n', "T0711", 2, 16),
    ("t0-negative", HEADER + b'{"call":"free","t0":-1,"t1":9}\n', "T0711", 2, 16),
    ("unknown-key", HEADER + b'{"call":"free","args":{},"when":3}\n', "T0710", 2, 26),
    ("empty-file", b"", "T0703", 1, 1),
    ("only-blank-lines", b"\n \n\n", "T0703", 1, 1),
    ("bom", b"\xef\xbb\xbf" + HEADER, "T0701", 1, None),
]


CR_ALONE = "not valid JSON: lines end in a carriage return alone (\\r); a trace's lines end in \\n or \\r\\n"


@pytest.mark.parametrize("where", ["text", "file"])
def test_lines_that_end_in_a_carriage_return_alone_say_so(where, tmp_path):
    """Found by testing: an old-Mac-style trace reads as one line, which was T0709 "truncated last line"."""
    data = (HEADER + REGISTER).replace(b"\n", b"\r")
    path = tmp_path / "mac.jsonl"
    path.write_bytes(data)
    with pytest.raises(RegcheckError) as exc:
        read_all(data, str(path)) if where == "text" else list(read_trace(path)[1])
    diag = only_diagnostic(exc)
    assert (diag.code, diag.message, diag.span.line, diag.span.column) == ("T0701", CR_ALONE, 1, len(HEADER))


def test_a_carriage_return_inside_a_string_is_not_taken_for_a_line_end():
    with pytest.raises(RegcheckError) as exc:
        read_all(HEADER + b'{"call":"a\rb"}\n')
    diag = only_diagnostic(exc)
    assert diag.code == "T0701" and "carriage return" not in diag.message, diag


@pytest.mark.parametrize("data, code, line, column", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_input_is_a_located_error(data, code, line, column):
    with pytest.raises(RegcheckError) as exc:
        read_all(data, "bad.jsonl")
    diag = only_diagnostic(exc)
    assert (diag.code, diag.span.path, diag.span.line) == (code, "bad.jsonl", line), diag
    if column is not None:
        assert diag.span.column == column, diag
    assert diag.message


def test_malformed_file_on_disk_reports_path_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(HEADER + REGISTER + REGISTER + b'{"call":"free","t0":3,"t1":2}\n' + REGISTER)
    _, events = read_trace(path)
    seen = []
    with pytest.raises(RegcheckError) as exc:
        for event in events:
            seen.append(event.line)
    assert seen == [2, 3]  # the good events before the bad line were delivered
    diag = only_diagnostic(exc)
    assert (diag.code, diag.span.path, diag.span.line) == ("T0711", str(path), 4)


@pytest.mark.parametrize("content, code, line", [(None, "T0712", 0), (b"not a header\n", "T0701", 1),
                                                 (HEADER + b'{"call":"free","t0":3,"t1":2}\n', "T0711", 2)])
def test_a_trace_opened_by_one_path_is_named_by_the_path_shown(tmp_path, content, code, line):
    """A worker opens the absolute path of a trace the user named `corp/t.jsonl`: every diagnostic,
    at opening, in the header or at an event, names it as shown."""
    path = tmp_path / "t.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(RegcheckError) as exc:
        _, events = read_trace(path, "corp/t.jsonl")
        list(events)
    diag = only_diagnostic(exc)
    assert (diag.code, diag.span.path, diag.span.line) == (code, "corp/t.jsonl", line)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(RegcheckError) as exc:
        read_trace(tmp_path / "nope.jsonl")
    assert only_diagnostic(exc).code == "T0712"


def test_directory_is_an_input_error(tmp_path):
    with pytest.raises(RegcheckError) as exc:
        read_trace(tmp_path)
    assert only_diagnostic(exc).code == "T0712"


def test_error_codes_are_documented_in_the_module_docstring():
    import checker.trace.events as trace_module

    codes = {m[2] for m in MALFORMED} | {"T0712"}
    for code in codes:
        assert code in (trace_module.__doc__ or ""), code


# ---------------------------------------------------------------- parse_int

@pytest.mark.parametrize("value, expected", [
    (0, 0), (-1, -1), (INT_MAX, INT_MAX), (INT_MIN, INT_MIN),
    ("0x0", 0), ("0x7f3a2c000000", 0x7F3A2C000000), ("0XABCdef", 0xABCDEF), ("-0x10", -16),
    ("0x" + "0" * 20 + "1", 1), ("0xffffffffffffffff", INT_MAX), ("-0x8000000000000000", INT_MIN),
])
def test_parse_int_accepts(value, expected):
    assert parse_int(value, what="ptr") == expected


@pytest.mark.parametrize("value", [
    True, False, None, 1.0, "", "12", "-12", "0x", "0xg", " 0x1", "0x1 ", "0x_1", "0x1_0",
    "0x10000000000000000", "-0x8000000000000001", INT_MAX + 1, INT_MIN - 1, [1], "ACL_HOST_REG_MAPPED",
])
def test_parse_int_rejects(value):
    with pytest.raises(BadInteger) as exc:
        parse_int(value, what="ptr")
    assert isinstance(exc.value, ValueError) and exc.value.code == "T0706"
    assert str(exc.value).startswith("ptr")


@pytest.mark.parametrize("text", ["0x10000000000000000", "-0x10000000000000000", "0x" + "f" * 40])
def test_a_hex_string_past_64_bits_is_told_so(text):
    """Found by testing: a "0x..." string with more than 16 hex digits was "not a valid integer; write a
    JSON number or a "0x..." hex string", which it is: what is wrong is its size."""
    with pytest.raises(RegcheckError) as exc:
        read_all(HEADER + b'{"call":"free","args":{"ptr":"%s"}}\n' % text.encode())
    diag = only_diagnostic(exc)
    assert diag.code == "T0706" and "outside the 64-bit range" in diag.message, diag
    with pytest.raises(BadInteger) as bad:
        parse_int(text, what="ptr")
    assert "outside the 64-bit range" in str(bad.value)


# ---------------------------------------------------------------- writing

def test_write_then_read_round_trip(tmp_path):
    header = TraceHeader("cupva", {"driver_version": 2006, "qnx_safety": True}, meta={"recorder": "test"})
    events = [
        TraceEvent(0, "vm_state", {"state": "Init"}),
        TraceEvent(0, "cudaMalloc", {"size": 1 << 20}, out={"devPtr": 0x302000000}, tid="main"),
        TraceEvent(0, "cupva::mem::Register", {"ptr": 0x302000000, "size": 1 << 20, "externalAllocType": "CUDA"},
                   ret="ok", tid="main", t0=5000, t1=5800),
        TraceEvent(0, "cupva::mem::Register", {"ptr": 0x1000, "size": -1, "externalAllocType": "HOST"},
                   ret="InvalidArgument", tid=7, t0=6000, t1=6000),
        TraceEvent(0, "cupva::cuda::ForceDisableSupport"),
    ]
    path = tmp_path / "out.jsonl"
    assert write_trace(path, header, events) == len(events)
    got_header, got = read_trace(path)
    assert got_header == header
    got = list(got)
    assert got == events
    assert [e.line for e in got] == [2, 3, 4, 5, 6]


def test_writer_canonical_form():
    event = TraceEvent(0, "aclrtHostRegisterV2", {"ptr": "0x1000", "size": 4096, "flag": ("ACL_HOST_REG_MAPPED", "0x2")},
                       ret="0x0")
    assert event_to_json(event) == {"call": "aclrtHostRegisterV2",
                                    "args": {"ptr": 4096, "size": 4096, "flag": ["ACL_HOST_REG_MAPPED", 2]}, "ret": 0}
    text = format_trace(TraceHeader("acl"), [event])
    assert text == (b'{"regcheck":1,"spec":"acl","env":{}}\n'
                    b'{"call":"aclrtHostRegisterV2","args":{"ptr":4096,"size":4096,"flag":["ACL_HOST_REG_MAPPED",2]},"ret":0}\n')
    assert header_to_json(TraceHeader("acl", meta={"a": 1})) == {"regcheck": 1, "spec": "acl", "env": {}, "meta": {"a": 1}}


@pytest.mark.parametrize("event, code", [
    (TraceEvent(0, ""), "T0705"),
    (TraceEvent(0, "free", {"ptr": 1.5}), "T0705"),
    (TraceEvent(0, "free", {"ptr": None}), "T0705"),
    (TraceEvent(0, "free", {"ptr": "4096"}), "T0706"),
    (TraceEvent(0, "free", {"ptr": 1 << 64}), "T0706"),
    (TraceEvent(0, "free", t0=2, t1=1), "T0711"),
    (TraceEvent(0, "free", t0=2), "T0711"),
    (TraceEvent(0, "free", tid=1.0), "T0705"),
])
def test_writer_refuses_what_the_reader_would_reject(event, code):
    buf = io.BytesIO()
    with TraceWriter(buf, TraceHeader("acl")) as writer:
        writer.write(TraceEvent(0, "free", {"ptr": 1}))
        with pytest.raises(RegcheckError) as exc:
            writer.write(event)
    diag = only_diagnostic(exc)
    assert diag.code == code and diag.span.line == 3
    assert writer.lines_written == 2
    _, events = read_trace_text(buf.getvalue())
    assert len(list(events)) == 1  # nothing partial was written


def test_writer_refuses_a_bad_header(tmp_path):
    with pytest.raises(RegcheckError) as exc:
        TraceWriter(tmp_path / "x.jsonl", TraceHeader("acl", version=2))
    assert only_diagnostic(exc).code == "T0707"
    with pytest.raises(RegcheckError) as exc:
        TraceWriter(io.BytesIO(), TraceHeader("acl", env={"os_kernel": 6.6}))
    assert only_diagnostic(exc).code == "T0705"


# ---------------------------------------------------------------- Hypothesis: random valid events round-trip

def _not_surrogate(alphabet_max: int = 0x2FFF):
    return st.characters(max_codepoint=alphabet_max, blacklist_categories=("Cs",))


names = st.text(_not_surrogate(), max_size=12).filter(lambda s: s[:1] not in set("0123456789-"))
ints = st.integers(INT_MIN, INT_MAX)


@st.composite
def integer_as_written(draw):
    """(value as written, value as read back after writing): writers emit JSON integers."""
    n = draw(ints)
    form = draw(st.sampled_from(["int", "hex", "HEX"]))
    if form == "int":
        return n, n
    text = ("-" if n < 0 else "") + "0x" + format(abs(n), "x" if form == "hex" else "X")
    return text, n


scalar = st.one_of(integer_as_written(), names.map(lambda s: (s, s)))
value = st.one_of(
    scalar,
    st.booleans().map(lambda b: (b, b)),
    st.lists(scalar, max_size=4).map(lambda xs: ([w for w, _ in xs], [r for _, r in xs])),
)
values = st.dictionaries(st.text(_not_surrogate(), max_size=10), value, max_size=5).map(
    lambda d: ({k: w for k, (w, _) in d.items()}, {k: r for k, (_, r) in d.items()})
)


@st.composite
def events(draw):
    args_w, args_r = draw(values)
    out_w, out_r = draw(values)
    ret_w, ret_r = draw(st.one_of(st.none().map(lambda _: (None, None)), scalar))
    tid = draw(st.one_of(st.none(), ints, st.text(_not_surrogate(), max_size=8)))
    times = draw(st.one_of(st.none(), st.tuples(st.integers(0, INT_MAX), st.integers(0, INT_MAX)).map(sorted)))
    t0, t1 = times if times else (None, None)
    call = draw(st.text(_not_surrogate(), min_size=1, max_size=30))
    written = TraceEvent(0, call, args_w, ret_w, out_w, tid, t0, t1)
    expected = TraceEvent(0, call, args_r, ret_r, out_r, tid, t0, t1)
    return written, expected


headers = st.builds(
    TraceHeader,
    spec=st.text(_not_surrogate(), min_size=1, max_size=20),
    env=st.dictionaries(st.text(max_size=10, alphabet="abcdefgh_"), st.one_of(st.text(max_size=5), ints, st.booleans()),
                        max_size=3),
    meta=st.dictionaries(st.text(max_size=5), st.recursive(
        st.none() | st.booleans() | ints | st.text(max_size=5),
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
        max_leaves=6), max_size=3),
)


@pytest.mark.slow
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(header=headers, pairs=st.lists(events(), max_size=8), blank=st.booleans())
def test_random_valid_events_round_trip(header, pairs, blank):
    data = format_trace(header, [w for w, _ in pairs])
    if blank:
        data = data.replace(b"\n", b"\n\n")
    got_header, got = read_trace_text(data)
    got = list(got)
    assert got_header == header
    assert got == [e for _, e in pairs]
    assert format_trace(got_header, got) == format_trace(header, [e for _, e in pairs])  # canonical is a fixpoint


# ---------------------------------------------------------------- the schema and the documented examples

def _schema_validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _doc_traces() -> list[str]:
    return re.findall(r"```jsonl\n(.*?)```", DOC_PATH.read_text(encoding="utf-8"), flags=re.S)


def test_docs_have_an_example_for_each_spec():
    specs = [read_trace_text(block)[0].spec for block in _doc_traces()]
    assert {"acl", "cupva", "cuda", "hip"} <= set(specs)


@pytest.mark.parametrize("index", range(len(_doc_traces())))
def test_doc_examples_read_and_validate_against_the_schema(index):
    validator = _schema_validator()
    block = _doc_traces()[index]
    header, events = read_trace_text(block, f"docs/trace-format.md#example{index}")
    assert len(list(events)) >= 4
    for line in block.splitlines():
        if line.strip():
            errors = [e.message for e in validator.iter_errors(json.loads(line))]
            assert not errors, (line, errors)


def test_schema_defs_are_referenceable_by_anchor():
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    registry = referencing.Registry().with_resource(schema["$id"], referencing.Resource.from_contents(schema))
    event = jsonschema.Draft202012Validator({"$ref": schema["$id"] + "#event"}, registry=registry)
    header = jsonschema.Draft202012Validator({"$ref": schema["$id"] + "#/$defs/header"}, registry=registry)
    assert event.is_valid({"call": "free", "args": {"ptr": "0x1000"}})
    assert not event.is_valid(json.loads(HEADER))
    assert header.is_valid(json.loads(HEADER)) and not header.is_valid({"call": "free"})


SCHEMA_AGREES = [m for m in MALFORMED if m[0] in {
    "non-object", "header-wrong-version", "header-missing-spec", "header-env-float", "header-unknown-key",
    "missing-call", "call-not-string", "call-empty", "args-not-object", "out-not-object", "bad-hex-int",
    "decimal-string", "hex-too-big", "bad-hex-in-list", "float-arg", "null-arg", "nested-object-arg",
    "nested-list-arg", "ret-null", "ret-decimal-string", "tid-bool", "t0-not-int", "t0-bool", "t0-without-t1",
    "t0-negative", "unknown-key", "json-int-too-big",
}]


@pytest.mark.parametrize("data", [m[1] for m in SCHEMA_AGREES], ids=[m[0] for m in SCHEMA_AGREES])
def test_schema_rejects_lines_the_reader_rejects(data):
    validator = _schema_validator()
    bad_line = [line for line in data.splitlines() if line.strip()][-1]
    assert not validator.is_valid(json.loads(bad_line))


@pytest.mark.slow
@settings(max_examples=100)
@given(header=headers, pairs=st.lists(events(), max_size=4))
def test_every_written_line_validates_against_the_schema(header, pairs):
    validator = _schema_validator()
    for line in format_trace(header, [w for w, _ in pairs]).splitlines():
        obj = json.loads(line)
        assert validator.is_valid(obj), (line, [e.message for e in validator.iter_errors(obj)])


# ---------------------------------------------------------------- the optional `expect` object (conformance tests)

EXPECTING = (b'{"call":"aclrtHostRegisterV2","args":{"ptr":4096,"size":4096,"flag":2},"ret":507910,'
             b'"expect":{"rule":"ACL-REG-OVERLAP","outcome":"failure","codes":[507910]}}\n')


def test_expect_is_read_and_written_back():
    ok = b'{"call":"aclrtHostUnregister","args":{"ptr":4096},"ret":0,"expect":{"rule":"ACL-UNREG-EFFECT","outcome":"success"}}\n'
    anyfail = (b'{"call":"aclrtHostGetDevicePointer","args":{"pHost":4096,"flag":0},"ret":1,'
               b'"expect":{"rule":"ACL-GETDEV-UNMAPPED","outcome":"failure","except":[100000,"0x1a1f8"]}}\n')
    header, events = read_all(HEADER + EXPECTING + ok + anyfail)
    assert events[0].expect == {"rule": "ACL-REG-OVERLAP", "outcome": "failure", "codes": [507910]}
    assert events[1].expect == {"rule": "ACL-UNREG-EFFECT", "outcome": "success"}
    assert event_to_json(events[2])["expect"]["except"] == [100000, 107000]  # hex written as integers
    assert read_all(format_trace(header, events))[1][:2] == events[:2]
    assert read_all(HEADER + REGISTER)[1][0].expect is None  # optional: absent means None


@pytest.mark.parametrize("expect, code", [
    (b'"expect":[1]', "T0705"),
    (b'"expect":null', "T0705"),
    (b'"expect":{"rule":"R"}', "T0704"),
    (b'"expect":{"outcome":"success"}', "T0704"),
    (b'"expect":{"rule":"","outcome":"success"}', "T0705"),
    (b'"expect":{"rule":"R","outcome":"maybe"}', "T0705"),
    (b'"expect":{"rule":"R","outcome":"success","codes":[0]}', "T0705"),
    (b'"expect":{"rule":"R","outcome":"failure","codes":1}', "T0705"),
    (b'"expect":{"rule":"R","outcome":"failure","codes":[1.5]}', "T0705"),
    (b'"expect":{"rule":"R","outcome":"failure","codes":["12"]}', "T0706"),
    (b'"expect":{"rule":"R","outcome":"failure","codes":[1],"except":[2]}', "T0705"),
    (b'"expect":{"rule":"R","outcome":"failure","why":"x"}', "T0710"),
], ids=["not-object", "null", "no-outcome", "no-rule", "empty-rule", "bad-outcome", "codes-with-success",
        "codes-not-list", "float-code", "decimal-string-code", "codes-and-except", "unknown-key"])
def test_malformed_expect_is_a_located_error(expect, code):
    line = b'{"call":"free","args":{"ptr":0},' + expect + b"}\n"
    with pytest.raises(RegcheckError) as exc:
        read_all(HEADER + line, "bad.jsonl")
    diag = only_diagnostic(exc)
    assert (diag.code, diag.span.line) == (code, 2), diag
    if code != "T0705" or b"null" not in expect:
        validator = _schema_validator()
        assert not validator.is_valid(json.loads(line)), line


def test_expect_lines_validate_against_the_schema_and_the_replayer_ignores_them(tmp_path):
    from checker.engines.replay import replay_trace

    validator = _schema_validator()
    assert validator.is_valid(json.loads(EXPECTING))
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER + b'{"call":"malloc","args":{"size":8192},"out":{"ptr":4096}}\n'
                     + EXPECTING.replace(b"507910", b"0", 1).replace(b'"failure","codes":[507910]', b'"success"'))
    report = replay_trace(str(path))
    assert report.verdict == "conforms" and not report.findings


@pytest.mark.parametrize("text", ['{"regcheck":1,"spec":""}\n', '{"regcheck":1,"spec":"acl"}\n{"call":""}\n'])
def test_an_empty_name_is_called_empty(text):
    """Found by testing: the message said a string must be a non-empty string, "not a string"."""
    with pytest.raises(RegcheckError) as err:
        header, events = read_trace_text(text, "t.jsonl")
        list(events)
    (d,) = err.value.diagnostics
    assert d.code == "T0705" and d.message.endswith("must be a non-empty string, not an empty one")
