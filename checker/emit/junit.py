"""JUnit XML for CI dashboards (`regcheck conform --format junit`).

One <testsuite> per run; one <testcase> per conformance test, classname `regcheck.<spec>.<rule>`;
a failing test has a <failure> (expected outcome, actual result, rule ID), an inconclusive one a
<skipped> with the reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..testgen.conform import FAIL, INCONCLUSIVE, ConformReport


def junit_xml(report: ConformReport) -> str:
    suites = ET.Element("testsuites", name="regcheck conform", tests=str(report.tests),
                        failures=str(report.count(FAIL)), skipped=str(report.count(INCONCLUSIVE)),
                        time=f"{report.seconds:.3f}")
    suite = ET.SubElement(suites, "testsuite", name=f"regcheck.{report.spec}", tests=str(report.tests),
                          failures=str(report.count(FAIL)), errors="0", skipped=str(report.count(INCONCLUSIVE)),
                          time=f"{report.seconds:.3f}")
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
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
