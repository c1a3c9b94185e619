"""Concrete call sequences (runs): data, replay with the concrete semantics, shrinking, formatting.

A `Run` is a trace as data: the configuration and the steps from the initial state. Bounded
model checking, the prover's witnesses and the simulator all produce runs; each is checked and
shortened here with `checker.model.semantics` only (this module does not import z3), and written as a
trace file (format v1) that `regcheck replay` reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..language.checked import CheckedSpec, Type
from ..model.outcomes import Allowed, EvalError
from ..model.semantics import Semantics
from ..model.state import State
from ..model.values import type_problem
from ..trace.events import TraceEvent, TraceHeader
from ..trace.reader import header_written_to
from ..trace.writer import write_trace


# ---------------------------------------------------------------- runs


@dataclass(frozen=True, slots=True)
class Step:
    """One call with its inputs and outputs (semantics values) and the status it returned."""

    call: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    status: Any = None  # None for environment events (they have no status)


@dataclass(frozen=True, slots=True)
class Run:
    """A concrete call sequence from the initial state under one configuration: a trace, as data."""

    spec: str  # the spec as a trace header names it: a bundled name or a path
    env: Mapping[str, Any]  # parameter values (semantics values)
    steps: tuple[Step, ...]

    def header(self, checked: CheckedSpec) -> TraceHeader:
        return TraceHeader(spec=self.spec, env={n: json_value(checked.params[n][0], v) for n, v in self.env.items()})

    def events(self, checked: CheckedSpec) -> list[TraceEvent]:
        out = []
        for s in self.steps:
            info = checked.calls[s.call]
            args = {n: event_value(t, s.inputs[n]) for n, t in info.params}
            outs = {n: event_value(t, s.outputs[n]) for n, t in info.outputs if n in s.outputs}
            out.append(TraceEvent(line=0, call=s.call, args=args, ret=s.status, out=outs))
        return out

    def write(self, target, checked: CheckedSpec) -> int:
        """Write as a trace file (format v1) that `regcheck replay` reads. Written to a path, the
        header names a spec file given by a relative path relative to the trace's directory, so the
        trace replays from anywhere."""
        return write_trace(target, header_written_to(self.header(checked), target), self.events(checked))

    def describe(self, checked: CheckedSpec) -> list[str]:
        lines = []
        for i, s in enumerate(self.steps, 1):
            lines.append(f"{i}. {format_step(checked, s)}")
        return lines


def json_value(t: Type, v):
    """A semantics value as a trace JSON value in the header's `env` (a version as "5.10.1")."""
    if t.kind == "version":
        return ".".join(str(p) for p in v)
    return v


def event_value(t: Type, v):
    """A semantics value as a trace JSON value in an event's `args` or `out`: there a version is the
    list of its numbers ([5, 10, 1]), since a string starting with a digit reads as an integer
    (docs/trace-format.md)."""
    if t.kind == "version":
        return list(v)
    return v


def format_value(t: Type, v) -> str:
    if t.kind in ("int", "flags") and isinstance(v, int):
        if t.kind == "flags":
            return f"{v:#x}"
        return f"{v:#x}" if abs(v) >= 4096 else str(v)
    if t.kind == "version":
        return ".".join(str(p) for p in v)
    if t.kind == "bool":
        return "true" if v else "false"
    return str(v)


def format_step(checked: CheckedSpec, s: Step) -> str:
    info = checked.calls[s.call]
    args = ", ".join(f"{n}={format_value(t, s.inputs[n])}" for n, t in info.params)
    text = f"{s.call}({args})"
    if info.outputs:
        text += " -> (" + ", ".join(f"{n}={format_value(t, s.outputs[n])}" for n, t in info.outputs if n in s.outputs) + ")"
    if s.status is not None:
        text += f" = {s.status}"
    return text


def format_state(checked: CheckedSpec, st: State) -> str:
    """A state in one line: `vm=Init; regs={0x1000: size=0x1000, kind=CUDA}; ...` (empty tables shown)."""
    parts = [f"{n}={format_value(t, st.vars[n])}" for n, (t, _) in checked.vars.items()]
    for n, info in checked.tables.items():
        rows = st.tables[n].rows
        entries = []
        for k in sorted(rows, key=_sort_key):
            rec = ", ".join(f"{f}={format_value(t, rows[k][f])}" for f, t in info.fields)
            entries.append(f"{format_value(info.key, k)}: {rec}")
        parts.append(f"{n}={{" + "; ".join(entries) + "}")
    return "; ".join(parts)


def format_env(checked: CheckedSpec, env: Mapping) -> str:
    return ", ".join(f"{n}={format_value(checked.params[n][0], v)}" for n, v in env.items())


def _sort_key(k):
    return (0, k) if isinstance(k, int) else (1, str(k))


# ---------------------------------------------------------------- concrete checking of runs

_SEMANTICS: dict = {}


