"""Conformance suites on disk: one trace file per test plus a `suite.json` index with the coverage.

A suite directory holds `<TEST>.jsonl` for each test (trace format v1: the header's `meta` names
the test, its rule and how it was found; each API call carries an `expect` object) and
`suite.json`:

    {"regcheck_suite": 1, "spec": "acl", "configs": [...], "stats": {...},
     "tests": [{"name": "ACL-REG-OVERLAP-1", "file": "ACL-REG-OVERLAP-1.jsonl", "rule": ..., "env": ...,
                "method": "enumeration", "description": ..., "covers": [...]}, ...],
     "coverage": [{"rule": ..., "kind": ..., "call": ..., "status": ..., "note": ...,
                   "branches": {"fails [product=AtlasA2, ...]": ["ACL-REG-OVERLAP-1", ...]}, ...,
                   "origins": [{"table": "host_allocs", "origin": "malloc", "covered": true, "tests": [...]},
                               {..., "covered": false, "tests": [], "why": ...}]}, ...],
     "transitions": [{"writer": ..., "writer_rule": ..., "writer_outcome": "success", "call": ..., "rule": ...,
                      "branch": "fails", "covered": true, "tests": [...]}, ...]}

Every trace file is complete on its own: `regcheck replay` and `regcheck execute` accept it, and
`read_suite` rebuilds the tests from the trace files (the index only orders them and carries the
coverage). Input errors: E0610 no suite index or unreadable, E0611 malformed index, plus the trace
reader's T07xx for a test file.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

import orjson

from ..language.diagnostics import RegcheckError, error
from ..language.files import cannot_write, make_directory, write_output
from ..language.source import Span
from ..trace.events import TraceEvent, TraceHeader
from ..trace.reader import header_spec_ref, read_trace, read_trace_text
from ..trace.writer import write_trace
from .model import ConformanceTest, Expectation, OriginCoverage, RuleCoverage, Suite, TransitionCoverage

SUITE_VERSION = 1
INDEX = "suite.json"


def load_test(header: TraceHeader, events: Iterable[TraceEvent], name: str | None = None) -> ConformanceTest:
    """A test from a trace whose events may carry `expect` objects (a suite file, a pasted test)."""
    plain, expectations = [], []
    for ev in events:
        plain.append(TraceEvent(ev.line, ev.call, ev.args, ev.ret, ev.out, ev.tid, ev.t0, ev.t1))
        expectations.append(Expectation.from_json(ev.expect) if ev.expect is not None else None)
    meta = header.meta or {}
    test_name = name or str(meta.get("test") or "test")
    rule = str(meta.get("rule") or next((e.rule for e in reversed(expectations) if e is not None), test_name))
    covers = tuple(str(c) for c in meta.get("covers", ()) if isinstance(c, str)) if isinstance(meta.get("covers"), list) else ()
    return ConformanceTest(test_name, rule, header.spec, dict(header.env), tuple(plain), tuple(expectations), covers,
                           str(meta.get("method", "")), str(meta.get("description", "")))


def parse_test(text: str, path: str = "<test>") -> ConformanceTest:
    header, events = read_trace_text(text, path)
    return load_test(header, events)


def format_test(test: ConformanceTest) -> str:
    """The test as the text of its trace file."""
    from ..trace.writer import format_trace

    return format_trace(test.header(), test.trace_events()).decode("utf-8")


def write_suite(directory: str | os.PathLike, suite: Suite) -> list[str]:
    """Write every test and the index; returns the paths written (the index last).

    Every target is checked first (E0603 for one that is a directory or another non-file), so a
    suite that cannot be written leaves nothing written; a test file that fails to write later
    (a full disk) takes the test files this call created with it."""
    root = make_directory(directory)
    paths = [root / f"{t.name}.jsonl" for t in suite.tests] + [root / INDEX]
    for path in paths:
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise cannot_write(str(path), "not a regular file")
    fresh = [path for path in paths if not path.exists()]
    written = []
    entries = []
    try:
        for t, path in zip(suite.tests, paths):
            write_trace(path, t.header(), t.trace_events())
            written.append(str(path))
            entries.append({"name": t.name, "file": path.name, "rule": t.rule, "env": dict(t.env), "method": t.method,
                            "description": t.description, "covers": list(t.covers)})
    except BaseException:
        for path in fresh:
            path.unlink(missing_ok=True)
        raise
    index = {"regcheck_suite": SUITE_VERSION, "spec": suite.spec, "configs": [dict(c) for c in suite.configs],
             "stats": dict(suite.stats), "tests": entries, "coverage": [c.to_json() for c in suite.coverage],
             "transitions": [t.to_json() for t in suite.transitions]}
    write_output(root / INDEX, orjson.dumps(index, option=orjson.OPT_INDENT_2) + b"\n")
    written.append(str(root / INDEX))
    return written


def read_suite(directory: str | os.PathLike) -> Suite:
    """Read a suite directory written by `write_suite` (tests from their trace files)."""
    root = Path(directory)
    index_path = root / INDEX
    try:
        index = orjson.loads(index_path.read_bytes())
    except OSError as exc:
        raise RegcheckError([error("E0610", f"cannot read the suite index: {exc.strerror or exc}",
                                   Span(str(index_path), 0, 0))]) from None
    except orjson.JSONDecodeError as exc:
        raise RegcheckError([error("E0611", f"the suite index is not valid JSON: {exc.msg}",
                                   Span(str(index_path), 1, 1))]) from None
    if not isinstance(index, dict) or index.get("regcheck_suite") != SUITE_VERSION or not isinstance(index.get("tests"), list):
        raise RegcheckError([error("E0611", f"not a regcheck suite index (version {SUITE_VERSION}): expected "
                                   '{"regcheck_suite": 1, "spec": ..., "tests": [...]}', Span(str(index_path), 1, 1))])
    tests = []
    names: set[str] = set()
    for entry in index["tests"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) or "/" in entry["file"]:
            raise RegcheckError([error("E0611", f"malformed test entry in the suite index: {entry!r}",
                                       Span(str(index_path), 1, 1))])
        path = root / entry["file"]
        header, events = read_trace(path)
        # A spec named by a relative path is beside the trace, as for `regcheck replay`.
        header = replace(header, spec=header_spec_ref(header, path))
        test = load_test(header, events, entry.get("name"))
        if test.name in names:  # (a report, JUnit's above all, tells tests apart by their names)
            raise RegcheckError([error("E0611", f"two tests of the suite index are named {test.name!r}",
                                       Span(str(index_path), 1, 1))])
        names.add(test.name)
        tests.append(test)
    coverage = tuple(_coverage_from_json(c) for c in index.get("coverage", ()) if isinstance(c, dict))
    transitions = tuple(_transition_from_json(t) for t in index.get("transitions", ()) if isinstance(t, dict))
    spec = header_spec_ref(TraceHeader(str(index.get("spec", ""))), index_path)  # the index's spec: likewise
    return Suite(spec, tuple(tests), coverage, tuple(index.get("configs", ())),
                 dict(index.get("stats", {})), transitions)


def _transition_from_json(obj: dict) -> TransitionCoverage:
    return TransitionCoverage(str(obj.get("writer")), str(obj.get("writer_rule")), str(obj.get("writer_outcome")),
                              str(obj.get("call")), str(obj.get("rule")), str(obj.get("branch")),
                              tuple(str(t) for t in obj.get("tests") or ()), str(obj.get("why", "")))


def _coverage_from_json(obj: dict) -> RuleCoverage:
    branches = obj.get("branches") or {}
    origins = tuple(OriginCoverage(str(o.get("table")), str(o.get("origin")),
                                   tuple(str(t) for t in o.get("tests") or ()), str(o.get("why", "")))
                    for o in obj.get("origins") or () if isinstance(o, dict))
    return RuleCoverage(str(obj.get("rule")), str(obj.get("kind")), obj.get("call"), str(obj.get("status")),
                        str(obj.get("note", "")), tuple((b, tuple(ts)) for b, ts in branches.items()),
                        int(obj.get("boundary_items", 0)), origins)


def coverage_summary(coverage: Sequence[RuleCoverage]) -> dict[str, int]:
    """Rule counts by status."""
    out: dict[str, int] = {}
    for c in coverage:
        out[c.status] = out.get(c.status, 0) + 1
    return out
