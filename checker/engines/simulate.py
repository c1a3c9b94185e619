"""Random walks of a spec's model with the concrete semantics (like TLC's simulation mode, `quint run`).

Each run starts in the initial state under one configuration (given, or drawn per run from the
values the spec itself compares parameters with), then takes up to `steps` steps: a call is drawn,
its inputs come from a small pool of addresses and sizes (so that ranges collide often) and are
redrawn until the caller keeps every obligation; the outcome is success when the documents allow
it (with outputs drawn until they keep the call's `ensures`), otherwise one of the allowed
failures (the state is unchanged). Every invariant is checked after every step. A violation is
shortened (steps dropped while it persists) and returned as a run that `regcheck replay` accepts.

Only `checker.model.semantics` decides what may happen: no solver is involved.

Two walks, each deterministic for a seed; they draw differently, and each run of either is a run
of the concrete semantics. The pure walk (`fast=False`) asks `Semantics` for every step. The fast
walk (the default) runs on the replayer's fast path (`checker.fast.fastpath`: the C step machine
where the C module is built, else its generated Python steps, which take the same walk):

- drawn inputs go to the call's probe, a binding of its step whose verdict is always "no": it
  evaluates the call's clauses and hands over their mask, whose `Allowed` says whether an
  obligation is broken and which outcomes are allowed, without applying anything (a C step reads
  it itself, `Step.mask_of`: the same code up to the mask, without a verdict asked of Python);
- a success goes to the step itself, with the drawn outputs: it checks the obligations again,
  that the documents allow a success (not silent), the outputs' `ensures`, and applies the effect
  on the same State. Where it declines (having changed nothing), and for failures, documented
  silences, calls without a step and inputs out of the decoder's ranges, the step goes the pure
  walk's way (`Semantics`) from the unchanged state;
- after a success, the invariants that read a changed table or variable are re-checked, those
  of the shape `forall v in T: ...` only at the changed entries (`_Invariant`; a symmetric pair
  test in one orientation), none that new entries keep true after a change that only put entries
  (`forall r in R: exists h in H: ...` after a new entry of H), and `TYPES` only on what changed:
  the rest held before and read nothing new. A violation is then reported with
  `failing_invariants`, as by the pure walk;
- fewer draws are spent on calls that find no step: a call none of whose draws found one is
  passed over (up to PASSES times) until a table or variable its clauses read changes, a call
  whose steps found nothing several times in a row gets fewer draws (half per such step), output
  draws are counted per step (not per draw of inputs), outputs the step declined are not handed to
  it again while the state stays as it is (it would decline them again), and addresses are drawn
  near the entries of the tables the call's clauses read (not of every table);
- draws come from pools precomputed per call, one `random()` each, and the State and its
  binding of the fast path serve all runs of a configuration, and so do the events the steps are
  handed, kept per call and values (the steps only read them; most draws repeat earlier values).
"""

from __future__ import annotations

import random
import time
import weakref
from bisect import bisect
from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ..fast.fastpath import EventMaker, event_makers, fast_path, fast_path_deciding
from ..language import syntax as S
from ..language.analysis import symmetric_in, true_after_inserts
from ..language.checked import INT_BOUNDS, CheckedSpec, Type, value_bounds
from ..model.codegen import RUNTIME, CodeScope, Emitter
from ..model.outcomes import EvalError
from ..model.semantics import Semantics
from ..model.state import State
from .runs import Run, Step, Violation, a_status, failing_invariants, semantics_for, shrink, status_candidates

# Addresses cluster on a few 4 KiB pages (aligned and not), so that ranges collide often.
PAGE = 0x1000
BASES = tuple(0x10000 + i * PAGE for i in range(6))
ADDRESSES = (0,) + BASES + (0x10800, 0x11040, 0x12001, 2**64 - PAGE)
SIZES = (0, 1, 0x800, PAGE, 2 * PAGE, 3 * PAGE)
NEAR = (0, 0, 0, 0x800, PAGE, -PAGE)
ADDR_MAX = INT_BOUNDS["addr"][1]  # the top of the addr type: a draw near a live key stays inside it
SWITCH_WEIGHT = 0.1
SUCCESS_BIAS = 0.8  # when both are allowed, how often a step succeeds rather than fails
EVENTS_KEPT = 4096  # the fast walk: per call, the events of inputs drawn kept for their next draw
PASSES = 3  # the fast walk: how often a step draws another call in place of one it found no step for


@dataclass(frozen=True, slots=True)
class SimulationOptions:
    runs: int = 100
    steps: int = 50
    seed: int = 0
    env: Mapping[str, Any] | None = None  # fixed parameters; None: drawn per run
    tries: int = 8  # redraws of inputs (obligations) and of outputs (ensures) per step
    fast: bool = True  # the fast walk (see the module docstring); False: the pure walk, for comparison
    keep_walks: bool = False  # return every run's steps and final state (tests)


@dataclass(frozen=True, slots=True)
class Walk:
    """One run as the walker took it: its configuration, every step (failures included), and the
    `State.snapshot()` of the state after the last step."""

    env: Mapping[str, Any]
    steps: tuple[Step, ...]
    final: tuple


