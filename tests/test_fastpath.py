"""checker.fast.fastpath: the replayer's fast steps give exactly the reports and states of the general path.

Every trace here is replayed twice, once through `_replay_stream` (fast steps first, the general path
for the rest) and once through `_replay_iter` (every event through `Replayer.feed`), and the two
must agree on everything: the input error (code, line, column, message) or the report, the findings
with their notes, the final state and the replayer's memory of which line made which entry.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import checker.fast.fastpath as fastpath_mod
import checker.engines.replay as replay_mod
import checker.model.codegen as codegen_mod
from checker.language import syntax as S
from checker.language.analysis import counterexample_quant, key_probe, nodes, spelt_containment
from checker.model.codegen import CodeScope, Emitter
from checker.language.diagnostics import RegcheckError
from checker.fast.fastpath import DECODE_ERRORS, VERDICT_CACHE_LIMIT, FastPath, fast_path
from checker.language.load import bundled_spec_names, load_spec
from checker.engines.replay import Replayer, _replay_stream, semantics_for
from checker.model.semantics import Semantics
from checker.model.state import NATIVE
from checker.model.values import resolve_config
from checker.trace.reader import UNDECODED, EventStream, read_trace_text
from tests.helpers import outcome

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from gen_trace import generate  # noqa: E402


def assert_same(text: bytes, max_findings: int | None = None, mode: tuple[bool, bool] = (False, True)):
    fast, slow = outcome(text, True, max_findings, *mode), outcome(text, False, max_findings)
    assert fast == slow
    return fast


# The fast path's loops and steps, as (python_loop, machine): the C loop with the step machine's
# steps (checker.fast.stepcode), the C loop with the generated Python steps, and the Python loop (with
# the Python steps: the step machine needs the C module, which has the C loop).
_NEEDS_C = pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
LOOPS = [pytest.param((False, True), id="c-loop", marks=_NEEDS_C),
         pytest.param((False, False), id="c-loop-python-steps", marks=_NEEDS_C),
         pytest.param((True, False), id="python-loop")]


# ---------------------------------------------------------------- the bundled corpus and the benchmark mix


CORPUS = sorted((REPO / "traces").rglob("*.jsonl"))


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_traces_replay_the_same_both_ways(path, mode):
    assert_same(path.read_bytes(), mode=mode)


def counting_steps(counter: dict):
    """A stand-in for replay.fast_path whose steps count the events they handle."""
    def make(sem, state, remember, recent=None):
        decode, steps = fast_path(sem, state, remember, recent)

        def wrap(step):
            def counted(o, line):
                took = step(o, line)
                counter[took] = counter.get(took, 0) + 1
                return took
            return counted
        return FastPath(decode, {struct: wrap(step) for struct, step in steps.items()})
    return make


@pytest.mark.parametrize("mode", LOOPS)
def test_the_benchmark_mix_is_mostly_fast_and_replays_the_same(tmp_path, monkeypatch, mode):
    path = tmp_path / "mix.jsonl"
    generate(str(path), 20_000, live=200, seed=3)
    text = path.read_bytes()
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    result = assert_same(text, mode=mode)
    assert result[0] == "report" and result[1]["verdict"] == "conforms" and result[1]["events"] == 20_000
    # Lookups that fail because the range is only PINNED, frees, unregistrations: all fast.
    assert counter.get(True, 0) == 20_000 and not counter.get(False)


@pytest.mark.parametrize("mode", LOOPS)
def test_statuses_spelt_in_hex_are_fast_and_replay_as_their_integers(tmp_path, monkeypatch, mode):
    """Every `ret` written "0x..." (trace-format.md allows it, and a recorder that writes every
    integer in hex does): the successes and the allowed failures (an environmental failure of
    aclrtMallocHost every 50 lines) all take the fast path, and the report is the one of the same
    trace with JSON integers."""
    path = tmp_path / "mix.jsonl"
    generate(str(path), 3_000, live=100, seed=4)
    header, *mix = path.read_bytes().splitlines(keepends=True)
    failure = b'{"call":"aclrtMallocHost","args":{"size":4096},"ret":207001}\n'
    lines = [line for i, plain in enumerate(mix) for line in ((plain, failure) if i % 50 == 7 else (plain,))]
    events = [orjson.loads(line) for line in lines]
    spelt = [header] + [orjson.dumps({**ev, "ret": ("0x%x" if i % 2 else "0X%X") % ev["ret"]} if "ret" in ev else ev)
                        + b"\n" for i, ev in enumerate(events)]
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    result = assert_same(b"".join(spelt), mode=mode)
    assert counter.get(True, 0) == len(lines) == 3_060 and not counter.get(False)
    assert result == outcome(b"".join([header, *lines]), True, None, *mode)


@pytest.mark.parametrize("mode", LOOPS)
def test_findings_midway_are_the_same_both_ways(tmp_path, mode):
    path = tmp_path / "mix.jsonl"
    generate(str(path), 3_000, live=50, seed=5)
    lines = path.read_bytes().splitlines(keepends=True)
    # Break it here and there: an unregistration of something never registered, a double free,
    # a status no clause allows; replay goes on from the recorded result after each.
    bad = [
        b'{"call":"aclrtHostUnregister","args":{"ptr":4096},"ret":0}\n',
        b'{"call":"aclrtFreeHost","args":{"hostPtr":0},"ret":0}\n',
        b'{"call":"aclrtHostGetDevicePointer","args":{"pHost":8192,"flag":0},"ret":0,"out":{"pDevice":1}}\n',
        b'{"call":"aclrtMallocHost","args":{"size":4096},"ret":123456}\n',
    ]
    for i, line in enumerate(bad):
        lines.insert(200 + 600 * i, line)
    text = b"".join(lines)
    result = assert_same(text, mode=mode)
    assert result[0] == "report" and result[1]["verdict"] == "violates" and len(result[1]["findings"]) >= 3
    assert assert_same(text, max_findings=2, mode=mode)[3] is True  # truncated the same way


def test_calls_with_a_thread_safety_rule_have_a_fast_step_given_the_windows():
    from checker.model.semantics import Semantics
    sem = Semantics(load_spec("cupva"), {})
    _, steps = fast_path(sem, sem.initial_state(), lambda line, call: None)
    calls = {getattr(struct, "__struct_config__").tag for struct in steps}
    assert "cupva::mem::Register" not in calls and "cupva::mem::Unregister" not in calls  # no windows: no step
    assert "cudaMalloc" in calls and "vm_state" in calls
    _, steps = fast_path(sem, sem.initial_state(), lambda line, call: None, {})
    calls = {getattr(struct, "__struct_config__").tag for struct in steps}
    assert "cupva::mem::Register" in calls and "cupva::mem::Unregister" in calls


CUPVA = b'{"regcheck":1,"spec":"cupva","env":{"driver_version":2005}}\n'


def cupva_line(call: str, args: dict, tid, t0: int, t1: int, ret="ok") -> bytes:
    ev = {"call": call, "args": args, "tid": tid, "t0": t0, "t1": t1}
    if ret is not None:
        ev["ret"] = ret
    return json.dumps(ev).encode() + b"\n"


@pytest.mark.parametrize("mode", LOOPS)
def test_thread_safety_on_the_fast_path(mode, monkeypatch):
    """Register/Unregister lines are fast while no other thread's call overlaps them; an overlap
    goes to the general path, which reports PVA-REG-THREAD-SAFETY; the window sees every line."""
    malloc = lambda p, t: cupva_line("cudaMalloc", {"size": 4096}, 1, t, t + 1, None).replace(
        b'"args"', b'"out": {"devPtr": %d}, "args"' % p)
    reg = lambda p, tid, t0, t1: cupva_line("cupva::mem::Register", {"ptr": p, "size": 4096, "externalAllocType": "CUDA"},
                                            tid, t0, t1)
    text = (CUPVA + cupva_line("vm_state", {"state": "Init"}, 1, 0, 1, None) + malloc(1 << 20, 2) + malloc(2 << 20, 4)
            + malloc(3 << 20, 6) + malloc(4 << 20, 8)
            + reg(1 << 20, 1, 10, 20)     # fast
            + reg(2 << 20, 1, 15, 25)     # same thread: fast
            + reg(3 << 20, 2, 30, 40)     # another thread, after: fast
            + reg(4 << 20, 1, 35, 45))    # overlaps thread 2's call at line 9: the general path's finding
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    result = assert_same(text, mode=mode)
    assert [f["rule"] for f in result[1]["findings"]] == ["PVA-REG-THREAD-SAFETY"]
    assert counter == {True: 8, False: 1}


BIG = 2**63  # times from here to 2**64 - 1 are legal (docs/trace-format.md) and are not C int64s


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("first, second", [((0, BIG), (5, 6)), ((5, 6), (0, BIG)),
                                           ((BIG, 2**64 - 1), (BIG + 1, BIG + 2)),
                                           ((100, 2**64 - 1), (2**64 - 2, 2**64 - 1))],
                         ids=["earlier-ends-past-int64", "this-ends-past-int64", "both-past", "edge"])
def test_thread_clashes_with_times_past_int64_are_found_on_the_fast_path(mode, first, second):
    """The C steps' window held such times as Python ints and skipped them in the scan (a clash of
    two threads went unreported), and a line with such times was never put in the window."""
    malloc = lambda p: cupva_line("cudaMalloc", {"size": 4096}, 1, 1, 1, None).replace(
        b'"args"', b'"out": {"devPtr": %d}, "args"' % p)
    reg = lambda p, tid, t: cupva_line("cupva::mem::Register", {"ptr": p, "size": 4096, "externalAllocType": "CUDA"},
                                       tid, *t)
    text = (CUPVA + cupva_line("vm_state", {"state": "Init"}, 1, 0, 1, None) + malloc(1 << 20) + malloc(2 << 20)
            + reg(1 << 20, 1, first) + reg(2 << 20, 2, second))
    result = assert_same(text, mode=mode)
    assert [(f["line"], f["rule"]) for f in result[1]["findings"]] == [(6, "PVA-REG-THREAD-SAFETY")]


@st.composite
def timed_registrations(draw):
    """A cuPVA trace of Register/Unregister calls from up to three threads with timestamps drawn
    in any order (ties, overlaps, the same times again), more than a window's worth of them."""
    text = CUPVA + cupva_line("vm_state", {"state": "Init"}, 1, 0, 1, None) + b"".join(
        cupva_line("cudaMalloc", {"size": 4096}, 1, 1, 1, None).replace(b'"args"', b'"out": {"devPtr": %d}, "args"' % (k << 20))
        for k in range(1, 8))
    n = draw(st.integers(1, fastpath_mod.THREAD_WINDOW + 20))
    clock = 2
    for i in range(n):
        clock += draw(st.integers(-3, 4)) if draw(st.integers(0, 3)) == 0 else draw(st.integers(0, 40))
        t0 = clock
        t1 = t0 + draw(st.integers(0, 6))
        tid = draw(st.sampled_from([1, 1, 1, 2, 3]))
        ptr = ((i % 7) + 1) << 20
        if draw(st.booleans()):
            text += cupva_line("cupva::mem::Register", {"ptr": ptr, "size": 4096, "externalAllocType": "CUDA"},
                               tid, t0, t1, draw(st.sampled_from(["ok", "ok", "InvalidArgument"])))
        else:
            text += cupva_line("cupva::mem::Unregister", {"ptr": ptr}, tid, t0, t1)
    return text


@settings(deadline=None, max_examples=150)
@given(text=timed_registrations())
def test_the_thread_windows_latest_end_skips_only_scans_that_find_nothing(text):
    """The pure-Python window (ThreadWindow) lets a step skip the scan for a call that starts after
    its latest end; with it (as without the C module), the Python steps report what the general
    path does."""
    with pytest.MonkeyPatch.context() as mp:
        for module in (fastpath_mod, replay_mod):
            mp.setattr(module, "thread_window", fastpath_mod.ThreadWindow)
        assert_same(text, mode=(True, False))


def test_a_thread_windows_latest_end_outlives_the_entries_it_came_from():
    w = fastpath_mod.ThreadWindow()
    w.append((1, 0, 100, 2))
    for line in range(3, 3 + fastpath_mod.THREAD_WINDOW):
        w.append((1, line, line, line))
    assert (1, 0, 100, 2) not in w and len(w) == fastpath_mod.THREAD_WINDOW
    assert w.latest_end == 100  # an upper bound: a skip below it would be unsafe, a scan above it is only slower


def test_the_verdict_cache_is_bounded():
    """Distinct failure statuses are endless in a hostile trace; the per-call cache stops growing,
    and the verdicts stay right past the limit."""
    from checker.fast.fastpath import _decider
    from checker.model.semantics import Semantics
    sem = Semantics(load_spec("acl"), {})
    decide = _decider(sem, "aclrtMallocHost")
    cache: dict = {}
    verdicts = [decide(cache, (0, 1000 + i), 0, 1000 + i) for i in range(VERDICT_CACHE_LIMIT + 500)]
    assert len(cache) == VERDICT_CACHE_LIMIT
    assert decide({}, 0, 0, 0) is True  # a success with no error condition holding
    header = b'{"regcheck":1,"spec":"acl","env":{}}\n'
    events = b"".join(b'{"call":"aclrtMallocHost","args":{"size":4096},"ret":%d}\n' % (1000 + i)
                      for i in range(VERDICT_CACHE_LIMIT + 500))
    result = assert_same(header + events)
    assert result[1]["events"] == VERDICT_CACHE_LIMIT + 500
    assert all(v == verdicts[0] for v in verdicts)


# ---------------------------------------------------------------- one line at the edge of the fast path

ACL = b'{"regcheck":1,"spec":"acl","env":{"os_kernel":"6.6","product":"AtlasA2"}}\n'
MALLOC = b'{"call":"malloc","args":{"size":8192},"out":{"ptr":65536},"tid":1,"t0":5,"t1":9}\n'
REGISTER = {"call": "aclrtHostRegisterV2", "args": {"ptr": 65536, "size": 8192, "flag": 2}, "ret": 0,
            "tid": 1, "t0": 10, "t1": 12}

