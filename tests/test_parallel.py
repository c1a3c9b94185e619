"""Replaying a corpus (checker/engines/parallel.py, `regcheck replay -j N`, `--dask ADDRESS`), the aggregate
report, corpus expansion and progress bars (checker/cli/progress.py)."""

from __future__ import annotations

import io
import json
import shutil
import socket
from pathlib import Path

import pytest

from checker.engines import parallel
from checker.cli import main
from checker.engines.parallel import CorpusReport, replay_corpus, replay_one
from checker.cli.progress import QuietBar, progress_bar
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent


def replay(*argv: str) -> tuple[int, str, str]:
    return run_cli("replay", *argv)


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    """The bundled traces of both specs plus one unreadable trace, under relative paths."""
    monkeypatch.chdir(tmp_path)
    for spec in ("acl", "cupva"):
        shutil.copytree(REPO / "traces" / spec, tmp_path / "traces" / spec, ignore=shutil.ignore_patterns("*.expect", "*.md"))
    (tmp_path / "traces" / "acl" / "zz_broken.jsonl").write_text('{"regcheck":1,"spec":"acl"}\n{"call":"mmap"}\n')
    return sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "traces").glob("*/*.jsonl"))


@pytest.mark.slow
def test_jobs_2_gives_the_same_report_as_jobs_1(corpus):
    one = replay("--format", "json", "traces/acl", "traces/cupva")
    two = replay("--format", "json", "-j", "2", "traces/acl", "traces/cupva")
    assert one[0] == two[0] == 2  # the broken trace makes it an input error
    assert json.loads(one[1]) == json.loads(two[1])
    doc = json.loads(two[1])
    assert [t["trace"] for t in doc["traces"]] + [e["trace"] for e in doc["errors"]] == \
        [p for p in corpus if "zz_broken" not in p] + ["traces/acl/zz_broken.jsonl"]
    text1, text2 = replay("traces/acl", "-j", "1"), replay("traces/acl", "-j", "3")
    assert text1 == text2


@pytest.mark.slow
def test_outcomes_keep_the_given_order(corpus):
    paths = list(reversed(corpus))
    seen = []
    out = replay_corpus(paths, jobs=2, on_done=seen.append)
    assert [o.path for o in out] == paths
    assert sorted(o.path for o in seen) == sorted(paths)
    assert out == [replay_one(p) for p in paths]


def test_aggregate_counts_findings_by_rule(corpus):
    doc = json.loads(replay("--format", "json", "traces/acl", "traces/cupva")[1])
    expected: dict[tuple[str, str], list] = {}
    for t in doc["traces"]:
        for f in t["findings"]:
            entry = expected.setdefault((f["rule"], f["kind"]), [0, set()])
            entry[0] += 1
            entry[1].add(t["trace"])
    got = {(c["rule"], c["kind"]): (c["findings"], c["traces"]) for c in doc["findings_by_rule"]}
    assert got == {k: (n, len(ts)) for k, (n, ts) in expected.items()}
    counts = [c["findings"] for c in doc["findings_by_rule"]]
    assert counts == sorted(counts, reverse=True)
    s = doc["summary"]
    assert (s["traces"], s["unreadable"]) == (len(corpus), 1)
    assert s["conform"] + s["violate"] == len(doc["traces"])
    assert s["violate"] == sum(t["verdict"] == "violates" for t in doc["traces"])
    assert s["events"] == sum(t["events"] for t in doc["traces"])


def test_text_report_lists_findings_by_rule(corpus):
    code, out, err = replay("traces/cupva")
    lines = out.splitlines()
    start = lines.index("findings by rule:")
    n = len(list(Path("traces/cupva").glob("*.jsonl")))
    assert lines[-1].startswith(f"{n} traces: ")
    rows = lines[start + 1:-1]
    assert rows and all(row.startswith("  ") for row in rows)
    assert any(row.split()[0] == "PVA-FREE-REGISTERED" and row.split()[1] == "usage" for row in rows)


def test_glob_patterns(corpus):
    code, out, _ = replay("--format", "json", "traces/*/ok_*.jsonl")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "conforms"
    assert [t["trace"] for t in doc["traces"]] == [p for p in corpus if "/ok_" in p]
    code, out, err = replay("traces/**/nothing_*.jsonl")
    assert code == 2 and out == "" and "error[T0740]" in err and "nothing_" in err


def test_empty_directory_is_an_input_error(tmp_path):
    code, out, err = replay(str(tmp_path))
    assert code == 2 and "error[T0740]" in err


def test_jobs_and_dask_exclude_each_other(corpus):
    code, _, err = replay("-j", "2", "--dask", "tcp://127.0.0.1:1", "traces/acl")
    assert code == 2 and "not allowed with" in err
    code, _, err = replay("-j", "0", "traces/acl")
    assert code == 2 and "must be at least 1" in err


