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

import heapq
import os
import re
import sys
from bisect import bisect_left, insort
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, assert_never

from sortedcontainers import SortedList

from ..language import syntax as S
from ..language.diagnostics import RegcheckError, error, excerpt
from ..language.typecheck import ANY, Binding, CallInfo, CheckedSpec, Type, normalise_version, value_bounds

# ---------------------------------------------------------------- state


class _TableOps:
    """A keyed collection of records; sized tables keep an interval index for range queries.

    The index of a sized table is its sorted keys plus the largest size of any entry (a max-heap
    with lazy deletion). A query for the entries whose range overlaps or contains a given range
    then only looks at keys within one maximum size of it: O(log n + k) for k candidates, and exact
    (the candidates are a superset of the answer; the caller tests each).

    The sorted keys are a plain list while the table is small (insertion there is a memmove of at
    most SMALL pointers, several times cheaper than a SortedList's bookkeeping at a few hundred
    live entries) and a SortedList (O(log n)) once it grows past SMALL; it goes back to a list
    below SMALL // 2.

    These methods are the reference. `Table` is `PyTable` (them alone) or, when the C module
    `checker._native` is built, a subclass of its `TableCore` whose put, remove and the three
    `any_*` probes run in C for the common case and hand every other case to the `_slow_*`
    aliases below (see checker/native/_native.c).
    """

    __slots__ = ()

    SMALL = 2048

    def __init__(self, sized_by: str | None, name: str = "", small: int | None = None):
        self.name = name
        self.rows: dict[Any, dict] = {}
        # interned, as the records' field names are: looking the size up then compares pointers
        self.sized_by = sys.intern(sized_by) if sized_by else sized_by
        self.small = self.SMALL if small is None else small  # tests set 0: always a SortedList
        self.keys: list | SortedList | None = (SortedList() if self.small == 0 else []) if sized_by else None
        self._size_count: dict[int, int] = {}
        self._size_heap: list[int] = []  # negated sizes; stale entries are dropped lazily
        self._largest: int | None = None  # the largest size while known; None: ask the heap
        # Every put/remove is appended as (table, key, "put"|"remove", previous record): `apply`
        # rolls a failed effect back with it, and the replayer learns which line made each entry.
        self.journal: list | None = None

    def put(self, key, record: dict) -> None:
        rows = self.rows
        old = rows.get(key)
        journal = self.journal
        if journal is not None:
            journal.append((self.name, key, "put", old))
        field = self.sized_by
        if field is not None:
            if old is None:
                keys = self.keys
                if type(keys) is list:
                    insort(keys, key)
                    if len(keys) > self.small:
                        self.keys = SortedList(keys)
                else:
                    keys.add(key)
            else:
                self._forget_size(old[field])
            size = record[field]
            counts = self._size_count
            count = counts.get(size, 0)
            counts[size] = count + 1
            largest = self._largest
            if largest is not None and size > largest:
                self._largest = size
            if count == 0:
                heap = self._size_heap
                if len(heap) > 2 * len(counts) + 16:  # mostly stale: rebuild, so memory stays bounded
                    heap[:] = [-s for s in counts]
                    heapq.heapify(heap)
                else:
                    heapq.heappush(heap, -size)
        rows[key] = record

    def remove(self, key) -> None:
        old = self.rows.pop(key, None)
        if old is None:
            return
        journal = self.journal
        if journal is not None:
            journal.append((self.name, key, "remove", old))
        field = self.sized_by
        if field is not None:
            keys = self.keys
            if type(keys) is list:
                del keys[bisect_left(keys, key)]
            else:
                keys.remove(key)
                if len(keys) < self.small // 2:
                    self.keys = list(keys)
            self._forget_size(old[field])

    def _forget_size(self, size: int) -> None:
        count = self._size_count[size] - 1
        if count:
            self._size_count[size] = count
        else:
            del self._size_count[size]
            if size == self._largest:
                self._largest = None

    def set_field(self, key, name: str, value) -> None:
        if name == self.sized_by:  # the index must follow a size change
            record = dict(self.rows[key])
            record[name] = value
            self.put(key, record)
            return
        old = self.rows[key]
        if self.journal is not None:
            self.journal.append((self.name, key, "put", old))
        record = old.copy()
        record[name] = value
        self.rows[key] = record

    def entries(self) -> list[tuple]:
        return list(self.rows.items())

    def _window(self, lo: int, hi: int) -> list[tuple]:
        """Entries whose key lies in [lo, hi)."""
        keys, rows = self.keys, self.rows
        if type(keys) is list:
            i = bisect_left(keys, lo)
            j = bisect_left(keys, hi, i)
            return [(k, rows[k]) for k in keys[i:j]] if j > i else []
        # A SortedList: walk its sublists directly (its documented-stable `_lists`/`_maxes`
        # layout); positional indexing through the public API costs a tree lookup per element.
        maxes = keys._maxes
        pos = bisect_left(maxes, lo)
        if pos == len(maxes):
            return []
        lists = keys._lists
        sub = lists[pos]
        idx = bisect_left(sub, lo)
        stop = bisect_left(sub, hi, idx)
        if stop < len(sub):  # the usual case: the window ends inside this sublist
            return [(k, rows[k]) for k in sub[idx:stop]] if stop > idx else []
        out = [(k, rows[k]) for k in sub[idx:]]
        for sub in lists[pos + 1:]:
            stop = bisect_left(sub, hi)
            out += [(k, rows[k]) for k in sub[:stop]]
            if stop < len(sub):
                break
        return out

    def overlapping(self, base: int, end: int) -> list[tuple]:
        """Candidates for `entry.range overlaps [base, end)`."""
        bounds = self._probe_bounds(base, end, True)
        return self._window(*bounds) if bounds else []

    def containing(self, base: int, end: int) -> list[tuple]:
        """Candidates for `entry.range contains [base, end)` (an address x is [x, x + 1))."""
        bounds = self._probe_bounds(base, end, False)
        return self._window(*bounds) if bounds else []

    def _probe_bounds(self, base: int, end: int, overlap: bool) -> tuple[int, int] | None:
        """[lo, hi): where the keys of the entries that may overlap (`overlap`) or contain
        [base, end) lie; None when no entry can.

        Overlap: only non-empty ranges overlap, so an entry (k, s) qualifies only if s > 0, k < end
        and k + s > base, hence k > base - max_size. Containment: (k, s) contains [base, end) iff
        k <= base and end <= k + s, hence k >= end - max_size; the lower bound
        min(base, end) - max_size also covers inverted (negative-size) queries.
        """
        if not self.rows or (overlap and end <= base):
            return None
        largest = self.max_size()
        if overlap:
            return (base - largest + 1, end) if largest > 0 else None
        return (base if base < end else end) - largest, base + 1

    # Whole `exists` tests for the fast path: an exact hit on the key first (the usual case: the
    # range asked about is an entry's own), then the window of `overlapping` / `containing` and the
    # exact test of each key in one loop (the same truth as `overlaps` / `contains_range` /
    # `contains_addr` below on (k, k + size)). Written out in each, because they run for most events.
    def any_overlapping(self, base: int, end: int, pred: Callable | None = None) -> bool:
        rows = self.rows
        if not rows or end <= base:
            return False
        field = self.sized_by
        record = rows.get(base)
        if record is not None and record[field] > 0 and (pred is None or pred((base, record))):
            return True
        largest = self._largest
        if largest is None:
            largest = self.max_size()
        if largest <= 0:
            return False
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, base - largest + 1)
            candidates = keys[i:bisect_left(keys, end, i)]
        else:
            candidates = self._keys_between(base - largest + 1, end)
        for k in candidates:
            record = rows[k]
            size = record[field]
            if size > 0 and base < k + size and (pred is None or pred((k, record))):  # k < end: the window's bound
                return True
        return False

    def any_containing(self, base: int, end: int, pred: Callable | None = None) -> bool:
        rows = self.rows
        if not rows:
            return False
        field = self.sized_by
        record = rows.get(base)
        if record is not None and end <= base + record[field] and (pred is None or pred((base, record))):
            return True
        largest = self._largest
        if largest is None:
            largest = self.max_size()
        lo = (base if base < end else end) - largest
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, lo)
            candidates = keys[i:bisect_left(keys, base + 1, i)]
        else:
            candidates = self._keys_between(lo, base + 1)
        for k in candidates:
            record = rows[k]
            if k <= base and end <= k + record[field] and (pred is None or pred((k, record))):
                return True
        return False

    def any_containing_addr(self, x: int, pred: Callable | None = None) -> bool:
        rows = self.rows
        if not rows:
            return False
        field = self.sized_by
        record = rows.get(x)
        if record is not None and record[field] > 0 and (pred is None or pred((x, record))):
            return True
        largest = self._largest
        if largest is None:
            largest = self.max_size()
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, x - largest)
            candidates = keys[i:bisect_left(keys, x + 1, i)]
        else:
            candidates = self._keys_between(x - largest, x + 1)
        for k in candidates:
            record = rows[k]
            if k <= x < k + record[field] and (pred is None or pred((k, record))):
                return True
        return False

    def max_size(self) -> int:
        """The largest size of any entry (the table must not be empty)."""
        largest = self._largest
        if largest is None:
            heap, counts = self._size_heap, self._size_count
            while -heap[0] not in counts:
                heapq.heappop(heap)
            largest = self._largest = -heap[0]
        return largest

    def _keys_between(self, lo: int, hi: int) -> list:
        """The keys in [lo, hi)."""
        keys = self.keys
        if type(keys) is list:
            i = bisect_left(keys, lo)
            return keys[i:bisect_left(keys, hi, i)]
        return [k for k, _ in self._window(lo, hi)]

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
        t = type(self)(self.sized_by, self.name, self.small)
        t.rows = dict(self.rows)
        if self.sized_by is not None:
            t.keys = self.keys.copy()
            t._size_count = dict(self._size_count)
            t._size_heap = list(self._size_heap)
            t._largest = self._largest
        return t

    # Pickling and copy.copy/deepcopy, the same for both classes (the C base has no default for it).
    def __reduce__(self):
        return type(self), (self.sized_by, self.name, self.small), {f: getattr(self, f) for f in _FIELDS}

    def __setstate__(self, state: dict) -> None:
        for field, value in state.items():
            setattr(self, field, value)

    # What the C methods fall back to (the methods above, even where C overrides them).
    _slow_put = put
    _slow_remove = remove
    _slow_set_field = set_field
    _slow_any_overlapping = any_overlapping
    _slow_any_containing = any_containing
    _slow_any_containing_addr = any_containing_addr


