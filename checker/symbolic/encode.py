"""The one converter from the spec AST to Z3 terms (like pySMT's converter: nothing else builds them).

Every Z3 term regcheck uses is built here, from the same checked AST that `checker.model.semantics`
compiles to closures, and a Hypothesis property (tests/test_encode.py) checks on random states and
calls that both give the same outcome sets, broken obligations and post-states.

Values (the Python-level shape of an encoded value; each leaf is a Z3 term):
  bool                  Bool term
  int, u32, u64, addr, i64, flags
                        Int term (exact, unbounded: `ptr + size` may pass 2**64, nothing wraps);
                        the declared width is a range constraint on inputs and state, not a sort
  enum                  Int term: the member's index in its declaration
  version               `Ver`: K Int components of the canonical version (no trailing zero: 5.10.0 is
                        5.10, as in the concrete semantics), padded with -1 (K = longest version
                        literal of the spec, or of a concrete configuration's version, + 1). -1 is
                        below every real component, so lexicographic order on the padded tuples is
                        the semantics' order (5.10 < 5.10.1 < 5.11); a longer value (only from a
                        concrete state or input) is represented by one that compares the same with
                        every literal of the spec
  range                 `Rng(base, end)`, half-open; an empty range overlaps nothing
  table entry           `Entry(table, key, slot)`
Bitwise operators work on exact integers with Python's infinite two's complement: with a constant
operand C they are linear (bit i of x is `(x div 2**i) mod 2`, exact for every integer x since the
divisor is positive; x & ~D = x - (x & D); x | y = x + y - (x & y)); with two symbolic operands both
must have a non-negative bounded type and are decomposed bit by bit. `%` is Python's floor modulo
(SMT `mod` is Euclidean: equal for a positive divisor, adjusted for a negative one; a zero divisor,
an error in the concrete semantics, is left to the solver; `defined` says when it is one).

Tables have two representations behind one interface:
  `ArrayTable`  Z3 arrays key -> present and key -> field; `forall/exists v in T` become Z3
                quantifiers. Unbounded: the prover's induction obligations use it.
  `SlotTable`   a finite list of slots (present, key, fields) with pairwise distinct live keys;
                quantifiers unroll over the slots. Quantifier- and array-free: bounded model
                checking, counterexample search and concrete states (tests) use it.

Definedness (docs/prover.md). `T[k]` with k absent, `x % 0`, `aligned(x, 0)` and a negative or too
wide `**` raise in the concrete semantics. In a clause or an invariant they denote an unspecified value
here (the replay stops there with E0310). In an effect the concrete semantics undoes the whole effect,
and so does the encoding: the effect applies only when `defined` holds for every expression it
evaluates, under the path conditions of its `if`s, as for a field update of an absent key. A
quantifier is defined where its body is on every entry, in both semantics (docs/language.md).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, assert_never

import z3

from ..language import syntax as S
from ..language.analysis import may_fail
from ..language.checked import ANY, FLAGS_BOUNDS, INT_BOUNDS, CheckedSpec, Type, normalise_version
from ..language.diagnostics import RegcheckError
from ..model.codegen import MAX_POWER_BITS
from .tables import ArrayTable, SlotTable, SymState
from .terms import Entry, Rng, TableName, Types, Ver, equal, int_value, is_const, numeral, unsupported


# ---------------------------------------------------------------- the outcome conditions of one call


@dataclass(frozen=True, slots=True)
class CallConditions:
    """When each clause of one call holds, as Z3 formulas over one pre-state, inputs and outputs.

    Mirrors `checker.model.semantics.Semantics.allowed`: `errors` hold their *effective* condition (a
    `fails` clause shadowed by an earlier rule of the declared order does not count).
    """

    call: str
    usage: tuple  # (rule, cond: the usage rule is kept)
    requires: tuple  # (rule, undefined, cond: the obligation is kept)
    fails: tuple  # (rule, codes, cond)
    errors: tuple  # (rule, codes, effective cond)
    env_errors: tuple  # (rule, codes, cond)
    unspecified: tuple  # (rule, cond)
    ensures: tuple  # (rule, cond over inputs and outputs)

    @property
    def kept(self):
        return z3.And([c for _, c in self.usage] + [c for _, _, c in self.requires])

    @property
    def any_error(self):
        return z3.Or([c for _, _, c in self.fails]) if self.fails else z3.BoolVal(False)

    @property
    def any_unspecified(self):
        return z3.Or([c for _, c in self.unspecified]) if self.unspecified else z3.BoolVal(False)

    @property
    def ensured(self):
        return z3.And([c for _, c in self.ensures])

    @property
    def success_documented(self):
        """Obligations kept, no error, the documents not silent: success is the documented outcome."""
        return z3.And(self.kept, z3.Not(self.any_error), z3.Not(self.any_unspecified))

    @property
    def success_unspecified(self):
        """Obligations kept and the documents silent: success is allowed but not documented."""
        return z3.And(self.kept, self.any_unspecified)


# ---------------------------------------------------------------- the converter


class Encoder:
    """Builds Z3 terms for one spec, with configuration parameters given as Z3 values.

    `config` maps every parameter to a Z3 value (symbolic: the prover proves for all
    configurations; concrete: tests and replays of one trace).
    """

    def __init__(self, spec: CheckedSpec, config: Mapping[str, Any]):
        self.spec = spec
        self.types = Types(spec, _longest_config_version(config))
        self.config = dict(config)
        self._fresh = itertools.count()
        self._consts = {n: self.types.const(t, v) for n, (t, v) in spec.consts.items()}

    # ---- states
    def fresh_state(self, prefix: str, slots: int | None = None) -> SymState:
        """A symbolic state: arrays (slots=None, unbounded) or `slots` slots per table."""
        vars = {n: self.types.fresh(t, f"{prefix}{n}") for n, (t, _) in self.spec.vars.items()}
        if slots is None:
            tables = {n: ArrayTable.fresh(info, self.types, prefix) for n, info in self.spec.tables.items()}
        else:
            tables = {n: SlotTable.fresh(info, self.types, prefix, slots) for n, info in self.spec.tables.items()}
        return SymState(vars, tables)

    def initial_state(self, bounded: bool) -> SymState:
        vars = {n: self.types.const(t, v) for n, (t, v) in self.spec.vars.items()}
        if bounded:
            tables = {n: SlotTable(info, self.types, ()) for n, info in self.spec.tables.items()}
        else:
            tables = {n: ArrayTable.empty(info, self.types) for n, info in self.spec.tables.items()}
        return SymState(vars, tables)

    def concrete_state(self, state, bounded: bool = True) -> SymState:
        """A `checker.model.state.State` with constant leaves: slots (bounded) or arrays (quantified)."""
        kind = SlotTable if bounded else ArrayTable
        vars = {n: self.types.const(t, state.vars[n]) for n, (t, _) in self.spec.vars.items()}
        tables = {n: kind.of_rows(info, self.types, state.tables[n].rows) for n, info in self.spec.tables.items()}
        return SymState(vars, tables)

    def well_typed(self, st: SymState) -> list:
        out = []
        for n, (t, _) in self.spec.vars.items():
            out += self.types.bounds(t, st.vars[n])
        for t in st.tables.values():
            out += t.well_typed(self.fresh_name("wt"))
        return out

    def read_state(self, model: z3.ModelRef, st: SymState):
        """The concrete state a model gives a bounded state (live slots only)."""
        from ..model.state import State, Table as CTable

        vars = {n: self.types.read(t, model, st.vars[n]) for n, (t, _) in self.spec.vars.items()}
        tables = {}
        for n, tbl in st.tables.items():
            if not isinstance(tbl, SlotTable):
                raise TypeError("read_state needs a bounded (slot) state")
            info = self.spec.tables[n]
            ct = CTable(info.sized_by, n)
            for s in tbl.slots:
                if z3.is_true(model.eval(s.present, model_completion=True)):
                    key = self.types.read(info.key, model, s.key)
                    ct.put(key, {f: self.types.read(t, model, s.fields[f]) for f, t in info.fields})
            tables[n] = ct
        return State(vars, tables)

    # ---- inputs and outputs
    def fresh_io(self, call: str, prefix: str) -> tuple[dict, list]:
        """Fresh inputs and outputs of a call (by name) and their type constraints."""
        info = self.spec.calls[call]
        env, bounds = {}, []
        for n, t in info.params + info.outputs:
            v = self.types.fresh(t, f"{prefix}{n}")
            env[n] = v
            bounds += self.types.bounds(t, v)
        return env, bounds

    def io_const(self, call: str, values: Mapping) -> dict:
        info = self.spec.calls[call]
        return {n: self.types.const(t, values[n]) for n, t in info.params + info.outputs if n in values}

    # ---- expressions
    def t(self, e: S.Expr) -> Type:
        return self.spec.types.get(id(e), ANY)

    def fresh_name(self, base: str) -> str:
        """A name for a new solver variable, unique in this encoder."""
        return f"{base}!{next(self._fresh)}"

    def expr(self, e: S.Expr, st: SymState, env: Mapping):
        match e:
            case S.IntLit(value=v):
                return z3.IntVal(v)
            case S.BoolLit(value=v):
                return z3.BoolVal(v)
            case S.VersionLit(parts=p):
                return self.types.const(Type("version"), p)  # normalised by Types.const
            case S.Name():
                return self.name(e, st, env)
            case S.Field(obj=o, name=n):
                return self.field(o, n, st, env)
            case S.Index(table=t, key=k):
                return Entry(t, self.expr(k, st, env), None)
            case S.Unary(op=op, operand=o):
                v = self.expr(o, st, env)
                if op == "not":
                    return z3.Not(v)
                if op == "-":
                    return numeral(-int_value(v)) if is_const(v) else -v
                return numeral(~int_value(v)) if is_const(v) else -v - 1
            case S.Binary():
                try:
                    return self.binary(e, st, env)
                except RegcheckError as exc:  # (the helpers below raise P0901 without a place)
                    raise exc.located(e.span) from None
            case S.Builtin(func=fn, args=args):
                vs = [self.expr(x, st, env) for x in args]
                if fn == "range":
                    return Rng(vs[0], vs[0] + vs[1])
                if fn == "aligned":
                    return self.mod(vs[0], vs[1]) == 0
                if fn == "min":
                    return z3.If(vs[0] <= vs[1], vs[0], vs[1])
                return z3.If(vs[0] >= vs[1], vs[0], vs[1])
            case S.Quant(kind=kind, var=var, table=table, body=body):
                tbl = st.tables[table]

                def bind(entry: Entry):
                    return self.expr(body, st, {**env, var: entry})
                name = self.fresh_name(var)
                return tbl.entries_forall(name, bind) if kind == "forall" else tbl.entries_exists(name, bind)
            case S.SetLit(items=items):
                return tuple(self.expr(x, st, env) for x in items)
            case _:
                assert_never(e)

    def name(self, e: S.Name, st: SymState, env: Mapping):
        """The term of a name, by what the type checker bound it to (as `checker.model.codegen.Emitter.name`)."""
        spec, b = self.spec, self.spec.binding(e)
        n = b.name
        match b.kind:
            case "var":
                return st.vars[n]
            case "param":
                return self.config[n]
            case "const":
                return self._consts[n]
            case "def":
                return self.expr(spec.defs[n], st, env)
            case "enum":
                return z3.IntVal(spec.enums[spec.enum_of_member[n]].index(n))
            case "flag":
                return z3.IntVal(spec.flag_member[n][1])
            case "table":
                return TableName(n)
        if n not in env:
            raise unsupported(f"name '{n}' has no value here", e.span)
        return env[n]

    def field(self, o: S.Expr, n: str, st: SymState, env: Mapping):
        ot = self.t(o)
        v = self.expr(o, st, env)
        if ot.kind == "range":
            if n == "base":
                return v.base
            if n == "end":
                return v.end
            return v.end - v.base
        entry: Entry = v
        if n == "key":
            return entry.key
        tbl = entry.slot if isinstance(entry.slot, ArrayTable) else st.tables[entry.table]
        if n == "range":
            size = tbl.get(entry, self.spec.tables[entry.table].sized_by)
            return Rng(entry.key, entry.key + size)
        return tbl.get(entry, n)

    def binary(self, e: S.Binary, st: SymState, env: Mapping):
        op = e.op
        if op == "in":
            return self.membership(e, st, env)
        a, b = self.expr(e.left, st, env), self.expr(e.right, st, env)
        match op:
            case "and":
                return z3.And(a, b)
            case "or":
                return z3.Or(a, b)
            case "implies":
                return z3.Implies(a, b)
            case "==":
                return equal(a, b)
            case "!=":
                return z3.Not(equal(a, b))
            case "<" | "<=" | ">" | ">=":
                if isinstance(a, Ver):
                    return _version_cmp(op, a, b)
                return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op] if not (is_const(a) and is_const(b)) \
                    else z3.BoolVal({"<": int_value(a) < int_value(b), "<=": int_value(a) <= int_value(b), ">": int_value(a) > int_value(b), ">=": int_value(a) >= int_value(b)}[op])
            case "+" | "-" | "*":
                if is_const(a) and is_const(b):
                    x, y = int_value(a), int_value(b)
                    return numeral(x + y if op == "+" else x - y if op == "-" else x * y)
                return a + b if op == "+" else a - b if op == "-" else a * b
            case "%":
                return self.mod(a, b)
            case "**":
                return self.power(a, b, e)
            case "&":
                return self.bitand(a, self.t(e.left), b, self.t(e.right), e)
            case "|":
                return self.bitor(a, self.t(e.left), b, self.t(e.right), e)
            case "overlaps":
                return z3.And(a.base < b.end, b.base < a.end, a.base < a.end, b.base < b.end)
            case "contains":
                if self.t(e.right).kind == "range":
                    return z3.And(a.base <= b.base, b.end <= a.end)
                return z3.And(a.base <= b, b < a.end)
        raise AssertionError(op)

    def membership(self, e: S.Binary, st: SymState, env: Mapping):
        rt = self.t(e.right)
        a = self.expr(e.left, st, env)
        if rt.kind == "table":
            return st.tables[e.right.name].has(a)  # type: ignore[union-attr]
        b = self.expr(e.right, st, env)
        if rt.kind == "flags" or (rt.kind == "int" and self.t(e.left).kind == "flags"):
            return self.bitand(b, rt, a, self.t(e.left), e) == a
        if rt.kind == "range":
            return z3.And(b.base <= a, a < b.end)
        items = b if isinstance(b, tuple) and not isinstance(b, (Rng, Ver)) else (b,)
        return z3.Or([equal(a, x) for x in items]) if items else z3.BoolVal(False)

    def mod(self, a, b):
        if is_const(a) and is_const(b) and int_value(b) != 0:
            return numeral(int_value(a) % int_value(b))
        if is_const(b):
            d = int_value(b)
            if d > 0:
                return a % b
            if d < 0:
                m = a % b  # Euclidean: 0 <= m < |d|; Python's result has the divisor's sign
                return z3.If(m == 0, m, m + b)
        m = a % b
        return z3.If(b >= 0, m, z3.If(m == 0, m, m + b))

    def defined(self, e: S.Expr, st: SymState, env: Mapping):
        """When evaluating e does not raise EvalError in the concrete semantics (checker/model/codegen.py):
        every lookup finds its entry, no remainder is by zero, no power is negative or too wide. As
        there, `and` / `or` / `implies` evaluate their right side only when the left does not decide.
        A quantifier asks it of every entry: the language defines a quantifier only where its body is
        defined on every entry (docs/language.md, "Quantifiers"; `Emitter.quant` evaluates it so)."""
        if not may_fail(self.spec, e):
            return _true()
        match e:
            case S.Name():
                return self.defined(self.spec.defs[self.spec.binding(e).name], st, env)  # only a def may fail
            case S.Field(obj=o):
                return self.defined(o, st, env)
            case S.Index(table=t, key=k):
                return _all(self.defined(k, st, env), st.tables[t].has(self.expr(k, st, env)))
            case S.Unary(operand=o):
                return self.defined(o, st, env)
            case S.Binary(op=op, left=l, right=r):
                return self._binary_defined(e, op, l, r, st, env)
            case S.Builtin(func=fn, args=args):
                out = _all(*(self.defined(x, st, env) for x in args))
                if fn == "aligned":
                    out = _all(out, self.expr(args[1], st, env) != 0)
                return out
            case S.Quant(var=var, table=table, body=body):
                def bind(entry: Entry):
                    return self.defined(body, st, {**env, var: entry})
                return st.tables[table].entries_forall(self.fresh_name(var), bind)
            case S.SetLit(items=items):
                return _all(*(self.defined(x, st, env) for x in items))
        return _true()  # literals

    def _binary_defined(self, e: S.Binary, op: str, l: S.Expr, r: S.Expr, st: SymState, env: Mapping):
        dl, dr = self.defined(l, st, env), self.defined(r, st, env)
        if op in ("and", "or", "implies") and not z3.is_true(dr):
            a = self.expr(l, st, env)
            decided = {"and": z3.Not(a), "or": a, "implies": z3.Not(a)}[op]
            return _all(dl, z3.Or(decided, dr))
        out = _all(dl, dr)
        if op == "%":
            return _all(out, self.expr(r, st, env) != 0)
        if op == "**":
            return _all(out, self._power_defined(self.expr(l, st, env), self.expr(r, st, env)))
        return out

    @staticmethod
    def _power_defined(a, b):
        """As `_pow`: a negative exponent raises, and so does a result wider than MAX_POWER_BITS."""
        if not is_const(b):
            return b >= 0  # (`power` takes only a constant exponent)
        n = int_value(b)
        if n < 0:
            return z3.BoolVal(False)
        if n <= 1:
            return _true()
        bound = 2 ** (MAX_POWER_BITS // n + 1)  # (bit_length(|a|) - 1) * n <= MAX_POWER_BITS
        return z3.And(a > -bound, a < bound)

    def power(self, a, b, e):
        if is_const(a) and is_const(b) and 0 <= int_value(b) <= 4096:
            x, n = int_value(a), int_value(b)
            if n > 1 and abs(x) > 1 and (abs(x).bit_length() - 1) * n > MAX_POWER_BITS:
                # too wide: the concrete semantics cannot evaluate it (`_pow`, `_power_defined`), so it
                # denotes an unspecified value, as `x % 0` does (and nothing computes the power)
                return z3.Int(self.fresh_name("power"))
            return numeral(x ** n)
        if is_const(b) and 0 <= int_value(b) <= 8:
            out = z3.IntVal(1)
            for _ in range(int_value(b)):
                out = out * a
            return out
        raise unsupported("`**` needs a constant exponent (at most 8 with a symbolic base)", e.span)

    # bitwise operators on exact integers (Python's infinite two's complement)
    def _bit(self, x, i: int):
        return (x / (2 ** i)) % 2  # Int div/mod by a positive constant: floor semantics

    def _and_const(self, x, c: int):
        if c >= 0:
            if c & (c + 1) == 0:  # 2**n - 1: the low n bits
                return x % (c + 1)
            terms = [(2 ** i) * self._bit(x, i) for i in range(c.bit_length()) if c >> i & 1]
            return z3.Sum(terms) if len(terms) > 1 else terms[0]
        return x - self._and_const(x, ~c)  # x & ~d == x - (x & d)

    def _width(self, t: Type) -> int | None:
        if t.kind == "flags":
            return FLAGS_BOUNDS[1].bit_length()
        if t.kind == "int":
            b = INT_BOUNDS.get(t.name)
            if b and b[0] >= 0:
                return b[1].bit_length()
        return None

    def bitand(self, a, at: Type, b, bt: Type, e):
        if is_const(a) and is_const(b):
            return numeral(int_value(a) & int_value(b))
        if is_const(b):
            return self._and_const(a, int_value(b))
        if is_const(a):
            return self._and_const(b, int_value(a))
        wa, wb = self._width(at), self._width(bt)
        if wa is None or wb is None:
            raise unsupported(f"`&` of two non-constant values needs non-negative bounded types, not {at} and {bt}",
                              e.span)
        w = min(wa, wb)
        exact = z3.Sum([z3.If(z3.And(self._bit(a, i) == 1, self._bit(b, i) == 1), 2 ** i, 0) for i in range(w)])
        # Exact while both operands lie within their declared types. Only a value that an effect
        # wrote earlier in the same effect can lie beyond (the TYPES obligation then fails); there
        # the result is left unconstrained, so no verdict rests on a wrong value.
        inside = z3.And(a >= 0, a < 2 ** wa, b >= 0, b < 2 ** wb)
        return z3.If(inside, exact, z3.Int(self.fresh_name("bitand")))

    def bitor(self, a, at: Type, b, bt: Type, e):
        if is_const(a) and is_const(b):
            return numeral(int_value(a) | int_value(b))
        return a + b - self.bitand(a, at, b, bt, e)

    # ---- a call's clauses
    def conditions(self, call: str, st: SymState, env: Mapping) -> CallConditions:
        info = self.spec.calls[call]
        usage, requires, fails, may_fail, unspecified, ensures, order = [], [], [], [], [], [], ()
        for c in info.decl.clauses:
            match c:
                case S.OnlyIn():
                    usage.append((c.rule, z3.Or([self.expr(self.spec.groups[g], st, env) for g in c.groups])))
                case S.Requires():
                    requires.append((c.rule, c.undefined, self.expr(c.cond, st, env)))
                case S.Fails():
                    fails.append((c.rule, self.spec.codes_of(c.codes)[0], self.expr(c.cond, st, env)))
                case S.MayFail():
                    cond = z3.BoolVal(True) if c.cond is None else self.expr(c.cond, st, env)
                    may_fail.append((c.rule, self.spec.codes_of(c.codes)[0], cond))
                case S.Unspecified():
                    unspecified.append((c.rule, self.expr(c.cond, st, env)))
                case S.Ensures():
                    ensures.append((c.rule, self.expr(c.cond, st, env)))
                case S.Order():
                    order = c.rules
                case S.Effect() | S.NotThreadSafe():
                    pass
                case _:
                    assert_never(c)
        errors = []
        for rule, codes, cond in fails:
            if rule in order:
                earlier = [c2 for r2, _, c2 in fails if r2 in order and order.index(r2) < order.index(rule)]
                cond = z3.And(cond, z3.Not(z3.Or(earlier))) if earlier else cond
            errors.append((rule, codes, cond))
        return CallConditions(call, tuple(usage), tuple(requires), tuple(fails), tuple(errors), tuple(may_fail),
                              tuple(unspecified), tuple(ensures))

    # ---- a call's success effect
    def effect(self, call: str, st: SymState, env: Mapping) -> SymState:
        """The state after the call's success effect (the state itself when it has none)."""
        effects = self.spec.calls[call].clauses(S.Effect)
        if not effects:
            return st
        post, ok = self.stmts(effects[0].body, st, env, _true())
        if z3.is_true(ok):
            return post
        return post.ite(ok, st)  # an evaluation that raises leaves the whole effect undone

    def stmts(self, body: Iterable[S.Stmt], st: SymState, env: Mapping, ok) -> tuple[SymState, Any]:
        for s in body:
            st, ok = self.stmt(s, st, env, ok)
        return st, ok

    def stmt(self, s: S.Stmt, st: SymState, env: Mapping, ok) -> tuple[SymState, Any]:
        """The state after one statement, and `ok`: whether the effect so far evaluates without raising."""
        match s:
            case S.Assign(var=v, value=x):
                return SymState({**st.vars, v: self.expr(x, st, env)}, st.tables), _all(ok, self.defined(x, st, env))
            case S.Insert(table=t, key=k, fields=fs):
                key = self.expr(k, st, env)
                rec = {n: self.expr(x, st, env) for n, x in fs}
                ok = _all(ok, self.defined(k, st, env), *(self.defined(x, st, env) for _, x in fs))
                return SymState(st.vars, {**st.tables, t: st.tables[t].insert(key, rec)}), ok
            case S.Update(table=t, key=k, field=n, value=x):
                key = self.expr(k, st, env)
                value = self.expr(x, st, env)
                tbl = st.tables[t]
                ok = z3.And(_all(ok, self.defined(k, st, env), self.defined(x, st, env)), tbl.has(key))
                return SymState(st.vars, {**st.tables, t: tbl.update(key, n, value)}), ok
            case S.Delete(table=t, key=k):
                key = self.expr(k, st, env)
                return SymState(st.vars, {**st.tables, t: st.tables[t].delete(key)}), _all(ok, self.defined(k, st, env))
            case S.If(cond=c, then=th, orelse=el):
                cond = self.expr(c, st, env)
                ok = _all(ok, self.defined(c, st, env))
                a, ok_a = self.stmts(th, st, env, ok)
                b, ok_b = self.stmts(el, st, env, ok)
                return a.ite(cond, b), (ok_a if ok_a is ok_b else z3.If(cond, ok_a, ok_b))
            case _:
                assert_never(s)

    def effect_idle(self, call: str, st: SymState, env: Mapping):
        """When the success effect runs no statement at all (every `if` on the way takes an empty branch)."""
        effects = self.spec.calls[call].clauses(S.Effect)
        return self._idle(effects[0].body, st, env) if effects else z3.BoolVal(True)

    def _idle(self, body: Iterable[S.Stmt], st: SymState, env: Mapping):
        conds = []
        for s in body:
            if not isinstance(s, S.If):
                return z3.BoolVal(False)
            conds.append(z3.If(self.expr(s.cond, st, env), self._idle(s.then, st, env), self._idle(s.orelse, st, env)))
        return z3.And(conds) if conds else z3.BoolVal(True)

    # ---- invariants
    def invariant(self, inv: S.InvariantDecl, st: SymState):
        return self.expr(inv.expr, st, {})

    def group_active(self, group: str, st: SymState):
        return self.expr(self.spec.groups[group], st, {})