@dataclass(frozen=True, slots=True)
class SimulationResult:
    spec: str
    runs: int  # runs completed (the one that found a violation included)
    steps: int  # steps taken in total (successes and failures)
    successes: int
    seconds: float
    violation: Violation | None
    rules_seen: Mapping[str, int] = field(default_factory=dict)  # errors, unspecified clauses, effects hit
    cpu_seconds: float = 0.0  # process time of the walk (what the benchmark divides by)
    fast_successes: int = 0  # successes the fast path took (the rest went the pure walk's way)
    walks: tuple[Walk, ...] = ()  # with `keep_walks`

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    @property
    def steps_per_cpu_second(self) -> float:
        return self.steps / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def simulate(spec: CheckedSpec, spec_name: str, options: SimulationOptions = SimulationOptions()) -> SimulationResult:
    t0, c0 = time.perf_counter(), time.process_time()
    configs = _config_pool(spec)
    plan = _Plan.of(spec) if options.fast else None
    bound: dict[Semantics, _Bound] = {}  # per configuration: one State, reset for each of its runs
    total_steps = successes = fast_successes = 0
    seen: Counter = Counter()
    walks: list[Walk] = []

    def result(runs: int, violation: Violation | None) -> SimulationResult:
        return SimulationResult(spec_name, runs, total_steps, successes, time.perf_counter() - t0, violation,
                                dict(seen), time.process_time() - c0, fast_successes, tuple(walks))

    for run_index in range(options.runs):
        rng = random.Random(options.seed * 1_000_003 + run_index)
        env = dict(options.env) if options.env is not None else {n: rng.choice(v) for n, v in configs.items()}
        sem = semantics_for(spec, env)
        if plan is None:
            st = sem.initial_state()
            run = _pure_run(_Walker(spec, sem, rng, options.tries), sem, st, options.steps, seen)
        else:
            b = bound.get(sem)
            if b is None:
                b = bound[sem] = _Bound(plan, sem)
            st = b.initial_state()
            run = _FastWalker(b, rng, options.tries).run(options.steps, seen)
        total_steps += run.count
        successes += run.successes
        fast_successes += run.fast_successes
        if options.keep_walks:
            walks.append(Walk(env, run.steps(), st.snapshot()))
        if run.failing:
            return result(run_index + 1, _violation(spec, spec_name, sem, env, list(run.steps()), run.failing))
    return result(options.runs, None)


@dataclass(frozen=True, slots=True)
class _RunOutcome:
    count: int  # steps taken
    successes: int
    fast_successes: int
    failing: list[str]  # the invariants broken after the last step; empty when none
    steps: Callable[[], tuple[Step, ...]]  # built only when asked for: most runs need only the counts


def _pure_run(walker: "_Walker", sem: Semantics, st: State, max_steps: int, seen: Counter) -> _RunOutcome:
    steps: list[Step] = []
    successes = 0
    for _ in range(max_steps):
        step = walker.step(st, seen)
        if step is None:
            continue
        steps.append(step)
        if not walker.last_success:
            continue
        successes += 1
        failing = failing_invariants(sem, st)
        if failing:
            return _RunOutcome(len(steps), successes, 0, failing, lambda: tuple(steps))
    return _RunOutcome(len(steps), successes, 0, [], lambda: tuple(steps))


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
                return _draw_flags(tuple(self.spec.flags[t.name].values()))(rng.random, ())
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
                return max(0, min(ADDR_MAX, rng.choice(keys) + rng.choice(NEAR)))
            return rng.choice(ADDRESSES)
        if width in ("u64", "i64"):
            v = rng.choice(SIZES)
            return -1 if width == "i64" and rng.random() < 0.05 else v
        if width == "u32":
            return rng.choice((0, 0, 0, 1))
        bounds = INT_BOUNDS.get(width)
        return rng.choice((0, 1, 2)) if bounds is None else max(bounds[0], min(bounds[1], rng.choice((0, 1, 2))))


# ---------------------------------------------------------------- the fast walk

Draw = Callable[[Callable[[], float], tuple], Any]  # draw(random, live keys) -> a value
# What the pure walk's output addresses are drawn from, as one pool: a base 6 times in 7, else one
# of 16 device addresses.
OUTPUT_ADDRESSES = tuple(b for b in BASES for _ in range(16)) + tuple(0x20000 + i * 64 for i in range(16))


