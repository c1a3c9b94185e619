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
                        literal of the spec + 1). -1 is below every real component, so lexicographic
                        order on the padded tuples is the semantics' order (5.10 < 5.10.1 < 5.11);
                        a longer value is represented by one that compares the same with every
                        literal of the spec
  range                 `Rng(base, end)`, half-open; an empty range overlaps nothing
  table entry           `Entry(table, key, slot)`
Bitwise operators work on exact integers with Python's infinite two's complement: with a constant
operand C they are linear (bit i of x is `(x div 2**i) mod 2`, exact for every integer x since the
divisor is positive; x & ~D = x - (x & D); x | y = x + y - (x & y)); with two symbolic operands both
must have a non-negative bounded type and are decomposed bit by bit. `%` is Python's floor modulo
(SMT `mod` is Euclidean: equal for a positive divisor, adjusted for a negative one; a zero divisor,
an error in the concrete semantics, is left to the solver).

Tables have two representations behind one interface:
  `ArrayTable`  Z3 arrays key -> present and key -> field; `forall/exists v in T` become Z3
                quantifiers. Unbounded: the prover's induction obligations use it.
  `SlotTable`   a finite list of slots (present, key, fields) with pairwise distinct live keys;
                quantifiers unroll over the slots. Quantifier- and array-free: bounded model
                checking, counterexample search and concrete states (tests) use it.

Not encoded (documented in docs/prover.md): definedness. `T[k]` with k absent and `x % 0` raise in
the concrete semantics; here they denote an unspecified value. A field update of an absent key is
encoded exactly (the concrete semantics leaves the whole effect undone, so does the encoding).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, NamedTuple, assert_never

import z3

from ..language import syntax as S
from ..language.diagnostics import RegcheckError, error
from ..language.typecheck import ANY, FLAGS_BOUNDS, INT_BOUNDS, CheckedSpec, Type, normalise_version
from ..language.analysis import nodes


class Rng(NamedTuple):
    base: Any
    end: Any


class Ver(tuple):
    """A version: K Int components, padded with -1."""


class Entry(NamedTuple):
    table: str
    key: Any
    slot: Any  # where to read its fields: a SlotTable slot, an ArrayTable, or None (the state's table)


class TableName(NamedTuple):
    name: str


def unsupported(msg: str, span=None) -> RegcheckError:
    return RegcheckError([error("P0901", f"cannot encode for the solver: {msg}", span)])


# ---------------------------------------------------------------- sorts, fresh values, bounds