EDGES = [
    # (id, change to the registration, whether the fast step takes it)
    ("plain", {}, True),
    ("unknown field", {"bogus": 1}, False),
    ("null field", {"tid": None}, False),
    ("expect", {"expect": {"rule": "ACL-REG-EFFECT", "outcome": "success"}}, True),
    ("expect, outcome first", {"expect": {"outcome": "success", "rule": "ACL-REG-EFFECT"}}, True),
    ("expect failure codes on a success", {"expect": {"rule": "R", "outcome": "failure", "codes": [107000, "0x1", "X"]}},
     True),  # replay checks `expect` and ignores it: conform judges it
    ("expect except", {"expect": {"rule": "R", "outcome": "failure", "except": [0]}}, True),
    ("expect codes with success", {"expect": {"rule": "R", "outcome": "success", "codes": [1]}}, False),
    ("expect codes and except", {"expect": {"rule": "R", "outcome": "failure", "codes": [1], "except": [2]}}, False),
    ("expect malformed integer", {"expect": {"rule": "R", "outcome": "failure", "codes": ["12"]}}, False),
    ("expect integer below int64", {"expect": {"rule": "R", "outcome": "failure", "codes": ["-0x8000000000000001"]}},
     False),
    ("expect bool code", {"expect": {"rule": "R", "outcome": "failure", "codes": [True]}}, False),
    ("expect unknown key", {"expect": {"rule": "R", "outcome": "success", "why": 1}}, False),
    ("expect empty rule", {"expect": {"rule": "", "outcome": "success"}}, False),
    ("expect other outcome", {"expect": {"rule": "R", "outcome": "maybe"}}, False),
    ("expect no rule", {"expect": {"outcome": "success"}}, False),
    ("expect not an object", {"expect": ["R"]}, False),
    ("t1 without t0", {"t0": None}, False),
    ("t1 before t0", {"t0": 20}, False),
    ("negative t0", {"t0": -1, "t1": 2}, False),
    ("float t0", {"t0": 1.5}, False),
    ("bool tid", {"tid": True}, False),
    ("string tid", {"tid": "main"}, True),
    ("no timestamps", {"tid": None, "t0": None, "t1": None}, True),
    ("hex pointer", {"args": {"ptr": "0x10000", "size": 8192, "flag": 2}}, True),
    ("hex, upper case and leading zeros", {"args": {"ptr": "0X000000000000000010000", "size": "0x2000", "flag": "0x2"}},
     True),
    ("hex beyond int64", {"args": {"ptr": "0x8000000000000000", "size": 8192, "flag": 2}}, False),  # valid; general
    ("hex of 17 digits", {"args": {"ptr": "0x10000000000010000", "size": 8192, "flag": 2}}, False),  # T0706
    ("negative hex", {"args": {"ptr": "-0x10000", "size": 8192, "flag": 2}}, False),
    ("hex not hex", {"args": {"ptr": "0x1000g", "size": 8192, "flag": 2}}, False),
    ("decimal string", {"args": {"ptr": "65536", "size": 8192, "flag": 2}}, False),
    ("empty string", {"args": {"ptr": "", "size": 8192, "flag": 2}}, False),
    ("hex flag too big", {"args": {"ptr": 65536, "size": 8192, "flag": "0x100000000"}}, False),
    ("flag names", {"args": {"ptr": 65536, "size": 8192, "flag": ["ACL_HOST_REG_MAPPED"]}}, True),
    ("one flag name", {"args": {"ptr": 65536, "size": 8192, "flag": "ACL_HOST_REG_MAPPED"}}, True),
    ("two flag names", {"args": {"ptr": 65536, "size": 8192, "flag": ["ACL_HOST_REG_MAPPED", "ACL_HOST_REG_PINNED"]}},
     True),
    ("a flag name twice", {"args": {"ptr": 65536, "size": 8192, "flag": ["ACL_HOST_REG_MAPPED"] * 2}}, True),
    ("unknown flag name", {"args": {"ptr": 65536, "size": 8192, "flag": ["ACL_HOST_REG_MAPPD"]}}, False),
    ("a flag name for a size", {"args": {"ptr": 65536, "size": "ACL_HOST_REG_MAPPED", "flag": 2}}, False),
    ("an integer in the flag list", {"args": {"ptr": 65536, "size": 8192, "flag": [2]}}, False),
    ("no flag names", {"args": {"ptr": 65536, "size": 8192, "flag": []}}, False),  # flag 0: ACL-REG-FLAG-ZERO
    ("flag too big", {"args": {"ptr": 65536, "size": 8192, "flag": 2**32}}, False),
    ("pointer beyond int64", {"args": {"ptr": 2**63, "size": 8192, "flag": 2}}, False),  # valid; general path
    ("timestamp beyond int64", {"t0": 1, "t1": 2**63}, False),
    ("negative size", {"args": {"ptr": 65536, "size": -1, "flag": 2}}, False),
    ("bool size", {"args": {"ptr": 65536, "size": True, "flag": 2}}, False),
    ("missing argument", {"args": {"ptr": 65536, "size": 8192}}, False),
    ("extra argument", {"args": {"ptr": 65536, "size": 8192, "flag": 2, "x": 1}}, False),
    ("args not an object", {"args": [65536]}, False),
    ("hex ret", {"ret": "0x0"}, True),
    ("hex ret, upper case and leading zeros", {"ret": "0X0000000000000000000"}, True),
    ("negative hex ret", {"ret": "-0x0"}, False),  # valid; the general path reads a sign
    ("hex ret of 17 digits", {"ret": "0x10000000000000000"}, False),  # T0706
    ("hex ret beyond int64", {"ret": "0x8000000000000000"}, False),
    ("hex ret not hex", {"ret": "0x0g"}, False),
    ("decimal string ret", {"ret": "0"}, False),
    ("status name for an integer status", {"ret": "ACL_SUCCESS"}, False),
    ("hex failure ret", {"ret": "0x1a1f8"}, False),  # 107000: no error condition holds
    ("missing ret", {"ret": None}, False),
    ("unexpected output", {"out": {"ptr": 1}}, False),
    ("empty out", {"out": {}}, True),
    ("failure", {"ret": 107000}, False),  # no error condition holds: success is the only outcome
    ("unaligned (caller's bug)", {"args": {"ptr": 65537, "size": 8192, "flag": 2}}, False),
]