_FIELDS = ("name", "rows", "sized_by", "keys", "small", "_size_count", "_size_heap", "_largest", "journal")


class PyTable(_TableOps):
    """A table in pure Python."""

    __slots__ = _FIELDS


NATIVE_INTERFACE = 2  # what checker/native/_native.c must say it implements


def _native_module():
    """The C module, unless it is not built (or an old build), or REGCHECK_PURE_PYTHON is set."""
    if os.environ.get("REGCHECK_PURE_PYTHON"):
        return None
    try:
        from .. import _native as module
    except ImportError:
        return None
    return module if getattr(module, "INTERFACE", None) == NATIVE_INTERFACE else None


NATIVE = _native_module()  # also read by checker.engines.replay

if NATIVE is not None:
    class Table(NATIVE.TableCore, _TableOps):
        """A table whose hot operations run in C (checker/native/_native.c)."""

        __slots__ = ()
else:
    Table = PyTable  # type: ignore[misc]


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
    """An allowed failure: its rule and status codes (None: any non-success status, except those in
    `excluded`)."""

    rule: str
    codes: frozenset | None
    excluded: frozenset = frozenset()

    def allows(self, status) -> bool:
        return status in self.codes if self.codes is not None else status not in self.excluded


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
        if type(value) is int:
            return f"({value!r})"
        return self.k(value)

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
            return f"{self._rows(o.table, scope)}[{self.expr(o.key, scope)}][{n!r}]"
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
            return f"({l} in {self._rows(e.right.name, scope)})"  # type: ignore[union-attr]
        r = self.expr(e.right, scope)
        if rt.kind == "flags" or (rt.kind == "int" and self.type_of(e.left).kind == "flags"):
            return f"(({r} & {l}) == {l})" if _SIMPLE.fullmatch(l) else f"_fl({l}, {r})"
        if rt.kind == "range":
            return f"_ca({r}, {l})"
        return f"({l} in {r})"

    def quant(self, q: S.Quant, scope: CodeScope) -> str:
        if scope.tables and q.kind == "exists":
            direct = self._direct_probe(q, scope)
            if direct is not None:
                return direct
        body = self.expr(q.body, scope.with_local(q.var))
        fn = f"(lambda L_{q.var}: {body})"
        table = self._table(q.table, scope)
        if q.kind == "forall":
            return f"_fa({table}.entries(), {fn})"
        probe = self._index_probe(q, scope)
        source = probe if probe else f"{table}.entries()"
        # Most probes find no candidate: test for that before building the predicate (3-4x cheaper).
        self._fresh += 1
        c = f"_c{self._fresh}"
        if scope.tables:
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
            return f"{table}.any_containing_addr({self.expr(other, scope)}{pred})"
        method = "any_overlapping" if conj.op == "overlaps" else "any_containing"
        return f"{table}.{method}({self._range_args(other, scope)}{pred})"

    def probe_parts(self, q: S.Quant) -> tuple[S.Binary, list[S.Expr]] | None:
        """For `exists v in T: v.range overlaps X and REST` (or `contains X`; X free of v; T sized),
        the range test and the other conjuncts; None when q is not of that shape, or REST may raise
        (the range test runs first in a probe, so REST must not depend on it to be evaluable)."""
        if q.kind != "exists" or self.spec.tables[q.table].sized_by is None:
            return None
        conjuncts = list(_conjuncts(q.body))
        for i, conj in enumerate(conjuncts):
            if (isinstance(conj, S.Binary) and conj.op in ("overlaps", "contains") and _is_range_of(conj.left, q.var)
                    and q.var not in S.names_in(conj.right)):
                rest = conjuncts[:i] + conjuncts[i + 1:]
                return None if any(self._may_fail(c) for c in rest) else (conj, rest)
        return None

    def _may_fail(self, e: S.Expr) -> bool:
        """Whether evaluating e can raise: a table lookup, a remainder (`%`, `aligned`) or a power,
        in e or in a definition it names."""
        for x in S.subexpressions(e):
            if (isinstance(x, S.Index) or (isinstance(x, S.Binary) and x.op in ("%", "**"))
                    or (isinstance(x, S.Builtin) and x.func == "aligned")):
                return True
            if isinstance(x, S.Name):
                b = self.spec.binding(x)
                if b.kind == "def" and self._may_fail(self.spec.defs[b.name]):
                    return True
        return False

    def _index_probe(self, q: S.Quant, scope: CodeScope) -> str | None:
        """For `exists v in T: ... v.range overlaps X ...` (X free of v), the interval index query."""
        if self.spec.tables[q.table].sized_by is None:
            return None
        table = self._table(q.table, scope)
        for conj in _conjuncts(q.body):
            if not isinstance(conj, S.Binary) or conj.op not in ("overlaps", "contains"):
                continue
            sides = [(conj.left, conj.right)] + ([(conj.right, conj.left)] if conj.op == "overlaps" else [])
            for mine, other in sides:
                if _is_range_of(mine, q.var) and q.var not in S.names_in(other):
                    x = self._range_args(other, scope)
                    if conj.op == "overlaps":
                        return f"{table}.overlapping({x})"
                    if self.type_of(other).kind == "range":
                        return f"{table}.containing({x})"
                    x = self.expr(other, scope)
                    return f"_containing_addr({table}, {x})"
        return None

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
                    return [f"{ind}_k = {self.expr(k, scope)}", f"{ind}_v = {self.expr(x, scope)}",
                            f"{ind}_o = {self._rows(t, scope)}[_k].get({n!r}, _MISSING)",
                            f"{ind}if _o != _v or type(_o) is not type(_v):",
                            f"{ind}    {self._table(t, scope)}.set_field(_k, {n!r}, _v)"]
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
_MISSING = object()
_SIMPLE = re.compile(r"L_\w+|\(-?[0-9]+\)")  # generated code that is a local or an integer literal
_NONZERO_LITERAL = re.compile(r"\(-?[1-9][0-9]*\)")