class Types:
    """Per-spec knowledge of how each type is represented."""

    def __init__(self, spec: CheckedSpec):
        self.spec = spec
        hit = _VERSION_WIDTH.get(id(spec))
        if hit is None or hit[0] is not spec:  # the AST walk is costly: once per spec
            hit = _VERSION_WIDTH[id(spec)] = (spec, _longest_version(spec) + 1)
        self.version_width = hit[1]

    def width(self, t: Type) -> int:
        """Number of Z3 leaves a value of type t has."""
        if t.kind == "version":
            return self.version_width
        if t.kind == "range":
            return 2
        return 1

    def leaf_sort(self, t: Type):
        return z3.BoolSort() if t.kind == "bool" else z3.IntSort()

    def fresh(self, t: Type, name: str):
        if t.kind == "bool":
            return z3.Bool(name)
        if t.kind in ("int", "flags", "enum"):
            return z3.Int(name)
        if t.kind == "version":
            return Ver(z3.Int(f"{name}.{i}") for i in range(self.version_width))
        if t.kind == "range":
            return Rng(z3.Int(f"{name}.base"), z3.Int(f"{name}.end"))
        raise unsupported(f"values of type {t} cannot be state, inputs or outputs")

    def bounds(self, t: Type, v) -> list:
        """Constraints a well-typed value satisfies."""
        if t.kind == "int":
            b = INT_BOUNDS.get(t.name)
            return [v >= b[0], v <= b[1]] if b else []
        if t.kind == "flags":
            return [v >= FLAGS_BOUNDS[0], v <= FLAGS_BOUNDS[1]]
        if t.kind == "enum":
            return [v >= 0, v < len(self.spec.enums[t.name])]
        if t.kind == "version":
            out = [v[0] >= 0]
            for i in range(1, len(v)):
                out += [v[i] >= -1, z3.Implies(v[i - 1] == -1, v[i] == -1)]
                # canonical: no trailing zero component (5.10.0 is 5.10)
                out.append(z3.Implies(v[i] == 0, v[i + 1] >= 0) if i + 1 < len(v) else v[i] != 0)
            return out
        return []

    def const(self, t: Type, value):
        """A concrete (semantics) value as a Z3 value."""
        match t.kind:
            case "bool":
                return z3.BoolVal(bool(value))
            case "int" | "flags":
                return z3.IntVal(int(value))
            case "enum":
                return z3.IntVal(self.spec.enums[t.name].index(value))
            case "version":
                parts = normalise_version(value)
                if len(parts) > self.version_width:
                    # compares with every literal of the spec (at most K-1 components) like value
                    parts = parts[: self.version_width - 1] + (1,)
                return Ver(z3.IntVal(p) for p in parts + (-1,) * (self.version_width - len(parts)))
            case "range":
                return Rng(z3.IntVal(value[0]), z3.IntVal(value[1]))
        raise unsupported(f"a constant of type {t}")

    def read(self, t: Type, model: z3.ModelRef, v):
        """The concrete (semantics) value of v in model."""
        match t.kind:
            case "bool":
                return z3.is_true(model.eval(v, model_completion=True))
            case "int" | "flags":
                return model.eval(v, model_completion=True).as_long()
            case "enum":
                members = self.spec.enums[t.name]
                i = model.eval(v, model_completion=True).as_long()
                return members[i] if 0 <= i < len(members) else f"<{i}>"
            case "version":
                parts = [model.eval(p, model_completion=True).as_long() for p in v]
                return tuple(p for p in itertools.takewhile(lambda p: p >= 0, parts))
            case "range":
                return (model.eval(v.base, model_completion=True).as_long(),
                        model.eval(v.end, model_completion=True).as_long())
        raise unsupported(f"reading a value of type {t}")

    def default(self, t: Type):
        if t.kind == "bool":
            return z3.BoolVal(False)
        if t.kind == "version":
            return Ver([z3.IntVal(0)] + [z3.IntVal(-1)] * (self.version_width - 1))
        if t.kind == "range":
            return Rng(z3.IntVal(0), z3.IntVal(0))
        return z3.IntVal(0)


_VERSION_WIDTH: dict = {}


def _longest_version(spec: CheckedSpec) -> int:
    longest = 1
    for node in nodes(spec.ast):
        if isinstance(node, S.VersionLit):
            longest = max(longest, len(node.parts))
    for t, v in list(spec.params.values()) + list(spec.vars.values()) + list(spec.consts.values()):
        if t.kind == "version":
            longest = max(longest, len(v))
    return longest


# ---------------------------------------------------------------- value helpers


def leaves(v) -> list:
    if isinstance(v, (Ver, Rng)):
        return list(v)
    return [v]


def ite(c, a, b):
    if isinstance(a, Rng):
        return Rng(z3.If(c, a.base, b.base), z3.If(c, a.end, b.end))
    if isinstance(a, Ver):
        return Ver(z3.If(c, x, y) for x, y in zip(a, b))
    return z3.If(c, a, b)


def equal(a, b):
    if isinstance(a, (Rng, Ver)):
        return z3.And([x == y for x, y in zip(a, b)])
    if isinstance(a, tuple) or isinstance(b, tuple):
        raise unsupported("comparing sets with `==` (use `in`)")
    return a == b


def _rebuild(like, parts):
    if isinstance(like, Rng):
        return Rng(*parts)
    if isinstance(like, Ver):
        return Ver(parts)
    return parts[0]


def _is_const(v) -> bool:
    return z3.is_int_value(v)