def semantics_for(spec: CheckedSpec, env: Mapping[str, Any]) -> Semantics:
    """A `Semantics` per (spec, configuration), reused: building one compiles the spec."""
    key = (id(spec), tuple(sorted(env.items())))
    hit = _SEMANTICS.get(key)
    if hit is not None and hit[0] is spec:
        return hit[1]
    if len(_SEMANTICS) > 256:
        _SEMANTICS.clear()
    sem = Semantics(spec, env)
    _SEMANTICS[key] = (spec, sem)
    return sem


def step_allowed(sem: Semantics, st: State, s: Step) -> Allowed | None:
    """The step's Allowed when it is a successful step a careful caller may take, else None."""
    al = sem.allowed(st, s.call, s.inputs)
    if al.broken:
        return None
    if not (al.success or al.unspecified):
        return None
    if sem.ensures_broken(st, s.call, s.inputs, s.outputs):
        return None
    return al


def replay_prefix(sem: Semantics, steps: Sequence[Step]) -> State | None:
    """The state after applying steps from the initial state, or None when a step is not allowed.

    A success whose effect cannot be evaluated here (an update of an absent entry) leaves the state
    as it was, as in `regcheck replay` and in the solver's encoding (docs/language.md: an effect is
    atomic): the step is allowed. (Rejecting it made a solver's witness run that passes through such
    a step fail to replay, and `prove` then reported that no call can succeed.)"""
    st = sem.initial_state()
    for s in steps:
        if step_allowed(sem, st, s) is None:
            return None
        sem.apply(st, s.call, s.inputs, s.outputs)
    return st


def shrink(sem: Semantics, steps: Sequence[Step], holds: Callable[[State], bool]) -> tuple[Step, ...]:
    """Drop steps while the run stays allowed and `holds(final state)` stays true.

    Delta-debugging style: contiguous chunks of halving size, then single steps until nothing
    more goes, then pairs of steps (an allocation and its free) for short runs.
    """
    def ok(trial: tuple) -> bool:
        st = replay_prefix(sem, trial)
        return st is not None and holds(st)

    steps = tuple(steps)
    size = max(1, len(steps) // 2)
    while steps:
        progress = False
        i = 0
        while i + size <= len(steps):
            trial = steps[:i] + steps[i + size:]
            if ok(trial):
                steps, progress = trial, True
            else:
                i += 1
        if size > 1:
            size //= 2
        elif not progress:
            break
    progress = len(steps) <= PAIR_SHRINK_LIMIT
    while progress:
        progress = False
        for i in range(len(steps)):
            for j in range(i + 1, len(steps)):
                trial = steps[:i] + steps[i + 1:j] + steps[j + 1:]
                if ok(trial):
                    steps, progress = trial, True
                    break
            if progress:
                break
    return steps


PAIR_SHRINK_LIMIT = 24


@dataclass(frozen=True, slots=True)
class Violation:
    """A run from the initial state after which invariants fail (checked concretely)."""

    run: Run
    invariants: tuple[str, ...]  # the rule IDs that fail in the final state (concrete semantics)
    states: tuple[State, ...]  # the state after each step (the initial state first)


TYPES = "TYPES"  # the implicit property: every state value lies in its declared type's range


def well_typed(spec: CheckedSpec, st: State) -> bool:
    """Every state value lies in its declared type's range (the prover's TYPES property)."""
    def ok(t, v) -> bool:
        return type_problem(spec, t, v) is None
    for n, (t, _) in spec.vars.items():
        if not ok(t, st.vars[n]):
            return False
    for n, info in spec.tables.items():
        for k, rec in st.tables[n].rows.items():
            if not ok(info.key, k) or not all(ok(t, rec[f]) for f, t in info.fields):
                return False
    return True


def failing_invariants(sem: Semantics, st: State) -> list[str]:
    """The invariants (and TYPES) false in st; all of them when one cannot be evaluated."""
    try:
        bad = list(sem.holds(st))
    except EvalError:
        return [inv.rule for inv in sem.spec.invariants]
    if not well_typed(sem.spec, st):
        bad.append(TYPES)
    return bad


def status_candidates(spec: CheckedSpec, outcome) -> list:
    """Failure statuses an allowed error outcome permits: its codes, or for `any [except ...]` a few
    non-success statuses it does not exclude (every member, for an enum status)."""
    if outcome.codes is not None:
        return sorted(outcome.codes, key=str)
    excluded = set(getattr(outcome, "excluded", ()) or ())
    if spec.status_type.kind == "enum":
        return [m for m in spec.enums[spec.status_type.name] if m != spec.success and m not in excluded]
    return [c for c in (spec.success + 1, 500000, 507000, 507899) if c != spec.success and c not in excluded]


def a_status(spec: CheckedSpec, outcome, pick: Callable[[list], Any] = min) -> Any:
    """A failure status an allowed error outcome permits (`pick` chooses among status_candidates)."""
    return pick(status_candidates(spec, outcome))