# ---------------------------------------------------------------- Dask


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_report(corpus):
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed (the test extra has it)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        code, out, err = replay("--format", "json", "--dask", cluster.scheduler_address, "traces/acl", "traces/cupva")
    assert err == ""
    local = replay("--format", "json", "traces/acl", "traces/cupva")
    assert code == local[0] == 2
    assert json.loads(out) == json.loads(local[1])  # relative paths as given, though workers got absolute ones


@pytest.mark.slow
def test_dask_unreachable_scheduler(corpus, monkeypatch):
    pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed (the test extra has it)")
    monkeypatch.setattr(parallel, "DASK_CONNECT_TIMEOUT_S", 2)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = replay("--dask", f"tcp://127.0.0.1:{port}", "traces/acl")
    assert code == 2 and "error[X0821]" in err and "Traceback" not in err


def test_dask_missing_is_reported(corpus, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_dask(name, *a, **kw):
        if name.startswith("dask"):
            raise ImportError(name)
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_dask)
    code, _, err = replay("--dask", "tcp://127.0.0.1:1", "traces/acl")
    assert code == 2 and "error[X0820]" in err and "regcheck[dask]" in err


# ---------------------------------------------------------------- the aggregate and progress


def test_corpus_report_verdicts(corpus):
    outcomes = replay_corpus([p for p in corpus if "/ok_" in p][:3])
    assert CorpusReport(tuple(outcomes)).verdict == "conforms"
    bad = replay_corpus([p for p in corpus if "/bad_" in p][:2])
    assert CorpusReport(tuple(outcomes + bad)).verdict == "violates"
    broken = replay_corpus(["traces/acl/zz_broken.jsonl"])
    assert broken[0].verdict == "error" and broken[0].diagnostics[0].code == "T0730"
    assert CorpusReport(tuple(outcomes + bad + broken)).verdict == "error"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_quiet_off_a_terminal():
    stream = io.StringIO()
    with progress_bar(stream, 3, "replaying") as bar:
        assert isinstance(bar, QuietBar)
        bar.advance()
    assert stream.getvalue() == ""
    with progress_bar(None, None, "x") as bar:
        assert isinstance(bar, QuietBar)


def test_progress_draws_on_a_terminal():
    stream = _Terminal()
    with progress_bar(stream, 3, "replaying") as bar:
        for _ in range(3):
            bar.advance()
    assert "replaying" in stream.getvalue()


def test_replay_cli_draws_progress_only_on_a_terminal(corpus):
    out, err = io.StringIO(), _Terminal()
    main(["replay", "traces/cupva"], stdout=out, stderr=err)
    assert "replaying" in err.getvalue() and "replaying" not in out.getvalue()
    _, _, plain_err = replay("traces/cupva")
    assert plain_err == ""


def test_spec_file_option_in_parallel(corpus, tmp_path):
    (tmp_path / "specs").mkdir()
    shutil.copy(REPO / "spec" / "acl.spec", tmp_path / "specs" / "acl.spec")
    args = ("--spec", "specs/acl.spec", "traces/acl/probe_double_register_rejected.jsonl", "traces/acl/bad_double_free.jsonl")
    one = replay("--format", "json", *args)
    two = replay("--format", "json", "-j", "2", *args)
    assert one[0] == two[0] == 1 and json.loads(one[1]) == json.loads(two[1])
    sarif = json.loads(replay("--format", "sarif", "-j", "2", *args)[1])
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert rules[0]["properties"]["definedAt"].startswith("specs/acl.spec:")  # as the user named it


def test_workers_inherit_each_configurations_compiled_fast_path(tmp_path, monkeypatch):
    """Before forking, each distinct (spec, configuration) of the corpus is compiled once."""
    compiled = []
    monkeypatch.setattr(parallel, "precompile", lambda sem: compiled.append((sem.spec.name, dict(sem.config))))
    traces = []
    for i, kernel in enumerate(["5.10", "6.6", "6.6"]):
        path = tmp_path / f"t{i}.jsonl"
        path.write_text(json.dumps({"regcheck": 1, "spec": "acl", "env": {"os_kernel": kernel}}) + "\n")
        traces.append(str(path))
    (tmp_path / "bad.jsonl").write_text("not a header\n")
    parallel._preload([str(tmp_path / "bad.jsonl"), *traces], None)
    assert [(name, config["os_kernel"]) for name, config in compiled] == [("acl", (5, 10)), ("acl", (6, 6))]


def test_a_traces_spec_is_worked_out_once(tmp_path, monkeypatch):
    """replay_one finds the header's spec (`header_spec_ref`) once and names it from that (it was
    worked out again, per trace, to name it)."""
    asked = []
    monkeypatch.setattr(parallel, "header_spec_ref", lambda header, path: asked.append(path) or header.spec)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"regcheck":1,"spec":"acl"}\n')
    outcome = replay_one(str(trace), display="t.jsonl")
    assert (outcome.verdict, outcome.spec_ref, asked) == ("conforms", "acl", [str(trace)])


DIES_ON = ""  # the trace whose worker dies in the next test (set before the workers fork)