def _c(v) -> int:
    return v.as_long()


# ---------------------------------------------------------------- tables


class ArrayTable:
    """A table as Z3 arrays: key -> present, key -> each field (unbounded).

    A table an effect derived from another (`root`) remembers the keys it touched: a quantifier
    over it splits into the untouched entries, read from the root's arrays, and the touched keys.
    Both parts are exact (untouched keys have the root's entries), and the first part is phrased
    over the same arrays as the invariants assumed of the pre-state, which keeps the solver's
    quantifier instantiation simple.
    """

    __slots__ = ("info", "types", "present", "fields", "root", "touched")

    def __init__(self, info, types: Types, present, fields: dict, root: "ArrayTable | None" = None,
                 touched: tuple = ()):
        self.info = info
        self.types = types
        self.present = present
        self.fields = fields  # name -> array, or tuple of arrays for range/version fields
        self.root = root  # None: this table is a root (fresh or empty)
        self.touched = touched

    @classmethod
    def fresh(cls, info, types: Types, prefix: str) -> "ArrayTable":
        ks = types.leaf_sort(info.key)
        if types.width(info.key) != 1:
            raise unsupported(f"table {info.name}: keys of type {info.key}")
        fields = {}
        for n, t in info.fields:
            arrs = [z3.Array(f"{prefix}{info.name}.{n}.{i}", ks, types.leaf_sort(t)) for i in range(types.width(t))]
            fields[n] = arrs[0] if types.width(t) == 1 else tuple(arrs)
        return cls(info, types, z3.Array(f"{prefix}{info.name}.present", ks, z3.BoolSort()), fields)

    @classmethod
    def empty(cls, info, types: Types) -> "ArrayTable":
        ks = types.leaf_sort(info.key)
        fields = {}
        for n, t in info.fields:
            d = types.default(t)
            arrs = [z3.K(ks, x) for x in leaves(d)]
            fields[n] = arrs[0] if len(arrs) == 1 else tuple(arrs)
        return cls(info, types, z3.K(ks, z3.BoolVal(False)), fields)

    @classmethod
    def of_rows(cls, info, types: Types, rows: Mapping) -> "ArrayTable":
        """Concrete rows as arrays (Store chains over constant arrays); quantifiers stay quantifiers."""
        t = cls.empty(info, types)
        for key, rec in rows.items():
            t = t.insert(types.const(info.key, key), {f: types.const(ft, rec[f]) for f, ft in info.fields})
        return cls(info, types, t.present, t.fields)

    def _get(self, arr, key, t: Type):
        if isinstance(arr, tuple):
            return _rebuild(self.types.default(t), [z3.Select(a, key) for a in arr])
        return z3.Select(arr, key)

    def has(self, key):
        return z3.Select(self.present, key)

    def get(self, entry: Entry, name: str):
        src = entry.slot if isinstance(entry.slot, ArrayTable) else self
        return src._get(src.fields[name], entry.key, self.info.field_type(name))

    def _split(self, fresh_name: str, body):
        """(bound key, its guard over the root, its entry) and the touched keys' parts."""
        base = self.root or self
        k = z3.Const(fresh_name, self.types.leaf_sort(self.info.key))
        guard = [base.has(k)] + [k != t for t in self.touched]
        return k, z3.And(guard), body(Entry(self.info.name, k, base)), \
            [(self.has(t), body(Entry(self.info.name, t, self))) for t in self.touched]

    def entries_forall(self, fresh_name: str, body: Callable[[Entry], Any]):
        k, guard, b, touched = self._split(fresh_name, body)
        return z3.And([z3.ForAll([k], z3.Implies(guard, b))] + [z3.Implies(h, x) for h, x in touched])

    def entries_exists(self, fresh_name: str, body: Callable[[Entry], Any]):
        k, guard, b, touched = self._split(fresh_name, body)
        return z3.Or([z3.Exists([k], z3.And(guard, b))] + [z3.And(h, x) for h, x in touched])

    def _derived(self, present, fields: dict, key) -> "ArrayTable":
        touched = self.touched if any(_same_term(key, t) for t in self.touched) else self.touched + (key,)
        return ArrayTable(self.info, self.types, present, fields, self.root or self, touched)

    def insert(self, key, record: dict) -> "ArrayTable":
        fields = {}
        for n, arr in self.fields.items():
            v = record[n]
            if isinstance(arr, tuple):
                fields[n] = tuple(z3.Store(a, key, x) for a, x in zip(arr, leaves(v)))
            else:
                fields[n] = z3.Store(arr, key, v)
        return self._derived(z3.Store(self.present, key, True), fields, key)

    def delete(self, key) -> "ArrayTable":
        return self._derived(z3.Store(self.present, key, False), dict(self.fields), key)

    def update(self, key, name: str, value) -> "ArrayTable":
        fields = dict(self.fields)
        arr = fields[name]
        if isinstance(arr, tuple):
            fields[name] = tuple(z3.Store(a, key, x) for a, x in zip(arr, leaves(value)))
        else:
            fields[name] = z3.Store(arr, key, value)
        return self._derived(self.present, fields, key)

    def ite(self, c, other: "ArrayTable") -> "ArrayTable":
        if other is self:
            return self
        fields = {}
        for n, arr in self.fields.items():
            o = other.fields[n]
            fields[n] = tuple(z3.If(c, a, b) for a, b in zip(arr, o)) if isinstance(arr, tuple) else z3.If(c, arr, o)
        present = z3.If(c, self.present, other.present)
        mine, theirs = self.root or self, other.root or other
        if mine is not theirs:  # unrelated tables: no split
            return ArrayTable(self.info, self.types, present, fields)
        touched = self.touched + tuple(t for t in other.touched if not any(_same_term(t, u) for u in self.touched))
        return ArrayTable(self.info, self.types, present, fields, mine, touched)

    def well_typed(self, fresh_name: str) -> list:
        """Every present entry's key and fields lie in their types' ranges."""
        def body(e: Entry):
            out = self.types.bounds(self.info.key, e.key)
            for n, t in self.info.fields:
                out += self.types.bounds(t, self.get(e, n))
            return z3.And(out) if out else z3.BoolVal(True)
        return [self.entries_forall(fresh_name, body)]

    def same_as(self, other: "ArrayTable", fresh_name: str):
        """Same entries with the same records (fields of absent keys do not matter)."""
        def body(e: Entry):
            plain = Entry(e.table, e.key, None)
            return z3.And([equal(self.get(plain, n), other.get(plain, n)) for n, _ in self.info.fields]
                          or [z3.BoolVal(True)])
        return z3.And(self.present == other.present, self.entries_forall(fresh_name, body))


