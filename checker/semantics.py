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
from typing import Any, Callable, Iterable, Iterator, Mapping, assert_never

from sortedcontainers import SortedList

from . import syntax as S
from .diagnostics import RegcheckError, error
from .typecheck import ANY, CallInfo, CheckedSpec, Type

Fn = Callable[["State", dict], Any]

# ---------------------------------------------------------------- state


class Table:
    """A keyed collection of records; sized tables keep their keys sorted for interval queries."""

    __slots__ = ("name", "rows", "sized_by", "keys", "sizes", "journal")

    def __init__(self, sized_by: str | None, name: str = ""):
        self.name = name
        self.rows: dict[Any, dict] = {}
        self.sized_by = sized_by
        self.keys = SortedList() if sized_by else None
        self.sizes = SortedList() if sized_by else None
        # Every put/remove is appended as (table, key, "put"|"remove", previous record): `apply`
        # rolls a failed effect back with it, and the replayer learns which line made each entry.
        self.journal: list | None = None

    def put(self, key, record: dict) -> None:
        if self.journal is not None:
            self.journal.append((self.name, key, "put", self.rows.get(key)))
        if self.sized_by is not None:
            old = self.rows.get(key)
            if old is None:
                self.keys.add(key)
            else:
                self.sizes.remove(old[self.sized_by])
            self.sizes.add(record[self.sized_by])
        self.rows[key] = record

    def remove(self, key) -> None:
        old = self.rows.pop(key, None)
        if old is not None and self.journal is not None:
            self.journal.append((self.name, key, "remove", old))
        if old is not None and self.sized_by is not None:
            self.keys.remove(key)
            self.sizes.remove(old[self.sized_by])

    def set_field(self, key, name: str, value) -> None:
        record = dict(self.rows[key])
        record[name] = value
        self.put(key, record)

    def entries(self) -> Iterator[tuple]:
        return iter(list(self.rows.items()))

    def _window(self, lo: int, hi: int) -> Iterator[tuple]:
        """Entries whose key lies in [lo, hi)."""
        rows = self.rows
        for k in self.keys.irange(lo, hi, inclusive=(True, False)):
            yield (k, rows[k])

    def overlapping(self, base: int, end: int) -> Iterator[tuple]:
        """Candidates for `entry.range overlaps [base, end)`: keys in (base - max size, end)."""
        if not self.rows or end <= base:
            return iter(())
        return self._window(base - self.sizes[-1] + 1, end)

    def containing(self, base: int, end: int) -> Iterator[tuple]:
        """Candidates for `entry.range contains [base, end)` (or the address base when end == base + 1)."""
        if not self.rows:
            return iter(())
        return self._window(base - self.sizes[-1], base + 1)

    def restore(self, key, old: dict | None) -> None:
        """Undo one journalled change (the journal itself is not touched)."""
        journal, self.journal = self.journal, None
        try:
            if old is None:
                self.remove(key)
            else:
                self.put(key, old)
        finally:
            self.journal = journal

    def copy(self) -> "Table":
        t = Table(self.sized_by, self.name)
        t.rows = dict(self.rows)
        if self.sized_by is not None:
            t.keys = self.keys.copy()
            t.sizes = self.sizes.copy()
        return t


