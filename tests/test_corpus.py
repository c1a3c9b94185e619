"""The replay corpus (traces/): golden reports, naming, size and rule coverage.

Every trace `traces/SPEC/NAME.jsonl` has a golden `NAME.expect` beside it: `# exit N` on the first
line, then exactly what `regcheck replay traces/SPEC/NAME.jsonl` prints on stdout when run from the
repository root. `pytest --update-golden tests/test_corpus.py` rewrites the goldens from the
current output (review the diff before committing it).

Coverage: every rule of every bundled spec except invariants (proved by `regcheck prove`) and `pinned`
declarations (checked by `regcheck execute`) must be exercised by the corpus, as
  - a usage finding (requires / undefined / usage rules),
  - a conformance finding (fails, ensures and effect rules),
  - an unspecified finding (unspecified rules),
  - or, in a conforming or a `probe_` trace, a recorded failure the rule explains (fails / may-fail
    rules) or a recorded success that runs the rule's effect (effect rules).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from checker.language.load import load_spec
from checker.model.semantics import Semantics
from checker.model.values import coerce_value
from checker.trace.reader import read_trace
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
TRACE_DIR = REPO / "traces"
SPECS = ("acl", "cupva", "cuda", "hip")
MIN_OK, MIN_BAD = 10, 20

TRACES = sorted(p.relative_to(REPO).as_posix() for p in TRACE_DIR.glob("*/*.jsonl"))
FINDING_LINE = re.compile(r"^(?P<path>\S+):(?P<line>\d+): (?P<kind>usage|conformance|unspecified)\[(?P<rule>[^\]]+)\]: ")


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    # Goldens hold paths relative to the repository root, as the CLI prints them from there.
    monkeypatch.chdir(REPO)


def replay(*argv: str) -> tuple[int, str, str]:
    return run_cli("replay", *argv)


def golden_path(trace: str) -> Path:
    return REPO / (trace[: -len(".jsonl")] + ".expect")


# ---------------------------------------------------------------- goldens


@pytest.mark.parametrize("trace", TRACES)
def test_golden(trace, update_golden):
    code, out, err = replay(trace)
    assert err == "", f"{trace}: unexpected stderr:\n{err}"
    actual = f"# exit {code}\n{out}"
    golden = golden_path(trace)
    if update_golden:
        golden.write_text(actual, encoding="utf-8")
        return
    assert golden.exists(), f"{golden.relative_to(REPO)} is missing; run pytest --update-golden {__file__}"
    expected = golden.read_text(encoding="utf-8")
    assert actual == expected, f"{trace}: output differs from {golden.name} (pytest --update-golden rewrites it)"


@pytest.mark.parametrize("trace", TRACES)
def test_name_prefix_matches_exit_code(trace):
    name = Path(trace).name
    assert name.startswith(("ok_", "bad_", "probe_")), f"{trace}: corpus traces are named ok_*, bad_* or probe_*"
    code, _, err = replay(trace)
    assert code == (0 if name.startswith("ok_") else 1), f"{trace}: exit {code}\n{err}"
    if name.startswith("probe_"):  # every finding: a broken obligation the runtime rejected
        doc = json.loads(replay("--format", "json", trace)[1])
        assert doc["findings"] and all(f["kind"] == "usage" and f.get("rejected") for f in doc["findings"])
        assert replay("--ignore-rejected", trace)[0] == 0


@pytest.mark.parametrize("trace", TRACES)
def test_json_agrees_with_text(trace):
    code, text, _ = replay(trace)
    jcode, jtext, jerr = replay("--format", "json", trace)
    assert jcode == code and jerr == ""
    doc = json.loads(jtext)
    assert doc["trace"] == trace
    assert doc["spec"] == Path(trace).parent.name
    assert doc["verdict"] == ("conforms" if code == 0 else "violates")
    from_text = sorted((int(m["line"]), m["kind"], m["rule"]) for m in map(FINDING_LINE.match, text.splitlines()) if m)
    from_json = sorted((f["line"], f["kind"], f["rule"]) for f in doc["findings"])
    assert from_json == from_text
    summary = text.splitlines()[-1]
    assert summary.startswith(f"{trace}: {doc['verdict']}: {doc['events']} events")


def test_every_trace_has_a_golden_and_every_golden_a_trace():
    traces = {Path(t).with_suffix("").as_posix() for t in TRACES}
    goldens = {p.relative_to(REPO).with_suffix("").as_posix() for p in TRACE_DIR.glob("*/*.expect")}
    assert goldens == traces, f"without golden: {sorted(traces - goldens)}; orphan goldens: {sorted(goldens - traces)}"


def test_corpus_size():
    counts = {spec: {"ok": 0, "bad": 0, "probe": 0} for spec in SPECS}
    for t in TRACES:
        spec, name = Path(t).parent.name, Path(t).name
        assert spec in SPECS, f"{t}: traces live in traces/<spec>/ for a bundled spec"
        counts[spec][name.split("_", 1)[0]] += 1
    for spec in SPECS:
        assert counts[spec]["ok"] >= MIN_OK and counts[spec]["bad"] >= MIN_BAD, counts


def test_readme_describes_every_trace():
    # traces/README.md, plus the per-spec tables kept beside the traces (traces/cuda/README.md, ...)
    readmes = [TRACE_DIR / "README.md", *sorted(TRACE_DIR.glob("*/README.md"))]
    readme = "\n".join(p.read_text(encoding="utf-8") for p in readmes)
    missing = [t for t in TRACES if f"`{Path(t).parent.name}/{Path(t).name}`" not in readme]
    assert not missing, f"traces/README.md does not describe: {missing}"


# ---------------------------------------------------------------- coverage


def _events(trace: str):
    header, events = read_trace(trace)
    try:
        yield header
        yield from events
    finally:
        close = getattr(events, "close", None)
        if close:
            close()


def explained_outcomes(trace: str) -> set[str]:
    """Rules a conforming trace exercises without a finding: the documented failure that explains
    each recorded error (a specific code before `any`, a `fails` rule before a `may fail` one) and
    the effect of each recorded success."""
    events = _events(trace)
    header = next(events)
    spec = load_spec(header.spec)
    sem = Semantics(spec, header.env)
    st = sem.initial_state()
    covered: set[str] = set()
    for ev in events:
        cc = sem.calls[ev.call]
        given = {**dict(cc.info.defaults), **ev.args}  # an input a line leaves out takes its default
        args = {n: coerce_value(t, given[n], spec) for n, t in cc.info.params}
        outs = {n: coerce_value(t, ev.out[n], spec) for n, t in cc.info.outputs if n in ev.out}
        status = sem.success if ev.ret is None else ev.ret
        allowed = sem.allowed(st, ev.call, args)
        if status == sem.success:
            if cc.effect_rule:
                covered.add(cc.effect_rule)
            sem.apply(st, ev.call, args, outs)
            continue
        if allowed.open:  # any outcome is allowed here: no rule explains this one
            continue
        for group in (allowed.errors, allowed.env_errors):
            matching = [e for e in group if e.allows(status)]
            specific = [e for e in matching if e.codes is not None]
            if specific or matching:
                covered.update(e.rule for e in (specific or matching))
                break
    return covered


FINDING_KINDS = {  # rule kind -> the finding kind that exercises it
    "requires": "usage", "undefined": "usage", "usage": "usage",
    "fails": "conformance", "ensures": "conformance", "effect": "conformance",
    "unspecified": "unspecified",
}


def test_every_rule_is_covered():
    covered: dict[str, set[str]] = defaultdict(set)
    for trace in TRACES:
        spec_name = Path(trace).parent.name
        spec = load_spec(spec_name)
        code, text, _ = replay("--format", "json", trace)
        for f in json.loads(text)["findings"]:
            info = spec.rules.get(f["rule"])
            if info is not None and FINDING_KINDS.get(info.kind) == f["kind"]:
                covered[spec_name].add(f["rule"])
        if code == 0 or Path(trace).name.startswith("probe_"):  # probe_: its findings are all rejected calls
            covered[spec_name] |= explained_outcomes(trace)
    uncovered = []
    for spec_name in SPECS:
        spec = load_spec(spec_name)
        for rule, info in spec.rules.items():
            if info.kind not in ("invariant", "pinned") and rule not in covered[spec_name]:
                uncovered.append(f"{spec_name}: {rule} ({info.kind})")
    assert not uncovered, "rules no corpus trace exercises:\n  " + "\n  ".join(uncovered)