def _same_term(a, b) -> bool:
    return z3.is_expr(a) and z3.is_expr(b) and a.eq(b)


@dataclass(frozen=True, slots=True)
class Slot:
    present: Any
    key: Any
    fields: dict


class SlotTable:
    """A table as a finite list of slots; live slots have pairwise distinct keys (bounded)."""

    __slots__ = ("info", "types", "slots")

    def __init__(self, info, types: Types, slots: tuple):
        self.info = info
        self.types = types
        self.slots = slots

    @classmethod
    def fresh(cls, info, types: Types, prefix: str, n: int) -> "SlotTable":
        slots = []
        for i in range(n):
            fields = {f: types.fresh(t, f"{prefix}{info.name}[{i}].{f}") for f, t in info.fields}
            slots.append(Slot(z3.Bool(f"{prefix}{info.name}[{i}].present"),
                              types.fresh(info.key, f"{prefix}{info.name}[{i}].key"), fields))
        return cls(info, types, tuple(slots))

    @classmethod
    def of_rows(cls, info, types: Types, rows: Mapping) -> "SlotTable":
        slots = []
        for key, rec in rows.items():
            fields = {f: types.const(t, rec[f]) for f, t in info.fields}
            slots.append(Slot(z3.BoolVal(True), types.const(info.key, key), fields))
        return cls(info, types, tuple(slots))

    def _match(self, s: Slot, key):
        return z3.And(s.present, s.key == key)

    def has(self, key):
        return z3.Or([self._match(s, key) for s in self.slots]) if self.slots else z3.BoolVal(False)

    def get(self, entry: Entry, name: str):
        if entry.slot is not None:
            return entry.slot.fields[name]
        out = self.types.default(self.info.field_type(name))
        for s in self.slots:
            out = ite(self._match(s, entry.key), s.fields[name], out)
        return out

    def entries_forall(self, fresh_name: str, body):
        return z3.And([z3.Implies(s.present, body(Entry(self.info.name, s.key, s))) for s in self.slots])

    def entries_exists(self, fresh_name: str, body):
        return z3.Or([z3.And(s.present, body(Entry(self.info.name, s.key, s))) for s in self.slots])

    def insert(self, key, record: dict) -> "SlotTable":
        kept = tuple(Slot(z3.And(s.present, s.key != key), s.key, s.fields) for s in self.slots)
        return SlotTable(self.info, self.types, kept + (Slot(z3.BoolVal(True), key, dict(record)),))

    def delete(self, key) -> "SlotTable":
        return SlotTable(self.info, self.types,
                         tuple(Slot(z3.And(s.present, s.key != key), s.key, s.fields) for s in self.slots))

    def update(self, key, name: str, value) -> "SlotTable":
        out = []
        for s in self.slots:
            fields = dict(s.fields)
            fields[name] = ite(self._match(s, key), value, s.fields[name])
            out.append(Slot(s.present, s.key, fields))
        return SlotTable(self.info, self.types, tuple(out))

    def _dead(self) -> Slot:
        return Slot(z3.BoolVal(False), self.types.default(self.info.key),
                    {f: self.types.default(t) for f, t in self.info.fields})

    def ite(self, c, other: "SlotTable") -> "SlotTable":
        """Slot-wise merge; both sides grew from one table, so slot i means the same in both."""
        if other is self:
            return self
        n = max(len(self.slots), len(other.slots))
        a = self.slots + (self._dead(),) * (n - len(self.slots))
        b = other.slots + (self._dead(),) * (n - len(other.slots))
        out = []
        for x, y in zip(a, b):
            if x is y:
                out.append(x)
                continue
            out.append(Slot(z3.If(c, x.present, y.present), ite(c, x.key, y.key),
                            {f: ite(c, x.fields[f], y.fields[f]) for f in x.fields}))
        return SlotTable(self.info, self.types, tuple(out))

    def well_typed(self, fresh_name: str) -> list:
        out = []
        for i, s in enumerate(self.slots):
            conds = self.types.bounds(self.info.key, s.key)
            for f, t in self.info.fields:
                conds += self.types.bounds(t, s.fields[f])
            if conds:
                out.append(z3.Implies(s.present, z3.And(conds)))
            for t in self.slots[:i]:
                out.append(z3.Implies(z3.And(s.present, t.present), s.key != t.key))
        return out

    def same_as(self, other: "SlotTable", fresh_name: str):
        def same_entry(s: Slot, tbl: "SlotTable"):
            rec = [equal(s.fields[f], tbl.get(Entry(self.info.name, s.key, None), f)) for f, _ in self.info.fields]
            return z3.Implies(s.present, z3.And([tbl.has(s.key)] + rec))
        return z3.And([same_entry(s, other) for s in self.slots] + [same_entry(s, self) for s in other.slots])