def _remainder(l: str, r: str) -> str:
    """`l % r`, through the checking helper unless r is a non-zero literal."""
    return f"({l} % {r})" if _NONZERO_LITERAL.fullmatch(r) else f"_mod({l}, {r})"


def _negate(code: str) -> str:
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
RUNTIME = {  # the helpers generated code calls, by the names it calls them
    "_ix": _ix, "_ex": _ex, "_fa": _fa, "_mod": _mod, "_pow": _pow, "_rg": _rg, "_rsize": _rsize, "_er": _er, "_fl": _fl,
    "_containing_addr": _containing_addr, "_upd": _upd, "_ov": overlaps, "_cr": contains_range,
    "_ca": contains_addr, "_exn": _exn, "_MISSING": _MISSING, "frozenset": frozenset, "min": min, "max": max,
}


def _conjuncts(e: S.Expr) -> Iterator[S.Expr]:
    if isinstance(e, S.Binary) and e.op == "and":
        yield from _conjuncts(e.left)
        yield from _conjuncts(e.right)
    else:
        yield e


def _is_range_of(e: S.Expr, var: str) -> bool:
    return isinstance(e, S.Field) and e.name == "range" and isinstance(e.obj, S.Name) and e.obj.name == var


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
            lines += em.condition(f"g_{_ident(g)}", (), cond)
        for k, inv in enumerate(spec.invariants):
            lines += em.condition(f"inv{k}", (), inv.expr)
        for k, pin in enumerate(spec.pinned):
            lines += em.condition(f"pin{k}", (pin.var,), pin.cond)
        ns = self._load("\n".join(lines), em)
        self._groups = {g: ns[f"g_{_ident(g)}"] for g in spec.groups}
        self.invariants = [(inv.rule, ns[f"inv{k}"]) for k, inv in enumerate(spec.invariants)]
        self._pinned = [(pin.rule, pin.var, pin.table, ns[f"pin{k}"]) for k, pin in enumerate(spec.pinned)]
        self.calls: dict[str, CompiledCall] = {name: plan(ns) for name, plan in plans.items()}

    def _load(self, source: str, em: Emitter) -> dict:
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
                if not isinstance(c, (S.OnlyIn, S.MayFail)):
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
                return "usage", c.rule, None, _negate(test if len(c.groups) == 1 else f"({test})")
            case S.Requires():
                return "undefined" if c.undefined else "requires", c.rule, None, _negate(em.expr(c.cond, scope))
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
        try:
            m = self.calls[call].mask(st, args)
        except EvalError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: while evaluating {call}: {exc}")]) from None
        return self.allowed_for_mask(call, m)

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

    def ensures_broken(self, st: State, call: str, args: Mapping, outputs: Mapping) -> list[str]:
        cc = self.calls[call]
        a = {**args, **outputs}
        try:
            return [rule for rule, cond in cc.ensures if not cond(st, a)]
        except EvalError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: while evaluating {call}: {exc}")]) from None
        except KeyError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: {call}: output {exc} is missing")]) from None

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
        return tuple(g for g, f in self._groups.items() if f(st, _EMPTY))

    def eval(self, e: S.Expr, st: State, scope: Mapping | None = None):
        """Evaluate one checked expression of this spec (tests, the prover's cross-check)."""
        scope = dict(scope or {})
        names = [n for n in scope if n.isidentifier()]
        em = Emitter(self.spec, self.config)
        ns = self._load("\n".join(em.condition("f", names, e)), em)
        try:
            return ns["f"](st, scope)
        except EvalError as exc:
            raise RegcheckError([error("E0310", f"spec {self.spec.name}: {exc}")]) from None


