"""SARIF 2.1.0 output (checker/emit/sarif.py, `regcheck replay --format sarif`), checked against the
official schema.

tests/data/sarif-schema-2.1.0.json is the OASIS SARIF 2.1.0 schema (its final "rtm.5" revision, as
SchemaStore publishes it), vendored unchanged from the npm package @microsoft/jest-sarif 1.0.0-beta.0
(lib/schemas/sarif-2.1.0-rtm.5.json, MIT licence; see tests/data/README.md): no PyPI package ships it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import jsonschema
import pytest

from checker.language.load import load_spec
from checker.emit.sarif import SARIF_VERSION, SarifResult, artifact_uri, sarif_log
from tests.helpers import run_cli

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
        elif key == "helpUri" and isinstance(x, str) and not urlsplit(x).scheme:
            # regcheck has no published site: a relative helpUri is a docs page of the repository.
            if not docs_anchor_exists(x):
                bad.append(f"{key}: {x!r} is not a heading of a page in docs/")
        elif key in ("uri", "helpUri", "informationUri", "$schema"):
            if not isinstance(x, str) or re.search(r"\s", x) or (key != "uri" and not urlsplit(x).scheme):
                bad.append(f"{key}: {x!r}")
    walk(doc)
    return bad


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def docs_anchor_exists(ref: str) -> bool:
    path, _, anchor = ref.partition("#")
    page = REPO / path
    if not path.startswith("docs/") or not page.is_file():
        return False
    headings = [line.lstrip("#") for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    return not anchor or anchor in {github_slug(h) for h in headings}


def replay(*argv: str) -> tuple[int, str, str]:
    return run_cli("replay", *argv)


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
    at_events = at_rules = 0
    for run in doc["runs"]:
        spec = load_spec(run["properties"]["spec"])
        for res in run["results"]:
            loc = res["locations"][0]["physicalLocation"]
            key = (loc["artifactLocation"]["uri"], loc["region"]["startLine"], res["ruleId"])
            rel = res.get("relatedLocations", [])
            in_trace = [r["physicalLocation"]["region"]["startLine"] for r in rel
                        if r["physicalLocation"]["artifactLocation"]["uri"] == key[0]]
            assert in_trace == related[key]
            at_events += bool(in_trace)
            info = spec.rules.get(res["ruleId"])
            if info is not None:
                assert info.span.path in [r["physicalLocation"]["artifactLocation"]["uri"] for r in rel]
                at_rules += 1
    assert at_events > 10 and at_rules > 50  # the corpus has findings of both sorts


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
    # No document to link: the page that explains the kind of rule (every rule has a helpUri).
    assert run["tool"]["driver"]["rules"][1]["helpUri"] == "docs/language.md#invariants-and-pinned-ranges"
    assert [r["name"] for r in run["tool"]["driver"]["rules"]] == ["ROne", "RTwo", "RThree"]
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


# ---------------------------------------------------------------- regcheck execute --format sarif

ACL_HEADER = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
MAPPED, PINNED = 0x2, 0x10000000
BASE = 0x7F3A_2C00_0000


class FakeAclDriver:
    """A driver with no memory behind it (so these tests need no page locking): it hands out
    addresses and says success to every call. A second registration of the same pointer therefore
    succeeds where the spec requires an error: an `executor` finding and a `divergence`."""

    def start(self, spec, env):
        self.next = 0x5000_0000

    def call(self, name, args):
        from checker.drivers.protocol import Result
        if name == "malloc":
            ptr, self.next = self.next, self.next + ((args["size"] + 0xFFFF) & ~0xFFFF)
            return Result(0, {"ptr": ptr})
        return Result(0)

    def close(self):
        pass


def write_trace(tmp_path, events, name="t.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in [ACL_HEADER, *events]))
    return str(path)


def fake_driver_trace(tmp_path):
    return write_trace(tmp_path, [
        {"call": "malloc", "args": {"size": 8192}, "out": {"ptr": BASE}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 4096, "flag": MAPPED}, "ret": 0},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 4096, "flag": MAPPED}, "ret": 507910},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": 0x7FFD_0000_0000, "size": 4096, "flag": MAPPED}, "ret": 0},
    ])


SAME_NAME_SPEC = """spec mine "one name, two files"
source DOC "none" "doc"
status int success 0
record Rec { size: u64 }
table recs: addr -> Rec sized by size
call poke(c: addr, s: u64) {
  fails MINE-DUP: 2 when c in recs
    cite DOC "dup"
  effect MINE-EFFECT: { recs[c] = { size: s } }
    cite DOC "eff"
}
"""


def test_two_spec_files_of_one_name_are_two_runs_with_their_own_ids(tmp_path, monkeypatch):
    """Found by testing: corpora whose spec files both declare `spec mine` gave two runs with the id
    regcheck/replay/mine/, which a dashboard then merges."""
    monkeypatch.chdir(tmp_path)
    poke = json.dumps({"call": "poke", "args": {"c": "0x1000", "s": 16}, "ret": 0})
    for corpus in ("a", "b"):
        (tmp_path / corpus).mkdir()
        (tmp_path / corpus / "mine.spec").write_text(SAME_NAME_SPEC)
        (tmp_path / corpus / "t.jsonl").write_text(f'{{"regcheck":1,"spec":"mine.spec"}}\n{poke}\n{poke}\n')
    (tmp_path / "b" / "acl.jsonl").write_text('{"regcheck":1,"spec":"acl"}\n')
    code, out, _ = run_cli("replay", "--format", "sarif", "a", "b")
    doc = json.loads(out)
    assert code == 1 and schema_errors(doc) == []
    ids = [(r["properties"]["spec"], r["automationDetails"]["id"]) for r in doc["runs"]]
    assert ids == [("mine", "regcheck/replay/mine/a/mine.spec/"), ("acl", "regcheck/replay/acl/"),
                   ("mine", "regcheck/replay/mine/b/mine.spec/")]
    assert json.loads(run_cli("replay", "--format", "sarif", "a", "b")[1]) == doc  # the same ids every time


def test_run_category_of_a_spec_file_names_its_path():
    from checker.emit.sarif import run_category
    assert run_category("execute", "acl", "acl") == "regcheck/execute/acl/"
    assert run_category("execute", "mine", "./specs//mine.spec") == "regcheck/execute/mine/specs/mine.spec/"


def execute(*argv: str) -> tuple[int, str, str]:
    return run_cli("execute", *argv)


def check_rules_explain_themselves(run: dict) -> None:
    """Every rule a run lists has help text and a document citation (spec rules: the ones that
    cite; the executor's and the prover's own: all)."""
    spec = load_spec(run["properties"]["spec"]) if "spec" in run.get("properties", {}) else None
    for r in run["tool"]["driver"]["rules"]:
        assert r["help"]["text"] and r["help"]["markdown"], r["id"]
        cited = spec is None or r["id"] not in spec.rules or spec.rules[r["id"]].cite is not None
        if cited:
            citation = r["properties"]["citation"]
            assert citation["clause"] in r["help"]["text"] and citation["title"] in r["help"]["text"], r["id"]
            # The help says where to read the document: its location (a URL, a file of regcheck's), or
            # for a bundled spec's document without a URL, its entry in docs/sources.md.
            assert citation["document"] in r["help"]["text"] or r["helpUri"] in r["help"]["text"], r["id"]


def test_execute_sarif_has_every_finding_kind_at_its_level(tmp_path):
    trace = fake_driver_trace(tmp_path)
    code, out, err = execute("--format", "sarif", "--driver", "tests.test_sarif:FakeAclDriver", trace)
    _, js, _ = execute("--format", "json", "--driver", "tests.test_sarif:FakeAclDriver", trace)
    doc, report = json.loads(out), json.loads(js)
    assert code == 1 and err == ""
    assert schema_errors(doc) == [] and uri_problems(doc) == []
    (run,) = doc["runs"]
    assert run["automationDetails"]["id"] == "regcheck/execute/acl/"
    assert run["properties"]["driver"] == "tests.test_sarif:FakeAclDriver"
    rules = run["tool"]["driver"]["rules"]
    got = []
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        kind = res["message"]["text"].split("[", 1)[0]
        expected = "note" if kind in ("divergence", "refused", "unspecified") else "error"
        assert res["level"] == expected, res
        got.append((res["locations"][0]["physicalLocation"]["region"]["startLine"], kind, res["ruleId"]))
    assert sorted(got) == sorted((f["line"], f["kind"], f["rule"]) for f in report["findings"])
    kinds = {k for _, k, _ in got}
    assert {"executor", "divergence", "refused", "usage"} <= kinds
    assert (4, "executor", "ACL-REG-OVERLAP") in got and (4, "divergence", "EXEC-DIVERGENCE") in got
    assert (5, "refused", "EXEC-ADDRESS-UNOWNED") in got


def test_execute_sarif_describes_the_executor_rules(tmp_path):
    from checker.drivers import execute as execute_module
    from checker.drivers.execute import EXEC_ADDRESS_UNOWNED, EXEC_DIVERGENCE, EXEC_LOCK_EXTRA

    _, out, _ = execute("--format", "sarif", "--driver", "tests.test_sarif:FakeAclDriver", fake_driver_trace(tmp_path))
    (run,) = json.loads(out)["runs"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(load_spec("acl").rules) < set(rules)  # the spec's rules, then the executor's
    check_rules_explain_themselves(run)
    for rule, level in ((EXEC_ADDRESS_UNOWNED, "note"), (EXEC_DIVERGENCE, "note"), (EXEC_LOCK_EXTRA, "error")):
        r = rules[rule]
        assert r["properties"]["kind"] == "executor" and r["defaultConfiguration"]["level"] == level
        # The help text is the module docstring's own line for the rule (where it is documented).
        line = next(x for x in execute_module.__doc__.splitlines() if x.strip().startswith(rule))
        assert line.split(rule, 1)[1].strip() in r["help"]["text"]
        assert r["properties"]["citation"]["document"] == "checker/drivers/execute.py"


def test_execute_sarif_pinning_findings_are_errors(tmp_path):
    from checker.drivers.pinning import pinning_permitted

    ok, why = pinning_permitted()
    if not ok:
        pytest.skip(f"real pinning is not permitted here: {why}")
    trace = write_trace(tmp_path, [
        {"call": "malloc", "args": {"size": 3 * 4096}, "out": {"ptr": BASE}},
        {"call": "aclrtHostRegisterV2", "args": {"ptr": BASE, "size": 3 * 4096, "flag": PINNED | MAPPED}, "ret": 0},
        {"call": "aclrtHostUnregister", "args": {"ptr": BASE}, "ret": 0},
        {"call": "free", "args": {"ptr": BASE}},
    ])
    code, out, _ = execute("--format", "sarif", "--driver", "tests.drivers.sloppy:UnregisterKeepsLock", trace)
    doc = json.loads(out)
    assert code == 1 and schema_errors(doc) == []
    pinning = [r for r in doc["runs"][0]["results"] if r["message"]["text"].startswith("pinning[")]
    assert pinning and {r["ruleId"] for r in pinning} == {"EXEC-LOCK-EXTRA"}
    assert {r["level"] for r in pinning} == {"error"}


def test_execute_sarif_unreadable_trace_is_a_notification(tmp_path):
    code, out, err = execute("--format", "sarif", "--driver", "tests.test_sarif:FakeAclDriver",
                             fake_driver_trace(tmp_path), str(tmp_path / "missing.jsonl"))
    doc = json.loads(out)
    assert code == 2 and err == "" and schema_errors(doc) == []
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert inv["toolExecutionNotifications"][0]["descriptor"]["id"] == "T0712"
    code, out, _ = execute("--format", "sarif", str(tmp_path / "missing.jsonl"))
    doc = json.loads(out)
    assert code == 2 and schema_errors(doc) == [] and doc["runs"][0]["results"] == []


# ---------------------------------------------------------------- regcheck prove --format sarif

SEEDED = REPO / "tests" / "seeded_bugs"


def prove_cli(*argv: str) -> tuple[int, str, str]:
    return run_cli("prove", *argv)


@pytest.mark.parametrize("bug", ["acl_free_forgets_registrations", "cupva_cudafree_drops_registration"])
def test_prove_sarif_refuted_obligations_at_the_invariant(bug):
    path = str(SEEDED / f"{bug}.spec")
    opts = ("--no-consistency", "--no-guards", "--reach-depth", "0")
    code, out, err = prove_cli(path, "--format", "sarif", *opts)
    _, js, _ = prove_cli(path, "--format", "json", *opts)
    doc, report = json.loads(out), json.loads(js)
    assert code == 1 and err == ""
    assert schema_errors(doc) == [] and uri_problems(doc) == []
    (run,) = doc["runs"]
    assert run["automationDetails"]["id"] == "regcheck/prove/" + ("acl/" if bug.startswith("acl") else "cupva/")
    spec = load_spec(path)
    not_proved = [o for o in report["obligations"] if o["verdict"] != "PROVED"]
    assert not_proved and len(run["results"]) == len(not_proved)  # PROVED obligations are no results
    rules = run["tool"]["driver"]["rules"]
    for res, o in zip(run["results"], not_proved):
        assert res["ruleId"] == o["property"] and rules[res["ruleIndex"]]["id"] == o["property"]
        assert res["level"] == ("error" if o["verdict"] == "REFUTED" else "warning")
        assert res["message"]["text"].startswith(o["verdict"]) and o["call"] in res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == artifact_uri(path)  # the spec file as named (absolute here)
        if o["property"] in spec.rules:  # an invariant: at its own line
            assert loc["region"]["startLine"] == spec.rules[o["property"]].span.line
        else:  # API-GROUPS(x): at a usage rule it comes from
            assert spec.rules[o["rules"][0]].kind == "usage"
            assert loc["region"]["startLine"] == spec.rules[o["rules"][0]].span.line
    check_rules_explain_themselves(run)


def test_prove_sarif_implicit_properties_are_rules_with_citations():
    code, out, _ = prove_cli("cupva", "--format", "sarif", "--no-consistency", "--no-guards")
    (run,) = json.loads(out)["runs"]
    assert code == 0 and run["results"] == [] and run["properties"]["proved"] is True
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert {"TYPES", "API-GROUPS(regs)", "API-GROUPS(cuda_interop_used)"} <= set(rules)
    groups = rules["API-GROUPS(regs)"]
    assert "PVA-REG-API-GROUP" in groups["help"]["text"] and "PVA-UNREG-API-GROUP" in groups["help"]["text"]
    cite = load_spec("cupva").rules["PVA-REG-API-GROUP"].cite
    assert groups["properties"]["citation"]["clause"] == cite.clause
    assert rules["TYPES"]["properties"]["citation"]["document"] == "docs/prover.md"
    check_rules_explain_themselves(run)


def test_prove_sarif_unknown_is_a_warning(monkeypatch):
    import z3
    monkeypatch.setattr(z3.Solver, "check", lambda self, *a: z3.unknown)
    monkeypatch.setattr(z3.Solver, "reason_unknown", lambda self: "canceled")
    code, out, _ = prove_cli("acl", "--format", "sarif", "--no-consistency", "--no-guards", "--reach-depth", "0")
    doc = json.loads(out)
    assert code == 1 and schema_errors(doc) == []
    results = doc["runs"][0]["results"]
    assert results and {r["level"] for r in results} == {"warning"}
    assert all(r["message"]["text"].startswith("UNKNOWN") and "canceled" in r["message"]["text"] for r in results)


def test_prove_sarif_consistency_problems_and_notes(tmp_path):
    text = (REPO / "spec" / "acl.spec").read_text()
    anchor = '    cite HOSTMEM "aclrtFreeHost: a null pointer is a parameter error"\n'
    assert anchor in text
    dead = text.replace(anchor, anchor + '  fails ACL-FREEHOST-NEVER: {ACL_ERROR_INVALID_PARAM} when hostPtr == 0 and hostPtr != 0\n'
                                         '    cite HOSTMEM "a clause that can never hold (a test)"\n')
    path = tmp_path / "dead.spec"
    path.write_text(dead)
    code, out, err = prove_cli(str(path), "--format", "sarif", "--no-guards", "--witness-depth", "2")
    doc = json.loads(out)
    assert code == 1 and err == "" and schema_errors(doc) == []
    (run,) = doc["runs"]
    not_proved = [r["message"]["text"] for r in run["results"] if r["message"]["text"].startswith(("UNKNOWN", "REFUTED"))]
    assert run["properties"]["proved"] is True, not_proved
    assert run["properties"]["consistent"] is False
    by_rule = {}
    for r in run["results"]:
        by_rule.setdefault(r["ruleId"], []).append(r)
    (never,) = by_rule["ACL-FREEHOST-NEVER"]
    assert never["level"] == "warning" and never["message"]["text"].startswith("dead fails clause")
    spec = load_spec(str(path))
    assert never["locations"][0]["physicalLocation"]["region"]["startLine"] == spec.rules["ACL-FREEHOST-NEVER"].span.line
    # What the text report lists for review is a note: overlapping error conditions, the spec's own
    # `unspecified` clauses (documentation gaps).
    notes = [r for r in run["results"] if r["level"] == "note"]
    assert any(r["message"]["text"].startswith("overlapping error conditions") for r in notes)
    assert any("documentation gap marked in the spec" in r["message"]["text"] for r in notes)
    assert {r["level"] for r in run["results"]} == {"warning", "note"}  # every obligation is proved


# ---------------------------------------------------------------- regcheck conform --format sarif


def conform(*argv: str) -> tuple[int, str, str]:
    return run_cli("conform", *argv)


@pytest.fixture(scope="module")
def conform_suite(tmp_path_factory):
    """One acl test per rule (about 20; among them tests that reach the overlap error) as a suite
    directory, written once for this module. The reference driver locks real memory."""
    from checker.testgen.model import Suite
    from checker.drivers.pinning import pinning_permitted
    from checker.testgen.suite import write_suite
    from tests.mutants import bundled_suite

    ok, why = pinning_permitted()
    if not ok:
        pytest.skip(f"real pinning is not permitted here: {why}")
    full = bundled_suite("acl")
    keep = {}
    for t in full.tests:
        keep.setdefault(t.rule, t)
    path = tmp_path_factory.mktemp("suite")
    write_suite(path, Suite(full.spec, tuple(keep.values()), full.coverage, full.configs, full.stats))
    return path, len(keep)


def conform_pair(path, *argv: str) -> tuple[int, dict, dict]:
    """The same conformance run as SARIF and as the JSON report."""
    code, out, err = conform("acl", "--suite", str(path), "--format", "sarif", *argv)
    _, js, _ = conform("acl", "--suite", str(path), "--format", "json", *argv)
    assert err == ""
    return code, json.loads(out), json.loads(js)


def test_conform_sarif_passing_run_has_no_results(conform_suite):
    path, n = conform_suite
    code, doc, report = conform_pair(path)
    assert code == 0 and report["passed"] == n
    assert schema_errors(doc) == [] and uri_problems(doc) == []
    (run,) = doc["runs"]
    assert run["results"] == [] and run["invocations"][0]["executionSuccessful"] is True
    assert run["automationDetails"]["id"] == "regcheck/conform/acl/"
    props = run["properties"]
    assert (props["tests"], props["passed"], props["failed"], props["inconclusive"]) == (n, n, 0, 0)
    assert props["driver"] == "checker.drivers.executor:ReferenceDriver" and props["suite"] == str(path)
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert ids[:len(load_spec("acl").rules)] == list(load_spec("acl").rules)
    assert {"EXEC-DIVERGENCE", "EXEC-LOCK-EXTRA", "CONFORM-DRIVER-ERROR"} <= set(ids)
    check_rules_explain_themselves(run)


def check_results_match_problems(run: dict, report: dict, path) -> list[tuple[dict, dict]]:
    """Each problem of each test that did not pass is one result, in order, at the test's trace
    file and the event's line (where the trace has that event's call)."""
    problems = [(f, p) for f in report["failures"] for p in f["problems"]]
    assert len(run["results"]) == len(problems)
    rules = run["tool"]["driver"]["rules"]
    for res, (f, p) in zip(run["results"], problems):
        assert res["ruleId"] == (p["rule"] or "CONFORM-DRIVER-ERROR") and rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] == ("note" if p["kind"] == "inconclusive" else "error")
        assert res["message"]["text"].startswith(f"{f['status']} {f['test']} [{f['rule']}]: event {p['event']}")
        loc = res["locations"][0]["physicalLocation"]
        trace = Path(path) / f"{f['test']}.jsonl"
        assert loc["artifactLocation"]["uri"] == artifact_uri(str(trace))
        if p["event"] > 0:
            line = loc["region"]["startLine"]
            assert line == p["event"] + 1
            assert json.loads(trace.read_text().splitlines()[line - 1])["call"] == p["call"]
        else:
            assert "region" not in loc
    return problems


def test_conform_sarif_failing_run_locates_problems_in_the_trace_files(conform_suite):
    path, n = conform_suite
    code, doc, report = conform_pair(path, "--driver", "tests.drivers.sloppy:WrongOverlapCode")
    assert code == 1 and report["failed"] >= 1
    assert schema_errors(doc) == [] and uri_problems(doc) == []
    (run,) = doc["runs"]
    props = run["properties"]
    assert (props["tests"], props["passed"], props["failed"], props["inconclusive"]) == (
        n, report["passed"], report["failed"], report["inconclusive"])
    problems = check_results_match_problems(run, report, path)
    assert {res["ruleId"] for res in run["results"]} == {"ACL-REG-OVERLAP"}
    assert all("got 507911" in res["message"]["text"] for res in run["results"])
    overlap = load_spec("acl").rules["ACL-REG-OVERLAP"]
    for res, (f, _) in zip(run["results"], problems):
        rel = [(r["physicalLocation"]["artifactLocation"]["uri"], r["physicalLocation"]["region"]["startLine"])
               for r in res["relatedLocations"]]
        assert rel[0] == (overlap.span.path, overlap.span.line)  # the rule's clause
        if f["rule"] != "ACL-REG-OVERLAP":  # and the rule the test is about, when it is another
            assert rel[1] == (overlap.span.path, load_spec("acl").rules[f["rule"]].span.line)
    check_rules_explain_themselves(run)


class RegistrationsFailEnvironmentally:
    """The reference driver, except that every registration fails as a machine that cannot lock
    memory does (207001, allowed by ACL-REG-ENV): the tests about registrations are inconclusive."""

    def __init__(self):
        from checker.drivers.executor import ReferenceDriver

        self.inner = ReferenceDriver()

    def start(self, spec, env):
        self.inner.start(spec, env)

    def call(self, name, args):
        from checker.drivers.protocol import Result

        return Result(207001) if name == "aclrtHostRegisterV2" else self.inner.call(name, args)

    def close(self):
        self.inner.close()


def test_conform_sarif_inconclusive_problems_are_notes(conform_suite):
    path, _ = conform_suite
    code, doc, report = conform_pair(path, "--driver", "tests.test_sarif:RegistrationsFailEnvironmentally")
    assert code == 1 and report["inconclusive"] >= 1
    assert schema_errors(doc) == []
    (run,) = doc["runs"]
    assert run["properties"]["inconclusive"] == report["inconclusive"]
    check_results_match_problems(run, report, path)
    notes = [res for res in run["results"] if res["level"] == "note"]
    assert notes and all("environmental failure" in res["message"]["text"] for res in notes)


class CloseRaises:
    """The reference driver, whose close() raises after releasing everything."""

    def __init__(self):
        from checker.drivers.executor import ReferenceDriver

        self.inner = ReferenceDriver()

    def start(self, spec, env):
        self.inner.start(spec, env)

    def call(self, name, args):
        return self.inner.call(name, args)

    def close(self):
        self.inner.close()
        raise RuntimeError("device busy")


def test_conform_sarif_a_problem_without_a_rule_is_a_runner_rule(conform_suite):
    path, _ = conform_suite
    code, doc, report = conform_pair(path, "--driver", "tests.test_sarif:CloseRaises", "--stop-on-failure")
    assert code == 1 and report["stopped_early"] and report["tests"] == 1
    assert schema_errors(doc) == []
    (run,) = doc["runs"]
    assert run["properties"]["stopped_early"] is True
    check_results_match_problems(run, report, path)
    (res,) = run["results"]
    assert res["ruleId"] == "CONFORM-DRIVER-ERROR" and "device busy" in res["message"]["text"]


@pytest.mark.slow
def test_conform_sarif_generated_suite_is_located_in_the_spec():
    from checker.drivers.pinning import pinning_permitted

    ok, why = pinning_permitted()
    if not ok:
        pytest.skip(f"real pinning is not permitted here: {why}")
    code, out, err = conform("acl", "--depth", "1", "--stop-on-failure", "--driver",
                             "tests.drivers.sloppy:WrongOverlapCode", "--format", "sarif")
    doc = json.loads(out)
    assert code == 1 and err == "" and schema_errors(doc) == []
    (run,) = doc["runs"]
    assert run["properties"]["suite"] == "generated (depth 1)" and run["properties"]["failed"] == 1
    (res,) = run["results"]
    overlap = load_spec("acl").rules["ACL-REG-OVERLAP"]
    loc = res["locations"][0]["physicalLocation"]
    assert res["ruleId"] == "ACL-REG-OVERLAP" and res["level"] == "error"
    assert (loc["artifactLocation"]["uri"], loc["region"]["startLine"]) == (overlap.span.path, overlap.span.line)


def test_conform_sarif_fuzz_phase_that_finds_nothing_is_a_run_property(conform_suite):
    path, n = conform_suite
    code, out, err = conform("acl", "--suite", str(path), "--fuzz", "10", "--fuzz-seed", "3", "--format", "sarif")
    doc = json.loads(out)
    assert code == 0 and err == "" and schema_errors(doc) == [] and uri_problems(doc) == []
    (run,) = doc["runs"]
    assert run["results"] == [] and run["properties"]["passed"] == n
    fuzz = run["properties"]["fuzz"]
    assert (fuzz["max_examples"], fuzz["steps"], fuzz["seed"], fuzz["failure"]) == (10, 30, 3, None)
    assert fuzz["calls"] > 0 and fuzz["seconds"] >= 0


TABLE3 = ("--driver", "tests.mutants.acl:RegistrationTableOfThree", "--fuzz", "100", "--fuzz-steps", "40",
          "--fuzz-seed", "0")  # passes the suite; the fuzz phase fails it (tests/mutants FUZZ_BUDGET)


def test_conform_sarif_fuzz_failure_is_a_result_at_the_written_trace(conform_suite, tmp_path):
    path, n = conform_suite
    trace = tmp_path / "table3.jsonl"
    code, out, err = conform("acl", "--suite", str(path), *TABLE3, "--fuzz-output", str(trace), "--format", "sarif")
    doc = json.loads(out)
    assert code == 1 and err == "" and schema_errors(doc) == [] and uri_problems(doc) == []
    (run,) = doc["runs"]
    assert run["properties"]["failed"] == 0  # the suite passed: the one result is the fuzz phase's
    (res,) = run["results"]
    lines = trace.read_text().splitlines()
    calls = len(lines) - 1  # the header, then one line per call
    fuzz = run["properties"]["fuzz"]
    assert fuzz["failure"]["rule"] == res["ruleId"] == "ACL-GETDEV-EFFECT" and res["level"] == "error"
    assert (fuzz["failure"]["calls"], fuzz["failure"]["trace_file"], fuzz["seed"]) == (calls, str(trace), 0)
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
    assert res["message"]["text"].startswith("fuzz phase (seed 0, 100 sequences of up to 40 calls): "
                                             f"ACL-GETDEV-EFFECT broken after {calls} calls")
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == artifact_uri(str(trace))
    assert json.loads(lines[loc["region"]["startLine"] - 1])["call"] == "aclrtHostGetDevicePointer"
    assert loc["region"]["startLine"] == len(lines)  # the failing call is the shrunk run's last
    rule = load_spec("acl").rules["ACL-GETDEV-EFFECT"]
    (rel,) = res["relatedLocations"]
    assert (rel["physicalLocation"]["artifactLocation"]["uri"], rel["physicalLocation"]["region"]["startLine"]) == (
        rule.span.path, rule.span.line)
    assert res["properties"]["phase"] == "fuzz" and "trace" not in res["properties"]


def test_conform_sarif_fuzz_failure_without_a_trace_file_is_at_the_rule(conform_suite):
    path, _ = conform_suite
    code, out, _ = conform("acl", "--suite", str(path), *TABLE3, "--format", "sarif")
    doc = json.loads(out)
    assert code == 1 and schema_errors(doc) == []
    (res,) = doc["runs"][0]["results"]
    rule = load_spec("acl").rules[res["ruleId"]]
    loc = res["locations"][0]["physicalLocation"]
    assert (loc["artifactLocation"]["uri"], loc["region"]["startLine"]) == (rule.span.path, rule.span.line)
    assert "relatedLocations" not in res
    trace = res["properties"]["trace"].splitlines()  # the log alone replays it
    assert json.loads(trace[0])["spec"] == "acl" and len(trace) - 1 == res["properties"]["calls"]


def test_conform_sarif_bad_input_is_a_notification(tmp_path):
    code, out, err = conform("acl", "--suite", str(tmp_path), "--format", "sarif")
    doc = json.loads(out)
    assert code == 2 and err == "" and schema_errors(doc) == []
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert inv["toolExecutionNotifications"][0]["descriptor"]["id"] == "E0610"
    code, out, _ = conform("acl", "--driver", "no_such_module:f", "--format", "sarif")
    doc = json.loads(out)
    assert code == 2 and schema_errors(doc) == [] and doc["runs"][0]["results"] == []


def test_usage_findings_on_rejected_calls_carry_the_rejected_property(repo_root):
    code, out, _ = replay("--format", "sarif", "traces/acl/probe_getdev_after_failed_register.jsonl")
    doc = json.loads(out)
    assert code == 1 and not schema_errors(doc)
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["ACL-GETDEV-MAPPED", "ACL-UNREG-REGISTERED"]
    assert all(r["properties"] == {"rejected": True} for r in results)
    code, out, _ = replay("--format", "sarif", "traces/acl/bad_getdev_unmapped_succeeds.jsonl")
    assert all("properties" not in r for r in json.loads(out)["runs"][0]["results"])  # the runtime accepted it
    code, out, _ = replay("--format", "sarif", "--ignore-rejected", "traces/acl/probe_getdev_after_failed_register.jsonl")
    assert code == 0 and json.loads(out)["runs"][0]["results"] == []


# ---------------------------------------------------------------- what code scanning needs


def test_every_rule_has_a_name_and_a_help_page_that_exists(corpus_sarif):
    _, doc, _, _ = corpus_sarif
    for run in doc["runs"]:
        for rule in run["tool"]["driver"]["rules"]:
            assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", rule["name"]), rule["name"]
            uri = rule["helpUri"]
            assert uri.startswith("https://") or docs_anchor_exists(uri), uri
        assert "informationUri" not in run["tool"]["driver"]  # no page of regcheck's own is published


def test_a_rule_whose_document_has_no_url_links_its_entry_in_the_sources_page():
    from checker.emit.sarif import rule_descriptor
    spec = load_spec("acl")
    d = rule_descriptor(spec.rules["ACL-REG-OVERLAP"])
    assert d["name"] == "AclRegOverlap"
    assert d["helpUri"] == "docs/sources.md#acl-errcodes" and docs_anchor_exists(d["helpUri"])
    # The help names the document by its title and where to find it, not by a path the user lacks.
    assert "aclError table" in d["help"]["text"] and "see docs/sources.md#acl-errcodes" in d["help"]["text"]
    url_rule = next(r for r in load_spec("cupva").rules.values() if r.source and r.source.location.startswith("https://"))
    assert rule_descriptor(url_rule)["helpUri"] == url_rule.source.location
    assert url_rule.source.location in rule_descriptor(url_rule)["help"]["text"]


def test_every_result_has_a_fingerprint_unique_in_its_run(corpus_sarif):
    _, doc, _, _ = corpus_sarif
    for run in doc["runs"]:
        prints = [r["partialFingerprints"]["regcheck/v1"] for r in run["results"]]
        assert all(re.fullmatch(r"[0-9a-f]{32}", p) for p in prints)
        assert len(set(prints)) == len(prints)


def _fingerprints(results):
    return [r["partialFingerprints"]["regcheck/v1"] for r in sarif_log([], results)["runs"][0]["results"]]


def test_fingerprints_survive_moved_lines_and_changed_addresses():
    before = [("R-A", "error", "usage[R-A]: free: ptr=0x1000 is registered", "t.jsonl", 7, ()),
              ("R-A", "error", "usage[R-A]: free: ptr=0x1000 is registered", "t.jsonl", 9, ()),
              ("R-B", "error", "usage[R-B]: free: ptr=0x1000 is registered", "t.jsonl", 12, ())]
    # Two lines inserted above, another address: the same findings.
    after = [(r, lv, m.replace("0x1000", "0x7f00"), u, ln + 2, rel) for r, lv, m, u, ln, rel in before]
    assert _fingerprints(before) == _fingerprints(after)
    a1, a2, b = _fingerprints(before)
    assert len({a1, a2, b}) == 3  # the second occurrence and another rule are other findings
    elsewhere = [(r, lv, m, "other.jsonl", ln, rel) for r, lv, m, u, ln, rel in before]
    assert not set(_fingerprints(elsewhere)) & {a1, a2, b}
    other_call = [(r, lv, m.replace("free", "munmap"), u, ln, rel) for r, lv, m, u, ln, rel in before]
    assert not set(_fingerprints(other_call)) & {a1, a2, b}
    # A caller can say what identifies a finding instead of its message.
    ctx = [SarifResult("R-A", "error", f"message {i}", "t.jsonl", i, (), None, "free") for i in (1, 2)]
    assert _fingerprints(ctx) == _fingerprints([r._replace(message="other text") for r in ctx])


def test_messages_link_every_related_location(corpus_sarif):
    _, doc, _, _ = corpus_sarif
    linked = 0
    for run in doc["runs"]:
        for res in run["results"]:
            text = res["message"]["text"]
            for rel in res.get("relatedLocations", []):
                assert f"]({rel['id']})" in text, text
                linked += 1
    assert linked > 50
    msg = sarif_log([], [("R", "error", "a [literal](3) bracket", "t.jsonl", 2,
                          [("t.jsonl", 1, "the free [here]")])])["runs"][0]["results"][0]["message"]["text"]
    assert msg == "a \\[literal\\](3) bracket (see [the free \\[here\\]](0))"


def test_a_bundled_spec_says_where_an_installed_regcheck_keeps_it(corpus_sarif, tmp_path, monkeypatch):
    _, doc, _, _ = corpus_sarif
    locs = [r["physicalLocation"]["artifactLocation"] for run in doc["runs"] for res in run["results"]
            for r in res.get("relatedLocations", []) if r["physicalLocation"]["artifactLocation"]["uri"] == "spec/acl.spec"]
    assert locs and all(l["properties"] == {"bundledSpec": "acl", "packageData": "checker/specs/acl.spec"} for l in locs)
    from checker.emit.sarif import bundled_spec_of
    monkeypatch.chdir(tmp_path)
    assert bundled_spec_of("spec/acl.spec") == "acl"  # not here: it can only be the bundled one
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "acl.spec").write_text("spec acl \"my own\"\n")
    assert bundled_spec_of("spec/acl.spec") is None  # the user's own file of that name
    assert bundled_spec_of("spec/mine.spec") is None and bundled_spec_of("other/acl.spec") is None


def test_sources_page_lists_every_source_of_every_bundled_spec(update_golden):
    from checker.emit.sarif import sources_page
    from checker.language.load import bundled_spec_names
    specs = [load_spec(n) for n in bundled_spec_names()]
    page = REPO / "docs" / "sources.md"
    text = sources_page(specs)
    if update_golden:
        page.write_text(text, encoding="utf-8")
    assert page.read_text(encoding="utf-8") == text, "docs/sources.md is out of date: rerun with --update-golden"
    for spec in specs:
        assert spec.sources
        for name, decl in spec.sources.items():
            assert docs_anchor_exists(f"docs/sources.md#{spec.name}-{name}".lower()), (spec.name, name)
            assert decl.title in text and decl.location in text
        for rule in spec.rules.values():
            if rule.cite is not None:
                assert f"`{rule.rule}`" in text


@pytest.mark.parametrize("kind", ["executor", "conform", "property", "invariant", "pinned", "effect", "requires", "usage"])
def test_every_kind_of_rule_has_a_help_page_that_exists(kind):
    from checker.emit.sarif import ToolRule, help_uri
    uri = help_uri(ToolRule("X-1", kind, "checks x", None, None))
    assert docs_anchor_exists(uri), uri


def test_an_input_error_in_sarif_mode_is_a_sarif_log_with_its_place(tmp_path):
    """Found by testing: a directory with no traces printed nothing on stdout in SARIF mode (JSON
    mode printed its error document), and notifications dropped the column."""
    empty = tmp_path / "no-traces"
    empty.mkdir()
    code, out, _ = run_cli("replay", str(empty), "--format", "sarif")
    (note,) = json.loads(out)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert code == 2 and note["descriptor"]["id"] == "T0740" and "locations" not in note
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"regcheck":1,"spec":"acl"}\n{"call":"malloc","args":{"size":1.5}}\n')
    code, out, _ = run_cli("replay", str(bad), "--format", "sarif")
    (note,) = json.loads(out)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 26}
    code, out, _ = run_cli("replay", str(empty), "--format", "json")
    (diag,) = json.loads(out)["error"]["diagnostics"]
    assert code == 2 and (diag["path"], diag["line"], diag["code"]) == (None, 0, "T0740")