# cuPVA's statuses are names, but an environment event may carry its C function's status 0, as a
# recorder of a real program writes cudaMalloc's cudaError_t (trace-format.md's `ret`): success.
CUPVA = b'{"regcheck":1,"spec":"cupva","env":{"driver_version":2005}}\n'
EVENT_RETS = [
    ("no ret", None, True),
    ("the success name", "ok", True),
    ("the C status 0", 0, True),
    ("0 in hex", "0x0", True),
    ("0 in hex, upper case and leading zeros", "0X0000", True),
    ("0 in hex with a sign", "-0x0", False),  # valid; the general path reads a sign
    ("another C status", 2, False),  # T0733: a failed cudaMalloc changed nothing
    ("another C status in hex", "0x2", False),
    ("a failure's name", "InvalidArgument", False),
    ("an unknown name", "Bogus", False),
    ("a decimal string", "0", False),
    ("a boolean", False, False),
    ("a float", 0.0, False),
]


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("name, ret, fast", EVENT_RETS, ids=[e[0] for e in EVENT_RETS])
def test_an_environment_event_of_a_named_status_spec_at_the_edge(name, ret, fast, mode, monkeypatch):
    ev = {"call": "cudaMalloc", "args": {"size": 4096}, "out": {"devPtr": 0x302000000}}
    if ret is not None:
        ev["ret"] = ret
    free = b'{"call":"cudaFree","args":{"devPtr":"0x302000000"},"ret":0}\n'
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    result = assert_same(CUPVA + json.dumps(ev).encode() + b"\n" + free, mode=mode)
    if fast:  # both lines fast (the cudaFree carries the C status 0)
        assert result[0] == "report" and result[1]["verdict"] == "conforms" and counter == {True: 2}
    else:  # the malloc went the general way (had its step taken it, the free's would have too)
        assert counter.get(True, 0) <= 1, counter


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("name, change, fast", EDGES, ids=[e[0] for e in EDGES])
def test_one_line_at_the_edge(name, change, fast, mode, monkeypatch):
    ev = {**REGISTER, **change}
    drop = {k for k, v in change.items() if v is None and k != "tid"} | ({"tid"} if name == "no timestamps" else set())
    ev = {k: v for k, v in ev.items() if k not in drop and not (name == "no timestamps" and k in ("t0", "t1"))}
    line = json.dumps(ev, separators=(",", ":")).encode() + b"\n"
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    assert_same(ACL + MALLOC + line, mode=mode)
    assert counter.get(True, 0) == 1 + fast, counter  # the malloc, and the registration when fast


OUTPUT_EDGES = [
    # (id, the `out` of a malloc (None: no `out`), whether the fast step takes it)
    ("output", {"ptr": 131072}, True),
    ("extra output", {"ptr": 131072, "x": 1}, False),
    ("null output", {"ptr": None}, False),
    ("missing output", {}, False),
    ("no out at all", None, False),
    ("hex output", {"ptr": "0x20000"}, True),
    ("hex output beyond int64", {"ptr": "0xffffffffffff0000"}, False),
    ("output out of range", {"ptr": 2**64}, False),
    ("out not an object", [131072], False),
    ("output beyond int64", {"ptr": 2**63}, False),
]


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("name, out, fast", OUTPUT_EDGES, ids=[e[0] for e in OUTPUT_EDGES])
def test_outputs_at_the_edge(name, out, fast, mode, monkeypatch):
    ev = {"call": "malloc", "args": {"size": 4096}}
    if out is not None:
        ev["out"] = out
    line = json.dumps(ev, separators=(",", ":")).encode() + b"\n"
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    assert_same(ACL + MALLOC + line, mode=mode)
    assert counter.get(True, 0) == 1 + fast, counter


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("out, fast", [({"hostPtr": "ABC"}, False), ({"hostPtr": "0x1000"}, True),
                                       ({"hostPtr": 4096}, True), ({}, True)], ids=["bad", "hex", "int", "none"])
def test_a_failures_outputs_must_read_too(out, fast, mode, monkeypatch):
    """A failed call's outputs are not used, but one that is no integer is an input error, as on the
    general path: the steps read spelt outputs of a failure too."""
    line = json.dumps({"call": "aclrtMallocHost", "args": {"size": 4096}, "ret": 207001, "out": out}).encode() + b"\n"
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    assert_same(ACL + line, mode=mode)
    assert counter.get(True, 0) == fast


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("line", [
    b'{"args":{"size":4096},"out":{"ptr":131072}}\n',  # no call
    b'{"call":"malloc","call":"free","args":{"size":4096},"out":{"ptr":131072}}\n',  # the last call counts
    b'{"call":"\\u0000","args":{"size":4096}}\n',  # the decoder's placeholder member
    b'{"call":"malloc","args":{"size":4096},"out":{"ptr":131072},"args":{"size":1}}\n',  # the last args count
    b'{"call":"malloc","args":{"size":4096},"out":{"ptr":131072}} {}\n',
], ids=["no call", "call twice", "NUL call", "args twice", "two objects"])
def test_lines_the_decoder_must_not_misread(line, mode):
    assert_same(ACL + MALLOC + line, mode=mode)


# ---------------------------------------------------------------- random traces near the edges of the fast path


PAGE = 0x1000
ADDRS = [0, PAGE, 2 * PAGE, 3 * PAGE, 0x10000, 0x10800, 0x11000, 2**64 - PAGE]
ODD_INTS = [-1, 2**64, 2**32, 2**63, "0x1000", "0x10000", "4096", True, None, 1.5, [1], "ABC"]


def values_for(spec, t):
    if t.kind == "int" or t.kind == "flags":
        normal = st.sampled_from(ADDRS + [1, PAGE - 1, 5 * PAGE])
        if t.kind == "flags":
            names = sorted(spec.flags[t.name])
            normal = st.one_of(st.sampled_from(sorted(set(spec.flags[t.name].values())) + [0, 3, 2**31]),
                               st.lists(st.sampled_from(names), max_size=2))
        return st.one_of(normal, normal, normal, normal, st.sampled_from(ODD_INTS))
    if t.kind == "enum":
        return st.one_of(st.sampled_from(spec.enums[t.name]), st.sampled_from(["Bogus", 3, "0x1"]))
    if t.kind == "bool":
        return st.sampled_from([True, False, 1, "yes"])
    return st.sampled_from([0, "x"])


def statuses_for(spec):
    codes = set()
    for info in spec.calls.values():
        for c in info.decl.clauses:
            items = getattr(getattr(c, "codes", None), "items", ())
            for x in items:
                v = getattr(x, "value", None) or getattr(x, "name", None)
                if v is not None:
                    codes.add(spec.consts[v][1] if v in spec.consts else v)
    codes.add(spec.success)
    pool = sorted(codes, key=str)
    # Integer statuses also spelt "0x..." (either case); 0 is an environment event's C status where the
    # statuses are names, and "-0x0" a signed spelling only the general path reads.
    spelt = sorted({f(c) for c in codes if type(c) is int and c >= 0 for f in (hex, lambda c: "0X%X" % c)})
    return st.one_of(st.sampled_from(pool), st.sampled_from(pool), st.sampled_from(spelt or pool),
                     st.sampled_from([None, "0x0", 0, "-0x0", 7, "ok", "9x", -1]))


@st.composite
def events_of(draw, name):
    spec = load_spec(name)
    calls = sorted(spec.calls)
    info = spec.calls[draw(st.sampled_from(calls))]
    ev: dict = {"call": info.name}
    params = {n: draw(values_for(spec, t)) for n, t in info.params}
    if draw(st.integers(0, 19)) == 0 and params:
        params.pop(draw(st.sampled_from(sorted(params))))
    if draw(st.integers(0, 29)) == 0:
        params["extra"] = 1
    if params or draw(st.booleans()):
        ev["args"] = params
    ret = draw(statuses_for(spec))
    if ret is not None:
        ev["ret"] = ret
    outs = {n: draw(values_for(spec, t)) for n, t in info.outputs if draw(st.integers(0, 5))}
    if outs or draw(st.integers(0, 9)) == 0:
        ev["out"] = outs
    shape = draw(st.integers(0, 39))
    if shape < 30:
        if draw(st.booleans()):
            t0 = draw(st.integers(0, 50))
            ev.update(tid=draw(st.sampled_from([1, 2, "main"])), t0=t0, t1=t0 + draw(st.integers(0, 20)))
        if draw(st.integers(0, 5)) == 0:
            ev["expect"] = draw(expects())
    elif shape == 30:
        ev["t0"] = 5
    elif shape == 31:
        ev.update(t0=9, t1=3)
    elif shape == 32:
        ev["tid"] = None
    elif shape == 33:
        ev["expect"] = draw(expects())
    elif shape == 34:
        ev["bogus"] = 1
    elif shape == 35:
        return b"\n"
    elif shape == 36:
        return b"[1, 2]\n"
    elif shape == 37:
        return b"{\"call\": \"aclrtMallocHost\",\n"
    return json.dumps(ev, separators=(",", ":")).encode() + b"\n"  # json: 2**64 must be writable


