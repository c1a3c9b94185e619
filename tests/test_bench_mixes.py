"""bench/gen_mixes.py keeps the promises its workloads are named by.

Issue 14 asks for a register-heavy trace with about 4,000 allocations live and a large one with
100,000 live registrations. Before stop 23 the churn drew register or unregister at random with
unregistering favoured, so the live count drained to a few dozen early in the trace and the
benchmark measured small tables under those names. These tests count the live registrations
after every event of a generated trace, and replay it to check that it conforms.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from checker.engines.replay import replay_trace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from gen_mixes import double_unregister, live_churn, register_heavy  # noqa: E402


def live_counts(path: Path) -> list[int]:
    """The number of registered ranges after each event line."""
    live: set[int] = set()
    counts = []
    with open(path, "rb") as f:
        next(f)  # the header
        for raw in f:
            ev = orjson.loads(raw)
            if ev["call"] == "aclrtHostRegisterV2" and ev.get("ret", 0) == 0:
                live.add(ev["args"]["ptr"])
            elif ev["call"] == "aclrtHostUnregister" and ev.get("ret", 0) == 0:
                live.discard(ev["args"]["ptr"])
            counts.append(len(live))
    return counts


@pytest.mark.parametrize("live", [2, 50, 300])
def test_the_churn_keeps_the_live_count_it_was_given(tmp_path, live):
    path = tmp_path / "churn.jsonl"
    events = live_churn(str(path), 2 * live + 4_000, live=live)
    counts = live_counts(path)
    assert len(counts) == events
    setup = 2 * live  # a malloc and a register per allocation
    assert counts[setup - 1] == live
    assert set(counts[setup:]) <= {live - 1, live}
    report = replay_trace(str(path))
    assert report.events == events and not report.findings


def test_register_heavy_keeps_about_4000_live(tmp_path):
    path = tmp_path / "heavy.jsonl"
    register_heavy(str(path), 30_000)
    counts = live_counts(path)
    assert min(counts[8_000:]) >= 3_999 and max(counts) == 4_000
    # mostly churn: the registrations and unregistrations after the set-up
    assert sum(1 for a, b in zip(counts[8_000:], counts[8_001:]) if a != b) > 15_000


def test_double_unregister_is_register_heavy_with_one_finding_per_repeat(tmp_path):
    """bench_findings.py's trace: the same churn as register-heavy up to the first repeated
    unregister, then a finding at each repeat, naming the unregister just before it."""
    clean, buggy = tmp_path / "clean.jsonl", tmp_path / "buggy.jsonl"
    register_heavy(str(clean), 12_000)
    double_unregister(str(buggy), 12_000, every=7)
    with open(buggy, "rb") as f:
        lines = f.read().splitlines()
    repeats = [n for n, line in enumerate(lines, 1) if orjson.loads(line).get("ret") == 507911]  # line numbers
    assert len(repeats) > 100
    with open(clean, "rb") as f:
        assert f.read().splitlines()[:repeats[0] - 1] == lines[:repeats[0] - 1]
    report = replay_trace(str(buggy))
    assert [(f.line, f.rule, f.related) for f in report.findings] == \
        [(n, "ACL-UNREG-REGISTERED", (n - 1,)) for n in repeats]


def test_a_large_registration_adds_its_two_lines_and_nothing_else(tmp_path):
    """bench_live_sweep.py --large: the same churn after one large allocation and its registration,
    which stay for the whole trace (the trace conforms)."""
    plain, large = tmp_path / "plain.jsonl", tmp_path / "large.jsonl"
    live_churn(str(plain), 3_000, live=300)
    live_churn(str(large), 3_002, live=300, large=2**30)
    plain_lines, large_lines = plain.read_bytes().splitlines(), large.read_bytes().splitlines()
    def untimed(lines):  # (the writer's timestamps count the events: two more before each)
        return [{k: v for k, v in orjson.loads(line).items() if k not in ("t0", "t1")} for line in lines]
    assert large_lines[0] == plain_lines[0] and untimed(large_lines[3:]) == untimed(plain_lines[1:])
    assert [orjson.loads(line)["call"] for line in large_lines[1:3]] == ["malloc", "aclrtHostRegisterV2"]
    report = replay_trace(str(large))
    assert report.events == 3_002 and not report.findings
