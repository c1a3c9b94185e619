"""The checked spec and its types: what the type checker hands every later stage (types and their bounds,
rules, bindings, tables, calls, CheckedSpec)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import syntax as S
from .diagnostics import Diagnostic
from .source import Span


INT_BOUNDS = {
    "int": None,
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
    "addr": (0, 2**64 - 1),
    "i64": (-(2**63), 2**63 - 1),
}
BUILTIN_TYPES = {"bool", "version", "range", *INT_BOUNDS}
FLAGS_BOUNDS = (0, 2**32 - 1)  # a flags value is an unsigned 32-bit integer
UNBOUNDED = (-math.inf, math.inf)  # for `value_bounds(t) or UNBOUNDED`: compares with any int


def value_bounds(t: "Type") -> tuple[int, int] | None:
    """The range of an int or flags type; None for `int` (unbounded) and non-numeric types."""
    if t.kind == "int":
        return INT_BOUNDS.get(t.name)
    return FLAGS_BOUNDS if t.kind == "flags" else None


@dataclass(frozen=True, slots=True)
class Type:
    """A checked type. kind: bool | int | version | enum | flags | range | entry | table | set | any."""

    kind: str
    name: str = ""  # int width name, enum/flags/record/table name, or the element type's kind for sets

    def __str__(self) -> str:
        if self.kind in ("int", "enum", "flags") and self.name:
            return self.name
        if self.kind == "entry":
            return f"entry of {self.name}"
        if self.kind == "table":
            return f"table {self.name}"
        return self.kind

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "flags")


BOOL = Type("bool")
INT = Type("int", "int")
VERSION = Type("version")
RANGE = Type("range")
ANY = Type("any")  # the type of an expression that already failed to check: suppresses cascades


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """One rule ID with where it lives and what it cites."""

    rule: str
    kind: str  # requires | undefined | fails | may-fail | unspecified | ensures | usage | effect | invariant | pinned
    call: str | None
    cite: S.Cite | None
    span: Span
    summary: str  # a one-line rendering of the clause (printer output)
    source: S.SourceDecl | None


LOCAL_KINDS = frozenset({"input", "output", "bound"})


@dataclass(frozen=True, slots=True)
class Binding:
    """What one use of a name stands for, decided once by the type checker.

    kind: input (an argument of the call), output (an output of the call), bound (the variable of
    a quantifier or of a `pinned` declaration), var (a state variable), table, param (a
    configuration parameter), const, enum (an enum member), flag (a flag member), def. Locals
    (input, output, bound) never share a name with a declaration (E0209), so `name` alone says
    which one is meant once the kind is known."""

    kind: str
    name: str

    @property
    def local(self) -> bool:
        return self.kind in LOCAL_KINDS


@dataclass(frozen=True, slots=True)
class TableInfo:
    name: str
    key: Type
    record: str
    fields: tuple[tuple[str, Type], ...]
    sized_by: str | None

    def field_type(self, name: str) -> Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None


@dataclass(frozen=True, slots=True)
class CallInfo:
    decl: S.CallDecl
    params: tuple[tuple[str, Type], ...]
    outputs: tuple[tuple[str, Type], ...]
    # (name, value) of each input with a default (`ArgDecl.default`), which a trace line may leave out
    defaults: tuple[tuple[str, object], ...] = ()

    @property
    def name(self) -> str:
        return self.decl.name

    def clauses(self, kind: type) -> tuple:
        return tuple(c for c in self.decl.clauses if isinstance(c, kind))


@dataclass(slots=True)
class CheckedSpec:
    """A spec whose names resolve and whose types agree; the input of every later stage."""

    ast: S.SpecFile
    name: str
    title: str
    sources: dict[str, S.SourceDecl]
    params: dict[str, tuple[Type, object]]  # name -> (type, default value)
    enums: dict[str, tuple[str, ...]]
    enum_of_member: dict[str, str]
    flags: dict[str, dict[str, int]]
    flag_member: dict[str, tuple[str, int]]  # member -> (flags type, value)
    consts: dict[str, tuple[Type, object]]
    status_type: Type
    success: object
    groups: dict[str, S.Expr]
    vars: dict[str, tuple[Type, object]]
    records: dict[str, tuple[tuple[str, Type], ...]]
    tables: dict[str, TableInfo]
    defs: dict[str, S.Expr]
    def_types: dict[str, Type]
    invariants: tuple[S.InvariantDecl, ...]
    pinned: tuple[S.PinnedDecl, ...]
    calls: dict[str, CallInfo]
    rules: dict[str, RuleInfo]
    types: dict[int, Type] = field(default_factory=dict)  # id(expr node) -> type
    bindings: dict[int, Binding] = field(default_factory=dict)  # id(Name node) -> what it stands for
    code_values: dict[int, object] = field(default_factory=dict)  # id(status code expr) -> its value
    warnings: tuple[Diagnostic, ...] = ()

    def type_of(self, e: S.Expr) -> Type:
        return self.types[id(e)]

    def binding(self, e: S.Name) -> Binding:
        """What the name `e` (a node of this spec's AST) stands for; every back end asks this
        instead of looking the name up again."""
        return self.bindings[id(e)]

    def reads(self, e: S.Expr | None, defs: bool = False) -> frozenset[Binding]:
        """What e reads, by binding: every name it uses (locals included) and, as table bindings,
        the tables its quantifiers and lookups range over; with `defs`, the names the definitions it
        uses read too. The footprint analyses (replay's related events, the prover's consistency
        checks, the generator, the diagrams) ask this instead of looking names up."""
        out: set[Binding] = set()
        seen: set[str] = set()
        stack = [e]
        while stack:
            for x in S.subexpressions(stack.pop()):
                match x:
                    case S.Name():
                        b = self.binding(x)
                        out.add(b)
                        if defs and b.kind == "def" and b.name not in seen:
                            seen.add(b.name)
                            stack.append(self.defs[b.name])
                    case S.Quant(table=t) | S.Index(table=t):
                        out.add(Binding("table", t))
        return frozenset(out)

    def codes_of(self, codes: S.Codes) -> tuple[frozenset | None, frozenset]:
        """(codes, excluded) of a `fails` / `may fail` clause as values: codes None for `any`
        (any failure), excluded the statuses `any except` leaves out. Computed by the checker."""
        if isinstance(codes, S.AnyFailure):
            return None, (self._code_set(codes.excluded) if codes.excluded is not None else frozenset())
        return self._code_set(codes), frozenset()

    def _code_set(self, codes: S.Expr) -> frozenset:
        items = codes.items if isinstance(codes, S.SetLit) else (codes,)
        return frozenset(self.code_values[id(x)] for x in items)


def normalise_version(parts) -> tuple[int, ...]:
    """Trailing zero components carry no meaning: 5.10.0 is 5.10."""
    parts = tuple(parts)
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts
