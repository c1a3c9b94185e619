"""What `regcheck prove` reports (options, obligations, guards, checks, counterexamples, the report) and
the properties it proves: the invariants, the declared types, and that a call changes only its API
groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..language import syntax as S
from ..language.analysis import reads_and_writes
from ..language.checked import CheckedSpec
from ..model.outcomes import EvalError
from ..model.semantics import Semantics
from ..model.state import State
from ..symbolic.encode import Encoder
from ..symbolic.solver import SolverOptions, Verdict, Witness
from ..symbolic.tables import SymState
from ..symbolic.terms import conj, disj
from .bmc import BmcResult
from .runs import TYPES, Run, well_typed


GROUP_FRAME = "API-GROUPS"  # prefix of the implicit "changes only in its API groups" properties


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ProveOptions:
    solver: SolverOptions = SolverOptions()
    consistency: bool = True
    guards: bool = True
    witness_depth: int = 4  # steps before the final call in consistency witnesses
    cti_slots: int = 3  # entries per table in counterexample searches
    reach_depth: int = 4  # bounded search for a refuted invariant from the initial state (0: none)


@dataclass(frozen=True, slots=True)
class CounterExample:
    """A concrete pre-state, call and post-state (a counterexample to induction, or a guard example)."""

    env: Mapping[str, Any]
    pre: State
    call: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]
    post: State
    rules: tuple[str, ...]  # the rule IDs involved
    failing: tuple[str, ...]  # the properties false after the call (concrete semantics)
    validated: bool  # the concrete semantics agrees: invariants held before, the step was allowed


@dataclass(frozen=True, slots=True)
class Obligation:
    property: str  # an invariant's rule ID, TYPES, or API-GROUPS(<state>)
    call: str | None  # None: the initial-state obligation
    branch: str  # init | success | unspecified | failure
    verdict: Verdict
    how: str  # solver | frame | trivial | bounded (a bounded counterexample settled an UNKNOWN)
    reason: str  # the solver's reason when UNKNOWN; a note otherwise
    seconds: float
    rules: tuple[str, ...]
    cex: CounterExample | None = None

    @property
    def gap(self) -> bool:
        """A refutation where the documents are silent: a documentation gap, not a spec bug."""
        return self.branch == "unspecified" and self.verdict is not Verdict.PROVED


@dataclass(frozen=True, slots=True)
class Guard:
    """Breaking obligation `rule` (and only it) lets `call` break `property`: FOUND / NONE / UNKNOWN."""

    property: str
    call: str
    rule: str
    witness: Witness
    reason: str
    seconds: float
    example: CounterExample | None = None


@dataclass(frozen=True, slots=True)
class Check:
    """One consistency item.

    kind: clause | call | invariant | overlap | gap | policy. status:
      clause     live | shadowed | dead | unreached (satisfiable, no run within depth) | unknown
      call       reachable | never | unreached | unknown
      invariant  non-vacuous | vacuous | unreached | unknown
      overlap    overlap | possible (no run within depth) | (disjoint pairs are counted, not listed)
      gap        silent (a witness run) | possible
      policy     unguarded (a `fails` whose citation says "must" / "should only" can decide the
                 outcome of a call that keeps every obligation: the "must" has no `requires`) |
                 possible (so in a state the invariants allow, no run shows it) | unknown
                 (guarded clauses are counted, not listed)
    """

    kind: str
    subject: str
    call: str | None
    status: str
    ok: bool
    rules: tuple[str, ...]
    detail: str
    seconds: float
    run: Run | None = None


@dataclass(frozen=True, slots=True)
class ProofReport:
    spec: str  # as given: a bundled name or a path
    name: str  # the spec's declared name
    obligations: tuple[Obligation, ...]
    guards: tuple[Guard, ...]
    reach: tuple[BmcResult, ...]  # bounded searches from the initial state for refuted invariants
    checks: tuple[Check, ...]
    disjoint_pairs: int
    options: ProveOptions
    seconds: float
    phase_seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def proved(self) -> bool:
        return all(o.verdict is Verdict.PROVED for o in self.obligations)

    @property
    def consistent(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def ok(self) -> bool:
        return self.proved and self.consistent


# ---------------------------------------------------------------- properties


@dataclass(frozen=True, slots=True)
class Property:
    id: str
    rules: tuple[str, ...]
    reads: frozenset  # what it reads (None entries: everything)
    holds: Callable  # (enc, pre: SymState, post: SymState, call | None) -> z3 Bool
    concrete: Callable  # (sem, pre: State | None, call | None, post: State) -> bool
    everything: bool = False


def properties_of(spec: CheckedSpec) -> list[Property]:
    reads, writes = reads_and_writes(spec)
    props = []
    for inv in spec.invariants:
        props.append(Property(
            inv.rule, (inv.rule,), reads(inv.expr),
            (lambda inv: lambda enc, pre, post, call: enc.invariant(inv, post))(inv),
            (lambda rule: lambda sem, pre, call, post: rule not in failing_properties(sem, post))(inv.rule)))
    props.append(Property(TYPES, (), frozenset(), lambda enc, pre, post, call: conj(enc.well_typed(post)),
                           lambda sem, pre, call, post: well_typed(sem.spec, post), everything=True))
    props += _group_properties(spec, writes)
    return props


def _group_properties(spec: CheckedSpec, writes) -> list[Property]:
    """For state written by a call restricted to API groups: it changes only in the allowed groups."""
    restricted: dict[str, list[tuple[str, tuple[str, ...], str]]] = {}  # state -> [(call, groups, rule)]
    for name, info in spec.calls.items():
        usage = info.clauses(S.OnlyIn)
        if not usage:
            continue
        for item in sorted(writes(name)):  # a frozenset: sorted, so the report does not follow the hash seed
            target = item[1]
            for u in usage:
                entry = (name, u.groups, u.rule)
                if entry not in restricted.setdefault(target, []):
                    restricted[target].append(entry)
    props = []
    for target, writers in restricted.items():
        allowed = {call: groups for call, groups, _ in writers}
        rules = tuple(dict.fromkeys(rule for _, _, rule in writers))
        is_var = target in spec.vars
        items = frozenset([("var", target)]) if is_var else \
            frozenset([("present", target)] + [("field", target, n) for n, _ in spec.tables[target].fields])

        def holds(enc: Encoder, pre: SymState, post: SymState, call, target=target, is_var=is_var, allowed=allowed):
            same = _same(enc, pre, post, target, is_var)
            if call in allowed:
                return disj(same, disj([enc.group_active(g, pre) for g in allowed[call]]))
            return same

        def concrete(sem: Semantics, pre, call, post, target=target, is_var=is_var, allowed=allowed):
            if pre is None:
                return True
            same = pre.vars[target] == post.vars[target] if is_var else pre.tables[target].rows == post.tables[target].rows
            if same:
                return True
            if call not in allowed:
                return False
            # A group whose condition cannot be evaluated here is not active: a counterexample's
            # pre-state comes from the solver, which leaves definedness out, and asking every group
            # strictly raised out of `prove` (exit 3) for a group no rule of the call names.
            active, _ = sem.active_groups(pre)
            return any(g in active for g in allowed[call])

        props.append(Property(f"{GROUP_FRAME}({target})", rules, items, holds, concrete))
    return props


def _same(enc: Encoder, pre: SymState, post: SymState, target: str, is_var: bool):
    if is_var:
        from ..symbolic.terms import equal
        return equal(pre.vars[target], post.vars[target])
    return pre.tables[target].same_as(post.tables[target], enc.fresh_name("same"))


def failing_properties(sem: Semantics, st: State) -> list[str]:
    try:
        return sem.holds(st)
    except EvalError:
        return [inv.rule for inv in sem.spec.invariants]
