"""Random walks of a spec's model with the concrete semantics (like TLC's simulation mode, `quint run`).

Each run starts in the initial state under one configuration (given, or drawn per run from the
values the spec itself compares parameters with), then takes up to `steps` steps: a call is drawn,
its inputs come from a small pool of addresses and sizes (so that ranges collide often) and are
redrawn until the caller keeps every obligation; the outcome is success when the documents allow
it (with outputs drawn until they keep the call's `ensures`), otherwise one of the allowed
failures (the state is unchanged). Every invariant is checked after every step. A violation is
shortened (steps dropped while it persists) and returned as a run that `regcheck replay` accepts.

Only `checker.model.semantics` decides what may happen: no solver is involved.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..language import syntax as S
from ..language.checked import INT_BOUNDS, CheckedSpec, Type
from ..model.semantics import Semantics
from ..model.state import State
from .runs import Run, Step, Violation, a_status, failing_invariants, semantics_for, shrink

# Addresses cluster on a few 4 KiB pages (aligned and not), so that ranges collide often.
PAGE = 0x1000
BASES = tuple(0x10000 + i * PAGE for i in range(6))
ADDRESSES = (0,) + BASES + (0x10800, 0x11040, 0x12001, 2**64 - PAGE)
SIZES = (0, 1, 0x800, PAGE, 2 * PAGE, 3 * PAGE)
NEAR = (0, 0, 0, 0x800, PAGE, -PAGE)
SWITCH_WEIGHT = 0.1
SUCCESS_BIAS = 0.8  # when both are allowed, how often a step succeeds rather than fails


@dataclass(frozen=True, slots=True)
class SimulationOptions:
    runs: int = 100
    steps: int = 50
    seed: int = 0
    env: Mapping[str, Any] | None = None  # fixed parameters; None: drawn per run
    tries: int = 8  # redraws of inputs (obligations) and of outputs (ensures) per step


@dataclass(frozen=True, slots=True)
class SimulationResult:
    spec: str
    runs: int  # runs completed (the one that found a violation included)
    steps: int  # steps taken in total (successes and failures)
    successes: int
    seconds: float
    violation: Violation | None
    rules_seen: Mapping[str, int] = field(default_factory=dict)  # errors, unspecified clauses, effects hit

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def simulate(spec: CheckedSpec, spec_name: str, options: SimulationOptions = SimulationOptions()) -> SimulationResult:
    t0 = time.perf_counter()
    configs = _config_pool(spec)
    total_steps = successes = 0
    seen: Counter = Counter()
    for run_index in range(options.runs):
        rng = random.Random(options.seed * 1_000_003 + run_index)
        env = dict(options.env) if options.env is not None else {n: rng.choice(v) for n, v in configs.items()}
        sem = semantics_for(spec, env)
        walker = _Walker(spec, sem, rng, options.tries)
        st = sem.initial_state()
        steps: list[Step] = []
        for _ in range(options.steps):
            step = walker.step(st, seen)
            if step is None:
                continue
            total_steps += 1
            steps.append(step)
            if not walker.last_success:
                continue
            successes += 1
            failing = failing_invariants(sem, st)
            if failing:
                violation = _violation(spec, spec_name, sem, env, steps, failing)
                return SimulationResult(spec_name, run_index + 1, total_steps, successes, time.perf_counter() - t0,
                                        violation, dict(seen))
    return SimulationResult(spec_name, options.runs, total_steps, successes, time.perf_counter() - t0, None, dict(seen))


def _violation(spec: CheckedSpec, spec_name: str, sem: Semantics, env: Mapping, steps: list[Step],
               failing: list[str]) -> Violation:
    successful = [s for s in steps if s.status is None or s.status == spec.success]

    def still(st: State) -> bool:
        return bool(set(failing_invariants(sem, st)) & set(failing))
    short = shrink(sem, successful, still)
    st = sem.initial_state()
    states = [st.copy()]
    for s in short:
        sem.apply(st, s.call, s.inputs, s.outputs)
        states.append(st.copy())
    return Violation(Run(spec_name, dict(env), short), tuple(failing_invariants(sem, st)), tuple(states))


class _Walker:
    """Draws one step at a time for one run."""

    def __init__(self, spec: CheckedSpec, sem: Semantics, rng: random.Random, tries: int):
        self.spec = spec
        self.sem = sem
        self.rng = rng
        self.tries = tries
        self.calls = list(spec.calls)
        # calls without inputs are global switches (ForceDisableSupport): drawn less often
        self.weights = [1.0 if spec.calls[c].params else SWITCH_WEIGHT for c in self.calls]
        self.last_success = False

    def step(self, st: State, seen: Counter) -> Step | None:
        """Draw a call and take one step with it (mutating st on success); None when no inputs
        that keep its obligations were found."""
        rng, sem = self.rng, self.sem
        call = rng.choices(self.calls, self.weights)[0]
        info = self.spec.calls[call]
        for _ in range(self.tries):
            inputs = {n: self.value(t, st) for n, t in info.params}
            al = sem.allowed(st, call, inputs)
            if al.broken:
                continue  # the caller keeps its obligations: draw other inputs
            is_event = info.decl.kind == "event"
            failures = () if is_event else al.errors + al.env_errors
            if (al.success or al.unspecified) and (not failures or rng.random() < SUCCESS_BIAS):
                outputs = self.outputs(st, call, inputs)
                if outputs is not None and sem.apply(st, call, inputs, outputs):
                    for rule in al.unspecified:
                        seen[rule] += 1
                    effect = sem.calls[call].effect_rule
                    if effect:
                        seen[effect] += 1
                    self.last_success = True
                    return Step(call, inputs, outputs, None if is_event else sem.success)
            if not failures:
                continue
            outcome = rng.choice(failures)  # an allowed failure: the state stays as it is
            seen[outcome.rule] += 1
            self.last_success = False
            return Step(call, inputs, {}, a_status(self.spec, outcome, rng.choice))
        return None

    def outputs(self, st: State, call: str, inputs: Mapping) -> dict | None:
        info = self.spec.calls[call]
        if not info.outputs:
            return {}
        for _ in range(self.tries * 2):
            outs = {n: self.value(t, st, output=True) for n, t in info.outputs}
            if not self.sem.ensures_broken(st, call, inputs, outs):
                return outs
        return None

    def value(self, t: Type, st: State, output: bool = False):
        rng = self.rng
        match t.kind:
            case "bool":
                return rng.random() < 0.5
            case "enum":
                return rng.choice(self.spec.enums[t.name])
            case "flags":
                members = list(self.spec.flags[t.name].values())
                r = rng.random()
                if r < 0.05:
                    return 0
                if r < 0.1:
                    return 1  # a bit no member has (usually)
                v = 0
                for m in members:
                    if rng.random() < 0.3:
                        v |= m
                return v or rng.choice(members)
            case "int":
                return self.integer(t.name, st, output)
            case "version":
                return (6, 6)
        return 0

    def integer(self, width: str, st: State, output: bool) -> int:
        rng = self.rng
        if width == "addr":
            if output:  # a fresh pointer from an allocator, or a device address
                return rng.choice(BASES + (0x20000 + rng.randrange(16) * 64,))
            keys = [k for t in st.tables.values() for k in t.rows if isinstance(k, int)]
            if keys and rng.random() < 0.6:  # near a live entry: exact, inside, or a page before/after
                return max(0, rng.choice(keys) + rng.choice(NEAR))
            return rng.choice(ADDRESSES)
        if width in ("u64", "i64"):
            v = rng.choice(SIZES)
            return -1 if width == "i64" and rng.random() < 0.05 else v
        if width == "u32":
            return rng.choice((0, 0, 0, 1))
        bounds = INT_BOUNDS.get(width)
        return rng.choice((0, 1, 2)) if bounds is None else max(bounds[0], min(bounds[1], rng.choice((0, 1, 2))))


def _config_pool(spec: CheckedSpec) -> dict[str, list]:
    """Per parameter: its default and the values the spec compares it with (and their neighbours)."""
    pool: dict[str, list] = {n: [v] for n, (_, v) in spec.params.items()}
    for node in _binaries(spec):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if isinstance(a, S.Name) and spec.binding(a).kind == "param":
                t = spec.params[a.name][0]
                if isinstance(b, S.IntLit) and t.kind == "int":
                    pool[a.name] += [b.value - 1, b.value, b.value + 1]
                elif isinstance(b, S.VersionLit) and t.kind == "version":
                    pool[a.name] += [b.parts, b.parts[:-1] + (b.parts[-1] + 1,)]
    for n, (t, _) in spec.params.items():
        if t.kind == "bool":
            pool[n] += [False, True]
        elif t.kind == "enum":
            pool[n] += list(spec.enums[t.name])
    return {n: sorted(set(v), key=repr) for n, v in pool.items()}


def _binaries(spec: CheckedSpec):
    stack: list = [spec.ast]
    while stack:
        node = stack.pop()
        if isinstance(node, S.Binary):
            yield node
        if isinstance(node, tuple):
            stack.extend(node)
            continue
        for name in getattr(node, "__dataclass_fields__", ()):
            if name != "span":
                child = getattr(node, name)
                if isinstance(child, tuple) or hasattr(child, "__dataclass_fields__"):
                    stack.append(child)
