"""JUnit XML for CI dashboards (`regcheck conform --format junit`).

One <testsuite> per run; one <testcase> per conformance test, classname `regcheck.<spec>.<rule>`;
a failing test has a <failure> (expected outcome, actual result, rule ID), an inconclusive one a
<skipped> with the reason. With `conform --fuzz N`, the fuzz phase after the suite is one more
testcase, classname `regcheck.<spec>.fuzz`, name `fuzz N sequences seed S`: passed when it found
nothing, else a <failure> with the rule ID, the message, the calls of the shrunk run and the trace
file it was written to (or, when it was not written, the trace itself).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from typing import TYPE_CHECKING

from ..language.diagnostics import escape_controls
from ..testgen.conform import FAIL, INCONCLUSIVE, ConformReport

if TYPE_CHECKING:
    from ..testgen.fuzz import FuzzResult


def junit_xml(report: ConformReport, fuzzed: FuzzResult | None = None, fuzz_trace: str | None = None) -> str:
    """The report as JUnit XML; `fuzzed`, the fuzz phase run after the suite (one more testcase),
    and `fuzz_trace`, the file its failing run was written to."""
    tests = report.tests + (fuzzed is not None)
    failures = report.count(FAIL) + (fuzzed is not None and not fuzzed.passed)
    seconds = report.seconds + (fuzzed.seconds if fuzzed is not None else 0.0)
    suites = ET.Element("testsuites", name="regcheck conform", tests=str(tests), failures=str(failures),
                        skipped=str(report.count(INCONCLUSIVE)), time=f"{seconds:.3f}")
    suite = ET.SubElement(suites, "testsuite", name=f"regcheck.{report.spec}", tests=str(tests),
                          failures=str(failures), errors="0", skipped=str(report.count(INCONCLUSIVE)),
                          time=f"{seconds:.3f}")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="driver", value=report.driver)
    for r in report.results:
        case = ET.SubElement(suite, "testcase", classname=f"regcheck.{report.spec}.{r.rule}", name=r.name,
                             time=f"{r.seconds:.4f}")
        if r.status == FAIL:
            first = next((p for p in r.problems if p.kind != INCONCLUSIVE), r.problems[0] if r.problems else None)
            message = (f"[{first.rule}] expected {first.expected}; got {first.actual}" if first is not None
                       else "failed")
            failure = ET.SubElement(case, "failure", message=message, type=first.kind if first else "failure")
            failure.text = r.explain()
        elif r.status == INCONCLUSIVE:
            ET.SubElement(case, "skipped", message=r.explain())
    if fuzzed is not None:
        _fuzz_case(suite, report.spec, fuzzed, fuzz_trace)
    _replace_characters_xml_cannot_hold(suites)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# XML 1.0 has no way to write these, not even as character references; ElementTree writes them raw,
# and a parser then rejects the whole report. A driver's exception message may hold any of them.
_NOT_XML_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escape_character(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else f"\\u{ord(match.group()):04x}"


def _shown(text: str) -> str:
    """`text` as the report holds it: what XML cannot write, and what the CLI's text output escapes
    (\\r, DEL, C1 controls, bidirectional overrides: XML holds them, but the report goes to a
    terminal or a dashboard, where they overwrite or reorder the failure they are in), as escapes."""
    return _NOT_XML_CHARACTERS.sub(_escape_character, escape_controls(text))


def _replace_characters_xml_cannot_hold(root: ET.Element) -> None:
    """Writes each such character of the texts and attribute values as its Python escape (`\\x01`)."""
    for element in root.iter():
        if element.text:
            element.text = _shown(element.text)
        for name, value in list(element.attrib.items()):
            element.set(name, _shown(value))


def _fuzz_case(suite: ET.Element, spec: str, fuzzed: FuzzResult, trace_file: str | None) -> None:
    o, f = fuzzed.options, fuzzed.failure
    case = ET.SubElement(suite, "testcase", classname=f"regcheck.{spec}.fuzz",
                         name=f"fuzz {o.max_examples} sequences seed {o.seed}", time=f"{fuzzed.seconds:.4f}")
    if fuzzed.nondeterministic is not None:
        ET.SubElement(case, "failure", type="fuzz", message=f"driver not deterministic: {fuzzed.nondeterministic}")
        return
    if f is None:
        return
    calls = len(f.events)
    failure = ET.SubElement(case, "failure", type="fuzz",
                            message=f"[{f.rule}] {f.message} (after {calls} calls, seed {o.seed})")
    lines = [f"rule: {f.rule}", f"message: {f.message}",
             f"configuration: {', '.join(f'{k}={v}' for k, v in f.env.items())}",
             f"calls: {calls} in the shrunk run ({fuzzed.calls} driver calls in the phase, up to {o.steps} "
             f"per sequence, seed {o.seed})"]
    if trace_file is not None:
        lines.append(f"trace: {trace_file}")
    else:  # not written to a file: the run itself, so the report alone reproduces it
        lines += ["trace:", *("    " + line for line in f.trace_text().splitlines())]
    failure.text = "\n".join(lines)
