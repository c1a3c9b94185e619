"""The one concrete semantics: what a call may do in a state.

The replayer, the executor's model check, the generator, the simulator and the Hypothesis strategies
all ask this module. A `Semantics` is compiled once per (spec, configuration): every expression
becomes a Python closure, configuration parameters are folded to constants, and `exists` over a
sized table whose body tests `entry.range overlaps X` / `entry.range contains X` asks the table's
interval index instead of scanning, so a lookup costs O(log n + k) in the live entries.

Values: bool, int (exact, unbounded: `ptr + size` may pass 2**64 and is never wrapped), version
(tuple of ints, compared component-wise), enum member (its name, str), flags (int), range
(half-open (base, end) tuple; an empty range overlaps nothing), table entry ((key, record dict)).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping, assert_never


from ..language import syntax as S
from ..language.analysis import identifier, reads_and_writes
from ..language.checked import CallInfo, CheckedSpec
from ..language.diagnostics import RegcheckError, error
from .codegen import RUNTIME, CodeScope, Emitter, negated
from .outcomes import CONFORMS, Allowed, ClauseEvalError, ErrorOutcome, EvalError, Judgement, describe_outcomes
from .state import State, Table
from .values import resolve_config


# ---------------------------------------------------------------- the compiled semantics of one call


@dataclass(slots=True)
class CompiledCall:
    """One call's clauses, compiled. `bits` names what each bit of the mask function stands for."""

    info: CallInfo
    mask: Callable[[State, dict], int]
    bits: tuple[tuple[str, str, Any], ...]  # (kind, rule, codes) per bit; kind: usage|requires|undefined|fails|may|unspecified
    conditions: dict[str, Callable]  # rule -> condition function (st, a, w) for explanations
    ensures: tuple[tuple[str, Callable], ...]
    effect: Callable[[State, dict], None] | None
    effect_rule: str | None
    order: tuple[str, ...]
    thread_rule: str | None
    cache: dict[int, "Allowed"]

    @property
    def name(self) -> str:
        return self.info.name