@st.composite
def expects(draw):
    """A conformance test's `expect`, well-formed or a near miss of each of the reader's checks."""
    outcome = draw(st.sampled_from(["success", "failure", "failure", "maybe"]))
    ev: dict = {"rule": draw(st.sampled_from(["X", "ACL-REG-EFFECT", "", 3])), "outcome": outcome}
    items = st.lists(st.sampled_from([0, 107000, "0x1", "X", "12", "-0x8000000000000001", True, 1.5, 2**63]),
                     max_size=3)
    for key in ("codes", "except"):
        if draw(st.integers(0, 2)) == 0:
            ev[key] = draw(items)
    if draw(st.integers(0, 9)) == 0:
        ev.pop(draw(st.sampled_from(["rule", "outcome"])))
    if draw(st.integers(0, 9)) == 0:
        ev["why"] = 1
    return ev


NOISE = list(b' \t\r\n\x0b\x0c{}[]",:0123456789-+.eEtrufalsn\\/\x00\xff\xc3')


@st.composite
def mutated(draw, name):
    """An event line (see events_of) with up to three bytes inserted, replaced or deleted."""
    line = bytearray(draw(events_of(name)))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(line)))
        how = draw(st.sampled_from(["insert", "replace", "delete"]))
        byte = draw(st.sampled_from(NOISE))
        if how == "insert":
            line.insert(at, byte)
        elif at < len(line):
            if how == "replace":
                line[at] = byte
            else:
                del line[at]
    return bytes(line)


def header_for(draw, name):
    if name == "acl":
        env = {"os_kernel": draw(st.sampled_from(["5.10", "6.6"])),
               "product": draw(st.sampled_from(["AtlasA2", "Ascend950PR", "AtlasInference"]))}
    elif name == "cupva":
        env = {"driver_version": draw(st.sampled_from([2005, 2006])), "qnx_safety": draw(st.booleans())}
    elif name == "cuda":
        env = {"cuda_runtime": draw(st.sampled_from(["4.0", "12.4"])), "can_map_host": draw(st.booleans()),
               "observed": draw(st.booleans())}
    else:
        env = {"hip_runtime": draw(st.sampled_from(["5.7", "6.2"])), "observed": draw(st.booleans())}
    return orjson.dumps({"regcheck": 1, "spec": name, "env": env}) + b"\n"


SLOW_OK = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUNDLED = bundled_spec_names()  # acl, cuda, cupva, hip


@pytest.mark.slow
@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("name", BUNDLED)
@settings(SLOW_OK, max_examples=120)
@given(data=st.data())
def test_random_traces_replay_the_same_both_ways(name, mode, data):
    header = header_for(data.draw, name)
    lines = data.draw(st.lists(st.one_of(events_of(name), mutated(name)), min_size=1, max_size=40))
    assert_same(header + b"".join(lines), mode=mode)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUNDLED)
@settings(SLOW_OK, max_examples=80)
@given(data=st.data())
def test_random_well_formed_traces_replay_the_same_both_ways(name, data):
    """Only well-formed lines, so that traces run long and states grow."""
    header = header_for(data.draw, name)
    lines = data.draw(st.lists(events_of(name), min_size=5, max_size=60))
    text = header + b"".join(lines)
    if outcome(text, False)[0] == "error":
        kept = [header]
        for line in lines:
            if outcome(b"".join(kept + [line]), False)[0] != "error":
                kept.append(line)
        text = b"".join(kept)
    assert_same(text)


@pytest.mark.parametrize("mode", LOOPS)
@pytest.mark.parametrize("observed", [False, True])
def test_a_forall_promise_is_asked_by_its_counterexample_probe(mode, observed):
    """cudaHostGetFlags promises `forall h in host_allocs: (... and h.range contains pHost) implies
    pFlags == h.flags ...`, which the semantics and the machine ask as a probe for a
    counterexample (`counterexample_quant`): the flags of pinned blocks among many, right and
    wrong, and of registered memory (observed), replay as the general path's forall says."""
    env = {"observed": observed}
    lines = [orjson.dumps({"regcheck": 1, "spec": "cuda", "env": env}) + b"\n"]
    base = 0x7F0000000000
    for i in range(40):
        lines.append(orjson.dumps({"call": "cudaHostAlloc", "args": {"size": 8192, "flags": i % 4},
                                   "ret": 0, "out": {"pHost": base + i * 0x10000}}) + b"\n")
    lines.append(orjson.dumps({"call": "malloc", "args": {"size": 8192}, "out": {"ptr": 0x10000}}) + b"\n")
    lines.append(orjson.dumps({"call": "cudaHostRegister", "args": {"ptr": 0x10000, "size": 8192, "flags": 2},
                               "ret": 0}) + b"\n")
    for i in range(0, 40, 3):
        for p, flags in ((base + i * 0x10000, i % 4), (base + i * 0x10000 + 4096, i % 4 | 2),
                         (base + i * 0x10000, (i + 1) % 4), (0x10000, 2), (0x11000, 3)):
            lines.append(orjson.dumps({"call": "cudaHostGetFlags", "args": {"pHost": p}, "ret": 0,
                                       "out": {"pFlags": flags}}) + b"\n")
    text = b"".join(lines)
    result = assert_same(text, mode=mode)
    assert result[0] == "report" and result[1]["verdict"] == "violates"
    assert "CUDA-GETFLAGS-VALUE" in {f["rule"] for f in result[1]["findings"]}
    # The reference: the semantics compiled without the rewrite, walking every entry.
    saved, codegen_mod.counterexample_quant = codegen_mod.counterexample_quant, lambda q: None
    try:
        spec = load_spec("cuda")
        walking = Semantics(spec, resolve_config(spec, env))
    finally:
        codegen_mod.counterexample_quant = saved
    assert outcome(text, False, sem=walking) == result


def spelt_acl_and_mix(tmp_path, replacements, seed: int, after_registration) -> tuple[Semantics, bytes]:
    """acl with its clauses rewritten (each (old, new) must occur), the semantics of it in the
    mix's configuration, and a 3,000-event mix with `after_registration(n, args)`'s lines after
    the n-th successful registration."""
    text = (REPO / "spec" / "acl.spec").read_text()
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new)
    spelt = tmp_path / "acl.spec"
    spelt.write_text(text)
    path = tmp_path / "mix.jsonl"
    generate(str(path), 3_000, live=200, seed=seed)
    lines, registrations = [], 0
    for line in path.read_bytes().splitlines(keepends=True):
        lines.append(line)
        if b'"aclrtHostRegisterV2"' in line and b'"ret":0' in line:
            registrations += 1
            lines += [orjson.dumps(x) + b"\n" for x in after_registration(registrations, json.loads(line)["args"])]
    spec = load_spec(str(spelt))
    return Semantics(spec, resolve_config(spec, json.loads(lines[0])["env"])), b"".join(lines)