class State:
    """State scalars and tables. Mutable for speed; `copy()` and `snapshot()` for pure uses.

    `journal` lists the changes made by the last `Semantics.apply` (entries (table, key, op, old),
    with table None for a state variable): the undo log of a failed effect and the replayer's
    record of which event created which entry.
    """

    __slots__ = ("vars", "tables", "journal")

    def __init__(self, vars: dict, tables: dict[str, Table]):
        self.vars = vars
        self.tables = tables
        self.journal: list = []
        for t in tables.values():
            t.journal = self.journal

    def copy(self) -> "State":
        return State(dict(self.vars), {n: t.copy() for n, t in self.tables.items()})

    def rollback(self) -> None:
        for table, key, op, old in reversed(self.journal):
            if table is None:
                self.vars[key] = old
            else:
                self.tables[table].restore(key, old)
        self.journal.clear()

    def snapshot(self) -> tuple:
        """A hashable, order-independent image of the state (for tests and model checking)."""
        return (
            tuple(sorted(self.vars.items())),
            tuple((n, tuple(sorted((k, tuple(sorted(r.items()))) for k, r in t.rows.items())))
                  for n, t in sorted(self.tables.items())),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.snapshot() == other.snapshot()

    def __repr__(self) -> str:
        tables = {n: dict(t.rows) for n, t in self.tables.items()}
        return f"State(vars={self.vars}, tables={tables})"


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ErrorOutcome:
    """An allowed failure: its rule and status codes (None: any non-success status)."""

    rule: str
    codes: frozenset | None

    def allows(self, status) -> bool:
        return self.codes is None or status in self.codes


@dataclass(frozen=True, slots=True)
class Allowed:
    """What the spec allows for one call in one state: broken obligations and the outcome set.

    `errors` are the documented failures whose condition holds (after any declared order); when one
    holds, success is not allowed. `env_errors` are always allowed. When `undefined` (a broken
    obligation leaves the outcome open) or `unspecified` (the documents are silent) is non-empty,
    every outcome is allowed.
    """

    call: str
    broken: tuple[str, ...]
    undefined: tuple[str, ...]
    unspecified: tuple[str, ...]
    errors: tuple[ErrorOutcome, ...]
    env_errors: tuple[ErrorOutcome, ...]
    success: bool

    @property
    def open(self) -> bool:
        return bool(self.undefined or self.unspecified)

    def allows_status(self, status, success_value) -> bool:
        if self.open:
            return True
        if status == success_value:
            return self.success
        return any(e.allows(status) for e in self.errors) or any(e.allows(status) for e in self.env_errors)


@dataclass(frozen=True, slots=True)
class Judgement:
    """How a recorded result compares with what was allowed."""

    conforms: bool
    rules: tuple[str, ...]  # the rules the result breaks (empty when it conforms)
    expected: str  # a readable description of the allowed outcomes ("" when it conforms)


_CONFORMS = Judgement(True, (), "")


class EvalError(Exception):
    """A spec expression could not be evaluated (a lookup of a missing key): a spec bug."""


# ---------------------------------------------------------------- compilation


class _Compiler:
    def __init__(self, spec: CheckedSpec, config: Mapping[str, Any]):
        self.spec = spec
        self.config = config

    def t(self, e: S.Expr) -> Type:
        return self.spec.types.get(id(e), ANY)

    def expr(self, e: S.Expr) -> Fn:
        match e:
            case S.IntLit(value=v) | S.BoolLit(value=v):
                return _const(v)
            case S.VersionLit(parts=p):
                return _const(p)
            case S.Name(name=n):
                return self.name(n)
            case S.Field(obj=o, name=n):
                return self.field(o, n)
            case S.Index(table=t, key=k):
                kf = self.expr(k)

                def index(st, a, t=t, kf=kf):
                    key = kf(st, a)
                    w = a.get(WITNESS)
                    if w is not None:
                        w.append((t, key))
                    try:
                        return (key, st.tables[t].rows[key])
                    except KeyError:
                        raise EvalError(f"{t}[{key:#x}] has no entry" if isinstance(key, int) else f"{t}[{key}] has no entry") from None
                return index
            case S.Unary(op=op, operand=o):
                f = self.expr(o)
                if op == "not":
                    return lambda st, a: not f(st, a)
                if op == "-":
                    return lambda st, a: -f(st, a)
                return lambda st, a: ~f(st, a)
            case S.Binary():
                return self.binary(e)
            case S.Builtin(func=fn, args=args):
                fs = [self.expr(x) for x in args]
                if fn == "range":
                    b, s = fs
                    return lambda st, a: (lambda base: (base, base + s(st, a)))(b(st, a))
                if fn == "aligned":
                    x, n = fs
                    return lambda st, a: x(st, a) % n(st, a) == 0
                if fn == "min":
                    return lambda st, a: min(fs[0](st, a), fs[1](st, a))
                return lambda st, a: max(fs[0](st, a), fs[1](st, a))
            case S.Quant():
                return self.quant(e)
            case S.SetLit(items=items):
                fs = [self.expr(x) for x in items]
                if all(getattr(f, "const", False) for f in fs):
                    return _const(frozenset(f(None, None) for f in fs))
                return lambda st, a: frozenset(f(st, a) for f in fs)
            case _:
                assert_never(e)

    def name(self, n: str) -> Fn:
        spec = self.spec
        if n in spec.vars:
            return lambda st, a: st.vars[n]
        if n in spec.params:
            return _const(self.config[n])
        if n in spec.consts:
            return _const(spec.consts[n][1])
        if n in spec.defs:
            return self.expr(spec.defs[n])
        if n in spec.enum_of_member:
            return _const(n)
        if n in spec.flag_member:
            return _const(spec.flag_member[n][1])
        if n in spec.tables:
            return _const(n)  # only appears on the right of `in`, handled there
        return lambda st, a: a[n]

    def field(self, o: S.Expr, n: str) -> Fn:
        ot = self.t(o)
        f = self.expr(o)
        if ot.kind == "range":
            if n == "base":
                return lambda st, a: f(st, a)[0]
            if n == "end":
                return lambda st, a: f(st, a)[1]
            return lambda st, a: (lambda r: r[1] - r[0])(f(st, a))
        # table entry
        if n == "key":
            return lambda st, a: f(st, a)[0]
        if n == "range":
            sized = self.spec.tables[ot.name].sized_by

            def entry_range(st, a):
                k, rec = f(st, a)
                return (k, k + rec[sized])
            return entry_range
        return lambda st, a: f(st, a)[1][n]

    def binary(self, e: S.Binary) -> Fn:
        op = e.op
        if op == "in":
            return self.membership(e)
        lf, rf = self.expr(e.left), self.expr(e.right)
        match op:
            case "and":
                return lambda st, a: lf(st, a) and rf(st, a)
            case "or":
                return lambda st, a: lf(st, a) or rf(st, a)
            case "implies":
                return lambda st, a: (not lf(st, a)) or rf(st, a)
            case "==":
                return lambda st, a: lf(st, a) == rf(st, a)
            case "!=":
                return lambda st, a: lf(st, a) != rf(st, a)
            case "<":
                return lambda st, a: lf(st, a) < rf(st, a)
            case "<=":
                return lambda st, a: lf(st, a) <= rf(st, a)
            case ">":
                return lambda st, a: lf(st, a) > rf(st, a)
            case ">=":
                return lambda st, a: lf(st, a) >= rf(st, a)
            case "+":
                return lambda st, a: lf(st, a) + rf(st, a)
            case "-":
                return lambda st, a: lf(st, a) - rf(st, a)
            case "*":
                return lambda st, a: lf(st, a) * rf(st, a)
            case "%":
                def mod(st, a):
                    d = rf(st, a)
                    if d == 0:
                        raise EvalError("remainder by zero")
                    return lf(st, a) % d
                return mod
            case "**":
                return lambda st, a: lf(st, a) ** rf(st, a)
            case "&":
                return lambda st, a: lf(st, a) & rf(st, a)
            case "|":
                return lambda st, a: lf(st, a) | rf(st, a)
            case "overlaps":
                return lambda st, a: overlaps(lf(st, a), rf(st, a))
            case "contains":
                if self.t(e.right).kind == "range":
                    return lambda st, a: contains_range(lf(st, a), rf(st, a))
                return lambda st, a: contains_addr(lf(st, a), rf(st, a))
        raise AssertionError(op)

    def membership(self, e: S.Binary) -> Fn:
        rt = self.t(e.right)
        lf = self.expr(e.left)
        if rt.kind == "table":
            t = e.right.name  # type: ignore[union-attr]
            return lambda st, a: lf(st, a) in st.tables[t].rows
        rf = self.expr(e.right)
        if rt.kind == "flags" or (rt.kind == "int" and self.t(e.left).kind == "flags"):
            def flag_set(st, a):
                bit = lf(st, a)
                return (rf(st, a) & bit) == bit
            return flag_set
        if rt.kind == "range":
            return lambda st, a: contains_addr(rf(st, a), lf(st, a))
        return lambda st, a: lf(st, a) in rf(st, a)

    def quant(self, q: S.Quant) -> Fn:
        body = self.expr(q.body)
        var, table = q.var, q.table
        if q.kind == "forall":
            def forall(st, a):
                saved = a.get(var, _MISSING)
                try:
                    for entry in st.tables[table].entries():
                        a[var] = entry
                        if not body(st, a):
                            return False
                    return True
                finally:
                    _restore(a, var, saved)
            return forall
        candidates = self.index_probe(q)

        def exists(st, a):
            saved = a.get(var, _MISSING)
            try:
                tbl = st.tables[table]
                for entry in (candidates(tbl, st, a) if candidates else tbl.entries()):
                    a[var] = entry
                    if body(st, a):
                        w = a.get(WITNESS)
                        if w is not None:
                            w.append((table, entry[0]))
                        return True
                return False
            finally:
                _restore(a, var, saved)
        return exists

    def index_probe(self, q: S.Quant) -> Callable | None:
        """For `exists v in T: ... v.range overlaps X ...` (X free of v), the interval index query."""
        if self.spec.tables[q.table].sized_by is None:
            return None
        for conj in _conjuncts(q.body):
            if not isinstance(conj, S.Binary) or conj.op not in ("overlaps", "contains"):
                continue
            sides = [(conj.left, conj.right)] + ([(conj.right, conj.left)] if conj.op == "overlaps" else [])
            for mine, other in sides:
                if _is_range_of(mine, q.var) and q.var not in _free_names(other):
                    of = self.expr(other)
                    if conj.op == "overlaps":
                        return lambda tbl, st, a: tbl.overlapping(*of(st, a))
                    if self.t(other).kind == "range":
                        return lambda tbl, st, a: tbl.containing(*of(st, a))
                    return lambda tbl, st, a: (lambda x: tbl.containing(x, x + 1))(of(st, a))
        return None

    # ---- statements
    def stmts(self, body: Iterable[S.Stmt]) -> Callable[[State, dict], None]:
        fs = [self.stmt(s) for s in body]

        def run(st, a):
            for f in fs:
                f(st, a)
        return run

    def stmt(self, s: S.Stmt) -> Callable[[State, dict], None]:
        match s:
            case S.Assign(var=v, value=x):
                f = self.expr(x)

                def assign(st, a):
                    value = f(st, a)
                    st.journal.append((None, v, "set", st.vars[v]))
                    st.vars[v] = value
                return assign
            case S.Insert(table=t, key=k, fields=fs):
                kf = self.expr(k)
                ffs = [(n, self.expr(x)) for n, x in fs]

                def insert(st, a):
                    st.tables[t].put(kf(st, a), {n: f(st, a) for n, f in ffs})
                return insert
            case S.Update(table=t, key=k, field=n, value=x):
                kf, vf = self.expr(k), self.expr(x)

                def update(st, a):
                    key = kf(st, a)
                    if key not in st.tables[t].rows:
                        raise EvalError(f"{t} has no entry for key {key}")
                    st.tables[t].set_field(key, n, vf(st, a))
                return update
            case S.Delete(table=t, key=k):
                kf = self.expr(k)
                return lambda st, a: st.tables[t].remove(kf(st, a))
            case S.If(cond=c, then=th, orelse=el):
                cf, tf, ef = self.expr(c), self.stmts(th), self.stmts(el)

                def if_(st, a):
                    (tf if cf(st, a) else ef)(st, a)
                return if_
            case _:
                assert_never(s)


_MISSING = object()
# When an evaluation scope holds a list under this key, `exists` and `T[k]` append the entries
# (table, key) they looked at: the replayer's way to name the earlier events a finding relates to.
WITNESS = "\x00witness"


def _restore(a: dict, var: str, saved) -> None:
    if saved is _MISSING:
        a.pop(var, None)
    else:
        a[var] = saved


def _const(v) -> Fn:
    def f(st, a):
        return v
    f.const = True  # type: ignore[attr-defined]
    return f


def overlaps(x: tuple, y: tuple) -> bool:
    return x[0] < y[1] and y[0] < x[1] and x[0] < x[1] and y[0] < y[1]


def contains_range(outer: tuple, inner: tuple) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def contains_addr(r: tuple, x: int) -> bool:
    return r[0] <= x < r[1]


def _conjuncts(e: S.Expr) -> Iterator[S.Expr]:
    if isinstance(e, S.Binary) and e.op == "and":
        yield from _conjuncts(e.left)
        yield from _conjuncts(e.right)
    else:
        yield e


def _is_range_of(e: S.Expr, var: str) -> bool:
    return isinstance(e, S.Field) and e.name == "range" and isinstance(e.obj, S.Name) and e.obj.name == var


def _free_names(e: S.Expr) -> set[str]:
    match e:
        case S.Name(name=n):
            return {n}
        case S.Field(obj=o):
            return _free_names(o)
        case S.Index(key=k):
            return _free_names(k)
        case S.Unary(operand=o):
            return _free_names(o)
        case S.Binary(left=l, right=r):
            return _free_names(l) | _free_names(r)
        case S.Builtin(args=args) | S.SetLit(items=args):
            return set().union(*(_free_names(x) for x in args)) if args else set()
        case S.Quant(var=v, body=b):
            return _free_names(b) - {v}
        case _:
            return set()


# ---------------------------------------------------------------- the compiled semantics of one call


@dataclass(slots=True)
class CompiledCall:
    info: CallInfo
    requires: list[tuple[str, bool, Fn]]
    usage_groups: list[tuple[str, list[Fn]]]
    fails: list[tuple[str, frozenset | None, Fn]]
    may_fail: list[tuple[str, frozenset | None, Fn | None]]
    unspecified: list[tuple[str, Fn]]
    ensures: list[tuple[str, Fn]]
    effect: Callable[[State, dict], None] | None
    effect_rule: str | None
    order: tuple[str, ...]
    thread_rule: str | None

    @property
    def name(self) -> str:
        return self.info.name


class Semantics:
    """The concrete semantics of one spec under one configuration (parameters fixed for a trace)."""

    def __init__(self, spec: CheckedSpec, env: Mapping[str, Any] | None = None):
        self.spec = spec
        self.config = resolve_config(spec, env or {})
        self.success = spec.success
        comp = _Compiler(spec, self.config)
        self._groups = {g: comp.expr(c) for g, c in spec.groups.items()}
        self.calls: dict[str, CompiledCall] = {n: self._compile_call(comp, info) for n, info in spec.calls.items()}
        self.invariants = [(inv.rule, comp.expr(inv.expr)) for inv in spec.invariants]
        self._compiler = comp

    # ---- construction
    def _compile_call(self, comp: _Compiler, info: CallInfo) -> CompiledCall:
        cc = CompiledCall(info, [], [], [], [], [], [], None, None, (), None)
        for c in info.decl.clauses:
            match c:
                case S.Requires():
                    cc.requires.append((c.rule, c.undefined, comp.expr(c.cond)))
                case S.OnlyIn():
                    cc.usage_groups.append((c.rule, [self._groups[g] for g in c.groups]))
                case S.Fails():
                    cc.fails.append((c.rule, self._codes(comp, c.codes), comp.expr(c.cond)))
                case S.MayFail():
                    cc.may_fail.append((c.rule, self._codes(comp, c.codes), comp.expr(c.cond) if c.cond else None))
                case S.Unspecified():
                    cc.unspecified.append((c.rule, comp.expr(c.cond)))
                case S.Ensures():
                    cc.ensures.append((c.rule, comp.expr(c.cond)))
                case S.Effect():
                    cc.effect, cc.effect_rule = comp.stmts(c.body), c.rule
                case S.Order():
                    cc.order = c.rules
                case S.NotThreadSafe():
                    cc.thread_rule = c.rule
                case _:
                    assert_never(c)
        return cc

    @staticmethod
    def _codes(comp: _Compiler, codes: S.Codes) -> frozenset | None:
        if isinstance(codes, S.AnyFailure):
            return None
        v = comp.expr(codes)(None, None)
        return v if isinstance(v, frozenset) else frozenset([v])

    def initial_state(self) -> State:
        vars = {n: v for n, (_, v) in self.spec.vars.items()}
        tables = {n: Table(info.sized_by, n) for n, info in self.spec.tables.items()}
        return State(vars, tables)

    # ---- asking
    def allowed(self, st: State, call: str, args: Mapping[str, Any]) -> Allowed:
        """Broken obligations and the outcome set of `call(args)` in `st`."""
        cc = self.calls[call]
        a = dict(args)
        try:
            return self._allowed(cc, st, a)
        except EvalError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: while evaluating {call}: {exc}")]) from None

    def _allowed(self, cc: CompiledCall, st: State, a: dict) -> Allowed:
        broken: list[str] = []
        undefined: list[str] = []
        for rule, groups in cc.usage_groups:
            if not any(g(st, a) for g in groups):
                broken.append(rule)
        for rule, is_undefined, cond in cc.requires:
            if not cond(st, a):
                broken.append(rule)
                if is_undefined:
                    undefined.append(rule)
        errors = [ErrorOutcome(rule, codes) for rule, codes, cond in cc.fails if cond(st, a)]
        if cc.order and len(errors) > 1:
            errors = _apply_order(errors, cc.order)
        env = [ErrorOutcome(rule, codes) for rule, codes, cond in cc.may_fail if cond is None or cond(st, a)]
        unspecified = [rule for rule, cond in cc.unspecified if cond(st, a)]
        return Allowed(cc.name, tuple(broken), tuple(undefined), tuple(unspecified), tuple(errors), tuple(env),
                       not errors)

    def witnesses(self, st: State, call: str, rule: str, args: Mapping) -> list[tuple[str, Any]]:
        """The table entries (table, key) the condition of `rule` looked at (for related events)."""
        cc = self.calls[call]
        conds = [c for r, _, c in cc.requires if r == rule] + [c for r, _, c in cc.fails if r == rule] + \
                [c for r, c in cc.unspecified if r == rule]
        found: list = []
        a = {**args, WITNESS: found}
        for cond in conds:
            try:
                cond(st, a)
            except EvalError:
                pass
        return found

    def holds(self, st: State) -> list[str]:
        """Rule IDs of the invariants that do not hold in st."""
        a: dict = {}
        return [rule for rule, f in self.invariants if not f(st, a)]

    def ensures_broken(self, st: State, call: str, args: Mapping, outputs: Mapping) -> list[str]:
        cc = self.calls[call]
        a = {**args, **outputs}
        try:
            return [rule for rule, cond in cc.ensures if not cond(st, a)]
        except EvalError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: while evaluating {call}: {exc}")]) from None

    def judge(self, allowed: Allowed, st: State, args: Mapping, status, outputs: Mapping) -> Judgement:
        """Compare a recorded status and outputs with what `allowed` permits (before applying it)."""
        if allowed.open:
            return _CONFORMS
        if status == self.success:
            if not allowed.success:
                return Judgement(False, tuple(e.rule for e in allowed.errors), describe_outcomes(allowed, self.success))
            if not self.calls[allowed.call].ensures:
                return _CONFORMS
            broken = self.ensures_broken(st, allowed.call, args, outputs)
            return Judgement(False, tuple(broken), describe_outcomes(allowed, self.success)) if broken else _CONFORMS
        if any(e.allows(status) for e in allowed.errors) or any(e.allows(status) for e in allowed.env_errors):
            return _CONFORMS
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
        a: dict = {}
        return tuple(g for g, f in self._groups.items() if f(st, a))

    def eval(self, e: S.Expr, st: State, scope: Mapping | None = None):
        """Evaluate one checked expression of this spec (tests, the prover's cross-check)."""
        return self._compiler.expr(e)(st, dict(scope or {}))


def _apply_order(errors: list[ErrorOutcome], order: tuple[str, ...]) -> list[ErrorOutcome]:
    """With a declared precedence, only the first holding rule of the order counts."""
    ranked = [e for e in errors if e.rule in order]
    if not ranked:
        return errors
    first = min(ranked, key=lambda e: order.index(e.rule))
    return [first] + [e for e in errors if e.rule not in order]


def describe_outcomes(allowed: Allowed, success) -> str:
    if allowed.open:
        return "any outcome (" + ", ".join(allowed.undefined + allowed.unspecified) + ")"
    parts = []
    if allowed.success:
        parts.append(f"success ({success})")
    for e in allowed.errors + allowed.env_errors:
        codes = "any failure" if e.codes is None else " or ".join(str(c) for c in sorted(e.codes, key=str))
        parts.append(f"{codes} [{e.rule}]")
    return "; ".join(parts)


# ---------------------------------------------------------------- configuration


def parse_version(value) -> tuple[int, ...] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(x, int) for x in value):
        return tuple(value)
    text = str(value).strip()
    try:
        parts = tuple(int(p) for p in text.split("."))
    except ValueError:
        return None
    return parts if parts and all(p >= 0 for p in parts) else None