class Semantics:
    """The concrete semantics of one spec under one configuration (parameters fixed for a trace)."""

    def __init__(self, spec: CheckedSpec, env: Mapping[str, Any] | None = None):
        self.spec = spec
        self.config = resolve_config(spec, env or {})
        self.success = spec.success
        em = Emitter(spec, self.config)
        lines: list[str] = []
        plans = {name: self._emit_call(em, lines, i, info) for i, (name, info) in enumerate(spec.calls.items())}
        for g, cond in spec.groups.items():
            lines += em.condition(f"g_{identifier(g)}", (), cond)
        for k, inv in enumerate(spec.invariants):
            lines += em.condition(f"inv{k}", (), inv.expr)
        for k, pin in enumerate(spec.pinned):
            lines += em.condition(f"pin{k}", (pin.var,), pin.cond)
        ns = self._run_generated("\n".join(lines), em)
        self._groups = {g: ns[f"g_{identifier(g)}"] for g in spec.groups}
        self.invariants = [(inv.rule, ns[f"inv{k}"]) for k, inv in enumerate(spec.invariants)]
        self._pinned = [(pin.rule, pin.var, pin.table, ns[f"pin{k}"]) for k, pin in enumerate(spec.pinned)]
        reads = reads_and_writes(spec)[0]
        self._pinned_decls = tuple((pin.rule, pin.table, all(item[0] == "field" and item[1] == pin.table
                                                             for item in reads(pin.cond)))
                                   for pin in spec.pinned)
        self.calls: dict[str, CompiledCall] = {name: plan(ns) for name, plan in plans.items()}

    def _run_generated(self, source: str, em: Emitter) -> dict:
        ns = dict(RUNTIME)
        ns["K"] = tuple(em.consts)
        exec(compile(source, f"<regcheck semantics of {self.spec.name}>", "exec"), ns)  # generated from the AST
        return ns

    # ---- construction
    def _emit_call(self, em: Emitter, lines: list[str], i: int, info: CallInfo):
        params = [n for n, _ in info.params]
        with_out = params + [n for n, _ in info.outputs]
        inputs = CodeScope(frozenset(params))
        body: list[str] = []
        constant_bits = 0
        bits: list[tuple[str, str, Any]] = []
        cond_names: dict[str, str] = {}
        ensures: list[tuple[str, str]] = []
        effect_rule = None
        order: tuple[str, ...] = ()
        thread_rule = None

        def add_bit(kind: str, rule: str, codes, test: str) -> None:
            nonlocal constant_bits
            if test == "True":
                constant_bits |= 1 << len(bits)
            elif test != "False":
                body.append(f"    if {test}: m |= {1 << len(bits)}")
            bits.append((kind, rule, codes))

        for j, c in enumerate(info.decl.clauses):
            fname = f"c{i}_{j}"
            bit = self._bit(em, c, inputs)
            if bit is not None:
                add_bit(*bit)
                if not isinstance(c, S.OnlyIn) and c.cond is not None:  # a `may fail` may have none
                    lines.extend(em.condition(fname, params, c.cond))
                    cond_names[c.rule] = fname
                continue
            match c:
                case S.Ensures():
                    lines.extend(em.condition(fname, with_out, c.cond))
                    ensures.append((c.rule, fname))
                    cond_names[c.rule] = fname
                case S.Effect():
                    lines.extend(em.function(f"e{i}", with_out, em.stmts(c.body, "    ", inputs.with_locals(with_out))))
                    effect_rule = c.rule
                case S.Order():
                    order = c.rules
                case S.NotThreadSafe():
                    thread_rule = c.rule
                case _:
                    assert_never(c)
        lines.extend(em.function(f"m{i}", params, [f"    m = {constant_bits}", *body, "    return m"]))

        def plan(ns: dict) -> CompiledCall:
            return CompiledCall(
                info, ns[f"m{i}"], tuple(bits), {r: ns[f] for r, f in cond_names.items()},
                tuple((r, ns[f]) for r, f in ensures), ns.get(f"e{i}") if effect_rule else None,
                effect_rule, order, thread_rule, {},
            )
        return plan

    def _bit(self, em: Emitter, c: S.Clause, scope: CodeScope) -> tuple[str, str, Any, str] | None:
        """(kind, rule, codes, Python test) of a clause that is one bit of the call's mask, else None.
        The test is compiled with `em` in `scope` (where the call's inputs are locals)."""
        match c:
            case S.OnlyIn():
                test = " or ".join(em.expr(self.spec.groups[g], scope) for g in c.groups) or "False"
                return "usage", c.rule, None, negated(test if len(c.groups) == 1 else f"({test})")
            case S.Requires():
                return "undefined" if c.undefined else "requires", c.rule, None, negated(em.expr(c.cond, scope))
            case S.Fails():
                return "fails", c.rule, self.spec.codes_of(c.codes), em.expr(c.cond, scope)
            case S.MayFail():
                return "may", c.rule, self.spec.codes_of(c.codes), em.expr(c.cond, scope) if c.cond is not None else "True"
            case S.Unspecified():
                return "unspecified", c.rule, None, em.expr(c.cond, scope)
        return None

    def mask_tests(self, em: Emitter, call: str, scope: CodeScope) -> list[str]:
        """The Python tests of `call`'s mask bits, in bit order, compiled with `em` in `scope` (whose
        locals must hold the call's inputs): for code that fuses the mask into a larger function."""
        tests = []
        for c in self.spec.calls[call].decl.clauses:
            bit = self._bit(em, c, scope)
            if bit is not None:
                tests.append(bit[3])
        return tests

    def initial_state(self) -> State:
        vars = {n: v for n, (_, v) in self.spec.vars.items()}
        tables = {n: Table(info.sized_by, n) for n, info in self.spec.tables.items()}
        return State(vars, tables)

    # ---- asking
    def allowed(self, st: State, call: str, args: Mapping[str, Any]) -> Allowed:
        """Broken obligations and the outcome set of `call(args)` in `st`."""
        cc = self.calls[call]
        try:
            m = cc.mask(st, args)
        except EvalError as exc:
            raise self._unevaluable(call, st, args, exc) from None
        allowed = cc.cache.get(m)  # as `allowed_for_mask`, inline: it runs for every event
        return allowed if allowed is not None else self.allowed_for_mask(call, m)

    def _unevaluable(self, call: str, st: State, args: Mapping, exc: EvalError) -> RegcheckError:
        """The error for a mask of `call` that could not be evaluated, located at its clause: the
        mask tests the clauses in order, so the first whose condition fails alone is the one."""
        cc = self.calls[call]
        for c in cc.info.decl.clauses:
            if isinstance(c, S.OnlyIn):
                tests = [partial(self._groups[g], a=_EMPTY) for g in c.groups]
            elif isinstance(c, S.Ensures) or getattr(c, "rule", None) not in cc.conditions:  # not a mask bit
                continue
            else:
                tests = [partial(cc.conditions[c.rule], a=args)]
            for test in tests:
                try:
                    test(st)
                except EvalError as found:
                    return ClauseEvalError(self.spec.name, call, c.rule, c.span, str(found))
        return RegcheckError([error("E0310", f"spec {self.spec.name}: while evaluating {call}: {exc}", cc.info.decl.span)])

    def allowed_for_mask(self, call: str, m: int) -> Allowed:
        """The Allowed of a mask (cached per call): `allowed` and code fused from `mask_tests` ask it."""
        cc = self.calls[call]
        allowed = cc.cache.get(m)
        if allowed is None:
            allowed = cc.cache[m] = _allowed_from_mask(cc, m)
        return allowed

    def witnesses(self, st: State, call: str, rule: str, args: Mapping) -> list[tuple[str, Any]]:
        """The table entries (table, key) the condition of `rule` looked at (for related events).

        `args` holds the call's arguments, and for an `ensures` rule its outputs too."""
        cond = self.calls[call].conditions.get(rule)
        found: list = []
        if cond is not None:
            try:
                cond(st, args, found)
            except (EvalError, KeyError):
                pass
        return found

    def holds(self, st: State) -> list[str]:
        """Rule IDs of the invariants that do not hold in st."""
        return [rule for rule, f in self.invariants if not f(st, _EMPTY)]

    def pinned_ranges(self, st: State) -> list[tuple[str, Any, tuple[int, int]]]:
        """(rule, key, (base, end)) for every entry the spec's `pinned` declarations say is page-locked."""
        out = []
        for rule, var, table, cond in self._pinned:
            tbl = st.tables[table]
            for entry in tbl.entries():
                if cond(st, {var: entry}):
                    k = entry[0]
                    out.append((rule, k, (k, k + entry[1][tbl.sized_by])))
        return out

    @property
    def pinned_decls(self) -> tuple[tuple[str, str, bool], ...]:
        """(rule, table, local) per `pinned` declaration, in order; `local`: its condition reads
        nothing but the entry's own fields, so only a change of that entry can change its answer."""
        return self._pinned_decls

    def pinned_range(self, st: State, decl: int, key: Any) -> tuple[int, int] | None:
        """(base, end) of the entry at `key` when `pinned` declaration number `decl` says it is
        page-locked, else None (also when there is no such entry)."""
        rule, var, table, cond = self._pinned[decl]
        tbl = st.tables[table]
        record = tbl.rows.get(key)
        if record is None or not cond(st, {var: (key, record)}):
            return None
        return key, key + record[tbl.sized_by]

    def ensures_broken(self, st: State, call: str, args: Mapping, outputs: Mapping) -> list[str]:
        cc = self.calls[call]
        a = {**args, **outputs}
        broken = []
        for rule, cond in cc.ensures:
            try:
                if not cond(st, a):
                    broken.append(rule)
            except EvalError as exc:
                raise ClauseEvalError(self.spec.name, call, rule, self.spec.rules[rule].span, str(exc)) from None
            except KeyError as exc:
                raise RegcheckError([error("E0310", f"spec {self.spec.name}: {call}: output {exc} is missing")]) from None
        return broken

    def judge(self, allowed: Allowed, st: State, args: Mapping, status, outputs: Mapping) -> Judgement:
        """Compare a recorded status and outputs with what `allowed` permits (before applying it)."""
        if allowed.open:
            return CONFORMS
        if status == self.success:
            if not allowed.success:
                return Judgement(False, tuple(e.rule for e in allowed.errors), describe_outcomes(allowed, self.success))
            if not self.calls[allowed.call].ensures:
                return CONFORMS
            broken = self.ensures_broken(st, allowed.call, args, outputs)
            return Judgement(False, tuple(broken), describe_outcomes(allowed, self.success)) if broken else CONFORMS
        if any(e.allows(status) for e in allowed.errors) or any(e.allows(status) for e in allowed.env_errors):
            return CONFORMS
        expected = describe_outcomes(allowed, self.success)
        if allowed.errors:
            return Judgement(False, tuple(e.rule for e in allowed.errors), expected)
        effect_rule = self.calls[allowed.call].effect_rule
        return Judgement(False, (effect_rule,) if effect_rule else (), expected)

    def apply(self, st: State, call: str, args: Mapping, outputs: Mapping) -> bool:
        """Apply the success effect in place; afterwards `st.journal` lists the changes.

        False, with the state rolled back untouched, when the effect is undefined here (it looks up
        an entry that is absent: possible only after the caller broke an obligation).
        """
        st.journal.clear()
        cc = self.calls[call]
        if cc.effect is None:
            return True
        try:
            cc.effect(st, {**args, **outputs} if outputs else args)
        except EvalError:
            st.rollback()
            return False
        return True

    def successor(self, st: State, call: str, args: Mapping, outputs: Mapping | None = None) -> State:
        """The state after a successful call, as a new State (st is left as it was)."""
        nxt = st.copy()
        self.apply(nxt, call, args, outputs or {})
        return nxt

    def group_of(self, st: State) -> tuple[str, ...]:
        return tuple(g for g, f in self._groups.items() if f(st, _EMPTY))

    def active_groups(self, st: State) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        """The groups active in st, and (group, why) for those whose condition cannot be evaluated
        there: for a finding that lists the active groups, which must not stop at a group the
        call's rule does not name (a usage rule that names one stops the replay itself, E0310)."""
        active, unknown = [], []
        for g, f in self._groups.items():
            try:
                if f(st, _EMPTY):
                    active.append(g)
            except EvalError as exc:
                unknown.append((g, str(exc)))
        return tuple(active), tuple(unknown)

    def eval(self, e: S.Expr, st: State, scope: Mapping | None = None):
        """Evaluate one checked expression of this spec (tests, the prover's cross-check)."""
        scope = dict(scope or {})
        names = [n for n in scope if n.isidentifier()]
        em = Emitter(self.spec, self.config)
        ns = self._run_generated("\n".join(em.condition("f", names, e)), em)
        try:
            return ns["f"](st, scope)
        except EvalError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: {exc}")]) from None


_EMPTY: Mapping = {}


def _allowed_from_mask(cc: CompiledCall, m: int) -> Allowed:
    broken, undefined, errors, env, unspecified = [], [], [], [], []
    for bit, (kind, rule, codes) in enumerate(cc.bits):
        if not m >> bit & 1:
            continue
        if kind in ("usage", "requires", "undefined"):
            broken.append(rule)
            if kind == "undefined":
                undefined.append(rule)
        elif kind == "fails":
            errors.append(ErrorOutcome(rule, *codes))
        elif kind == "may":
            env.append(ErrorOutcome(rule, *codes))
        else:
            unspecified.append(rule)
    if cc.order and len(errors) > 1:
        errors = _apply_order(errors, cc.order)
    return Allowed(cc.name, tuple(broken), tuple(undefined), tuple(unspecified), tuple(errors), tuple(env), not errors)


def _apply_order(errors: list[ErrorOutcome], order: tuple[str, ...]) -> list[ErrorOutcome]:
    """With a declared precedence, only the first holding rule of the order counts."""
    ranked = [e for e in errors if e.rule in order]
    if not ranked:
        return errors
    first = min(ranked, key=lambda e: order.index(e.rule))
    return [first] + [e for e in errors if e.rule not in order]


