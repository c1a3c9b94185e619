"""Bounded model checking: every call sequence of up to K steps from the initial state, at once.

The unrolling keeps K+1 bounded symbolic states (`checker.symbolic.encode.SlotTable`: quantifier- and
array-free). Step j chooses one call (or none: a stutter step, so one query at depth K also
covers shorter sequences) whose obligations the caller keeps and whose success the documents
allow (documented success, or success where the documents are silent; with `determinate`, as
the test generator asks, only documented success no `unspecified` clause leaves open), with
outputs that keep the call's `ensures`; the next state is the success effect. Failures are not steps: they leave the
state unchanged.

Every sequence the solver finds is replayed with the concrete semantics (`checker.model.semantics`)
before it is reported, and shortened greedily while it still shows what it should, so the traces
regcheck writes are checked by the same semantics `regcheck replay` uses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..language.checked import CheckedSpec
from ..model.state import State
from ..symbolic.encode import Encoder, concrete_config, read_config, symbolic_config
from ..symbolic.solver import Session, SolverOptions, Witness
from ..symbolic.tables import SymState
from ..symbolic.terms import conj, disj, fresh_int, holds_in, implies, int_in, neg
from .runs import TYPES, Run, Step, Violation, failing_invariants, replay_prefix, semantics_for, shrink


# ---------------------------------------------------------------- the unrolling

SMALL = 1 << 20  # witnesses prefer addresses and sizes up to 1 MiB (readable traces)


@dataclass(slots=True)
class _StepVars:
    selector: Any
    io: dict  # call -> env (inputs and outputs)


class Unrolling:
    """K steps of the transition relation from the initial state, in one incremental solver.

    `env` fixes parameters (values as `Semantics(spec, env).config` resolves them); without it
    the configuration is symbolic and chosen by the solver.
    """

    def __init__(self, spec: CheckedSpec, depth: int, options: SolverOptions = SolverOptions(),
                 env: Mapping[str, Any] | None = None, determinate: bool = False):
        self.spec = spec
        self.depth = depth
        self.determinate = determinate  # steps only where success is the one outcome allowed (test prefixes)
        if env is None:
            self.config, bounds = symbolic_config(spec, "bmc.cfg.")
        else:
            self.config, bounds = concrete_config(spec, semantics_for(spec, env).config), []
        self.encoder = Encoder(spec, self.config)
        self.session = Session(options, bounds)
        self.calls = tuple(spec.calls)
        self.small: list = []  # readable values (first choice for witnesses): see `prefer_small`
        self.states: list[SymState] = [self.encoder.initial_state(bounded=True)]
        self.steps: list[_StepVars] = []
        for j in range(depth):
            self._add_step(j)

    def _add_step(self, j: int) -> None:
        enc, st = self.encoder, self.states[-1]
        sel = fresh_int(f"bmc.step{j}")
        self.session.add(sel >= 0, sel <= len(self.calls))  # len(calls): stutter
        nxt = st
        io = {}
        for i, call in enumerate(self.calls):
            env, bounds = enc.fresh_io(call, f"bmc.{j}.{call}.")
            io[call] = env
            self.small += self._small(call, env)
            cc = enc.conditions(call, st, env)
            if self.determinate:
                allowed = conj(bounds + [cc.kept, neg(cc.any_error), neg(cc.any_unspecified), cc.ensured])
            else:
                allowed = conj(bounds + [cc.kept, disj(neg(cc.any_error), cc.any_unspecified), cc.ensured])
            self.session.add(implies(sel == i, allowed))
            nxt = enc.effect(call, st, env).ite(sel == i, nxt)
        self.steps.append(_StepVars(sel, io))
        self.states.append(nxt)

    def _small(self, call: str, env: Mapping) -> list:
        info = self.spec.calls[call]
        return [conj(env[n] >= -1, env[n] <= SMALL) for n, t in info.params + info.outputs
                if t.kind == "int" and t.name in ("addr", "u64", "i64")]

    @property
    def final(self) -> SymState:
        return self.states[-1]

    def final_call(self, call: str, prefix: str = "bmc.final."):
        """Fresh inputs/outputs for one more call in the last state: (env, type bounds, conditions,
        small-value preferences)."""
        env, bounds = self.encoder.fresh_io(call, f"{prefix}{call}.")
        return env, bounds, self.encoder.conditions(call, self.final, env), self._small(call, env)

    def stutter_after(self, k: int) -> list:
        """Constraints making steps k.. stutter (a run of at most k steps)."""
        return [s.selector == len(self.calls) for s in self.steps[k:]]

    def run_of(self, model: Any, spec_name: str, upto: int | None = None) -> Run:
        """The concrete run a model gives (stutter steps left out); statuses: success for calls."""
        types = self.encoder.types
        steps = []
        for sv in self.steps[: self.depth if upto is None else upto]:
            i = int_in(model, sv.selector)
            if i >= len(self.calls):
                continue
            call = self.calls[i]
            info = self.spec.calls[call]
            env = sv.io[call]
            inputs = {n: types.read(t, model, env[n]) for n, t in info.params}
            outputs = {n: types.read(t, model, env[n]) for n, t in info.outputs}
            steps.append(Step(call, inputs, outputs, self.spec.success if info.decl.kind == "call" else None))
        return Run(spec_name, read_config(self.spec, model, self.config), tuple(steps))

    def read_io(self, model: Any, call: str, env: Mapping) -> tuple[dict, dict]:
        types = self.encoder.types
        info = self.spec.calls[call]
        return ({n: types.read(t, model, env[n]) for n, t in info.params},
                {n: types.read(t, model, env[n]) for n, t in info.outputs})


# ---------------------------------------------------------------- searching for invariant violations


@dataclass(frozen=True, slots=True)
class BmcResult:
    """The outcome of a bounded search: a violation, none up to `depth`, or unknown (with reason)."""

    spec: str
    depth: int
    witness: Witness
    violation: Violation | None
    reason: str
    seconds: float
    queries: tuple[tuple[int, float], ...]  # (depth, seconds) per solver query


def search_violation(spec: CheckedSpec, spec_name: str, depth: int, options: SolverOptions = SolverOptions(),
                     env: Mapping[str, Any] | None = None, invariants: Iterable[str] | None = None) -> BmcResult:
    """Look for the shortest run of at most `depth` steps that breaks an invariant, else the shortest
    that breaks TYPES (a state value outside its declared type, as prove's TYPES obligation and
    simulate check).

    Iterative deepening over one unrolling: at depth k the steps after k stutter. `invariants`
    (rule IDs, TYPES among them) restricts the search to those properties.
    """
    t0 = time.perf_counter()
    wanted = set(invariants) if invariants is not None else None
    invs = [inv for inv in spec.invariants if wanted is None or inv.rule in wanted]
    types = wanted is None or TYPES in wanted
    rules = [inv.rule for inv in invs] + ([TYPES] if types else [])
    unrolling = Unrolling(spec, depth, options, env)
    enc = unrolling.encoder
    queries = []
    unknown = ""
    # Invariants first, over every depth, then TYPES: the invariant search then builds the same
    # terms in the same order as before TYPES was searched for, so Z3 finds the same (documented) runs.
    for kind in ([invs] if invs else []) + ([TYPES] if types else []):
        for k in range(depth + 1):
            st = unrolling.states[k]
            bad = neg(conj(enc.well_typed(st))) if kind == TYPES else disj([neg(enc.invariant(i, st)) for i in kind])
            ans = unrolling.session.find(bad, *unrolling.stutter_after(k))
            queries.append((k, ans.seconds))
            if ans.witness is Witness.UNKNOWN:
                unknown = ans.reason
                continue
            if ans.witness is Witness.NONE:
                continue
            small = unrolling.session.find(bad, *unrolling.stutter_after(k), conj(unrolling.small))
            queries.append((k, small.seconds))
            if small.witness is Witness.FOUND:  # the same length with readable values, when there is one
                ans = small
            run = unrolling.run_of(ans.model, spec_name, upto=k)
            violation = _confirm_violation(spec, run, rules)
            if violation is None:
                return BmcResult(spec_name, depth, Witness.UNKNOWN, None,
                                 "internal: the solver's run does not replay concretely (encoding bug)",
                                 time.perf_counter() - t0, tuple(queries))
            return BmcResult(spec_name, depth, Witness.FOUND, violation, "", time.perf_counter() - t0, tuple(queries))
    verdict = Witness.UNKNOWN if unknown else Witness.NONE
    return BmcResult(spec_name, depth, verdict, None, unknown, time.perf_counter() - t0, tuple(queries))


def _confirm_violation(spec: CheckedSpec, run: Run, rules: list[str]) -> Violation | None:
    sem = semantics_for(spec, run.env)

    def failing(st: State) -> list[str]:
        # `failing_invariants`, as simulation asks: an invariant that cannot be evaluated in the state
        # (the encoding leaves definedness out, so the solver may find such a state) breaks them all,
        # where `sem.holds` raised out of `bmc` and `prove` (exit 3)
        return [r for r in failing_invariants(sem, st) if r in rules]

    def broken(st: State) -> bool:
        return bool(failing(st))

    final = replay_prefix(sem, run.steps)
    if final is None or not broken(final):
        return None
    steps = shrink(sem, run.steps, broken)
    st = sem.initial_state()
    states = [st.copy()]
    for s in steps:
        sem.apply(st, s.call, s.inputs, s.outputs)
        states.append(st.copy())
    return Violation(Run(run.spec, run.env, steps), tuple(failing(st)), tuple(states))


# ---------------------------------------------------------------- covering targets (witness traces)


@dataclass(frozen=True, slots=True)
class Target:
    """Something a witness run should show.

    `call` is the final call (None: a property of the final state alone); `formula(encoder, env,
    conditions, state)` builds its Z3 condition at the end of the unrolling; `holds(sem, state, step)` checks it on the
    concrete run (step: the final call with its inputs, or None).
    """

    key: Any
    call: str | None
    formula: Callable
    holds: Callable


@dataclass(frozen=True, slots=True)
class Covered:
    key: Any
    witness: Witness
    run: Run | None  # prefix steps plus the final call (status left None: the caller picks it)
    reason: str
    seconds: float


def cover(unrolling: Unrolling, spec_name: str, targets: Sequence[Target]) -> dict[Any, Covered]:
    """Find witness runs for as many targets as possible, one solver query per distinct run.

    For each final call: ask for a run making any uncovered target true; every target true in the
    model is covered by that run (after a concrete check); repeat until none is left (NONE for
    the rest: no run of at most `depth` steps shows them) or the solver gives up (UNKNOWN).
    """
    spec = unrolling.spec
    out: dict[Any, Covered] = {}
    by_call: dict[str | None, list[Target]] = {}
    for t in targets:
        by_call.setdefault(t.call, []).append(t)
    for call, group in by_call.items():
        if call is None:
            env, bounds, cc, small = {}, [], None, []
        else:
            env, bounds, cc, small = unrolling.final_call(call)
        formulas = {t.key: t.formula(unrolling.encoder, env, cc, unrolling.final) for t in group}
        remaining = list(group)
        # first runs with small values (readable traces), then any values
        prefer = [conj(unrolling.small + small)]
        with unrolling.session.frame():
            unrolling.session.add(*bounds)
            while remaining:
                ans = unrolling.session.find(disj([formulas[t.key] for t in remaining]), *prefer)
                if ans.witness is Witness.NONE and prefer:
                    prefer = []
                    continue
                if ans.witness is not Witness.FOUND:
                    for t in remaining:
                        out[t.key] = Covered(t.key, ans.witness, None, ans.reason, ans.seconds)
                    break
                model = ans.model
                prefix = unrolling.run_of(model, spec_name)
                final = None
                if call is not None:
                    inputs, outputs = unrolling.read_io(model, call, env)
                    final = Step(call, inputs, outputs, None)
                for t in list(remaining):
                    if not holds_in(model, formulas[t.key]):
                        continue
                    remaining.remove(t)  # at least one target is true in every model: the loop ends
                    run = _confirm_target(spec, prefix, final, t)
                    if run is None:  # never claim a witness the concrete semantics does not confirm
                        out[t.key] = Covered(t.key, Witness.UNKNOWN, None,
                                             "internal: the solver's run does not replay concretely", ans.seconds)
                    else:
                        out[t.key] = Covered(t.key, Witness.FOUND, run, "", ans.seconds)
    return out


def _confirm_target(spec: CheckedSpec, prefix: Run, final: Step | None, t: Target) -> Run | None:
    sem = semantics_for(spec, prefix.env)

    def holds(st: State) -> bool:
        try:
            return bool(t.holds(sem, st, final))
        except Exception:  # an evaluation error in a shrunk state: not a witness
            return False

    st = replay_prefix(sem, prefix.steps)
    if st is None or not holds(st):
        return None
    steps = shrink(sem, prefix.steps, holds)
    return Run(prefix.spec, prefix.env, steps + ((final,) if final is not None else ()))
