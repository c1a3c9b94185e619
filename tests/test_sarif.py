"""SARIF 2.1.0 output (checker/sarif.py, `regcheck replay --format sarif`), checked against the
official schema.

tests/data/sarif-schema-2.1.0.json is the OASIS SARIF 2.1.0 schema (its final "rtm.5" revision, as
SchemaStore publishes it), vendored unchanged from the npm package @microsoft/jest-sarif 1.0.0-beta.0
(lib/schemas/sarif-2.1.0-rtm.5.json, MIT licence; see tests/data/README.md): no PyPI package ships it.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import jsonschema
import pytest

from checker.cli import main
from checker.load import load_spec
from checker.sarif import SARIF_VERSION, SarifResult, artifact_uri, sarif_log

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft4Validator(SCHEMA)


def schema_errors(doc) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def uri_problems(doc) -> list[str]:
    """The schema marks these as format "uri"/"uri-reference", which jsonschema only checks with
    optional packages: check the parts that matter here ourselves."""
    bad = []

    def walk(x, key=""):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, key)
        elif key in ("uri", "helpUri", "informationUri", "$schema"):
            if not isinstance(x, str) or re.search(r"\s", x) or (key != "uri" and not urlsplit(x).scheme):
                bad.append(f"{key}: {x!r}")
    walk(doc)
    return bad


def replay(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["replay", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def corpus_sarif():
    import os
    old = os.getcwd()
    os.chdir(REPO)
    try:
        code, out, err = replay("--format", "sarif", "traces/acl", "traces/cupva")
        _, js, _ = replay("--format", "json", "traces/acl", "traces/cupva")
    finally:
        os.chdir(old)
    return code, json.loads(out), json.loads(js), err


def test_the_schema_rejects_what_it_should():
    # The validator is live: a wrong level and a missing version are errors.
    doc = sarif_log([], [])
    assert schema_errors(doc) == []
    bad = json.loads(json.dumps(doc))
    bad["runs"][0]["results"] = [{"message": {"text": "x"}, "level": "fatal"}]
    del bad["version"]
    assert len(schema_errors(bad)) >= 2


def test_corpus_sarif_is_valid(corpus_sarif):
    code, doc, _, err = corpus_sarif
    assert code == 1 and err == ""
    assert doc["version"] == SARIF_VERSION
    assert schema_errors(doc) == []
    assert uri_problems(doc) == []


def test_one_run_per_spec_with_every_rule(corpus_sarif):
    _, doc, _, _ = corpus_sarif
    runs = {r["properties"]["spec"]: r for r in doc["runs"]}
    assert set(runs) == {"acl", "cupva"}
    for name, run in runs.items():
        spec = load_spec(name)
        rules = run["tool"]["driver"]["rules"]
        assert [r["id"] for r in rules] == list(spec.rules)
        assert run["automationDetails"]["id"] == f"regcheck/replay/{name}/"
        for r in rules:
            info = spec.rules[r["id"]]
            assert r["properties"]["kind"] == info.kind
            assert info.summary in r["help"]["text"]
            if info.cite is not None:
                # The document citation travels with the rule: the cited clause and the document.
                assert info.cite.clause in r["help"]["text"] and info.cite.clause in r["help"]["markdown"]
                assert r["properties"]["citation"]["clause"] == info.cite.clause
                assert r["properties"]["citation"]["document"] == info.source.location
                if info.source.location.startswith("https://"):
                    assert r["helpUri"] == info.source.location


def test_results_match_the_json_report(corpus_sarif):
    _, doc, js, _ = corpus_sarif
    expected = sorted((t["trace"], f["line"], f["rule"], f["kind"]) for t in js["traces"] for f in t["findings"])
    got = []
    for run in doc["runs"]:
        rules = run["tool"]["driver"]["rules"]
        for res in run["results"]:
            assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
            loc = res["locations"][0]["physicalLocation"]
            kind = res["message"]["text"].split("[", 1)[0]
            assert res["level"] == ("note" if kind == "unspecified" else "error")
            got.append((loc["artifactLocation"]["uri"], loc["region"]["startLine"], res["ruleId"], kind))
    assert sorted(got) == expected
    assert len(got) > 50


def test_related_locations_point_at_events_and_the_rule(corpus_sarif):
    _, doc, js, _ = corpus_sarif
    related = {(t["trace"], f["line"], f["rule"]): f["related"] for t in js["traces"] for f in t["findings"]}
    for run in doc["runs"]:
        spec = load_spec(run["properties"]["spec"])
        for res in run["results"]:
            loc = res["locations"][0]["physicalLocation"]
            key = (loc["artifactLocation"]["uri"], loc["region"]["startLine"], res["ruleId"])
            rel = res.get("relatedLocations", [])
            in_trace = [r["physicalLocation"]["region"]["startLine"] for r in rel
                        if r["physicalLocation"]["artifactLocation"]["uri"] == key[0]]
            assert in_trace == related[key]
            info = spec.rules.get(res["ruleId"])
            if info is not None:
                assert {"uri": info.span.path} in [r["physicalLocation"]["artifactLocation"] for r in rel]


def test_input_errors_become_notifications(tmp_path):
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"regcheck":1,"spec":"acl"}\n{"call":"malloc","args":{"size":4096},"out":{"ptr":"0x10000"}}\n')
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"regcheck":1,"spec":"acl"}\n{"call":"mmap","args":{}}\n')
    code, out, err = replay("--format", "sarif", str(ok), str(broken))
    doc = json.loads(out)
    assert code == 2 and err == ""
    assert schema_errors(doc) == []
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    (note,) = inv["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "T0730" and note["level"] == "error"
    assert note["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def test_only_unreadable_traces_still_give_a_valid_log(tmp_path):
    code, out, _ = replay("--format", "sarif", str(tmp_path / "missing.jsonl"))
    doc = json.loads(out)
    assert code == 2 and schema_errors(doc) == []
    assert doc["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["descriptor"]["id"] == "T0712"


# ---------------------------------------------------------------- the reusable emitter


def _rule(rule, kind="fails", call="f", cite=True, location="https://example.invalid/page"):
    return SimpleNamespace(
        rule=rule, kind=kind, call=call, summary=f"fails {rule}: any when x",
        cite=SimpleNamespace(source="DOC", clause=f"clause of {rule}") if cite else None,
        source=SimpleNamespace(location=location, title="A page") if cite else None,
        span=SimpleNamespace(path="spec/x.spec", line=7))


def test_sarif_log_for_other_commands():
    rules = [_rule("R-ONE"), _rule("R-TWO", kind="invariant", call=None, cite=False)]
    results = [
        SarifResult("R-ONE", "error", "broken", "out/run 1.jsonl", 3, [("out/run 1.jsonl", 1, "made here")]),
        ("R-TWO", "warning", "not proved", "spec/x.spec", 0, ()),
        ("R-THREE", "note", "a rule the run did not declare", "/abs/path/t.jsonl", 9),
    ]
    doc = sarif_log(rules, results, category="regcheck/prove/x/", notifications=[("X0820", "no dask")])
    assert schema_errors(doc) == [] and uri_problems(doc) == []
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert ids == ["R-ONE", "R-TWO", "R-THREE"]
    assert run["tool"]["driver"]["rules"][0]["helpUri"] == "https://example.invalid/page"
    assert "helpUri" not in run["tool"]["driver"]["rules"][1]
    r1, r2, r3 = run["results"]
    assert r1["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "out/run%201.jsonl"
    assert r1["relatedLocations"][0]["message"]["text"] == "made here"
    assert "region" not in r2["locations"][0]["physicalLocation"]
    assert r3["ruleIndex"] == 2
    assert r3["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///abs/path/t.jsonl"
    assert run["invocations"][0]["executionSuccessful"] is False


def test_bad_level_is_refused():
    with pytest.raises(ValueError, match="level"):
        sarif_log([], [("R", "fatal", "m", "a.jsonl", 1, ())])


def test_artifact_uri():
    assert artifact_uri("traces/acl/a b.jsonl") == "traces/acl/a%20b.jsonl"
    assert artifact_uri("/tmp/x#1.jsonl") == "file:///tmp/x%231.jsonl"