# acl's overlap clauses as a user might spell them, with `forall ... not`: the same rules.
FORALL_SPELT = (
    ("and not (exists h in host_allocs: h.range overlaps range(ptr, size))",
     "and (forall h in host_allocs: not (h.range overlaps range(ptr, size)))"),
    ("when exists r in regs: r.range overlaps range(ptr, size)\n",
     "when not (forall r in regs: not (range(ptr, size) overlaps r.range))\n"),
    ("requires ACL-REG-PINNED-PAGEABLE: not (ACL_HOST_REG_PINNED in flag and (exists h in host_allocs: h.locked and "
     "h.range overlaps range(ptr, size)))",
     "requires ACL-REG-PINNED-PAGEABLE: forall h in host_allocs: ACL_HOST_REG_PINNED in flag implies "
     "not (h.locked and range(ptr, size) overlaps h.range)"),
)


@pytest.mark.parametrize("mode", LOOPS)
def test_foralls_spelt_with_not_are_probes_and_replay_as_the_exists_they_mean(tmp_path, monkeypatch, mode):
    """`forall r in T: not (r.range overlaps X)`, its negation, `A implies not (...)` and the range
    test written `X overlaps r.range`: the semantics and the machine ask each as an index probe for
    a counterexample (`counterexample_quant` takes the negation through `not`, `implies` and `or`),
    where they walked every entry (35x slower at 4,000 live entries). The mix, with
    overlapping registrations allowed and not, replays as with the bundled acl, every line on the
    fast path, and as the semantics compiled without the rewrite."""
    def overlapping(n, args):  # again: refused as already registered, or wrongly not
        if n % 10:
            return []
        return [{"call": "aclrtHostRegisterV2", "args": args, "ret": 0 if n % 50 == 0 else 507910}]
    sem, trace = spelt_acl_and_mix(tmp_path, FORALL_SPELT, 7, overlapping)
    spec = sem.spec
    em = Emitter(spec, sem.config)
    foralls = [q for c in spec.calls.values() for q in nodes(c.decl) if isinstance(q, S.Quant) and q.kind == "forall"]
    assert len(foralls) == 3 and all(em.probe_parts(counterexample_quant(q)) is not None for q in foralls)
    counter: dict = {}
    monkeypatch.setattr(replay_mod, "fast_path", counting_steps(counter))
    result = outcome(trace, True, None, *mode, sem=sem)
    found = [(f["line"], f["rule"]) for f in result[1]["findings"]]
    assert found and {rule for _, rule in found} == {"ACL-REG-OVERLAP"}
    assert counter == {True: result[1]["events"] - len(found), False: len(found)}  # all but the findings' lines
    bundled = outcome(trace, True, None, *mode)
    assert found == [(f["line"], f["rule"]) for f in bundled[1]["findings"]] and result[4:] == bundled[4:]
    saved, codegen_mod.counterexample_quant = codegen_mod.counterexample_quant, lambda q: None
    try:
        walking = Semantics(spec, sem.config)
    finally:
        codegen_mod.counterexample_quant = saved
    assert outcome(trace, False, sem=walking) == result


# acl's clauses with the key test and the range test written out by hand: the same rules.
KEYED_SPELT = (
    ("requires ACL-UNREG-REGISTERED: exists r in regs: r.range contains ptr\n",
     "requires ACL-UNREG-REGISTERED: exists r in regs: r.key <= ptr and ptr < r.key + r.size\n"),
    ("not (pHost in regs and ACL_HOST_REG_MAPPED in regs[pHost].flags)",
     "not (exists r in regs: r.key == pHost and ACL_HOST_REG_MAPPED in r.flags)"),
    ("when not (ptr in regs) and (exists r in regs: r.range contains ptr)\n",
     "when not (ptr in regs) and (exists r in regs: r.size + r.key > ptr and ptr >= r.key)\n"),
)


@pytest.mark.parametrize("mode", LOOPS)
def test_key_and_range_tests_written_out_find_their_entries_by_index(tmp_path, mode):
    """`exists r in regs: r.key == p and ...` tests the entry at p alone (`key_probe`), and
    `r.key <= p and p < r.key + r.size` asks the interval index (`spelt_containment`), where both
    walked every entry (15x slower at 4,000 live registrations). The mix, with unregistrations of
    interior and unknown addresses, replays as with the bundled acl."""
    def interior(n, args):  # an interior address (unspecified), an unknown one (refused)
        inside = args["ptr"] + 16
        return [{"call": "aclrtHostUnregister", "args": {"ptr": inside}, "ret": 0},
                {"call": "aclrtHostGetDevicePointer", "args": {"pHost": inside, "flag": 0}, "ret": 507899}] \
            if n % 10 == 0 else []
    sem, trace = spelt_acl_and_mix(tmp_path, KEYED_SPELT, 11, interior)
    spec = sem.spec
    em = Emitter(spec, sem.config)
    spelt_quants = [q for c in spec.calls.values() for q in nodes(c.decl)
                    if isinstance(q, S.Quant) and (key_probe(q) or spelt_containment(q, "size"))]
    assert len(spelt_quants) == 3
    assert all(".entries()" not in em.quant(q, CodeScope(frozenset())) for q in spelt_quants)
    result = outcome(trace, True, None, *mode, sem=sem)
    found = [(f["line"], f["rule"]) for f in result[1]["findings"]]
    assert "ACL-UNREG-INTERIOR" in {rule for _, rule in found}
    bundled = outcome(trace, True, None, *mode)
    assert found == [(f["line"], f["rule"]) for f in bundled[1]["findings"]] and result[4:] == bundled[4:]
    assert outcome(trace, False, sem=sem)[1]["findings"] == result[1]["findings"]


# ---------------------------------------------------------------- every legal line style on the fast path


def _conforming_fast_traces() -> list[Path]:
    """The corpus traces that conform with every event on the fast path, as written."""
    found = []
    for path in CORPUS:
        counter: dict = {}
        saved, replay_mod.fast_path = replay_mod.fast_path, counting_steps(counter)
        try:
            result = outcome(path.read_bytes(), True)
        finally:
            replay_mod.fast_path = saved
        if result[0] == "report" and result[1]["verdict"] == "conforms" and not result[1]["findings"] \
                and counter.get(True, 0) == result[1]["events"] > 0:
            found.append(path)
    return found


CONFORMING = _conforming_fast_traces()


def _hex(draw, n: int) -> str:
    digits = draw(st.sampled_from(["%x", "%X", "%016x"])) % n
    return draw(st.sampled_from(["0x", "0X"])) + digits