@dataclass(frozen=True, slots=True)
class _CallPlan:
    """One call's precomputed drawing: names, and one draw per input and per output."""

    name: str
    is_event: bool
    needs_outputs: bool  # an event with outputs: each of its successes draws them
    params: tuple[str, ...]
    outputs: tuple[str, ...]
    draw_inputs: Draw  # all inputs at once, as a tuple
    draw_outputs: Draw
    # Where the outputs are one value picked from a pool (an allocation's address): the pool's
    # values, each as the outputs' tuple, so that a draw is `pool[int(rnd() * len(pool))]`, the
    # same `random()` and value as `draw_outputs` without its call (None otherwise)
    output_pool: tuple | None
    extremes: tuple[tuple | None, ...]  # per input, then output: the least and greatest value drawn; None: unbounded
    wants_keys: bool  # an input is an address, drawn near live entries
    depends_on: frozenset | None  # the ("var" | "table", name) its clauses read; None: any (usage rules)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the fast walk precomputes once per spec: the calls' draws and cumulative weights (a
    call is `calls[bisect(cumulative, random() * total)]`, which the walk spells out: a method
    call would cost as much as the draw)."""

    calls: tuple[_CallPlan, ...]
    cumulative: tuple[float, ...]
    total: float

    @staticmethod
    def of(spec: CheckedSpec) -> "_Plan":
        calls = tuple(_call_plan(spec, c) for c in spec.calls)
        weights = [1.0 if spec.calls[c.name].params else SWITCH_WEIGHT for c in calls]
        cumulative = tuple(accumulate(weights))
        return _Plan(calls, cumulative, cumulative[-1])


def _state_reads(spec: CheckedSpec, e: S.Expr) -> frozenset:
    return frozenset((b.kind, b.name) for b in spec.reads(e, defs=True) if b.kind in ("var", "table"))


def _type_test(spec: CheckedSpec, t: Type, x: str, sets: list) -> str | None:
    """Python code testing that the value `x` lies in type t, as `runs.well_typed` tests it (an
    enum's members are `SETS[i]`, appended to sets); None where every value does."""
    if t.kind in ("int", "flags"):
        b = value_bounds(t)
        return None if b is None else f"{b[0]} <= {x} <= {b[1]}"
    if t.kind == "enum":
        sets.append(frozenset(spec.enums[t.name]))
        return f"{x} in SETS[{len(sets) - 1}]"
    return None


def _call_plan(spec: CheckedSpec, call: str) -> _CallPlan:
    info = spec.calls[call]
    inputs = [_draw(spec, t, False) for _, t in info.params]
    outputs = [_draw(spec, t, True) for _, t in info.outputs]
    is_event = info.decl.kind == "event"
    return _CallPlan(call, is_event, is_event and bool(info.outputs), tuple(n for n, _ in info.params),
                     tuple(n for n, _ in info.outputs), _tuple_draw(inputs, f"inputs of {call}"),
                     _tuple_draw(outputs, f"outputs of {call}"), _picked_pool(outputs),
                     tuple(x for _, x, _ in inputs + outputs),
                     any(t.kind == "int" and t.name == "addr" for _, t in info.params), _clause_reads(spec, call))


def _clause_reads(spec: CheckedSpec, call: str) -> frozenset | None:
    """What decides which outcomes inputs (and outputs) have: what the call's clauses read, and
    (None: the whole state) the API groups of a usage rule."""
    info = spec.calls[call]
    if info.clauses(S.OnlyIn):
        return None
    conds = [c.cond for c in info.decl.clauses if getattr(c, "cond", None) is not None]
    return frozenset().union(*(_state_reads(spec, e) for e in conds))


# One value's draw: the code of a Python expression in `rnd` (the walk's `random`) and `keys` (the
# live keys addresses are drawn near), with a `{}` for each of its constants; the least and greatest
# integer it draws (None: not an integer, or unbounded); its constants.
ValueDraw = tuple[str, tuple | None, tuple]


def _tuple_draw(draws: list[ValueDraw], what: str) -> Draw:
    """One draw of a tuple of values, as one function whose code spells out each value's draw: a
    call per value (or per pick from a pool) costs more than the draw itself. The values are drawn
    in order, each with the same `random()` calls as the pure walk's pools."""
    consts: list = []
    parts = []
    for code, _, values in draws:
        parts.append(code.format(*(f"C[{len(consts) + i}]" for i in range(len(values)))))
        consts += values
    ns = {"C": tuple(consts), "NEAR": NEAR, "ADDRESSES": ADDRESSES}
    source = f"lambda rnd, keys: ({''.join(p + ', ' for p in parts)})"
    return eval(compile(source, f"<regcheck simulate draw of the {what}>", "eval"), ns)  # from the templates below


def _picked_pool(draws: list[ValueDraw]) -> tuple | None:
    """For one value drawn by `_pick`, its pool's values as 1-tuples (`_CallPlan.output_pool`)."""
    if len(draws) != 1 or draws[0][0] != _PICK_CODE.format(len(draws[0][2][0]) if draws[0][2] else -1):
        return None
    return tuple((v,) for v in draws[0][2][0])


_PICK_CODE = "{{}}[int(rnd() * {})]"  # `_pick`'s draw, with its pool's length


def _pick(pool: Sequence) -> ValueDraw:
    """One of pool's values, with one `random()`; its extremes where they are integers."""
    ints = all(type(v) is int for v in pool)
    return _PICK_CODE.format(len(pool)), (min(pool), max(pool)) if ints else None, (tuple(pool),)


def _draw(spec: CheckedSpec, t: Type, output: bool) -> ValueDraw:
    """The draw of one value of type t: the pure walk's pools, each drawn with one `random()`."""
    match t.kind:
        case "bool":
            return "(rnd() < 0.5)", None, ()
        case "enum":
            return _pick(tuple(spec.enums[t.name]))
        case "flags":
            members = tuple(spec.flags[t.name].values())
            every = 1
            for m in members:
                every |= m
            return _flags_draw(members), (0, every), (members,)
        case "int":
            return _draw_int(t.name, output)
        case "version":
            return "(6, 6)", None, ()
    return "0", (0, 0), ()


def _flags_draw(members: tuple[int, ...]) -> str:
    """`_draw_flags(members)` as an expression (its members' tuple the one constant), the loop over
    the members unrolled: the same `random()` calls, in the same order, without a call of its own."""
    bits = " | ".join(f"({m!r} if rnd() < 0.3 else 0)" for m in members) or "0"
    return f"(0 if (f := rnd()) < 0.05 else 1 if f < 0.1 else (({bits}) or {{}}[int(rnd() * {len(members)})]))"


def _draw_flags(members: tuple[int, ...]) -> Draw:
    def draw(rnd, keys):
        r = rnd()
        if r < 0.05:
            return 0
        if r < 0.1:
            return 1  # a bit no member has (usually)
        v = 0
        for m in members:
            if rnd() < 0.3:
                v |= m
        return v or members[int(rnd() * len(members))]
    return draw


# An input address: near a live entry (exact, inside, or a page before/after) 6 times in 10, else
# one of ADDRESSES; unbounded in the draw's bounds (a key may be of any int type), but always an
# addr, 0 to ADDR_MAX: a page past the last page is the last address, as in the pure walk.
# (`max(0, min(ADDR_MAX, a))` spelt as tests: a call of max costs more than the rest of the draw)
ADDRESS_DRAW = (f"((0 if (a := keys[int(rnd() * len(keys))] + NEAR[int(rnd() * {len(NEAR)})]) <= 0 else"
                f" a if a <= {ADDR_MAX} else {ADDR_MAX})"
                f" if keys and rnd() < 0.6 else ADDRESSES[int(rnd() * {len(ADDRESSES)})])", None, ())


def _draw_int(width: str, output: bool) -> ValueDraw:
    if width == "addr":
        return _pick(OUTPUT_ADDRESSES) if output else ADDRESS_DRAW
    if width == "u64":
        return _pick(SIZES)
    if width == "i64":
        code, (_, hi), pools = _pick(SIZES)
        return f"(-1 if rnd() < 0.05 else {code})", (-1, hi), pools
    if width == "u32":
        return _pick((0, 0, 0, 1))
    bounds = INT_BOUNDS.get(width)
    return _pick((0, 1, 2) if bounds is None else tuple(max(bounds[0], min(bounds[1], v)) for v in (0, 1, 2)))


@dataclass(frozen=True, slots=True)
class _Invariant:
    """How to re-check one invariant after a success, from what the success changed.

    `forall v in T: body`, where body reads nothing that changed but T's entries: only T's entries
    at changed keys need checking (`body`, with v bound to each). `forall v in T: forall w in T: P`
    likewise, P reading neither T nor anything changed: the pairs with v or w at a changed key (only
    those with v there where P is symmetric in v and w, `analysis.symmetric_in`: the others repeat
    them). Anything else: the whole invariant, if it reads what changed. An invariant that stays
    true when entries are put into a table (`analysis.true_after_inserts`: `forall r in R: exists h
    in H: ...` and H) is not re-checked after a change that only put new entries there."""

    expr: S.Expr
    reads: frozenset  # the ("var" | "table", name) it reads
    table: str | None = None  # T, where it has one of the two shapes
    body_reads: frozenset = frozenset()  # what body (P) reads
    pairwise: bool = False  # check the pairs with w at a changed key too
    kept_by_inserts: frozenset = frozenset()  # the ("table", name)s new entries of which keep it true

    def test(self, em: Emitter, changed: frozenset) -> list[tuple[str | None, str | None, list[str]]]:
        """The lines of a check function (`_compile_check`) that return False when it is broken, in
        parts: (T, v, lines to run for each changed entry v of T), or (None, None, lines to run once)."""
        e = self.expr
        if self.table is None or not self.body_reads.isdisjoint(changed):
            return [(None, None, _holds(em, e))]
        parts = [(e.table, e.var, _holds(em, e.body, frozenset({e.var}), "        "))]
        if self.pairwise:  # the pairs (v, w) with w changed: P for every v
            inner = e.body
            every_v = S.Quant("forall", e.var, e.table, inner.body, e.span)
            parts.append((e.table, inner.var, _holds(em, every_v, frozenset({inner.var}), "        ")))
        return parts


def _holds(em: Emitter, e: S.Expr, bound: frozenset = frozenset(), indent: str = "    ") -> list[str]:
    """Lines returning False unless e holds (`bound`: the entry variables set around them), its
    leading `forall v in T` as loops over T's entries: in the check's own frame, where the
    emitter's `_fa` would call a predicate per entry (most of a re-check's time)."""
    if isinstance(e, S.Quant) and e.kind == "forall":
        return ([f"{indent}for L_{e.var} in T[{e.table!r}].rows.items():"]
                + _holds(em, e.body, bound | {e.var}, indent + "    "))
    return [f"{indent}if not ({em.expr(e, CodeScope(bound))}): return False"]


_invariant_plans: "weakref.WeakKeyDictionary[Semantics, tuple[_Invariant, ...]]" = weakref.WeakKeyDictionary()
_changes: "weakref.WeakKeyDictionary[Semantics, dict]" = weakref.WeakKeyDictionary()


def _invariants(sem: Semantics) -> tuple[_Invariant, ...]:
    """The invariants of `sem`'s spec, with the shapes `_Invariant` re-checks in part."""
    plan = _invariant_plans.get(sem)
    if plan is None:
        plan = _invariant_plans[sem] = tuple(_invariant(sem.spec, inv.expr) for inv in sem.spec.invariants)
    return plan


def _invariant(spec: CheckedSpec, e: S.Expr) -> _Invariant:
    reads = _state_reads(spec, e)
    kept = frozenset(r for r in reads if r[0] == "table" and true_after_inserts(spec, e, r[1]))
    if not (isinstance(e, S.Quant) and e.kind == "forall"):
        return _Invariant(e, reads, kept_by_inserts=kept)
    table = ("table", e.table)
    inner = e.body
    if isinstance(inner, S.Quant) and inner.kind == "forall" and inner.table == e.table:
        pair_reads = _state_reads(spec, inner.body)
        if table not in pair_reads:
            return _Invariant(e, reads, e.table, pair_reads, not symmetric_in(inner.body, e.var, inner.var), kept)
    body_reads = _state_reads(spec, inner)
    if table not in body_reads:
        return _Invariant(e, reads, e.table, body_reads, kept_by_inserts=kept)
    return _Invariant(e, reads, kept_by_inserts=kept)


def _compile_check(sem: Semantics, invariants: Sequence[_Invariant], tables: Sequence[str],
                   variables: Sequence[str]) -> Callable:
    """`check(st, E)`: whether the invariants hold after a change to these tables and variables,
    and `TYPES` of what changed, E holding the entries at changed keys per changed table (one
    function: one call per success)."""
    spec = sem.spec
    changed = frozenset([("table", t) for t in tables] + [("var", v) for v in variables])
    em = Emitter(spec, sem.config)
    sets: list = []
    lines = ["def check(st, E, w=None):", "    V = st.vars", "    T = st.tables", "    J = st.journal"]
    # One loop per changed table over its changed entries, for every check made entry by entry
    # (each names the entry as its own variable); then the checks made once.
    per_entry: dict[str, list[str]] = {}
    once: list[str] = []
    for inv in invariants:
        for table, var, body in inv.test(em, changed):
            if table is None:
                once += body
            else:
                per_entry.setdefault(table, []).extend([f"        L_{var} = _e"] + body)
    for v in variables:
        test = _type_test(spec, spec.vars[v][0], f"V[{v!r}]", sets)
        if test:
            once.append(f"    if not ({test}): return False")
    for t in tables:
        info = spec.tables[t]
        tests = [_type_test(spec, info.key, "_e[0]", sets)]
        tests += [_type_test(spec, ft, f"_e[1][{f!r}]", sets) for f, ft in info.fields]
        tests = [x for x in tests if x]
        if tests:
            per_entry.setdefault(t, []).append(f"        if not ({' and '.join(tests)}): return False")
    for t, body in per_entry.items():
        lines += [f"    for _e in E[{t!r}]:"] + body
    lines += once
    lines.append("    return True")
    ns = dict(RUNTIME)
    ns["K"] = tuple(em.consts)
    ns["SETS"] = tuple(sets)
    exec(compile("\n".join(lines), f"<regcheck simulate invariants of {spec.name}>", "exec"), ns)  # from the AST
    return ns["check"]


@dataclass(frozen=True, slots=True)
class _Outcomes:
    """What the walk reads from one mask's Allowed, computed once."""

    allowed: Any  # the Allowed
    broken: bool  # its `broken`: the inputs break an obligation (most draws: one attribute read for them)
    failures: tuple  # the error outcomes a step may take (none for an event)
    # per failure, the statuses it allows (`status_candidates`): an outcome's hash, to look them up
    # by, is a Python call
    statuses: tuple[tuple, ...]
    plain_success: bool  # a documented success: the fast path's step takes it
    may_succeed: bool  # a success, documented or not (the pure walk tries one, when it is wanted)

    @staticmethod
    def of(allowed, is_event: bool, spec: CheckedSpec) -> "_Outcomes":
        failures = () if is_event else allowed.errors + allowed.env_errors
        return _Outcomes(allowed, bool(allowed.broken), failures,
                         tuple(tuple(status_candidates(spec, f)) for f in failures),
                         allowed.success and not allowed.unspecified, allowed.success or bool(allowed.unspecified))


class _CallBinding(NamedTuple):
    """What a step of one call reads from its configuration's `_Bound` (one lookup per step)."""

    maker: EventMaker | None  # the fast path's step; None: the call has none
    probe: EventMaker | None
    # the C step's own mask_of(event), which reads the mask as the probe does (nothing applied,
    # no verdict asked) without a Python decider's call per draw; None: the probe is asked
    mask_of: Callable[[Any], int | None] | None
    # inputs -> the event mask_of reads them from: the steps only read events, and inputs come
    # from small pools, so that most draws repeat inputs drawn before (up to EVENTS_KEPT per call)
    events: dict
    made: dict  # inputs -> the success event where it has no outputs, else outputs -> it; likewise
    machine: bool  # the call has a step the walk can take (and a probe)
    ranges: tuple  # `_range_checks`, where it has
    outcomes: dict  # mask -> its _Outcomes
    key_tables: tuple[str, ...]  # the tables whose keys its addresses are drawn near (`live_keys`)


class _Bound:
    """One configuration's State with the fast path bound to it, for all of its runs.

    Two bindings of the fast path: `probes`, whose verdicts are always "no" and record the mask the
    step computed (the call's clauses, evaluated on the machine, nothing applied), and `makers`,
    the replayer's steps, which take a success the documents allow."""

    def __init__(self, plan: _Plan, sem: Semantics):
        self.plan, self.sem = plan, sem
        self.st = st = sem.initial_state()
        self.initial_vars = dict(st.vars)
        self.initially_broken = bool(failing_invariants(sem, st))
        self.mask: list = [None]  # the last mask a probe saw
        # no thread windows: the walk records no tids, so no two calls overlap
        fast = fast_path(sem, st, _forget, {})
        probe = fast_path_deciding(sem, st, _forget, {}, self.recording_decider)
        self.makers: dict[str, EventMaker] = event_makers(sem, fast) if fast is not None else {}
        self.probes: dict[str, EventMaker] = event_makers(sem, probe) if probe is not None else {}
        self.probe_status = _failure_status(sem)
        self.effects = {c: cc.effect_rule for c, cc in sem.calls.items()}
        self.outcomes: dict[str, dict[int, _Outcomes]] = {c: {} for c in sem.spec.calls}  # call -> mask -> its outcomes
        self.statuses: dict[Any, tuple] = {}  # error outcome -> the statuses it allows (`a_status`'s candidates)
        self.invariants = _invariants(sem)
        # (tables, variables) an effect changed -> what to re-check; kept with the Semantics
        self.changes: dict[tuple, _Change] = _changes.setdefault(sem, {})
        # table -> the change of one of its entries (most effects'), and of one new entry
        self.one_entry: dict[str, _Change] = {}
        self.one_insert: dict[str, _Change] = {}
        self.tables_of = {cp.name: _key_tables(sem.spec, cp.depends_on) for cp in plan.calls}
        # per call: the inputs whose draws may lie outside what the step takes
        self.checks = {cp.name: _range_checks(cp, self.makers[cp.name].bounds) for cp in plan.calls
                       if cp.name in self.makers}
        self.bindings = {cp.name: self.binding(cp) for cp in plan.calls}

    def binding(self, cp: _CallPlan) -> _CallBinding:
        maker, checks = self.makers.get(cp.name), self.checks.get(cp.name)
        return _CallBinding(maker, self.probes.get(cp.name), _mask_reader(maker), {}, {},
                            maker is not None and checks is not None, checks or (), self.outcomes[cp.name],
                            self.tables_of[cp.name])

    def recording_decider(self, sem: Semantics, call: str) -> Callable[[dict, Any, int, Any], bool]:
        cell = self.mask

        def decide(cache: dict, key, m: int, status) -> bool:
            cell[0] = m
            return False
        return decide

    def change(self, tables: tuple[str, ...], variables: tuple[str, ...], inserted: tuple[str, ...] = ()) -> "_Change":
        """What a change of these tables and variables asks to re-check (compiled at its first
        success); `inserted`: those of the tables that only gained entries."""
        key = (tables, variables, inserted)
        found = self.changes.get(key)
        if found is None:
            names = frozenset([("table", t) for t in tables] + [("var", v) for v in variables])
            grown = frozenset(("table", t) for t in inserted)
            affected = [i for i in self.invariants
                        if not i.reads.isdisjoint(names) and not (i.reads & names) <= (grown & i.kept_by_inserts)]
            found = self.changes[key] = _Change(names, _compile_check(self.sem, affected, tables, variables))
        return found

    def initial_state(self) -> State:
        """The State, back in the initial state: emptied in place, as the steps are bound to its
        tables and variables."""
        st = self.st
        for table in st.tables.values():
            for key in list(table.rows):
                table.remove(key)
        st.journal.clear()
        st.vars.update(self.initial_vars)
        return st


class _FastWalker:
    """One run of the fast walk on a configuration's State (`_Bound`)."""

    def __init__(self, bound: _Bound, rng: random.Random, tries: int):
        self.plan, self.sem, self.st, self.rng, self.tries = bound.plan, bound.sem, bound.st, rng, tries
        self.rnd = rng.random
        self.calls, self.cumulative, self.total = bound.plan.calls, bound.plan.cumulative, bound.plan.total
        self.mask, self.bindings, self.probe_status = bound.mask, bound.bindings, bound.probe_status
        self.bound, self.tables_of, self.changes = bound, bound.tables_of, bound.changes
        self.one_entry, self.one_insert = bound.one_entry, bound.one_insert
        self.effects, self.success = bound.effects, bound.sem.success
        self.keys: dict[tuple, tuple] = {}  # tables -> their live keys, which addresses are drawn near
        self.records: list[tuple] = []  # (call plan, inputs, outputs, status) per step taken
        self.futile: dict[str, frozenset | None] = {}  # calls no draw found a step for -> what decided that
        self.streaks: dict[str, int] = {}  # call -> its steps in a row that found nothing
        # (call, inputs) -> the outputs the step declined with them in the state as it is: it would
        # decline them again, and outputs come from small pools, so that many output draws repeat one
        self.declined: dict[tuple, set] = {}

    def run(self, max_steps: int, seen: Counter) -> _RunOutcome:
        successes = fast = 0
        failing: list[str] = []
        initially_broken = self.bound.initially_broken
        for _ in range(max_steps):
            taken = self.step(seen)
            if taken is None:
                continue
            if taken:
                successes += 1
                fast += taken == _FAST
                # The re-checks after a success assume the invariants held before it: where the
                # initial state breaks one, the first success checks them all (as the pure walk).
                failing = self.broken_after(initially_broken and successes == 1)
                if failing:
                    break
        return _RunOutcome(len(self.records), successes, fast, failing, self.steps)

    def steps(self) -> tuple[Step, ...]:
        return tuple(Step(cp.name, dict(zip(cp.params, ins)), dict(zip(cp.outputs, outs)), status)
                     for cp, ins, outs, status in self.records)

    def live_keys(self, call: str) -> tuple:
        """The keys of the integer-keyed tables the call's clauses read (while they stay as they
        are): an address next to an entry of another table matters to no clause of the call."""
        tables = self.tables_of[call]
        keys = self.keys.get(tables)
        if keys is None:
            rows = self.st.tables
            if len(tables) == 1:  # (most calls': one table, its keys as they are)
                keys = tuple(rows[tables[0]].rows)
            else:
                keys = ()
                for t in tables:  # not a generator: one resumption per key costs more than the tuples
                    keys += tuple(rows[t].rows)
            self.keys[tables] = keys
        return keys

    def step(self, seen: Counter) -> int | None:
        """Draw a call and take one step with it: _FAST or _GENERAL for a success (st changed),
        _FAILURE for an allowed failure, None when no inputs that keep its obligations were found."""
        rnd, futile, calls, cumulative = self.rnd, self.futile, self.calls, self.cumulative
        cp = calls[bisect(cumulative, rnd() * self.total)]
        # A call for which no draw found a step is likely to fare so again while what its clauses
        # read stays as it is (the pure walk spends most of its time on such draws): another call
        # is drawn in its place, up to PASSES times, and else it gets one draw, not `tries`.
        name = cp.name
        passed = False
        if name in futile:
            for _ in range(PASSES):
                cp = calls[bisect(cumulative, rnd() * self.total)]
                name = cp.name
                if name not in futile:
                    break
            passed = name in futile
        self.output_draws = 2 if passed else self.tries * 2  # for the whole step, not per draw of inputs
        maker, probe, mask_of, events, made, machine, ranges, outcomes, key_tables = self.bindings[name]
        mask, status = self.mask, self.probe_status
        # an event whose every success needs outputs has nothing left to try once they are all drawn
        needs_outputs = cp.needs_outputs
        # and a call whose last draws found no step in other states gets fewer: half per such step in a row
        streak = self.streaks.get(name, 0)
        # What the draws below read and the state they draw in stay as they are until one is taken.
        keys = ()
        if cp.wants_keys:
            keys = self.keys.get(key_tables)
            if keys is None:
                keys = self.live_keys(name)
        draw_inputs, is_event = cp.draw_inputs, cp.is_event
        reads_mask = mask_of if machine else None
        for _ in range(1 if passed else self.tries >> streak or 1):
            if needs_outputs and self.output_draws <= 0:
                break
            ins = draw_inputs(rnd, keys)
            # The probe first: most draws break an obligation, and it tells so more cheaply than a
            # step that would also draw outputs. Its mask gives the Allowed. (A failure's status:
            # the step reads no outputs for it.) The inputs must lie where the step's decoder would
            # take them (`_range_checks`).
            if reads_mask is not None:
                event = events.get(ins)  # (or _UNFIT: inputs the step's decoder would not take)
                if event is None:
                    event = maker.make(ins, (), status) if _fit(ins, ranges) else _UNFIT
                    if len(events) < EVENTS_KEPT:
                        events[ins] = event
                m = reads_mask(event) if event is not _UNFIT else None
            elif machine and _fit(ins, ranges):
                mask[0] = None
                probe.step(probe.make(ins, (), status), 0)
                m = mask[0]
            else:
                m = None
            if m is None:  # unfit, or a clause could not be evaluated: the general path says why
                taken = self.general(cp, ins, None, is_event or rnd() < SUCCESS_BIAS, seen)
            else:
                known = outcomes.get(m)
                if known is None:
                    sem = self.sem
                    known = outcomes[m] = _Outcomes.of(sem.allowed_for_mask(name, m), cp.is_event, sem.spec)
                if known.broken:
                    continue  # the caller keeps its obligations: draw other inputs
                wants_success = is_event or rnd() < SUCCESS_BIAS  # (an event has no failure to choose)
                if known.plain_success and (wants_success or not known.failures):
                    # A success the step takes. It declines only outputs that break `ensures`
                    # and an effect it cannot evaluate: then the pure walk would find no
                    # outputs either, or fail to apply them, and take a failure.
                    if self.machine_success(cp, ins, maker, made, seen):
                        taken = _FAST
                    else:
                        taken = self.failure(cp, ins, known.failures, seen, known.statuses)
                elif not known.may_succeed or (known.failures and not wants_success):
                    # as the pure walk's way would
                    taken = self.failure(cp, ins, known.failures, seen, known.statuses)
                else:  # the documents are silent: the pure walk's way
                    taken = self.general(cp, ins, known.allowed, wants_success, seen)
            if taken is not None:
                if streak:
                    del self.streaks[name]
                return taken
        futile[name] = cp.depends_on
        self.streaks[name] = streak + 1
        return None

    def general(self, cp: _CallPlan, ins: tuple, al, wants_success: bool, seen: Counter) -> int | None:
        """The pure walk's step with these inputs from the unchanged state (`al`: their Allowed,
        when a probe has read it); None when they break an obligation (or no outputs keep
        `ensures` and no failure is allowed)."""
        sem, st = self.sem, self.st
        inputs = dict(zip(cp.params, ins))
        if al is None:
            al = sem.allowed(st, cp.name, inputs)
            if al.broken:
                return None
        failures = () if cp.is_event else al.errors + al.env_errors
        if (al.success or al.unspecified) and (not failures or wants_success):
            outs = self.outputs(cp, inputs)
            if outs is not None and sem.apply(st, cp.name, inputs, dict(zip(cp.outputs, outs))):
                for rule in al.unspecified:
                    seen[rule] += 1
                self.succeeded(cp, ins, outs, seen)
                return _GENERAL
        return self.failure(cp, ins, failures, seen)

    def failure(self, cp: _CallPlan, ins: tuple, failures: tuple, seen: Counter,
                candidates: tuple | None = None) -> int | None:
        """One of the allowed failures, drawn (the state stays as it is); None when there is none.
        `candidates`: per failure, its statuses (`_Outcomes.statuses`), where known."""
        if not failures:
            return None
        rnd, sem = self.rnd, self.sem
        i = int(rnd() * len(failures))
        outcome = failures[i]
        seen[outcome.rule] += 1
        if candidates is not None:
            statuses = candidates[i]
        else:
            statuses = self.bound.statuses.get(outcome)
            if statuses is None:
                statuses = self.bound.statuses[outcome] = tuple(status_candidates(sem.spec, outcome))
        self.records.append((cp, ins, (), statuses[int(rnd() * len(statuses))]))
        return _FAILURE

    def machine_success(self, cp: _CallPlan, ins: tuple, maker: EventMaker, made: dict, seen: Counter) -> bool:
        """A success through the fast path's step, with outputs drawn (from the step's budget,
        `output_draws`) until it takes one: it declines inputs that break an obligation or have no
        documented success, outputs that break `ensures`, and an effect it cannot evaluate. The
        inputs fit (`_range_checks`), and drawn outputs always do. `made`: the call's success
        events, by inputs, then by outputs where it has any."""
        success, rnd, make, step = self.success, self.rnd, maker.make, maker.step
        if not cp.outputs:
            outs = ()
            event = made.get(ins)
            if event is None:
                event = make(ins, (), success)
                if len(made) < EVENTS_KEPT:
                    made[ins] = event
            if not step(event, 0):
                return False
        else:
            refused = self.declined.get((cp.name, ins), ())  # (a set once the step declines some)
            # these inputs' events by outputs (a dict per inputs: a key of both would hash the
            # inputs again at every draw)
            by_outputs = made.get(ins)
            if by_outputs is None:
                by_outputs = {}
                if len(made) < EVENTS_KEPT:
                    made[ins] = by_outputs
            draw_outputs, left, pool = cp.draw_outputs, self.output_draws, cp.output_pool
            picks = len(pool) if pool is not None else 0
            for _ in range(left):
                left -= 1
                outs = pool[int(rnd() * picks)] if picks else draw_outputs(rnd, ())
                if outs in refused:
                    continue
                event = by_outputs.get(outs)
                if event is None:
                    event = by_outputs[outs] = make(ins, outs, success)  # (at most the pool's outputs)
                if step(event, 0):
                    break
                if not refused:
                    refused = self.declined[(cp.name, ins)] = set()
                refused.add(outs)
            else:
                self.output_draws = left
                return False
            self.output_draws = left
        self.succeeded(cp, ins, outs, seen)
        return True

    def outputs(self, cp: _CallPlan, inputs: Mapping) -> tuple | None:
        if not cp.outputs:
            return ()
        for _ in range(self.output_draws):
            self.output_draws -= 1
            outs = cp.draw_outputs(self.rnd, ())
            if not self.sem.ensures_broken(self.st, cp.name, inputs, dict(zip(cp.outputs, outs))):
                return outs
        return None

    def succeeded(self, cp: _CallPlan, ins: tuple, outs: tuple, seen: Counter) -> None:
        effect = self.effects[cp.name]
        if effect:
            seen[effect] += 1
        self.records.append((cp, ins, outs, None if cp.is_event else self.success))

    def broken_after(self, full: bool = False) -> list[str]:
        """After a success: the invariants (and TYPES) broken, re-checking only what read a change
        (`st.journal`, see `_Invariant`) and the types of what changed: the rest held before and
        read the same values (with `full`, all of them are checked). Also forgets what the change
        makes stale (live keys, futile calls, declined outputs)."""
        st = self.st
        journal = st.journal
        if not journal:
            return failing_invariants(self.sem, st) if full else []
        table, key, op, old = journal[0]
        if table is not None and len(journal) == 1:  # one entry changed (most effects): no grouping to do
            if old is None and op == "put":
                change = self.one_insert.get(table)
                if change is None:
                    change = self.one_insert[table] = self.bound.change((table,), (), (table,))
            else:
                change = self.one_entry.get(table)
                if change is None:
                    change = self.one_entry[table] = self.bound.change((table,), ())
            rows = st.tables[table].rows
            entries = {table: [(key, rows[key])] if key in rows else []}
        else:
            change, entries = self.changed_entries(journal)
        self.declined.clear()
        if entries:
            self.keys.clear()
        if self.futile:
            names = change.names
            kept = {}  # (a loop: a comprehension's frame costs more than the few calls it filters)
            for c, reads in self.futile.items():
                if reads is not None and reads.isdisjoint(names):
                    kept[c] = reads
            self.futile = kept
        if full:
            return failing_invariants(self.sem, st)
        try:
            if change.check(st, entries):
                return []
        except EvalError:
            pass
        return failing_invariants(self.sem, st)

    def changed_entries(self, journal: list) -> tuple["_Change", dict[str, list]]:
        """What the journal's changes ask to re-check, and per changed table its entries at the
        changed keys (in the order first changed; a removed one is not there)."""
        touched: dict[str, dict] = {}  # table -> its changed keys (a dict keeps them in order)
        changed_vars: list[str] = []
        changed: set[str] = set()  # the tables with an entry changed or removed (not only put there)
        for table, key, op, old in journal:
            if table is None:
                changed_vars.append(key)
                continue
            if table in touched:
                touched[table][key] = None
            else:
                touched[table] = {key: None}
            if old is not None or op != "put":
                changed.add(table)
        kind = (tuple(touched), tuple(changed_vars), tuple(t for t in touched if t not in changed))
        change = self.changes.get(kind) or self.bound.change(*kind)
        tables = self.st.tables
        entries = {}
        for t, keys in touched.items():
            rows = tables[t].rows
            entries[t] = found = []
            for k in keys:  # (a loop: a comprehension's frame costs more than the few keys)
                if k in rows:
                    found.append((k, rows[k]))
        return change, entries


@dataclass(frozen=True, slots=True)
class _Change:
    """What one kind of change (the tables and variables an effect changed) asks to re-check."""

    names: frozenset  # the ("var" | "table", name) changed
    check: Callable[[State, Mapping[str, list]], bool]  # whether the invariants that read them hold


_FAILURE, _GENERAL, _FAST = 0, 1, 2  # how a step was taken (a success is truthy)


def _failure_status(sem: Semantics) -> Any:
    """A status other than success, in the status type: the probes' (any will do, their verdict is "no")."""
    t = sem.spec.status_type
    if t.kind == "enum":
        return next(m for m in sem.spec.enums[t.name] if m != sem.success)
    return 1 if sem.success != 1 else 0


def _mask_reader(maker: EventMaker | None) -> Callable[[Any], int | None] | None:
    """The C step's mask_of, where the call's step is one (the generated Python steps have none)."""
    return None if maker is None else getattr(maker.step, "mask_of", None)


def _key_tables(spec: CheckedSpec, reads: frozenset | None) -> tuple[str, ...]:
    """The integer-keyed tables among `reads` (None: every table), in declaration order."""
    return tuple(t for t, info in spec.tables.items()
                 if info.key.kind == "int" and (reads is None or ("table", t) in reads))


# The fast path's remember(line, call): the walk keeps its own record of the steps. A C function
# that ignores its two arguments costs the machine less than a Python one.
_forget = {}.get


_UNFIT = object()  # the fast walk's mark of inputs that `_fit` refused


def _fit(ins: tuple, ranges: tuple) -> bool:
    """Whether the inputs pass their `_range_checks`."""
    for i, lo, hi in ranges:
        if not lo <= ins[i] <= hi:
            return False
    return True


def _range_checks(cp: _CallPlan, bounds: tuple) -> tuple[tuple[int, int, int], ...] | None:
    """(input index, lo, hi) for each input whose draws may lie outside what the step's decoder
    would have taken; None when an output's may (the call then has no fast step in the walk)."""
    checks = []
    for i, (drawn, taken) in enumerate(zip(cp.extremes, bounds)):
        if taken is None or (drawn is not None and taken[0] <= drawn[0] and drawn[1] <= taken[1]):
            continue
        if i >= len(cp.params):
            return None
        checks.append((i, taken[0], taken[1]))
    return tuple(checks)


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