_TRUE: list = [None, None]  # (context, True in it): the last context asked for


def _true():
    """`True` in z3's current main context: a module-level constant would stay in the context of its
    import, which the generator replaces for each run (checker.symbolic.solver). One object per
    context, not a new one per use: with a new one per use an acl obligation went from 30 ms to a 5 s
    solver timeout (measured, not explained: z3's search depends on such details of the terms)."""
    ctx = z3.main_ctx()
    if _TRUE[0] is not ctx:
        _TRUE[:] = [ctx, z3.BoolVal(True, ctx)]
    return _TRUE[1]


def _all(*conds):
    """The conjunction, without the conjuncts that are literally true (most expressions cannot raise)."""
    kept = [c for c in conds if not z3.is_true(c)]
    return kept[0] if len(kept) == 1 else z3.And(kept) if kept else _true()


def _version_cmp(op: str, a: Ver, b: Ver):
    def lt(i):
        if i == len(a):
            return z3.BoolVal(False)
        return z3.Or(a[i] < b[i], z3.And(a[i] == b[i], lt(i + 1)))
    less = lt(0)
    eq = z3.And([x == y for x, y in zip(a, b)])
    return {"<": less, "<=": z3.Or(less, eq), ">": z3.Not(z3.Or(less, eq)), ">=": z3.Not(less)}[op]