def _respelt(draw, spec, t, v):
    """A legal spelling of value `v` of type `t` (trace-format.md's integers and flags)."""
    if type(v) is not int or t.kind not in ("int", "flags") or v < 0 or v >= 2**63:
        return v
    way = draw(st.integers(0, 3))
    if way == 1:
        return _hex(draw, v)
    if way == 2 and t.kind == "flags" and v:
        names = [n for n, bit in sorted(spec.flags[t.name].items()) if bit and v & bit == bit]
        covered = 0
        for n in names:
            covered |= spec.flags[t.name][n]
        if covered == v and names:
            chosen = draw(st.permutations(names))
            return chosen[0] if len(chosen) == 1 and draw(st.booleans()) else list(chosen)
    return v


def _shuffled(draw, d: dict) -> dict:
    return dict(draw(st.permutations(list(d.items()))))


@st.composite
def restyled(draw, spec, line: bytes) -> bytes:
    """`line`, a conforming event, written in another legal style: keys in any order, integers in
    hex or flag names, an integer `ret` in hex, an environment event's ret as the C status 0 or the
    success name where statuses are names, a `tid` without times, an `expect`, spaces, CRLF, an
    escaped key."""
    ev = orjson.loads(line)
    info = spec.calls[ev["call"]]
    types = dict(info.params) | dict(info.outputs)
    for part in ("args", "out"):
        if part in ev:
            ev[part] = _shuffled(draw, {k: _respelt(draw, spec, types[k], v) for k, v in ev[part].items()})
    status_kind = spec.status_type.kind
    if "ret" in ev and status_kind == "int" and type(ev["ret"]) is int and ev["ret"] >= 0 and draw(st.booleans()):
        ev["ret"] = _hex(draw, ev["ret"])
    elif info.decl.kind == "event" and ev.get("ret", spec.success) == spec.success and draw(st.booleans()):
        ev["ret"] = draw(st.sampled_from([spec.success] + ([0, "0x0", "0X000"] if status_kind == "enum" else [])))
    if "tid" not in ev and "t0" not in ev and draw(st.integers(0, 3)) == 0:
        ev["tid"] = draw(st.sampled_from([7, "worker-1"]))  # (no times: no overlap to check)
    if "expect" not in ev and draw(st.integers(0, 3)) == 0:
        ok = "ret" not in ev or ev["ret"] in (spec.success, 0, "0x0", "0X000") or str(ev["ret"]).strip("0xX") == ""
        ev["expect"] = {"rule": "R-1", "outcome": "success" if ok else "failure"}
    ev = _shuffled(draw, ev)
    text = json.dumps(ev, separators=draw(st.sampled_from([(",", ":"), (", ", ": "), (" , ", " : ")])))
    if draw(st.integers(0, 4)) == 0:
        text = text.replace('"call"', '"c\\u0061ll"', 1)
    return (draw(st.sampled_from(["", " ", "\t"])) + text).encode() + draw(st.sampled_from([b"\n", b"\r\n"]))


@pytest.mark.parametrize("mode", LOOPS)
@settings(SLOW_OK, max_examples=30)
@given(data=st.data())
def test_every_legal_line_style_takes_the_fast_path(mode, data):
    """A conforming corpus trace whose every line the fast path takes, rewritten line by line in
    legal styles drawn at random: every line still takes the fast path, and the replay is the same."""
    path = data.draw(st.sampled_from(CONFORMING))
    header, *lines = path.read_bytes().splitlines(keepends=True)
    spec = semantics_for(read_trace_text(header, str(path))[0], None, str(path)).spec
    styled = [data.draw(restyled(spec, line)) for line in lines if line.strip()]
    counter: dict = {}
    saved, replay_mod.fast_path = replay_mod.fast_path, counting_steps(counter)
    try:
        result = outcome(header + b"".join(styled), True, None, *mode)
    finally:
        replay_mod.fast_path = saved
    assert counter == {True: len(styled)}, (path.name, counter)
    assert result == outcome(path.read_bytes(), True, None, *mode)


def test_the_corpus_has_conforming_traces_of_every_spec_for_the_styles():
    assert {p.parent.name for p in CONFORMING} >= {"acl", "cupva", "cuda", "hip"} and len(CONFORMING) >= 40


# ---------------------------------------------------------------- the decoder reads nothing differently from orjson


def _decoder(name):
    from checker.model.semantics import Semantics
    sem = Semantics(load_spec(name), {})
    return fast_path(sem, sem.initial_state(), lambda line, call: None).decode


DECODERS = {name: _decoder(name) for name in BUNDLED}


@pytest.mark.parametrize("name", BUNDLED)
@settings(SLOW_OK, max_examples=400)
@given(data=st.data())
def test_a_line_the_decoder_takes_is_the_same_json_to_orjson(name, data):
    """Whatever the fast path's decoder takes, orjson (the general path's reader) takes too, with the
    same keys and values of the same JSON types (compared as canonical JSON: true is not 1)."""
    raw = data.draw(mutated(name))
    try:
        o = DECODERS[name](raw)
    except DECODE_ERRORS:
        return
    canonical = orjson.dumps(orjson.loads(raw), option=orjson.OPT_SORT_KEYS)
    assert orjson.dumps(msgspec.to_builtins(o), option=orjson.OPT_SORT_KEYS) == canonical


@pytest.mark.parametrize("mode", LOOPS)
def test_a_read_error_midway_names_the_last_line_read(tmp_path, monkeypatch, mode):
    """Reading fails after 300 event lines (some of them for the general path): the input error
    names line 301, the last one read, whichever loop ran."""
    monkeypatch.setattr(replay_mod, "_PYTHON_LOOP", mode[0])
    monkeypatch.setattr(fastpath_mod, "MACHINE_STEPS", mode[1])
    path = tmp_path / "mix.jsonl"
    generate(str(path), 300, live=20, seed=9)
    header_line, *lines = path.read_bytes().splitlines(keepends=True)
    lines[100] = b'{"call":"aclrtHostUnregister","args":{"ptr":"0x1000"},"ret":"-0x0"}\n'  # signed: general path

    def failing():
        yield from lines
        raise OSError("disk on fire")
    header, _ = read_trace_text(header_line, "t.jsonl")
    r = Replayer(semantics_for(header, None, "t.jsonl"), "t.jsonl")
    with pytest.raises(RegcheckError) as exc:
        _replay_stream(r, EventStream(failing(), "t.jsonl", 1, False, None), None, None)
    (d,) = exc.value.diagnostics
    assert (d.code, d.span.line) == ("T0712", 301) and "disk on fire" in d.message


# ---------------------------------------------------------------- the values of a decoded line (regcheck execute)


def spelt_mix(tmp_path) -> bytes:
    """The benchmark mix with some integers spelt as "0x..." strings or flag names, failures with an
    empty "out", and a few lines the decoder takes but normalisation rejects (a success without its
    outputs)."""
    path = tmp_path / "mix.jsonl"
    generate(str(path), 400, live=30, seed=5)
    header, *lines = path.read_bytes().splitlines(keepends=True)
    out = [header]
    for i, line in enumerate(lines):
        ev = orjson.loads(line)
        if i % 7 == 3 and "ptr" in ev["args"]:
            ev["args"]["ptr"] = hex(ev["args"]["ptr"])
        if i % 11 == 5 and ev["call"] == "aclrtHostRegisterV2" and ev["args"]["flag"] == 2:
            ev["args"]["flag"] = ["ACL_HOST_REG_MAPPED"]
        if i % 13 == 6 and "out" in ev and ev.get("ret", 0) == 0:
            ev["out"] = {}
        if i % 17 == 8 and ev["call"] == "aclrtHostGetDevicePointer":  # a failure with an empty "out"
            ev["ret"], ev["out"] = 107000, {}
        if i % 5 == 2 and "ret" in ev:
            ev["ret"] = hex(ev["ret"])
        out.append(orjson.dumps(ev) + b"\n")
    return b"".join(out)