_EMPTY: Mapping = {}


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


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


def describe_outcomes(allowed: Allowed, success) -> str:
    if allowed.open:
        return "any outcome (" + ", ".join(allowed.undefined + allowed.unspecified) + ")"
    parts = []
    if allowed.success:
        parts.append(f"success ({success})")
    for e in allowed.errors + allowed.env_errors:
        if e.codes is not None:
            codes = " or ".join(str(c) for c in sorted(e.codes, key=str))
        else:
            codes = "any failure" + (" except " + ", ".join(str(c) for c in sorted(e.excluded, key=str)) if e.excluded else "")
        parts.append(f"{codes} [{e.rule}]")
    return "; ".join(parts)


# ---------------------------------------------------------------- configuration


_VERSION_PREFIX = re.compile(r"\s*([0-9]+(?:\.[0-9]+)*)")


def parse_version(value) -> tuple[int, ...] | None:
    """A version from "5.10.1", "5.10.0-136.oe2203.aarch64" (the distribution suffix is ignored)
    or a list of ints; None when it does not start with a number."""
    if isinstance(value, (list, tuple)) and value and all(type(x) is int and x >= 0 for x in value):
        return normalise_version(value)
    if not isinstance(value, str):
        return None
    m = _VERSION_PREFIX.match(value)
    if m is None:
        return None
    return normalise_version(int(p) for p in m.group(1).split("."))