def coerce_value(t: Type, value, spec: CheckedSpec):
    """A JSON value as a value of type t, or raise ValueError with a reason."""
    match t.kind:
        case "bool":
            if isinstance(value, bool):
                return value
            raise ValueError("expected true or false")
        case "int" | "flags":
            v = coerce_int(value, spec.flags.get(t.name) if t.kind == "flags" else None)
            if t.kind == "int":
                from .typecheck import INT_BOUNDS
                bounds = INT_BOUNDS.get(t.name)
                if bounds and not bounds[0] <= v <= bounds[1]:
                    raise ValueError(f"{v} is out of range for {t.name}")
            elif not 0 <= v < 2**32:
                raise ValueError(f"{v} is out of range for flags {t.name}")
            return v
        case "version":
            v = parse_version(value)
            if v is None:
                raise ValueError(f"{value!r} is not a version number like 5.10.1")
            return v
        case "enum":
            if isinstance(value, str) and value in spec.enums[t.name]:
                return value
            raise ValueError(f"expected one of {', '.join(spec.enums[t.name])}")
        case _:
            raise ValueError(f"values of type {t} cannot be given")


def coerce_int(value, flag_names: Mapping[str, int] | None = None) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer, found a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            if text.startswith(("0x", "-0x")):
                return int(text, 16)
            return int(text, 10)
        except ValueError:
            pass
        if flag_names is not None and value in flag_names:
            return flag_names[value]
        raise ValueError(f"{value!r} is not an integer")
    if isinstance(value, list) and flag_names is not None:
        total = 0
        for item in value:
            if not isinstance(item, str) or item not in flag_names:
                raise ValueError(f"unknown flag {item!r} (known: {', '.join(flag_names)})")
            total |= flag_names[item]
        return total
    raise ValueError("expected an integer")


def resolve_config(spec: CheckedSpec, env: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters for one trace: given values (checked against their types) over the spec's defaults."""
    diags = []
    config = {n: v for n, (_, v) in spec.params.items()}
    for name, value in env.items():
        if name not in spec.params:
            diags.append(error("T0720", f"unknown parameter '{name}' for spec {spec.name} (known: {', '.join(spec.params)})"))
            continue
        try:
            config[name] = coerce_value(spec.params[name][0], value, spec)
        except ValueError as exc:
            diags.append(error("T0721", f"parameter '{name}': {exc}"))
    if diags:
        raise RegcheckError(diags)
    return config