Table = ArrayTable | SlotTable


@dataclass(frozen=True, slots=True)
class SymState:
    """A symbolic state: state scalars and tables."""

    vars: dict
    tables: dict

    def ite(self, c, other: "SymState") -> "SymState":
        if other is self:
            return self
        vars = {n: (v if v is other.vars[n] else ite(c, v, other.vars[n])) for n, v in self.vars.items()}
        tables = {n: t.ite(c, other.tables[n]) for n, t in self.tables.items()}
        return SymState(vars, tables)


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
        self.types = Types(spec)
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
                    return z3.IntVal(-_c(v)) if _is_const(v) else -v
                return z3.IntVal(~_c(v)) if _is_const(v) else -v - 1
            case S.Binary():
                return self.binary(e, st, env)
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
                return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op] if not (_is_const(a) and _is_const(b)) \
                    else z3.BoolVal({"<": _c(a) < _c(b), "<=": _c(a) <= _c(b), ">": _c(a) > _c(b), ">=": _c(a) >= _c(b)}[op])
            case "+" | "-" | "*":
                if _is_const(a) and _is_const(b):
                    x, y = _c(a), _c(b)
                    return z3.IntVal(x + y if op == "+" else x - y if op == "-" else x * y)
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
        if _is_const(a) and _is_const(b) and _c(b) != 0:
            return z3.IntVal(_c(a) % _c(b))
        if _is_const(b):
            d = _c(b)
            if d > 0:
                return a % b
            if d < 0:
                m = a % b  # Euclidean: 0 <= m < |d|; Python's result has the divisor's sign
                return z3.If(m == 0, m, m + b)
        m = a % b
        return z3.If(b >= 0, m, z3.If(m == 0, m, m + b))

    def power(self, a, b, e):
        if _is_const(a) and _is_const(b) and 0 <= _c(b) <= 4096:
            return z3.IntVal(_c(a) ** _c(b))
        if _is_const(b) and 0 <= _c(b) <= 8:
            out = z3.IntVal(1)
            for _ in range(_c(b)):
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
        if _is_const(a) and _is_const(b):
            return z3.IntVal(_c(a) & _c(b))
        if _is_const(b):
            return self._and_const(a, _c(b))
        if _is_const(a):
            return self._and_const(b, _c(a))
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
        if _is_const(a) and _is_const(b):
            return z3.IntVal(_c(a) | _c(b))
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
        post, ok = self.stmts(effects[0].body, st, env, z3.BoolVal(True))
        if z3.is_true(ok):
            return post
        return post.ite(ok, st)  # a field update of an absent key leaves the whole effect undone

    def stmts(self, body: Iterable[S.Stmt], st: SymState, env: Mapping, ok) -> tuple[SymState, Any]:
        for s in body:
            st, ok = self.stmt(s, st, env, ok)
        return st, ok

    def stmt(self, s: S.Stmt, st: SymState, env: Mapping, ok) -> tuple[SymState, Any]:
        match s:
            case S.Assign(var=v, value=x):
                return SymState({**st.vars, v: self.expr(x, st, env)}, st.tables), ok
            case S.Insert(table=t, key=k, fields=fs):
                key = self.expr(k, st, env)
                rec = {n: self.expr(x, st, env) for n, x in fs}
                return SymState(st.vars, {**st.tables, t: st.tables[t].insert(key, rec)}), ok
            case S.Update(table=t, key=k, field=n, value=x):
                key = self.expr(k, st, env)
                value = self.expr(x, st, env)
                tbl = st.tables[t]
                return SymState(st.vars, {**st.tables, t: tbl.update(key, n, value)}), z3.And(ok, tbl.has(key))
            case S.Delete(table=t, key=k):
                key = self.expr(k, st, env)
                return SymState(st.vars, {**st.tables, t: st.tables[t].delete(key)}), ok
            case S.If(cond=c, then=th, orelse=el):
                cond = self.expr(c, st, env)
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