def _dies_on_one(path, *args):
    import os
    if DIES_ON and path.endswith(DIES_ON):
        os._exit(9)  # as the OOM killer would leave it: no exception, the process gone
    return replay_one(path, *args)


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_a_worker_that_dies_is_an_error_naming_the_traces_not_replayed(corpus, monkeypatch):
    """Found by testing: a killed worker was a BrokenProcessPool traceback (exit 3)."""
    import sys
    from checker.language.diagnostics import RegcheckError
    monkeypatch.setattr(sys.modules[__name__], "DIES_ON", corpus[1])
    monkeypatch.setattr(parallel, "replay_one", _dies_on_one)
    with pytest.raises(RegcheckError) as err:
        replay_corpus(corpus, jobs=2)
    (d,) = err.value.diagnostics
    assert d.code == "X0823" and "traces not replayed" in d.message


def test_a_trace_named_twice_is_replayed_once(corpus):
    """Found by testing: `-` twice read standard input twice, and a directory with a pattern naming
    the same files replayed each twice."""
    from checker.cli.replay import expand_traces
    twice = expand_traces(["-", "traces/acl", "traces/acl/*.jsonl", "-", "./" + corpus[0]])
    assert twice.count("-") == 1 and len(twice) == 1 + len([p for p in corpus if p.startswith("traces/acl/")])


BESIDE_SPEC = """spec beside "a spec file a trace header names"
source DOC "none" "doc"
status int success 0
record Rec { size: u64 }
table recs: addr -> Rec sized by size
call poke(c: addr, s: u64) {
  fails BESIDE-DUP: 2 when c in recs
    cite DOC "dup"
  effect BESIDE-EFFECT: { recs[c] = { size: s } }
    cite DOC "eff"
}
"""


def test_jobs_2_names_spec_files_as_jobs_1_does(tmp_path, monkeypatch):
    """Found by testing: with -j 2 a spec file named by a trace header, or by --spec, showed in the
    findings' notes and in SARIF as the absolute path the workers opened."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corp").mkdir()
    (tmp_path / "corp" / "beside.spec").write_text(BESIDE_SPEC)
    poke = json.dumps({"call": "poke", "args": {"c": "0x1000", "s": 16}, "ret": 0})
    for name in ("a", "b"):
        (tmp_path / "corp" / f"{name}.jsonl").write_text(f'{{"regcheck":1,"spec":"beside.spec"}}\n{poke}\n{poke}\n')
    for args in (("corp",), ("--spec", "corp/beside.spec", "corp")):
        for fmt in ("text", "json", "sarif"):
            one = replay("--format", fmt, *args)
            two = replay("--format", fmt, "-j", "2", *args)
            assert one == two and str(tmp_path) not in two[1], (args, fmt)
        assert "note: corp/beside.spec:7: fails BESIDE-DUP" in replay("-j", "2", *args)[1]


def test_jobs_2_names_a_missing_spec_file_as_jobs_1_does(tmp_path, monkeypatch):
    """Found by testing: the error for a header's spec file that cannot be read named the absolute
    path a worker opened, in its message."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corp").mkdir()
    for name in ("a", "b"):
        (tmp_path / "corp" / f"{name}.jsonl").write_text('{"regcheck":1,"spec":"missing.spec"}\n')
    one, two = replay("--format", "json", "corp"), replay("--format", "json", "-j", "2", "corp")
    assert one == two and str(tmp_path) not in two[1]
    (diag,) = json.loads(one[1])["errors"][0]["diagnostics"]
    assert (diag["path"], diag["line"]) == ("corp/a.jsonl", 1) and "'corp/missing.spec'" in diag["message"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_users_value_that_reads_like_an_opened_path_is_left_as_written(tmp_path, monkeypatch, jobs):
    """The reader and the spec loader are given the names shown, so nothing is renamed afterwards.
    Found by review: -j 2 renamed paths by rewriting the messages' text, so a value of the user's
    quoted in a message that reads like a path a worker opened (here a parameter named by the spec
    file's absolute path) was rewritten too, and -j 1 and -j 2 disagreed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corp").mkdir()
    (tmp_path / "corp" / "beside.spec").write_text(BESIDE_SPEC)
    opened = str(tmp_path / "corp" / "beside.spec")  # what a worker opens for corp/beside.spec
    header = json.dumps({"regcheck": 1, "spec": "beside.spec", "env": {opened: 1}})
    for name in ("a", "b"):
        (tmp_path / "corp" / f"{name}.jsonl").write_text(header + "\n")
    code, out, _ = replay("--format", "json", "-j", jobs, "corp")
    diags = [d for e in json.loads(out)["errors"] for d in e["diagnostics"]]
    assert code == 2 and [(d["code"], d["path"]) for d in diags] == [("T0720", f"corp/{n}.jsonl") for n in "ab"]
    assert all(d["message"].startswith(f"unknown parameter '{opened}' for spec beside") for d in diags)
