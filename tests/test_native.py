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
from gen_mixes import live_churn  # noqa: E402
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
    small, large, largest = tmp_path / "mix.jsonl", tmp_path / "many-live.jsonl", tmp_path / "more-live.jsonl"
    generate(str(small), 20_000, live=200, seed=3)
    generate(str(large), 12_000, live=3_000, seed=4)  # past 2,048 live entries: the C tables' SortedKeys
    live_churn(str(largest), 24_000, live=9_000, seed=5)  # past 8,192: the pure-Python tables' SortedList too
    lines = small.read_bytes().splitlines(keepends=True)
    lines.insert(500, b'{"call":"aclrtHostUnregister","args":{"ptr":4096},"ret":0}\n')  # a finding midway
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines))
    paths = [str(p) for p in sorted((REPO / "traces").rglob("*.jsonl"))] + [str(small), str(large), str(largest),
                                                                          str(broken)]
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


# ---- the C module's containers behave as the Python ones they stand for

from collections import deque  # noqa: E402
import pickle  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_wheres = st.tuples(st.sampled_from(["regs", "allocs", 7]),
                    st.one_of(st.integers(-3, 40), st.sampled_from([2**63 - 1, -2**63, 2**64, "k"])))
_values = st.one_of(st.tuples(st.integers(0, 50), st.sampled_from(["malloc", "free"])),
                    st.sampled_from([(2**70, "big"), "odd"]))
_made_ops = st.lists(st.tuples(st.sampled_from(["setdefault", "pop", "set", "del", "get", "in"]), _wheres, _values),
                     max_size=80)


@needs_native
@settings(max_examples=300, deadline=None)
@given(_made_ops)
def test_made_is_a_dict(ops):
    """Replayer.created's Made gives what a dict gives, in a dict's order, after any operations
    (keys and values it cannot hold in its slots included)."""
    made, ref = NATIVE.Made(), {}
    for op, where, value in ops:
        if op == "setdefault":
            assert made.setdefault(where, value) == ref.setdefault(where, value)
        elif op == "pop":
            assert made.pop(where, None) == ref.pop(where, None)
        elif op == "set":
            made[where] = ref[where] = value
        elif op == "del":
            if where in ref:
                del made[where], ref[where]
            else:
                with pytest.raises(KeyError):
                    del made[where]
        elif op == "get":
            assert made.get(where) == ref.get(where) and made.get(where, 5) == ref.get(where, 5)
        else:
            assert (where in made) == (where in ref)
        assert len(made) == len(ref)
    assert made.items() == list(ref.items()) and made.keys() == list(ref) and list(made) == list(ref)
    assert dict(made) == ref and dict(pickle.loads(pickle.dumps(made))) == ref
    for where in ref:
        assert made[where] == ref[where]


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5), st.lists(st.tuples(st.integers(-2, 3), st.one_of(st.integers(0, 9), st.just(2**64)),
                                             st.integers(0, 9), st.integers(0, 99)), max_size=30))
def test_ring_is_a_deque_of_4_tuples(maxlen, items):
    """The removals' and the recent calls' Ring holds what a deque(maxlen) of 4-tuples holds."""
    ring, ref = NATIVE.Ring(maxlen), deque(maxlen=maxlen)
    for item in items:
        ring.append(item)
        ref.append(item)
        assert len(ring) == len(ref) and list(ring) == list(ref) and list(reversed(ring)) == list(reversed(ref))
    assert ring.maxlen == maxlen and [ring[i] for i in range(-len(ref), len(ref))] == [ref[i] for i in range(-len(ref), len(ref))]
    assert list(pickle.loads(pickle.dumps(ring))) == list(ref)
    with pytest.raises(TypeError):
        ring.append((1, 2))
    ring.clear()
    assert list(ring) == []


@needs_native
def test_made_holds_many_entries_as_a_dict():
    """Growth and deletion in the slots (page-aligned keys, which an int's hash keeps alike)."""
    import random
    rng, made, ref = random.Random(7), NATIVE.Made(), {}
    live: list = []
    for line in range(30_000):
        if live and rng.random() < 0.45:
            where = live.pop(rng.randrange(len(live)))
            assert made.pop(where) == ref.pop(where)
        else:
            where = (rng.choice(["regs", "host_allocs"]), 0x7F00_0000_0000 + rng.randrange(1 << 16) * 4096)
            if where not in ref:
                live.append(where)
            assert made.setdefault(where, (line, "call")) == ref.setdefault(where, (line, "call"))
    assert len(made) == len(ref) and made.items() == list(ref.items())
    assert all(made.get(w) == v for w, v in ref.items()) and made.get(("regs", 1)) is None


@needs_native
def test_made_in_slots_of_megabytes_is_a_dict():
    """Past 2 MiB of slots (65,536 of them) a Made's memory is mapped in huge pages: growth through
    that size, deletion and clearing there answer as a dict does."""
    made, ref = NATIVE.Made(), {}
    for i in range(70_000):
        where = ("regs", 0x7F00_0000_0000 + i * 16384)
        assert made.setdefault(where, (i, "call")) == ref.setdefault(where, (i, "call"))
    for i in range(0, 70_000, 3):
        where = ("regs", 0x7F00_0000_0000 + i * 16384)
        assert made.pop(where) == ref.pop(where)
    assert len(made) == len(ref) and made.items() == list(ref.items())
    made.clear()
    assert len(made) == 0 and made.get(("regs", 0x7F00_0000_0000)) is None
    made[("regs", 1)] = (1, "call")
    assert made.items() == [(("regs", 1), (1, "call"))]


def _lines_read(data: bytes, limit: int, native: bool) -> list:
    """What trace.reader._bounded_lines gives over `data` (its C iterator or its Python one), up to
    and including the LineTooLong that stops it."""
    import io
    from unittest import mock

    from checker.model import state
    from checker.trace import reader
    with mock.patch.object(state, "NATIVE", NATIVE if native else None):
        lines = reader._bounded_lines(io.BytesIO(data), limit)
    assert (type(lines) is NATIVE.Lines) == native
    out: list = []
    try:
        out.extend(lines)
    except reader.LineTooLong as exc:
        out.append(("too long", exc.limit, exc.head))
    return out


@needs_native
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r\n", b"\r", b"xyz"]), max_size=12).map(b"".join),
       st.integers(1, 5))
def test_lines_reads_as_the_python_iterator(data, limit):
    """The C line iterator gives the lines the Python one gives, and stops at the same overlong line."""
    assert _lines_read(data, limit, True) == _lines_read(data, limit, False)
