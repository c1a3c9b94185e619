"""`regcheck check`, `rules` and `explain`, run in-process: output, JSON shape, exit codes.

Golden diagnostics: each tests/golden/diagnostics/NN_name.spec is a malformed snippet, and
NN_name.expect is exactly what `regcheck check tests/golden/diagnostics/NN_name.spec` prints (stderr,
then stdout). `pytest --update-golden` rewrites the .expect files from the current output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from checker.language.load import load_spec
from tests.helpers import run_cli

GOLDEN = Path(__file__).resolve().parent / "golden" / "diagnostics"
SNIPPETS = sorted(GOLDEN.glob("*.spec"))
DIAG_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning)\[(?P<code>[EW]\d{4})\]: ")


run = run_cli  # `regcheck ARGV...` in this process: (exit code, stdout, stderr)


# ---------------------------------------------------------------- golden diagnostics

def test_enough_golden_snippets():
    assert len(SNIPPETS) >= 15
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+\.spec", p.name) for p in SNIPPETS)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.stem)
def test_golden_diagnostics(snippet, repo_root, update_golden):
    rel = snippet.relative_to(repo_root).as_posix()
    code, out, err = run("check", rel)
    text = err + out
    assert code == 1, text
    assert "Traceback" not in text
    assert any(DIAG_LINE.match(line) and "error[" in line for line in text.splitlines()), text
    expect = snippet.with_suffix(".expect")
    if update_golden:
        expect.write_text(text, encoding="utf-8")
    assert expect.exists(), f"missing {expect.name}: run pytest --update-golden"
    assert text == expect.read_text(encoding="utf-8")


def test_every_expect_file_has_its_snippet():
    assert {p.stem for p in GOLDEN.glob("*.expect")} == {p.stem for p in SNIPPETS}


def test_golden_snippets_cover_the_diagnostic_groups(repo_root):
    found = set()
    for snippet in SNIPPETS:
        found |= set(re.findall(r"\[([EW]\d{4})\]", snippet.with_suffix(".expect").read_text(encoding="utf-8")))
    for code in ("E0101", "E0102", "E0103", "E0201", "E0202", "E0203", "E0205", "E0206", "E0207", "E0208",
                 "E0301", "E0302", "E0303", "E0401", "E0402", "E0403", "E0404", "E0405"):
        assert code in found, code


def test_several_errors_in_one_file_are_reported_at_once(repo_root):
    code, out, err = run("check", "tests/golden/diagnostics/22_several_errors.spec")
    errors = [line for line in err.splitlines() if DIAG_LINE.match(line) and "error[" in line]
    assert code == 1 and len(errors) >= 5
    assert out.strip().endswith(f"{len(errors)} errors")


# ---------------------------------------------------------------- check

def test_check_bundled_specs_by_path(repo_root):
    code, out, err = run("check", "spec/acl.spec", "spec/cupva.spec")
    assert (code, err) == (0, "")
    for name, line in zip(("acl", "cupva"), out.splitlines()):
        spec = load_spec(name)
        assert line == (f"spec/{name}.spec: ok: spec {name}, {len(spec.calls)} calls, {len(spec.rules)} rules, "
                        f"{len(spec.invariants)} invariants")


def test_check_bundled_spec_by_name():
    code, out, _ = run("check", "acl")
    assert code == 0 and out.startswith("spec/acl.spec: ok: spec acl,")


def test_check_json_shape(repo_root):
    bad = "tests/golden/diagnostics/11_duplicate_rule_id.spec"
    code, out, err = run("check", "--format", "json", "acl", bad)
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"specs", "exit"} and doc["exit"] == 1
    ok, broken = doc["specs"]
    assert ok == {"spec": "acl", "path": "spec/acl.spec", "ok": True, "rules": len(load_spec("acl").rules),
                  "diagnostics": []}
    assert broken["ok"] is False and broken["rules"] == 0 and broken["path"] == bad
    for d in broken["diagnostics"]:
        assert {"path", "line", "column", "severity", "code", "message"} <= set(d)
        assert d["severity"] in ("error", "warning") and re.fullmatch(r"[EW]\d{4}", d["code"])
    dup = next(d for d in broken["diagnostics"] if d["code"] == "E0401")
    assert (dup["line"], dup["column"]) == (10, 3)
    assert dup["notes"] == [{"message": "first used here", "path": bad, "line": 6, "column": 3}]


def test_check_exit_2_for_a_missing_file(repo_root):
    code, out, err = run("check", "no/such.spec")
    assert code == 2
    assert "error[E0601]: cannot read spec 'no/such.spec'" in err
    assert "Traceback" not in err + out


def test_check_exit_2_for_an_unknown_bundled_name():
    code, out, err = run("check", "nosuch")
    assert code == 2 and "error[E0601]: unknown spec 'nosuch' (bundled specs: acl, cuda, cupva, hip" in err


def test_check_worst_exit_code_wins(repo_root):
    assert run("check", "acl", "tests/golden/diagnostics/07_unknown_name.spec")[0] == 1
    assert run("check", "tests/golden/diagnostics/07_unknown_name.spec", "nosuch")[0] == 2
    code, out, _ = run("check", "--format", "json", "nosuch")
    assert code == 2 and json.loads(out)["specs"][0]["diagnostics"][0]["code"] == "E0601"


def test_check_not_utf8(tmp_path):
    p = tmp_path / "latin1.spec"
    p.write_bytes('spec x "caf\xe9"\n'.encode("latin-1"))
    code, _, err = run("check", str(p))
    assert code == 2 and "error[E0602]: spec is not UTF-8" in err


def test_check_werror(tmp_path):
    p = tmp_path / "warn.spec"
    p.write_text('spec w "warnings only"\nsource DOC "d" "never cited"\nstatus int success 0\n')
    code, out, err = run("check", str(p))
    assert code == 0 and "warning[W0501]" in err and out.strip().endswith("ok: spec w, 0 calls, 0 rules, 0 invariants, 1 warnings")
    assert run("check", "--werror", str(p))[0] == 1


def test_usage_errors_exit_2():
    code, _, err = run("check")
    assert code == 2 and "the following arguments are required: SPEC" in err
    assert run("check", "--format", "yaml", "acl")[0] == 2
    assert run()[0] == 2
    assert run("no-such-command")[0] == 2


# ---------------------------------------------------------------- rules

@pytest.mark.parametrize("name", ["acl", "cupva"])
def test_rules_lists_every_rule_with_its_citation(name):
    spec = load_spec(name)
    code, out, err = run("rules", name)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[-1] == f"{len(spec.rules)} rules in spec {name}"
    listed = [line.split()[0] for line in lines[:-1] if not line.startswith(" ")]
    assert listed == list(spec.rules)
    assert sum("cites " in line for line in lines) == len(spec.rules)


def test_rules_kind_filter_and_json():
    code, out, _ = run("rules", "cupva", "--kind", "usage", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["spec"] == "cupva"
    assert [r["rule"] for r in doc["rules"]] == ["PVA-REG-THREAD-SAFETY", "PVA-REG-API-GROUP",
                                                  "PVA-UNREG-THREAD-SAFETY", "PVA-UNREG-API-GROUP"]
    for r in doc["rules"]:
        assert {"rule", "spec", "kind", "call", "clause", "location", "source", "document", "document_title",
                "cites"} <= set(r)
        assert r["kind"] == "usage" and r["source"] and r["document"] and r["cites"]
        assert re.fullmatch(r"spec/cupva\.spec:\d+", r["location"])


def test_rules_unknown_spec_exit_2():
    code, out, err = run("rules", "nosuch")
    assert code == 2 and "E0601" in err
    code, out, _ = run("rules", "nosuch", "--format", "json")
    assert code == 2 and json.loads(out)["error"]["diagnostics"][0]["code"] == "E0601"


# ---------------------------------------------------------------- explain

def test_explain_text():
    code, out, err = run("explain", "ACL-REG-ALIGN")
    assert (code, err) == (0, "")
    line = load_spec("acl").rules["ACL-REG-ALIGN"].span.line
    assert out.splitlines()[:3] == [
        "ACL-REG-ALIGN (undefined, spec acl, aclrtHostRegisterV2)",
        "  clause:   requires ACL-REG-ALIGN: ptr == 0 or ptr % PAGE == 0 undefined",
        f"  defined:  spec/acl.spec:{line}",
    ]
    assert "seeds/001_8b884f9a7c0d2d5e.txt" in out and "4 KB page boundary" in out


def test_explain_json_and_spec_choice():
    code, out, _ = run("explain", "PVA-REG-OVERLAP", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and (doc["rule"], doc["spec"], doc["kind"], doc["call"]) == (
        "PVA-REG-OVERLAP", "cupva", "fails", "cupva::mem::Register")
    assert doc["source"] == "REGISTER" and doc["document"] == "seeds/000_339102bb872a19cd.txt"


def test_explain_shows_every_spec_that_has_the_rule():
    """Found by testing: without --spec only acl's ENV-MALLOC-FRESH was shown, though four bundled
    specs define it, each with its own clause and line."""
    having = [name for name in ("acl", "cuda", "cupva", "hip") if "ENV-MALLOC-FRESH" in load_spec(name).rules]
    assert len(having) > 1
    code, out, err = run("explain", "ENV-MALLOC-FRESH")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"ENV-MALLOC-FRESH is in {len(having)} specs: {', '.join(having)}"
    heads = [line for line in out.splitlines() if line.startswith("ENV-MALLOC-FRESH (")]
    assert heads == [f"ENV-MALLOC-FRESH (ensures, spec {name}, malloc)" for name in having]
    for name in having:
        assert f"  defined:  spec/{name}.spec:{load_spec(name).rules['ENV-MALLOC-FRESH'].span.line}" in out
    code, out, _ = run("explain", "ENV-MALLOC-FRESH", "--format", "json")
    assert code == 0 and [d["spec"] for d in json.loads(out)] == having  # a list when several
    code, out, _ = run("explain", "ENV-MALLOC-FRESH", "--spec", "hip", "--spec", "acl", "--format", "json")
    assert code == 0 and [d["spec"] for d in json.loads(out)] == ["hip", "acl"]  # in the order asked
    code, out, _ = run("explain", "ENV-MALLOC-FRESH", "--spec", "hip")
    assert code == 0 and out.splitlines()[0] == "ENV-MALLOC-FRESH (ensures, spec hip, malloc)"  # one: as before


def test_explain_unknown_rule_exit_2():
    code, _, err = run("explain", "NO-SUCH-RULE")
    assert code == 2 and "error[E0601]: no rule 'NO-SUCH-RULE'" in err
    assert run("explain", "ACL-REG-ALIGN", "--spec", "cupva")[0] == 2
