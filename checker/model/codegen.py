"""Code generation: a clause of the checked spec to Python source, with configuration folded to constants
and index probes on sized tables, and the runtime helpers that code calls."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, assert_never


from ..language import syntax as S
from ..language.analysis import (conjuncts, counterexample_quant, key_probe, key_probes, may_fail, range_probes,
                                 spelt_containment)
from ..language.checked import ANY, Binding, CheckedSpec, Type, normalise_version
from .outcomes import EvalError
from .state import Table


# ---------------------------------------------------------------- compilation


@dataclass(frozen=True, slots=True)
class CodeScope:
    """What a piece of generated code can see; an argument of every `Emitter` method that emits.

    `locals`: the spec names that are Python locals `L_<name>` there (a call's inputs and outputs,
    a pinned variable, the variables of the quantifiers around it). `tables`: None for code that
    reads tables from the state (`T[name]`) and records witnesses; otherwise, for code that binds
    each table and its rows to locals once, outside the hot function, table name -> (local for the
    Table, local for its rows): such code evaluates without witnesses and looks entries up
    directly (a missing key raises KeyError, not EvalError)."""

    locals: frozenset[str] = frozenset()
    tables: Mapping[str, tuple[str, str]] | None = None

    def with_locals(self, names: Iterable[str]) -> "CodeScope":
        """The same scope with exactly these locals."""
        return CodeScope(frozenset(names), self.tables)

    def with_local(self, name: str) -> "CodeScope":
        """The same scope with one more local (a quantified variable inside its body)."""
        return CodeScope(self.locals | {name}, self.tables)


def bound_tables(spec: CheckedSpec) -> dict[str, tuple[str, str]]:
    """The locals `TB<k>`, `TR<k>` for each table of the spec, for `CodeScope(tables=...)`."""
    return {t: (f"TB{k}", f"TR{k}") for k, t in enumerate(spec.tables)}


class Emitter:
    """Compiles checked expressions and statements into Python source, then into functions.

    Used by the semantics, the fast path and the step-machine compiler (for the configuration's
    folding), so all three read the same code for a clause. Every name is translated by what the
    type checker bound it to (`CheckedSpec.binding`); nothing here resolves a name again.

    Why generate code: the replayer evaluates a dozen clauses per event on traces of millions of
    events, and a tree of closures costs several times more than straight-line code. The source is
    built from the type-checked AST only: spec identifiers become prefixed Python locals or dict
    keys written with repr(), and every other value (configuration, constants, sets) is passed in
    the constant table `consts` (K in the generated code). Nothing from a spec's text is pasted in
    as code.
    """

    def __init__(self, spec: CheckedSpec, config: Mapping[str, Any]):
        self.spec = spec
        self.config = config
        self.consts: list = []
        self._const_ids: dict = {}
        self._fresh = 0
        # While `with_shared_probes` emits: (the locals of the function's own scope, the scopes'
        # locals in which asks are shared, what was asked there -> how often, what is asked once ->
        # its local).
        self._sharing: tuple[frozenset, frozenset, dict, dict] | None = None

    def with_shared_probes(self, emit: Callable[[], list[str]], own: frozenset,
                           later: frozenset | None = None) -> tuple[list[str], list[str], list[str]]:
        """Code from `emit()` in which what it asks more than once in the function's own scope
        (locals `own`, not inside a quantifier's lambda) is asked once: (the code, the locals to set
        to None before it, the lines that look rows up at its start). `later`: the locals of a
        scope that `emit()` also emits code in, run after the first with no change to the tables
        in between (a step's ensures, which see its outputs too); asks there are shared as well.

        - A whole-`exists` probe is computed on first use into a local `_p<i>`.
        - A table's row at a key that is one of the own locals (`k in T`, `T[k].f`) is looked up
          once, at the start, into a local `_r<i>` (`NOROW`, an empty read-only mapping, when there
          is none: a field of it raises KeyError as the lookup would).

        Both are pure reads of tables that the code does not change, with the function's locals
        as arguments, so asking again gives the same answer. A call's clauses often ask one
        `exists`, or one row, in several clauses (a usage rule and the failure it explains, a
        promise about the entry the call reads), and a large table's row lookup is a dozen dict
        probes on page-aligned keys."""
        scopes = frozenset({own} if later is None else {own, later})
        counts: dict[tuple, int] = {}
        self._sharing = (own, scopes, counts, {})
        try:
            code = emit()
            repeated = [c for c, n in counts.items() if n > 1]
            if not repeated:  # nothing to share: the first pass's code is the answer
                return code, [], []
            shared = {c: f"_p{i}" if c[0] == "probe" else f"_r{i}" for i, c in enumerate(repeated)}
            self._sharing = (own, scopes, {}, shared)
            code = emit()
            probes = [name for c, name in shared.items() if c[0] == "probe"]
            rows = [f"{name} = {c[1]}.get({c[2]}, NOROW)" for c, name in shared.items() if c[0] == "row"]
            return code, probes, rows
        finally:
            self._sharing = None

    def _shared(self, what: tuple, scope: CodeScope) -> str | None:
        """The local that holds `what` (("probe", code) or ("row", rows, key)) while it is shared
        (`with_shared_probes`), else None; counts the ask."""
        sharing = self._sharing
        if sharing is None or scope.locals not in sharing[1]:
            return None
        _, _, counts, shared = sharing
        counts[what] = counts.get(what, 0) + 1
        return shared.get(what)

    def _probe(self, code: str, scope: CodeScope) -> str:
        """A probe's code, or the read of its shared local."""
        name = self._shared(("probe", code), scope)
        return code if name is None else f"({name} if {name} is not None else ({name} := {code}))"

    def _shared_row(self, t: str, key: S.Expr, scope: CodeScope) -> str | None:
        """The local holding the row of table t at `key`, when it is shared (only a key that is
        one of the own locals is: the rows are looked up before the code runs)."""
        sharing = self._sharing
        if sharing is None or not (isinstance(key, S.Name) and self._is_local(key) and key.name in sharing[0]):
            return None
        return self._shared(("row", self._rows(t, scope), self.expr(key, scope)), scope)

    def type_of(self, e: S.Expr) -> Type:
        """The checked type of e (ANY for a node the prover built after checking)."""
        return self.spec.types.get(id(e), ANY)

    def k(self, value) -> str:
        """A reference to a constant in the table K."""
        key = (type(value), value) if not isinstance(value, (set, frozenset, dict, list)) else id(value)
        idx = self._const_ids.get(key)
        if idx is None:
            idx = self._const_ids[key] = len(self.consts)
            self.consts.append(value)
        return f"K[{idx}]"

    @staticmethod
    def _table(t: str, scope: CodeScope) -> str:
        return scope.tables[t][0] if scope.tables else f"T[{t!r}]"

    @staticmethod
    def _rows(t: str, scope: CodeScope) -> str:
        return scope.tables[t][1] if scope.tables else f"T[{t!r}].rows"

    # ---- expressions: each returns a parenthesised Python expression
    def expr(self, e: S.Expr, scope: CodeScope) -> str:
        """Python code for e in `scope`; parts that depend on the configuration only are computed now."""
        if not isinstance(e, (S.IntLit, S.BoolLit, S.Name)) and self.is_static(e):
            value = self.fold(e)
            if value is not NOT_CONSTANT:
                return self.literal(value)
        return self._code(e, scope)

    def is_static(self, e: S.Expr) -> bool:
        """Whether e's value is fixed once the configuration is: no state, no inputs, no tables."""
        for x in S.subexpressions(e):
            if isinstance(x, (S.Index, S.Quant)):
                return False
            if isinstance(x, S.Name):
                b = self.spec.binding(x)
                if b.kind == "def":
                    if not self.is_static(self.spec.defs[b.name]):
                        return False
                elif b.kind not in ("param", "const", "enum", "flag"):
                    return False
        return True

    def fold(self, e: S.Expr):
        """The value of a static expression (`is_static`), or NOT_CONSTANT where evaluating it fails."""
        code = self._code(e, CodeScope())
        try:
            return eval(compile(code, "<regcheck constant>", "eval"), {**RUNTIME, "K": tuple(self.consts), "w": None})
        except EvalError:
            return NOT_CONSTANT  # e.g. a remainder by zero: left to fail where it is evaluated

    def literal(self, value) -> str:
        """Code for a value: booleans and ints inline, anything else through K."""
        if value is True or value is False:
            return repr(value)
        if type(value) is int and value.bit_length() <= _INLINE_BITS:
            return f"({value!r})"
        return self.k(value)  # (a wider int too: Python writes no more than 4,300 digits unasked)

    def _code(self, e: S.Expr, scope: CodeScope) -> str:
        match e:
            case S.IntLit(value=v):
                return f"({int(v)!r})"
            case S.BoolLit(value=v):
                return "True" if v else "False"
            case S.VersionLit(parts=p):
                return self.k(normalise_version(p))
            case S.Name():
                return self.name(e, scope)
            case S.Field(obj=o, name=n):
                return self.field(o, n, scope)
            case S.Index(table=t, key=k):
                if scope.tables:
                    return f"((_k := {self.expr(k, scope)}), {self._rows(t, scope)}[_k])"
                return f"_ix(w, T[{t!r}], {t!r}, {self.expr(k, scope)})"
            case S.Unary(op="not", operand=o):
                inner = self.expr(o, scope)
                return {"True": "False", "False": "True"}.get(inner, f"(not {inner})")
            case S.Unary(op="-", operand=o):
                return f"(-{self.expr(o, scope)})"
            case S.Unary(op=_, operand=o):
                return f"(~{self.expr(o, scope)})"
            case S.Binary():
                return self.binary(e, scope)
            case S.Builtin(func=fn, args=args):
                xs = [self.expr(x, scope) for x in args]
                if fn == "range":
                    return f"_rg({xs[0]}, {xs[1]})"
                if fn == "aligned":
                    return f"({_remainder(xs[0], xs[1])} == 0)"
                return f"{'min' if fn == 'min' else 'max'}({xs[0]}, {xs[1]})"
            case S.Quant():
                return self.quant(e, scope)
            case S.SetLit(items=items):
                values = [self.constant(x) for x in items]
                if all(v is not NOT_CONSTANT for v in values):
                    return self.k(frozenset(values))
                return "frozenset((" + ", ".join(self.expr(x, scope) for x in items) + ",))"
            case _:
                assert_never(e)

    def constant(self, e: S.Expr):
        """The value of e if the configuration fixes it (a literal, a name bound to a value, a
        static expression such as `-1` or `A | B`), else NOT_CONSTANT."""
        match e:
            case S.IntLit(value=v) | S.BoolLit(value=v):
                return v
            case S.VersionLit(parts=p):
                return normalise_version(p)
            case S.Name():
                b = self.spec.binding(e)
                if b.local:
                    return NOT_CONSTANT
                kind, value = name_meaning(self.spec, self.config, b)
                if kind == "value":
                    return value
        return self.fold(e) if self.is_static(e) else NOT_CONSTANT

    def may_raise(self, e: S.Expr) -> bool:
        """Whether evaluating e can raise EvalError with this configuration: `analysis.may_fail`, told
        which integers the configuration fixes (so `x % PAGE` and `2 ** 64` cannot). Where this says
        no, the strict reading of a quantifier (`_strict_quant`) and the short-circuit one give the
        same answer."""
        return may_fail(self.spec, e, self.fixed_int)

    def fixed_int(self, e: S.Expr) -> int | None:
        """The integer this configuration fixes e to, else None."""
        value = self.constant(e)
        return value if type(value) is int else None

    def name(self, e: S.Name, scope: CodeScope) -> str:
        b = self.spec.binding(e)
        if b.local:
            return f"L_{b.name}"
        kind, x = name_meaning(self.spec, self.config, b)
        if kind == "var":
            return f"V[{b.name!r}]"
        if kind == "table":
            raise AssertionError(f"table '{b.name}' used as a value")  # `in T` is compiled by `membership`
        return self.expr(x, scope) if kind == "def" else self.literal(x)

    def field(self, o: S.Expr, n: str, scope: CodeScope) -> str:
        ot, x = self.type_of(o), self.expr(o, scope)
        if ot.kind == "range":
            return {"base": f"{x}[0]", "end": f"{x}[1]"}.get(n, f"_rsize({x})")
        if n == "key":
            return f"{x}[0]"
        if scope.tables and isinstance(o, S.Index) and n != "range":
            row = self._shared_row(o.table, o.key, scope)
            return f"{row}[{n!r}]" if row else f"{self._rows(o.table, scope)}[{self.expr(o.key, scope)}][{n!r}]"
        if n == "range":
            return f"_er({x}, {self.spec.tables[ot.name].sized_by!r})"
        return f"{x}[1][{n!r}]"

    def binary(self, e: S.Binary, scope: CodeScope) -> str:
        op = e.op
        if op == "in":
            return self.membership(e, scope)
        l, r = self.expr(e.left, scope), self.expr(e.right, scope)
        if op in ("and", "or", "implies"):
            return _boolean(op, l, r)
        if op == "**":
            return f"_pow({l}, {r})"
        if op in ("==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "&", "|"):
            return f"({l} {op} {r})"
        if op == "%":
            return _remainder(l, r)
        inline = self._inline_range_test(e, scope)
        if inline is not None:
            return inline
        if op == "overlaps":
            return f"_ov({l}, {r})"
        if op == "contains":
            return f"_cr({l}, {r})" if self.type_of(e.right).kind == "range" else f"_ca({l}, {r})"
        raise AssertionError(op)

    def _range_parts(self, e: S.Expr, scope: CodeScope) -> tuple[str, str, str] | None:
        """(base, end, size) as cheap code, for `v.range` of a quantified entry and for
        `range(b, s)` with a simple base and size; None otherwise. Why: these tests run for every
        candidate of every index probe, and building tuples to compare them costs more than the test."""
        if isinstance(e, S.Field) and e.name == "range" and isinstance(e.obj, S.Name) and self._is_local(e.obj):
            v = f"L_{e.obj.name}"
            size = f"{v}[1][{self.spec.tables[self.type_of(e.obj).name].sized_by!r}]"
            return f"{v}[0]", f"({v}[0] + {size})", size
        if isinstance(e, S.Builtin) and e.func == "range":
            base, size = self.expr(e.args[0], scope), self.expr(e.args[1], scope)
            if _SIMPLE.fullmatch(base) and _SIMPLE.fullmatch(size):
                return base, f"({base} + {size})", size
        return None

    def _is_local(self, e: S.Name) -> bool:
        return self.spec.binding(e).local

    def _inline_range_test(self, e: S.Binary, scope: CodeScope) -> str | None:
        """`overlaps` / `contains` on ranges as comparisons (same truth as the helpers below)."""
        x = self._range_parts(e.left, scope)
        if x is None:
            return None
        if e.op == "contains" and self.type_of(e.right).kind != "range":
            a = self.expr(e.right, scope)
            return f"({x[0]} <= {a} < {x[1]})" if _SIMPLE.fullmatch(a) else None
        y = self._range_parts(e.right, scope)
        if y is None:
            return None
        if e.op == "overlaps":  # both non-empty, and each starts before the other ends
            return f"({x[0]} < {y[1]} and {y[0]} < {x[1]} and {x[2]} > 0 and {y[2]} > 0)"
        return f"({x[0]} <= {y[0]} and {y[1]} <= {x[1]})"

    def membership(self, e: S.Binary, scope: CodeScope) -> str:
        rt = self.type_of(e.right)
        l = self.expr(e.left, scope)
        if rt.kind == "table":
            row = self._shared_row(e.right.name, e.left, scope)  # type: ignore[union-attr]
            return f"({row} is not NOROW)" if row else f"({l} in {self._rows(e.right.name, scope)})"  # type: ignore[union-attr]
        r = self.expr(e.right, scope)
        if rt.kind == "flags" or (rt.kind == "int" and self.type_of(e.left).kind == "flags"):
            return f"(({r} & {l}) == {l})" if _SIMPLE.fullmatch(l) else f"_fl({l}, {r})"
        if rt.kind == "range":
            return f"_ca({r}, {l})"
        return f"({l} in {r})"

    def quant(self, q: S.Quant, scope: CodeScope) -> str:
        if self.may_raise(q.body):
            return self._strict_quant(q, scope)
        if q.kind == "exists":
            # Witnesses explain the general path's findings; a step's own scope records none.
            return self._exists(q, scope, witness=not scope.tables)
        counter = counterexample_quant(q)
        if counter is not None and (self.probe_parts(counter) is not None or self._keyed(counter)):
            # A forall asked by its counterexample's probe, an index window (or the entry at a
            # key) rather than every entry; it records no witness: a forall explains nothing by an entry.
            return f"(not {self._exists(counter, scope, witness=False)})"
        body = self.expr(q.body, scope.with_local(q.var))
        return f"_fa({self._table(q.table, scope)}.entries(), (lambda L_{q.var}: {body}))"

    def _strict_quant(self, q: S.Quant, scope: CodeScope) -> str:
        """A quantifier whose body may fail to evaluate. Its value is defined only where the body is
        defined on every entry (docs/language.md, "Quantifiers"; the Z3 encoder's `defined` reads it
        so): no entry is left out because an earlier one decided, except those an index probe rules
        out where the body stops, defined, at the probed test (`_strict_probe`)."""
        asked = q if q.kind == "exists" else counterexample_quant(q)
        assert asked is not None
        table, witness = self._table(q.table, scope), q.kind == "exists" and not scope.tables
        probe = self._strict_probe(asked)
        if probe is None:
            body = self.expr(q.body, scope.with_local(q.var))
            if q.kind == "forall":
                return f"_fas({table}.entries(), (lambda L_{q.var}: {body}))"
            return f"_exs({'w' if witness else 'None'}, {q.table!r}, {table}.entries(), (lambda L_{q.var}: {body}))"
        if len(list(conjuncts(asked.body))) == 1:  # the probed test alone: no entry can fail but by X
            code = self._exists(asked, scope, witness)
        else:
            body = self.expr(asked.body, scope.with_local(q.var))
            source = self._candidates(asked, probe, scope)
            code = f"_exs({'w' if witness else 'None'}, {q.table!r}, {source}, (lambda L_{q.var}: {body}))"
        code = code if q.kind == "exists" else f"(not {code})"
        if self.may_raise(probe[2]):  # X, read first on every entry: on none in an empty table
            code = f"({code} if {self._rows(q.table, scope)} else {q.kind == 'forall'})"
        return code

    def _strict_probe(self, q: S.Quant) -> tuple[int, S.Binary | None, S.Expr] | None:
        """For `exists v in T: B` whose body may fail, an index probe that leaves out only entries
        on which B evaluates without failing, as (its conjunct's position in B, the range test or
        None for `v.key == X`, X): every conjunct before it cannot fail, and X (the same on every
        entry) may fail only when it is read first, so that an entry of T reads it. The key test
        first, then the range tests, as `_index_probe`; None: B is evaluated on every entry."""
        parts = list(conjuncts(q.body))
        probes: list[tuple[int, S.Binary | None, S.Expr]] = [(i, None, x) for i, x in key_probes(q)]
        if self.spec.tables[q.table].sized_by is not None:
            probes += [(i, conj, x) for i, conj, x, _ in range_probes(q)]
        for i, conj, other in probes:
            if not any(self.may_raise(c) for c in parts[:i]) and (i == 0 or not self.may_raise(other)):
                return i, conj, other
        return None

    def _candidates(self, q: S.Quant, probe: tuple[int, S.Binary | None, S.Expr], scope: CodeScope) -> str:
        """Code for the entries of q's table that `probe` (from `_strict_probe`) cannot rule out."""
        table, (_, conj, other) = self._table(q.table, scope), probe
        if conj is None:
            return f"_at({table}, {self.expr(other, scope)})"
        if conj.op == "overlaps":
            return f"{table}.overlapping({self._range_args(other, scope)})"
        if self.type_of(other).kind == "range":
            return f"{table}.containing({self._range_args(other, scope)})"
        return f"_containing_addr({table}, {self.expr(other, scope)})"

    def _exists(self, q: S.Quant, scope: CodeScope, witness: bool) -> str:
        if scope.tables:
            direct = self._direct_probe(q, scope)
            if direct is not None:
                return direct
        body = self.expr(q.body, scope.with_local(q.var))
        fn = f"(lambda L_{q.var}: {body})"
        probe = self._index_probe(q, scope)
        source = probe if probe else f"{self._table(q.table, scope)}.entries()"
        # Most probes find no candidate: test for that before building the predicate (3-4x cheaper).
        self._fresh += 1
        c = f"_c{self._fresh}"
        if not witness:
            return f"(_exn({c}, {fn}) if ({c} := {source}) else False)"
        return f"(_ex(w, {q.table!r}, {c}, {fn}) if ({c} := {source}) else False)"

    def _direct_probe(self, q: S.Quant, scope: CodeScope) -> str | None:
        """`exists v in T: v.range overlaps X and REST` (or `contains X`; X free of v; REST optional)
        as one Table method that walks the index window and tests each key itself, calling a
        predicate for REST only on the keys that pass: no candidate list."""
        parts = self.probe_parts(q)
        if parts is None:
            return None
        conj, rest = parts
        pred = ""
        if rest:
            inner = scope.with_local(q.var)
            body = " and ".join(self.expr(c, inner) for c in rest)
            pred = f", (lambda L_{q.var}: {body})"
        table, other = self._table(q.table, scope), conj.right
        if self.type_of(other).kind != "range":
            return self._probe(f"{table}.any_containing_addr({self.expr(other, scope)}{pred})", scope)
        method = "any_overlapping" if conj.op == "overlaps" else "any_containing"
        return self._probe(f"{table}.{method}({self._range_args(other, scope)}{pred})", scope)

    def probe_parts(self, q: S.Quant) -> tuple[S.Binary, list[S.Expr]] | None:
        """For `exists v in T: v.range overlaps X and REST` (or `X overlaps v.range`, given as the
        former, or `v.range contains X`; X free of v; T sized), the range test and the other
        conjuncts; None when q is not of that shape, or REST may raise (the range test runs first
        in a probe, so REST must not depend on it to be evaluable)."""
        if q.kind != "exists" or self.spec.tables[q.table].sized_by is None:
            return None
        for i, conj, _, swapped in range_probes(q):
            if swapped:  # `X overlaps v.range`, the same test as `v.range overlaps X`
                conj = S.Binary("overlaps", conj.right, conj.left, conj.span)
            parts = list(conjuncts(q.body))
            rest = parts[:i] + parts[i + 1:]
            return None if any(may_fail(self.spec, c) for c in rest) else (conj, rest)
        return None

    def _keyed(self, q: S.Quant) -> bool:
        """Whether `_index_probe` finds q's candidates by a key test or a written-out range test,
        none of q's conjuncts failing to evaluate (as `probe_parts` asks of a probe's others)."""
        size_field = self.spec.tables[q.table].sized_by
        found = key_probe(q) is not None or (size_field is not None and spelt_containment(q, size_field) is not None)
        return found and not any(may_fail(self.spec, c) for c in conjuncts(q.body))

    def _index_probe(self, q: S.Quant, scope: CodeScope) -> str | None:
        """For `exists v in T: ...`, the entries worth testing the body on: the entry at key X for
        `v.key == X` (`key_probe`), else the interval index's for `v.range overlaps X` or
        `contains X`, or for that test written out (`spelt_containment`); None: every entry."""
        table = self._table(q.table, scope)
        key = key_probe(q)
        if key is not None:
            return f"_at({table}, {self.expr(key, scope)})"
        size_field = self.spec.tables[q.table].sized_by
        if size_field is None:
            return None
        for _, conj, other, _ in range_probes(q):
            x = self._range_args(other, scope)
            if conj.op == "overlaps":
                return f"{table}.overlapping({x})"
            if self.type_of(other).kind == "range":
                return f"{table}.containing({x})"
            x = self.expr(other, scope)
            return f"_containing_addr({table}, {x})"
        spelt = spelt_containment(q, size_field)
        return None if spelt is None else f"_containing_addr({table}, {self.expr(spelt, scope)})"

    def _range_args(self, e: S.Expr, scope: CodeScope) -> str:
        """`base, end` of a range expression as two arguments; `range(b, s)` with a simple base
        (a local or a literal) without building the tuple."""
        if isinstance(e, S.Builtin) and e.func == "range":
            base, size = self.expr(e.args[0], scope), self.expr(e.args[1], scope)
            if _SIMPLE.fullmatch(base):
                return f"{base}, {base} + {size}"
        if scope.tables and isinstance(e, S.Field) and e.name == "range" and isinstance(e.obj, S.Index):
            t = e.obj.table
            rows, size = self._rows(t, scope), self.spec.tables[t].sized_by
            return f"(_k := {self.expr(e.obj.key, scope)}), _k + {rows}[_k][{size!r}]"
        return f"*{self.expr(e, scope)}"

    # ---- statements
    def stmts(self, body: Iterable[S.Stmt], indent: str, scope: CodeScope) -> list[str]:
        """Python statements for an effect body, indented by `indent`."""
        out: list[str] = []
        for s in body:
            out.extend(self.stmt(s, indent, scope))
        return out or [f"{indent}pass"]

    def stmt(self, s: S.Stmt, ind: str, scope: CodeScope) -> list[str]:
        match s:
            case S.Assign(var=v, value=x):
                return [f"{ind}_v = {self.expr(x, scope)}", f"{ind}J.append((None, {v!r}, 'set', V[{v!r}]))",
                        f"{ind}V[{v!r}] = _v"]
            case S.Insert(table=t, key=k, fields=fs):
                rec = ", ".join(f"{n!r}: {self.expr(x, scope)}" for n, x in fs)
                return [f"{ind}{self._table(t, scope)}.put({self.expr(k, scope)}, {{{rec}}})"]
            case S.Update(table=t, key=k, field=n, value=x):
                if scope.tables:  # `_upd` inline: a missing entry raises KeyError here
                    # The key's own local, `_uk`: the value's code may look entries up through `_k`
                    # (`T[k].f`, `T[k].range`), which held the key, so that the update went to the
                    # entry the value read last (found by the agreement batch on generated specs).
                    return [f"{ind}_uk = {self.expr(k, scope)}", f"{ind}_v = {self.expr(x, scope)}",
                            f"{ind}_o = {self._rows(t, scope)}[_uk].get({n!r}, _MISSING)",
                            f"{ind}if _o != _v or type(_o) is not type(_v):",
                            f"{ind}    {self._table(t, scope)}.set_field(_uk, {n!r}, _v)"]
                return [f"{ind}_upd({self._table(t, scope)}, {t!r}, {self.expr(k, scope)}, {n!r}, {self.expr(x, scope)})"]
            case S.Delete(table=t, key=k):
                return [f"{ind}{self._table(t, scope)}.remove({self.expr(k, scope)})"]
            case S.If(cond=c, then=th, orelse=el):
                lines = [f"{ind}if {self.expr(c, scope)}:", *self.stmts(th, ind + "    ", scope)]
                if el:
                    lines += [f"{ind}else:", *self.stmts(el, ind + "    ", scope)]
                return lines
            case _:
                assert_never(s)

    # ---- whole functions
    @staticmethod
    def function(name: str, names: Iterable[str], body: list[str]) -> list[str]:
        """`def name(st, a, w=None)` binding the given locals from `a` before the body."""
        binds = [f"    L_{n} = a[{n!r}]" for n in names]
        return [f"def {name}(st, a, w=None):", "    V = st.vars", "    T = st.tables", "    J = st.journal",
                *binds, *body, ""]

    def condition(self, name: str, names: Iterable[str], e: S.Expr) -> list[str]:
        """`def name(st, a, w=None)` returning e, with `names` bound from `a`."""
        names = list(names)
        return self.function(name, names, [f"    return {self.expr(e, CodeScope(frozenset(names)))}"])


def name_meaning(spec: CheckedSpec, config: Mapping[str, Any], b: Binding) -> tuple[str, Any]:
    """What a bound name that is not a local stands for: ("var", n); ("def", its expression);
    ("table", n); ("value", v) for a parameter (its configured value), a constant, an enum member
    (its name) or a flag member (its bit). The binding was decided by the type checker."""
    match b.kind:
        case "var" | "table":
            return b.kind, b.name
        case "param":
            return "value", config[b.name]
        case "const":
            return "value", spec.consts[b.name][1]
        case "def":
            return "def", spec.defs[b.name]
        case "enum":
            return "value", b.name
        case "flag":
            return "value", spec.flag_member[b.name][1]
    raise AssertionError(f"{b.kind} '{b.name}' is a local, not a declared name")


NOT_CONSTANT = object()  # what `Emitter.fold` and `Emitter.constant` return for a value not fixed yet
_INLINE_BITS = 8192  # the widest int written into generated code (2,467 digits); wider ones go through K
_MISSING = object()
_SIMPLE = re.compile(r"L_\w+|\(-?[0-9]+\)")  # generated code that is a local or an integer literal
_NONZERO_LITERAL = re.compile(r"\(-?[1-9][0-9]*\)")


def _remainder(l: str, r: str) -> str:
    """`l % r`, through the checking helper unless r is a non-zero literal."""
    return f"({l} % {r})" if _NONZERO_LITERAL.fullmatch(r) else f"_mod({l}, {r})"


def negated(code: str) -> str:
    return {"True": "False", "False": "True"}.get(code, f"not {code}")


def _boolean(op: str, l: str, r: str) -> str:
    """`and` / `or` / `implies` with a constant left side (or a neutral right side) simplified away."""
    if op == "implies":
        l = {"True": "False", "False": "True"}.get(l, f"(not {l})")
        op = "or"
    absorbing, neutral = ("False", "True") if op == "and" else ("True", "False")
    if l == absorbing:
        return absorbing
    if l == neutral:
        return r
    if r == neutral:
        return l
    return f"({l} {op} {r})"


# When an evaluation is given a witness list `w`, `exists` and `T[k]` append the entries (table, key)
# they looked at: the replayer's way to name the earlier events a finding relates to.
# The helpers the generated code calls (kept small: they are the hot path).
def _ix(w, table: "Table", name: str, key):
    if w is not None:
        w.append((name, key))
    try:
        return (key, table.rows[key])
    except KeyError:
        raise EvalError(f"{name}[{key:#x}] has no entry" if isinstance(key, int) else f"{name}[{key}] has no entry") from None


def _ex(w, name: str, entries, pred) -> bool:
    for entry in entries:
        if pred(entry):
            if w is not None:
                w.append((name, entry[0]))
            return True
    return False


def _exn(entries, pred) -> bool:
    """`_ex` without witnesses."""
    for entry in entries:
        if pred(entry):
            return True
    return False


def _fa(entries, pred) -> bool:
    for entry in entries:
        if not pred(entry):
            return False
    return True


def _exs(w, name: str, entries, pred) -> bool:
    """`_ex` for a body that may fail: the body is evaluated on every entry, not only up to the first
    that holds (which is the witness), so that a failure on any entry is raised."""
    found = None
    for entry in entries:
        if pred(entry) and found is None:
            found = entry
    if found is None:
        return False
    if w is not None:
        w.append((name, found[0]))
    return True


def _fas(entries, pred) -> bool:
    """`_fa` for a body that may fail: evaluated on every entry (see `_exs`)."""
    holds = True
    for entry in entries:
        if not pred(entry):
            holds = False
    return holds


def _mod(x: int, d: int) -> int:
    if d == 0:
        raise EvalError("remainder by zero")
    return x % d


MAX_POWER_BITS = 4096  # `**` at run time: a result wider than this is a spec error (E0310), not a hang


def _pow(x: int, n: int) -> int:
    if n < 0:
        raise EvalError("negative exponent (values are exact integers)")
    if n > 1 and abs(x) > 1 and (abs(x).bit_length() - 1) * n > MAX_POWER_BITS:
        raise EvalError(f"{x} ** {n} is wider than {MAX_POWER_BITS} bits (the largest power regcheck evaluates)")
    return x ** n


def _rg(base: int, size: int) -> tuple:
    return (base, base + size)


def _rsize(r: tuple) -> int:
    return r[1] - r[0]


def _er(entry: tuple, sized_by: str) -> tuple:
    k = entry[0]
    return (k, k + entry[1][sized_by])


def _fl(bit: int, flags: int) -> bool:
    return (flags & bit) == bit


def _containing_addr(table: "Table", x: int):
    return table.containing(x, x + 1)


def _at(table: "Table", key) -> list:
    """The entry at `key`, as a list of entries (none or one)."""
    row = table.rows.get(key)
    return [] if row is None else [(key, row)]


def _upd(table: "Table", name: str, key, field: str, value) -> None:
    record = table.rows.get(key)
    if record is None:
        raise EvalError(f"{name} has no entry for key {key}")
    old = record.get(field, _MISSING)
    if old == value and type(old) is type(value):  # no change: nothing to journal
        return
    table.set_field(key, field, value)


def overlaps(x: tuple, y: tuple) -> bool:
    return x[0] < y[1] and y[0] < x[1] and x[0] < x[1] and y[0] < y[1]


def contains_range(outer: tuple, inner: tuple) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def contains_addr(r: tuple, x: int) -> bool:
    return r[0] <= x < r[1]


_ov, _cr, _ca = overlaps, contains_range, contains_addr
# A shared row's local where the table has no row at the key (`with_shared_probes`): read-only,
# and a field of it raises KeyError, as the lookup of the missing row would.
NOROW = MappingProxyType({})
RUNTIME = {  # the helpers generated code calls, by the names it calls them
    "_ix": _ix, "_ex": _ex, "_fa": _fa, "_mod": _mod, "_pow": _pow, "_rg": _rg, "_rsize": _rsize, "_er": _er, "_fl": _fl,
    "_containing_addr": _containing_addr, "_at": _at, "_upd": _upd, "_ov": overlaps, "_cr": contains_range,
    "_ca": contains_addr, "_exn": _exn, "_exs": _exs, "_fas": _fas,
    "_MISSING": _MISSING, "NOROW": NOROW, "frozenset": frozenset, "min": min, "max": max,
}


