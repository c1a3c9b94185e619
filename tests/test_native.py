"""checker._native, the optional C module: whole replays give the same results with and without it.

tests/test_table_index.py compares its tables with the pure-Python ones operation by operation,
tests/test_replay.py its `remember`; here whole traces (the corpus, benchmark mixes small enough
for the tables' plain-list index and large enough for their SortedList one) are replayed in two
processes, one with REGCHECK_PURE_PYTHON=1, and everything the replay leaves must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checker.cli import main
from checker.model.state import NATIVE

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from gen_trace import generate  # noqa: E402

needs_native = pytest.mark.skipif(NATIVE is None, reason="checker._native is not built (no C compiler or Python headers at install)")

# Each trace through the fast path (tests.helpers.outcome: the report, notes, state and
# related-line memory), in a child process that imports checker afresh.
REPLAY_ALL = """
import json, sys
from checker.model.state import NATIVE
from tests.helpers import outcome
runs = [repr(outcome(open(path, "rb").read(), True)) for path in sys.argv[1:]]
print(json.dumps({"native": NATIVE is not None, "runs": runs}))
"""


def replay_all(paths: list[str], pure: bool) -> dict:
    env = dict(os.environ)
    env.pop("REGCHECK_PURE_PYTHON", None)
    if pure:
        env["REGCHECK_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-c", REPLAY_ALL, *paths], env=env, capture_output=True, text=True,
                          timeout=600, check=True, cwd=REPO)
    return json.loads(done.stdout)


@pytest.mark.slow
@needs_native
def test_whole_replays_are_the_same_with_and_without_the_c_module(tmp_path):
    small, large = tmp_path / "mix.jsonl", tmp_path / "many-live.jsonl"
    generate(str(small), 20_000, live=200, seed=3)
    generate(str(large), 12_000, live=3_000, seed=4)  # past 2,048 live entries: the SortedList index
    lines = small.read_bytes().splitlines(keepends=True)
    lines.insert(500, b'{"call":"aclrtHostUnregister","args":{"ptr":4096},"ret":0}\n')  # a finding midway
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines))
    paths = [str(p) for p in sorted((REPO / "traces").rglob("*.jsonl"))] + [str(small), str(large), str(broken)]
    c, python = replay_all(paths, pure=False), replay_all(paths, pure=True)
    assert c["native"] and not python["native"]
    assert len(c["runs"]) == len(python["runs"]) == len(paths)
    for path, a, b in zip(paths, c["runs"], python["runs"]):
        assert a == b, path


def test_version_says_whether_the_c_module_is_in_use(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("regcheck ")
    assert ("C speedups: on" in out) == (NATIVE is not None)
    assert ("C speedups: off" in out) == (NATIVE is None)