def read_lines_both_ways(text: bytes) -> tuple[int, int, int]:
    """Every line the decoder takes: its values by `line_readers` against `Replayer.normalise` of the
    same line; (lines read, of those the lines with a spelt integer, lines left to the general path
    for a spelt integer the machine's rule does not take)."""
    header, stream = read_trace_text(text, "t.jsonl")
    sem = semantics_for(header, None, "t.jsonl")
    r = Replayer(sem, "t.jsonl")
    fast = r.fast_path()
    readers = fastpath_mod.line_readers(sem, fast)
    read_n = spelt_n = left_n = 0
    lineno = stream.lineno
    for raw in stream.raw_lines():
        lineno += 1
        try:
            o = fast.decode(raw)
        except DECODE_ERRORS:
            continue
        read = readers.get(type(o))
        if read is None:
            continue
        values = read(o)
        ev = stream.event(raw, UNDECODED, lineno)
        spelt = any(type(v) in (str, list) for v in (*ev.args.values(), *ev.out.values(), ev.ret))
        if values is None:
            left_n += 1
            assert spelt, raw
            continue
        try:
            shape, args, status, outs = r.normalise(ev)
        except RegcheckError:
            continue  # the decoder's shape is wider here; the step declines such a line
        read_n += 1
        spelt_n += spelt
        assert (values.call, dict(zip(values.params, values.inputs)), values.status, values.outs) == \
            (shape.name, args, status, outs), raw
    return read_n, spelt_n, left_n


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_line_readers_read_the_corpus_as_normalise_does(path):
    read_lines_both_ways(path.read_bytes())


def test_line_readers_read_spelt_integers_as_normalise_does(tmp_path):
    read_n, spelt_n, left_n = read_lines_both_ways(spelt_mix(tmp_path))
    assert read_n > 300 and spelt_n > 20 and left_n == 0


def test_line_readers_read_an_environment_events_c_status_as_normalise_does():
    """cuPVA's cudaMalloc and cudaFree with the C status 0 (as the JSON integer, in hex, or as the
    success name, or no ret) read as success, as `Replayer.normalise` reads them; a signed hex zero
    is left to the general path."""
    rets = [', "ret": 0', ', "ret": "0x0"', ', "ret": "0X00"', ', "ret": "ok"', '']
    lines = [CUPVA]
    for i, ret in enumerate(rets):
        ptr = 0x302000000 + i * 0x100000
        lines.append(f'{{"call": "cudaMalloc", "args": {{"size": 4096}}, "out": {{"devPtr": {ptr}}}{ret}}}\n'.encode())
        lines.append(f'{{"call": "cudaFree", "args": {{"devPtr": {ptr}}}{ret}}}\n'.encode())
    lines.append(b'{"call": "cudaMalloc", "args": {"size": 4096}, "out": {"devPtr": 4096}, "ret": "-0x0"}\n')
    read_n, _, left_n = read_lines_both_ways(b"".join(lines))
    assert (read_n, left_n) == (2 * len(rets), 1)


def test_line_readers_leave_spelt_integers_out_of_bounds_to_the_general_path():
    too_big = hex(2**64)  # a "0x..." string the decoder takes, beyond a 64-bit address
    text = (b'{"regcheck":1,"spec":"acl","env":{"os_kernel":"6.6","product":"AtlasA2"}}\n'
            b'{"call":"malloc","args":{"size":4096},"out":{"ptr":"' + too_big.encode() + b'"}}\n'
            b'{"call":"malloc","args":{"size":"0x1000"},"out":{"ptr":"0x7f0000000000"}}\n')
    header, stream = read_trace_text(text, "t.jsonl")
    sem = semantics_for(header, None, "t.jsonl")
    fast = Replayer(sem, "t.jsonl").fast_path()
    readers = fastpath_mod.line_readers(sem, fast)
    values = []
    for raw in stream.raw_lines():
        o = fast.decode(raw)
        values.append(readers[type(o)](o))
    assert values[0] is None
    assert values[1] is not None and values[1].inputs == (4096,) and values[1].outs == {"ptr": 0x7F0000000000}


def test_a_probe_two_clauses_ask_is_computed_once_per_step():
    """acl's Unregister tests `exists` over regs in two clauses: the step's mask tests share one
    local for it, set on first use; GetDevicePointer's look its row up once; the tests of a call
    that asks nothing twice share nothing."""
    from checker.model.codegen import CodeScope, Emitter, bound_tables
    from checker.model.semantics import Semantics
    sem = Semantics(load_spec("acl"), {})
    em = Emitter(sem.spec, sem.config)
    tables = bound_tables(sem.spec)

    def shared_in(call):
        own = frozenset(n for n, _ in sem.calls[call].info.params)
        tests, shared, rows = em.with_shared_probes(lambda: sem.mask_tests(em, call, CodeScope(own, tables)), own)
        assert (tests != sem.mask_tests(em, call, CodeScope(own, tables))) == bool(shared or rows)
        return tests, shared, rows

    tests, shared, rows = shared_in("aclrtHostUnregister")
    assert shared == ["_p0"]
    assert sum(t.count("(_p0 := ") for t in tests) >= 2
    tests, shared, rows = shared_in("aclrtHostGetDevicePointer")  # its clauses read regs[pHost] five times
    assert len(rows) == 1 and rows[0].endswith(".get(L_pHost, NOROW)")
    assert not any("in TR" in t or "TR1[L_pHost]" in t for t in tests)
    assert shared_in("aclrtMallocHost")[1:] == ([], [])


def test_a_steps_ensures_read_the_row_its_mask_looked_up():
    """GetDevicePointer's promise about the device address reads regs[pHost] three times: the step
    reads the row its mask looked up instead. MallocHost's promise asks about its output's row,
    which the step cannot look up before its outputs are read: that ask stays where it is."""
    from checker.model.codegen import Emitter, bound_tables
    from checker.model.semantics import Semantics
    sem = Semantics(load_spec("acl"), {})
    em = Emitter(sem.spec, sem.config)
    tables = bound_tables(sem.spec)
    rows_of = {t: tr for t, (_, tr) in tables.items()}

    _, (promise,), _, rows = fastpath_mod.clause_tests(sem, em, "aclrtHostGetDevicePointer", tables)
    (row,) = [r for r in rows if f"{rows_of['regs']}.get(L_pHost" in r]
    name = row.split(" = ")[0]
    assert promise.count(f"{name}[") == 2 and f"{rows_of['regs']}[" not in promise and " in " not in promise
    _, (promise,), _, rows = fastpath_mod.clause_tests(sem, em, "aclrtMallocHost", tables)
    assert f"(L_hostPtr in {rows_of['host_allocs']})" in promise
    assert not any("L_hostPtr" in r for r in rows)
