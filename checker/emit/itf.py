"""ITF export: traces, runs and counterexamples as Informal Trace Format JSON (Quint, Apalache).

ITF (Apalache ADR-015) is a JSON object `{"#meta": {...}, "vars": [...], "states": [...]}`; each
state is an object `{"#meta": {"index": i}, VAR: VALUE, ...}` holding every variable named in
`vars`. Values:

  bool                      JSON true / false
  int (addresses, sizes,    {"#bigint": "123"} always (the form Quint writes: no reader has to
  flags, statuses)          guess whether a JSON number kept its precision; `ints="auto"` writes
                            a JSON number when |x| < 2**53 instead, which ITF also allows)
  enum member, string       JSON string (the member's name)
  version, range            {"#tup": [...]}: a version as its components, a range as (base, end)
  record                    JSON object field -> value
  table                     {"#map": [[key, record], ...]} sorted by key
  set                       {"#set": [...]}

The variables of a state, in this order: the spec's parameters (constant along the trace, so a
viewer shows the configuration; not ITF `params`, whose values ITF keeps elsewhere), the spec's
state variables, one map per table, then

  action      the call that led to this state ("init" for state 0)
  last_call   {"line", "call", "args", "ret", "out", "applied"}: the event as recorded (normalised:
              addresses and flags as ints, enum members as names); `applied` says whether its
              success effect ran (only a recorded success changes the state; false also for a
              success whose effect could not be evaluated and was undone, docs/language.md)
  findings    {"#set": [{"kind", "rule", "message"}, ...]}: what replay reports at this event

(Where the spec has a parameter, variable or table named like one of these three, the event's
variable is named with `regcheck_` in front: `regcheck_action`.)
State i + 1 is the model state after event i + 1 of the trace, computed by the one concrete
semantics exactly as `regcheck replay` computes it (the replayer itself walks the trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import orjson

from ..engines.replay import Finding, Replayer, semantics_for, spec_notes
from ..engines.runs import Run
from ..language.checked import CheckedSpec
from ..language.diagnostics import RegcheckError, error
from ..model.semantics import Semantics
from ..model.state import State
from ..trace.reader import read_trace

ITF_FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
SAFE_INT = 2**53  # JSON numbers above this lose precision in JavaScript-based readers
EVENT_VARS = ("action", "last_call", "findings")
INT_MODES = ("bigint", "auto")


@dataclass(frozen=True, slots=True)
class ItfStep:
    """One state of an ITF trace: the model state and the event that led to it."""

    state: State
    action: str  # the call name, or "init"
    line: int = 0  # the trace line of the event (0: none)
    args: Mapping[str, Any] = field(default_factory=dict)
    ret: Any = None  # the status (None: the initial state)
    out: Mapping[str, Any] = field(default_factory=dict)
    applied: bool = False
    findings: tuple[Finding, ...] = ()


# ---------------------------------------------------------------- values


def encode_value(v: Any, ints: str = "bigint") -> Any:
    """A semantics value as an ITF value (see the module docstring)."""
    if v is True or v is False:
        return v
    if type(v) is int:
        if ints == "auto" and -SAFE_INT < v < SAFE_INT:
            return v
        return {"#bigint": str(v)}
    if isinstance(v, str):
        return v
    if isinstance(v, tuple):
        return {"#tup": [encode_value(x, ints) for x in v]}
    if isinstance(v, (set, frozenset)):
        return {"#set": [encode_value(x, ints) for x in sorted(v, key=_order)]}
    if isinstance(v, Mapping):
        if all(isinstance(k, str) and not k.startswith("#") for k in v):
            return {k: encode_value(x, ints) for k, x in v.items()}
        return {"#map": [[encode_value(k, ints), encode_value(x, ints)] for k, x in sorted(v.items(), key=_order_item)]}
    if isinstance(v, list):
        return [encode_value(x, ints) for x in v]
    return {"#unserializable": repr(v)}


def _order(x: Any) -> tuple:
    return (0, x, "") if type(x) is int else (1, 0, repr(x))


def _order_item(item: tuple) -> tuple:
    return _order(item[0])


# ---------------------------------------------------------------- states and traces


def variables(spec: CheckedSpec) -> list[str]:
    """The ITF `vars` of a trace of this spec, in state order."""
    return [*spec.params, *spec.vars, *spec.tables, *event_vars(spec).values()]


def event_vars(spec: CheckedSpec) -> dict[str, str]:
    """EVENT_VARS -> the names they have in this spec's ITF: themselves, or with `regcheck_` in front
    (again, until free) where the spec has a parameter, variable or table of that name (ITF names
    each variable once; a spec's `action` must not be hidden by the event's)."""
    taken = {*spec.params, *spec.vars, *spec.tables}
    names = {}
    for var in EVENT_VARS:
        name = var
        while name in taken:
            name = "regcheck_" + name
        names[var] = name
        taken.add(name)
    return names


def encode_step(spec: CheckedSpec, config: Mapping[str, Any], step: ItfStep, index: int, ints: str = "bigint") -> dict:
    """One ITF state: index, configuration, state variables, tables, and the event."""
    st = step.state
    out: dict[str, Any] = {"#meta": {"index": index}}
    for name in spec.params:
        out[name] = encode_value(config[name], ints)
    for name in spec.vars:
        out[name] = encode_value(st.vars[name], ints)
    for name in spec.tables:
        rows = st.tables[name].rows
        out[name] = {"#map": [[encode_value(k, ints), encode_value(rows[k], ints)] for k in sorted(rows, key=_order)]}
    named = event_vars(spec)
    out[named["action"]] = step.action
    out[named["last_call"]] = {
        "line": encode_value(step.line, ints),
        "call": step.action,
        "args": encode_value(dict(step.args), ints),
        "ret": encode_value(spec.success if step.ret is None else step.ret, ints),
        "out": encode_value(dict(step.out), ints),
        "applied": step.applied,
    }
    out[named["findings"]] = {"#set": sorted(({"kind": f.kind, "rule": f.rule, "message": f.message}
                                               for f in step.findings),
                                      key=lambda d: (d["kind"], d["rule"], d["message"]))}
    return out


def itf_meta(spec: CheckedSpec, config: Mapping[str, Any], source: str, description: str, **extra) -> dict:
    meta = {"format": "ITF", "format-description": ITF_FORMAT_DESCRIPTION, "source": source,
            "description": description, "spec": spec.name,
            "env": {n: encode_value(v, "auto") for n, v in config.items()}}
    meta.update(extra)
    return meta


def itf_document(spec: CheckedSpec, config: Mapping[str, Any], steps: Iterable[ItfStep], meta: dict,
                 ints: str = "bigint") -> dict:
    """An ITF trace (a dict for json.dumps) from model states along a run."""
    _check_ints(ints)
    return {"#meta": meta, "vars": variables(spec),
            "states": [encode_step(spec, config, s, i, ints) for i, s in enumerate(steps)]}


DEFAULT_MAX_ITF_BYTES = 256 << 20  # 256 MiB


def write_itf(out, spec: CheckedSpec, config: Mapping[str, Any], steps: Iterable[ItfStep], meta_of,
              ints: str = "bigint", max_bytes: int = DEFAULT_MAX_ITF_BYTES) -> int:
    """Stream an ITF trace to a binary file, one state at a time (a long trace never sits in memory
    whole). `meta_of()` is called after the last step, so it can report how the walk ended.
    Returns the number of states written.

    Every ITF state is a whole snapshot of the tables, so the output grows with events times live
    entries (quadratically for a trace that only adds entries): past `max_bytes` the export stops
    with E0605 instead of filling the disk."""
    _check_ints(ints)
    out.write(b'{"vars":' + orjson.dumps(variables(spec)) + b',"states":[')
    n = written = 0
    for step in steps:
        if n:
            out.write(b",\n")
        state = orjson.dumps(encode_step(spec, config, step, n, ints))
        written += len(state) + 2
        if written > max_bytes:
            raise RegcheckError([error("E0605", f"the ITF output passes {max_bytes} bytes at state {n} (each state "
                                       "holds every live table entry); export fewer events with --max-events, "
                                       "or raise --max-bytes")])
        out.write(state)
        n += 1
    out.write(b'],\n"#meta":' + orjson.dumps(meta_of()) + b"}\n")
    return n


def _check_ints(ints: str) -> None:
    if ints not in INT_MODES:
        raise ValueError(f"ints must be one of {', '.join(INT_MODES)}, not {ints!r}")


# ---------------------------------------------------------------- sources of steps


@dataclass
class TraceWalk:
    """The steps of a recorded trace, replayed (iterate it once); afterwards `events`, `verdict`
    and `truncated` say how the walk went."""

    path: str
    spec_name: str | None = None
    max_events: int | None = None
    sem: Semantics | None = None
    events: int = 0
    violations: int = 0
    truncated: bool = False
    notes: tuple = ()  # T0737 diagnostics: --spec replaced the header's spec

    def __post_init__(self) -> None:
        self._header, self._events = read_trace(self.path)
        try:
            self.sem = semantics_for(self._header, self.spec_name, self.path)
            self.notes = spec_notes(self._header, self.spec_name, self.path)
        except BaseException:
            self.close()
            raise

    @property
    def verdict(self) -> str:
        return "violates" if self.violations else "conforms"

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close:
            close()

    def __iter__(self) -> Iterator[ItfStep]:
        sem = self.sem
        r = Replayer(sem, self.path)
        yield ItfStep(r.state, "init")
        try:
            for ev in self._events:
                if self.max_events is not None and self.events >= self.max_events:
                    self.truncated = True
                    break
                _, args, status, outs = r.normalise(ev)
                findings = r.feed(ev)
                self.events = r.events
                self.violations += sum(f.kind != "unspecified" for f in findings)
                yield ItfStep(r.state, ev.call, ev.line, args, status, outs, r.last_applied, tuple(findings))
        finally:
            self.close()


def trace_to_itf(path: str, spec_name: str | None = None, max_events: int | None = None, ints: str = "bigint") -> dict:
    """A recorded trace with the model states along it, as an ITF document (a dict)."""
    walk = TraceWalk(path, spec_name, max_events)
    # The state is mutated in place as the walk goes on: encode each step before taking the next.
    _check_ints(ints)
    spec, config = walk.sem.spec, walk.sem.config
    states = [encode_step(spec, config, s, i, ints) for i, s in enumerate(walk)]
    return {"#meta": trace_meta(walk), "vars": variables(spec), "states": states}


def trace_meta(walk: TraceWalk) -> dict:
    spec, config = walk.sem.spec, walk.sem.config
    extra = {"verdict": walk.verdict, "events": walk.events}
    if walk.truncated:
        extra["truncated"] = True
    return itf_meta(spec, config, walk.path, f"regcheck replay of {walk.path} against spec {spec.name}", **extra)


def run_steps(sem: Semantics, run: Run) -> Iterator[ItfStep]:
    """The steps of a generated run (a counterexample of `simulate`, `prove`, `shrink`): the state
    after each step by the concrete semantics; a step whose status is the success status (or an
    environment event, status None) applies its effect."""
    st = sem.initial_state()
    yield ItfStep(st.copy(), "init")
    for i, s in enumerate(run.steps, 1):
        ok = s.status is None or s.status == sem.success
        applied = ok and sem.apply(st, s.call, s.inputs, s.outputs)  # (False: an effect undone here)
        yield ItfStep(st.copy(), s.call, 0, s.inputs, s.status, s.outputs, applied)


def run_to_itf(spec: CheckedSpec, run: Run, description: str = "", ints: str = "bigint") -> dict:
    """A generated run (runs.Run) as an ITF document."""
    sem = Semantics(spec, run.env)
    meta = itf_meta(spec, sem.config, run.spec, description or f"a run of spec {spec.name}", steps=len(run.steps))
    return itf_document(spec, sem.config, run_steps(sem, run), meta, ints)


def counterexample_to_itf(spec: CheckedSpec, cex: Any, status: Any = None, description: str = "",
                          ints: str = "bigint") -> dict:
    """A prover counterexample (pre-state, call, post-state: `prover.CounterExample`) as a two-state
    ITF document. `status`: what the call returned (default: the success status, the branch that
    applies an effect); `#meta` lists the rules involved and the properties false afterwards."""
    sem = Semantics(spec, cex.env)
    ret = sem.success if status is None else status
    steps = [ItfStep(cex.pre, "init"),
             ItfStep(cex.post, cex.call, 0, cex.inputs, ret, cex.outputs, ret == sem.success)]
    meta = itf_meta(spec, sem.config, spec.name, description or f"counterexample: {cex.call}",
                    rules=list(cex.rules), failing=list(cex.failing))
    return itf_document(spec, sem.config, steps, meta, ints)