# ---------------------------------------------------------------- configurations


def symbolic_config(spec: CheckedSpec, prefix: str = "cfg.") -> tuple[dict, list]:
    """Every parameter as a fresh Z3 value with its type constraints: proofs for all configurations."""
    types = Types(spec)
    config, bounds = {}, []
    for n, (t, _) in spec.params.items():
        v = types.fresh(t, f"{prefix}{n}")
        config[n] = v
        bounds += types.bounds(t, v)
    return config, bounds


def concrete_config(spec: CheckedSpec, values: Mapping[str, Any]) -> dict:
    """Resolved parameter values (`Semantics.config`) as Z3 constants; versions exactly, however long
    (every version of an `Encoder` built on this configuration gets their width)."""
    longest = max((len(normalise_version(values[n])) for n, (t, _) in spec.params.items() if t.kind == "version"),
                  default=0)
    types = Types(spec, longest)
    return {n: types.const(t, values[n]) for n, (t, _) in spec.params.items()}


def read_config(spec: CheckedSpec, model: z3.ModelRef, config: Mapping) -> dict:
    types = Types(spec, _longest_config_version(config))
    return {n: types.read(t, model, config[n]) for n, (t, _) in spec.params.items()}


def _longest_config_version(config: Mapping) -> int:
    """The most components a version of an encoded configuration can have (its width less the -1
    that ends every version): the width every other version of that encoding needs."""
    return max((len(v) - 1 for v in config.values() if isinstance(v, Ver)), default=0)