def _version_cmp(op: str, a: Ver, b: Ver):
    def lt(i):
        if i == len(a):
            return z3.BoolVal(False)
        return z3.Or(a[i] < b[i], z3.And(a[i] == b[i], lt(i + 1)))
    less = lt(0)
    eq = z3.And([x == y for x, y in zip(a, b)])
    return {"<": less, "<=": z3.Or(less, eq), ">": z3.Not(z3.Or(less, eq)), ">=": z3.Not(less)}[op]


# ---------------------------------------------------------------- formulas for the layers above

# The prover and the bounded model checker combine the formulas built here; they do it through
# these helpers so that z3 stays behind this module and `checker.symbolic.solver`.
TRUE = z3.BoolVal(True)
FALSE = z3.BoolVal(False)


def _flat(fs) -> list:
    return list(fs[0]) if len(fs) == 1 and isinstance(fs[0], (list, tuple)) else list(fs)


def conj(*fs):
    """And of formulas (given as arguments or one list); True when there are none."""
    fs = _flat(fs)
    return z3.And(fs) if fs else TRUE


def disj(*fs):
    """Or of formulas (given as arguments or one list); False when there are none."""
    fs = _flat(fs)
    return z3.Or(fs) if fs else FALSE


def neg(f):
    return z3.Not(f)


