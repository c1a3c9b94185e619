"""The pytest plugin (`pytest --regcheck-spec SPEC --regcheck-driver MODULE:FACTORY`)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(tmp_path, *args, cache=False):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", *([] if cache else ["-p", "no:cacheprovider"]), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def collected(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("regcheck.")]


BUGGY = "tests.mutants.cupva:RegisterInOperational"


@pytest.mark.slow
def test_the_reference_driver_passes_the_generated_suite(tmp_path):
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva")
    assert code == 0, out
    assert " passed" in out and "failed" not in out


@pytest.mark.slow
def test_a_buggy_driver_fails_with_the_rule_it_breaks(tmp_path):
    code, out = run_pytest(tmp_path, "--regcheck-spec", "acl", "--regcheck-driver",
                           "tests.drivers.sloppy:WrongOverlapCode", "-k", "ACL-REG-OVERLAP")
    assert code == 1, out
    assert "expected 507910 [ACL-REG-OVERLAP]; got 507911" in out


def test_the_plugin_is_silent_without_its_options(tmp_path):
    (tmp_path / "test_nothing.py").write_text("def test_one():\n    pass\n")
    code, out = run_pytest(tmp_path)
    assert code == 0 and "1 passed" in out


@pytest.mark.slow
def test_a_written_suite_can_be_used(tmp_path):
    suite = tmp_path / "suite"
    gen = subprocess.run([sys.executable, "-m", "checker.cli", "generate", "cupva", "-o", str(suite)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if gen.returncode != 0:  # the CLI module runs as `regcheck generate`; fall back to the entry point
        gen = subprocess.run(["regcheck", "generate", "cupva", "-o", str(suite)], cwd=ROOT, capture_output=True,
                             text=True, timeout=600)
    assert gen.returncode == 0, gen.stdout + gen.stderr
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--regcheck-suite", str(suite))
    assert code == 0 and " passed" in out, out


def test_k_selects_a_rule_by_its_id_as_written(tmp_path):
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--collect-only", "-k", "PVA-REG-NULL")
    ids = collected(out)
    assert code == 0 and ids, out
    assert all(i.startswith("regcheck.cupva::PVA-REG-NULL::PVA-REG-NULL-") for i in ids), ids
    # The generated module's function names still select the same tests.
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--collect-only", "-k", "test_PVA_REG_NULL")
    assert collected(out) == ids


def test_a_node_id_runs_one_test_and_a_rule_node_id_its_tests(tmp_path):
    (tmp_path / "test_theirs.py").write_text("def test_theirs():\n    pass\n")
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "regcheck.cupva::PVA-REG-NULL::PVA-REG-NULL-1")
    assert code == 0 and "1 passed" in out and "deselected" in out, out
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--collect-only", "regcheck.cupva::PVA-REG-NULL")
    assert collected(out) and all(i.startswith("regcheck.cupva::PVA-REG-NULL::") for i in collected(out)), out
    assert "test_theirs" not in out
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "regcheck.cupva::NO-SUCH-RULE")
    assert code == 4 and "no conformance test or rule regcheck.cupva::NO-SUCH-RULE" in out, out


def test_lf_reruns_only_the_failures(tmp_path):
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--regcheck-driver", BUGGY, "-rf", cache=True)
    failed = sorted(line.split()[1] for line in out.splitlines() if line.startswith("FAILED "))
    assert code == 1 and failed, out
    assert all(f.startswith("regcheck.cupva::") for f in failed)
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--regcheck-driver", BUGGY, "-rf", "--lf", cache=True)
    again = sorted(line.split()[1] for line in out.splitlines() if line.startswith("FAILED "))
    assert code == 1 and again == failed, out
    assert f"{len(failed)} failed" in out and " passed" not in out, out


def test_junit_names_are_the_rule_and_the_test(tmp_path):
    import xml.etree.ElementTree as ET
    # An option's value that looks like a suite name is left alone.
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "-k", "PVA-REG-NULL", "--junitxml", "regcheck.xml")
    assert code == 0 and (tmp_path / "regcheck.xml").exists(), out
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "-k", "PVA-REG-NULL", "--junitxml", "out.xml")
    assert code == 0, out
    cases = ET.parse(tmp_path / "out.xml").getroot().iter("testcase")
    names = [(c.get("classname"), c.get("name")) for c in cases]
    assert names and all(cls == "regcheck.cupva.PVA-REG-NULL" and name.startswith("PVA-REG-NULL-") for cls, name in names)


def test_an_unimportable_driver_is_one_usage_error(tmp_path):
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--regcheck-driver", "no_such_module:make")
    assert code == 4, out  # pytest's usage error, before any test runs
    assert "--regcheck-driver" in out and "cannot load driver factory 'no_such_module:make'" in out, out
    assert "failed" not in out and "passed" not in out
    code, out = run_pytest(tmp_path, "--regcheck-spec", "no-such-spec")
    assert code == 4 and "unknown spec 'no-such-spec'" in out, out


HEADER = {"regcheck": 1, "spec": "cupva", "env": {"driver_version": 2006, "qnx_safety": False},
          "meta": {"test": "PVA-REG-EFFECT-1", "rule": "PVA-REG-EFFECT"}}
EVENTS = [{"call": "cudaMalloc", "args": {"size": 16384}, "out": {"devPtr": 1048576}},
          {"call": "cupva::mem::Register", "args": {"ptr": 1048576, "size": 4096, "externalAllocType": "CUDA"},
           "ret": "ok", "expect": {"rule": "PVA-REG-EFFECT", "outcome": "success"}}]


def test_a_suite_for_another_spec_is_one_usage_error(tmp_path):
    """Found by testing: --regcheck-spec acl with a cupva suite collected the cupva tests, where
    `regcheck conform acl --suite DIR` refuses the suite (T0736)."""
    suite = tmp_path / "suite-cupva"
    suite.mkdir()
    (suite / "PVA-REG-EFFECT-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in [HEADER, *EVENTS]))
    index = {"regcheck_suite": 1, "spec": "cupva", "tests": [{"file": "PVA-REG-EFFECT-1.jsonl"}]}
    (suite / "suite.json").write_text(json.dumps(index))
    code, out = run_pytest(tmp_path, "--regcheck-spec", "cupva", "--regcheck-suite", str(suite), "--collect-only")
    assert code == 0 and collected(out) == ["regcheck.cupva::PVA-REG-EFFECT::PVA-REG-EFFECT-1"], out
    code, out = run_pytest(tmp_path, "--regcheck-spec", "acl", "--regcheck-suite", str(suite), "--collect-only")
    assert code == 4 and "T0736: the suite in " in out and "is for spec 'cupva', not 'acl'" in out, out
    assert not collected(out)


@pytest.mark.slow
def test_a_spec_given_by_path_is_named_by_its_declared_name(tmp_path):
    """Found by testing: `--regcheck-spec ../specs/my.spec` gave node IDs `../regcheck.../specs/my::...`
    and JUnit classnames `regcheck....specs.my.RULE` where `regcheck conform` writes `regcheck.cupva.RULE`,
    and the IDs pytest printed could not be passed back to it."""
    import xml.etree.ElementTree as ET
    (tmp_path / "specs").mkdir()
    shutil.copy(ROOT / "spec" / "cupva.spec", tmp_path / "specs" / "my.spec")  # declares `spec cupva`
    proj = tmp_path / "proj"
    proj.mkdir()
    args = ("--regcheck-spec", "../specs/my.spec", "--regcheck-driver", BUGGY)
    code, out = run_pytest(proj, *args, "-rf", "--junitxml", "out.xml")
    failed = [line.split()[1] for line in out.splitlines() if line.startswith("FAILED ")]
    assert code == 1 and failed, out
    # pytest shows a node ID from the folder it runs in: the spec's folder moved the rootdir up one.
    assert all(f.startswith(("regcheck.cupva::", "../regcheck.cupva::")) for f in failed), failed
    classnames = {c.get("classname") for c in ET.parse(proj / "out.xml").getroot().iter("testcase")}
    assert classnames and all(c.startswith("regcheck.cupva.") for c in classnames), classnames
    code, out = run_pytest(proj, *args, failed[0])  # an ID as printed runs again
    assert code == 1 and "1 failed" in out and "deselected" in out, out


UNDRIVEN_SPEC = """spec undriven "a spec no driver here implements"
source DOC "none" "doc"
status int success 0
record Rec { size: u64 }
table recs: addr -> Rec sized by size
call poke(c: addr, s: u64) {
  fails UNDRIVEN-DUP: 2 when c in recs
    cite DOC "dup"
  effect UNDRIVEN-EFFECT: { recs[c] = { size: s } }
    cite DOC "eff"
}
"""


def test_a_driver_that_does_not_implement_the_spec_is_one_usage_error(tmp_path):
    """Found by testing: each test failed with an ~840-line traceback of the RegcheckError (X0807)
    that `regcheck conform` reports as one error (exit 2)."""
    (tmp_path / "undriven.spec").write_text(UNDRIVEN_SPEC)
    code, out = run_pytest(tmp_path, "--regcheck-spec", "undriven.spec")
    assert code == 4, out  # pytest's usage error
    assert "regcheck: X0807: the reference driver implements the specs" in out and "not 'undriven'" in out, out
    assert "Traceback" not in out and "RegcheckError" not in out and len(out.splitlines()) < 10, out