def coerce_value(t: Type, value, spec: CheckedSpec):
    """A JSON value as a value of type t, or raise ValueError with a reason."""
    match t.kind:
        case "bool":
            if isinstance(value, bool):
                return value
            raise ValueError("expected true or false")
        case "int" | "flags":
            v = coerce_int(value, spec.flags.get(t.name) if t.kind == "flags" else None)
            bounds = value_bounds(t)
            if bounds and not bounds[0] <= v <= bounds[1]:
                raise ValueError(f"{v} is out of range for {'flags ' if t.kind == 'flags' else ''}{t.name}")
            return v
        case "version":
            v = parse_version(value)
            if v is None:
                raise ValueError(f"{excerpt(value)} is not a version number like 5.10.1")
            return v
        case "enum":
            if isinstance(value, str) and value in spec.enums[t.name]:
                return value
            raise ValueError(f"expected one of {', '.join(spec.enums[t.name])}")
        case _:
            raise ValueError(f"values of type {t} cannot be given")


_INT_STRING = re.compile(r"-?0[xX][0-9a-fA-F]+").fullmatch


def coerce_int(value, flag_names: Mapping[str, int] | None = None) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer, found a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        # Only the trace format's integer strings (docs/trace-format.md): "0x..." hex, optionally
        # negative, ASCII digits, nothing around it. No decimal strings, "+", spaces or other digits.
        if _INT_STRING(value):
            return int(value, 16)
        if flag_names is not None and value in flag_names:
            return flag_names[value]
        raise ValueError(f"{excerpt(value)} is not an integer (write a JSON integer or a \"0x...\" hex string)")
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