def implies(a, b):
    return z3.Implies(a, b)


def fresh_int(name: str):
    return z3.Int(name)


def holds_in(model, f) -> bool:
    """Whether formula f is true in a solver model (unconstrained symbols take default values)."""
    return z3.is_true(model.eval(f, model_completion=True))


def int_in(model, term) -> int:
    return model.eval(term, model_completion=True).as_long()


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
    """Resolved parameter values (`Semantics.config`) as Z3 constants."""
    types = Types(spec)
    return {n: types.const(t, values[n]) for n, (t, _) in spec.params.items()}


def read_config(spec: CheckedSpec, model: z3.ModelRef, config: Mapping) -> dict:
    types = Types(spec)
    return {n: types.read(t, model, config[n]) for n, (t, _) in spec.params.items()}


def reads_and_writes(spec: CheckedSpec) -> tuple[Callable[[S.Expr], frozenset], Callable[[str], frozenset]]:
    """Syntactic footprints: what an expression reads and what a call's effect writes.

    Items: ("var", name), ("present", table), ("field", table, name). An invariant whose reads miss
    an effect's writes is preserved by it (the frame argument the prover's fast path uses).
    """

    def reads(e, seen_defs=frozenset()) -> frozenset:
        out: set = set()
        stack = [e]
        while stack:
            x = stack.pop()
            match x:
                case S.Name():
                    b = spec.binding(x)
                    if b.kind == "var":
                        out.add(("var", b.name))
                    elif b.kind == "def" and b.name not in seen_defs:
                        out |= reads(spec.defs[b.name], seen_defs | {b.name})
                    elif b.kind == "table":
                        out.add(("present", b.name))
                case S.Field(obj=o, name=n):
                    ot = spec.types.get(id(o))
                    if ot is not None and ot.kind == "entry":
                        if n == "range":
                            out.add(("field", ot.name, spec.tables[ot.name].sized_by))
                        elif n != "key":
                            out.add(("field", ot.name, n))
                    stack.append(o)
                case S.Index(table=t, key=k):
                    out.add(("present", t))  # a lookup's value depends on which keys exist
                    stack.append(k)
                case S.Quant(table=t, body=b):
                    out.add(("present", t))
                    stack.append(b)
                case S.Unary(operand=o):
                    stack.append(o)
                case S.Binary(left=l, right=r):
                    stack += [l, r]
                case S.Builtin(args=args) | S.SetLit(items=args):
                    stack += list(args)
                case _:
                    pass
        return frozenset(out)

    def writes(call: str) -> frozenset:
        out: set = set()
        effects = spec.calls[call].clauses(S.Effect)
        stack = list(effects[0].body) if effects else []
        while stack:
            s = stack.pop()
            match s:
                case S.Assign(var=v):
                    out.add(("var", v))
                case S.Insert(table=t):
                    out.add(("present", t))
                    out |= {("field", t, n) for n, _ in spec.tables[t].fields}
                case S.Update(table=t, field=n):
                    out.add(("field", t, n))
                case S.Delete(table=t):
                    out.add(("present", t))
                case S.If(then=th, orelse=el):
                    stack += list(th) + list(el)
        return frozenset(out)

    return reads, writes
