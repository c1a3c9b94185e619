"""The symbolic state: tables as Z3 arrays (ArrayTable, for induction) or as finite slots (SlotTable, for
bounded model checking and concrete states), behind one interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import z3

from ..language.checked import Type
from .terms import Entry, Types, equal, ite, leaves, rebuild, unsupported


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
            return rebuild(self.types.default(t), [z3.Select(a, key) for a in arr])
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
