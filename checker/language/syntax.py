"""The spec language's abstract syntax: frozen dataclasses, children as tuples, spans excluded from equality.

Every stage after the parser works on these nodes only; no lark object survives the parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union, assert_never

from .source import NO_SPAN, Span


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# ---------------------------------------------------------------- types

@dataclass(frozen=True, slots=True)
class TypeRef:
    """A type as written: a builtin (bool, int, u32, u64, i64, addr, version, range) or a declared name."""

    name: str
    span: Span = _span()


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True, slots=True)
class IntLit:
    value: int
    text: str = ""  # as written (hex kept hex when printed back); excluded from equality
    span: Span = _span()

    def __eq__(self, other: object) -> bool:  # text is presentation only
        return isinstance(other, IntLit) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("IntLit", self.value))


@dataclass(frozen=True, slots=True)
class BoolLit:
    value: bool
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class VersionLit:
    """A version number such as 5.10.1, compared component-wise (5.10 < 5.10.1 < 5.11)."""

    parts: tuple[int, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Field:
    obj: "Expr"
    name: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Index:
    """`table[key]`: the record stored under key (the key must be present)."""

    table: str
    key: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "not", "-", "~"
    operand: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Binary:
    # or and implies == != < <= > >= + - * % ** & | in overlaps contains
    op: str
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Builtin:
    """A builtin function application: range(base, size), aligned(x, n)."""

    func: str
    args: tuple["Expr", ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Quant:
    """`exists r in table: body` / `forall r in table: body`; r ranges over the table's entries."""

    kind: str  # "exists" | "forall"
    var: str
    table: str
    body: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class SetLit:
    items: tuple["Expr", ...]
    span: Span = _span()


Expr = Union[IntLit, BoolLit, VersionLit, Name, Field, Index, Unary, Binary, Builtin, Quant, SetLit]


# ---------------------------------------------------------------- statements (success effects)

@dataclass(frozen=True, slots=True)
class Assign:
    """`var = value` on a state scalar."""

    var: str
    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Insert:
    """`table[key] = { field: value, ... }` (inserts or replaces)."""

    table: str
    key: Expr
    fields: tuple[tuple[str, Expr], ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Update:
    """`table[key].field = value`."""

    table: str
    key: Expr
    field: str
    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Delete:
    table: str
    key: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()
    span: Span = _span()


Stmt = Union[Assign, Insert, Update, Delete, If]


# ---------------------------------------------------------------- clauses of a call

@dataclass(frozen=True, slots=True)
class Cite:
    """The document clause a rule encodes: a declared source and the clause in our own words."""

    source: str
    clause: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class AnyFailure:
    """The outcome `any`: some failure the documents do not name (any non-success status).

    `any except CODES` leaves out statuses whose documented meaning is a specific condition
    (an "already registered" code is not an environmental failure)."""

    excluded: "Expr | None" = None
    span: Span = _span()


Codes = Union[AnyFailure, Expr]  # an Expr of the status type, or a SetLit of them


@dataclass(frozen=True, slots=True)
class Requires:
    """A caller obligation. Broken: the caller's bug. `undefined`: the outcome is then open too."""

    rule: str
    cond: Expr
    undefined: bool
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Fails:
    """A documented error outcome: `fails RULE: CODES when COND`."""

    rule: str
    codes: Codes
    cond: Expr
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class MayFail:
    """An environmental failure allowed at any time (or whenever cond holds)."""

    rule: str
    codes: Codes
    cond: Expr | None
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Unspecified:
    """A case the documents leave open: any outcome is allowed; replay reports it as informational."""

    rule: str
    cond: Expr
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Ensures:
    """A promise about the outputs of a successful call (checked against the recorded outputs)."""

    rule: str
    cond: Expr
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class NotThreadSafe:
    """Usage rule: two calls of this function from different threads must not overlap in time."""

    rule: str
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class OnlyIn:
    """Usage rule: the call is allowed only while one of the named API groups is active."""

    rule: str
    groups: tuple[str, ...]
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Effect:
    """The success effect: how the state changes when the call succeeds."""

    rule: str
    body: tuple[Stmt, ...]
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Order:
    """Precedence among error clauses where the documents give one: earlier rules win."""

    rules: tuple[str, ...]
    span: Span = _span()


Clause = Union[Requires, Fails, MayFail, Unspecified, Ensures, NotThreadSafe, OnlyIn, Effect, Order]


# ---------------------------------------------------------------- declarations

@dataclass(frozen=True, slots=True)
class SpecHeader:
    name: str
    title: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class SourceDecl:
    """A document the spec encodes: `source NAME "location" "title"`."""

    name: str
    location: str
    title: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ParamDecl:
    """A configuration parameter, fixed for a whole trace, with its default."""

    name: str
    type: TypeRef
    default: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class EnumDecl:
    name: str
    members: tuple[str, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class FlagsDecl:
    """Bit flags: named members with their numeric values; values of the type are integers."""

    name: str
    base: TypeRef
    members: tuple[tuple[str, IntLit], ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ConstDecl:
    name: str
    type: TypeRef
    value: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class StatusDecl:
    """The type of a call's status (`ret`) and the value that means success."""

    type: TypeRef
    success: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class GroupDecl:
    """An API group (phase) and the state in which it is active."""

    name: str
    cond: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class VarDecl:
    """A state scalar with its initial value."""

    name: str
    type: TypeRef
    init: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class RecordDecl:
    name: str
    fields: tuple[tuple[str, TypeRef], ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class TableDecl:
    """A keyed collection of records; `sized by F` makes `entry.range` = range(entry.key, entry.F)."""

    name: str
    key: TypeRef
    record: str
    sized_by: str | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class DefDecl:
    """A named, parameterless predicate or value, expanded where it is used."""

    name: str
    body: Expr
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class InvariantDecl:
    rule: str
    expr: Expr
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class PinnedDecl:
    """Which entries' ranges are page-locked: `pinned RULE: v in T where cond` (the executor checks
    the kernel's page locks against this prediction)."""

    rule: str
    var: str
    table: str
    cond: Expr
    cite: Cite | None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ArgDecl:
    name: str
    type: TypeRef
    span: Span = _span()
    # The value an input takes when a trace line leaves it out (`prot: Prot = PROT_READ | PROT_WRITE`),
    # so that an argument added to an event keeps every older trace's meaning; None: required.
    default: Expr | None = None


@dataclass(frozen=True, slots=True)
class CallDecl:
    """An API function (`call`) or an environment event (`event`) with typed inputs and outputs."""

    kind: str  # "call" | "event"
    name: str
    params: tuple[ArgDecl, ...]
    outputs: tuple[ArgDecl, ...]
    clauses: tuple[Clause, ...]
    span: Span = _span()


Decl = Union[SpecHeader, SourceDecl, ParamDecl, EnumDecl, FlagsDecl, ConstDecl, StatusDecl, GroupDecl,
             VarDecl, RecordDecl, TableDecl, DefDecl, InvariantDecl, PinnedDecl, CallDecl]


@dataclass(frozen=True, slots=True)
class SpecFile:
    path: str
    decls: tuple[Decl, ...]
    span: Span = _span()


# ---------------------------------------------------------------- walking the tree


def subexpressions(e: Expr | None) -> Iterator[Expr]:
    """e and every expression inside it, parents first."""
    stack = [e] if e is not None else []
    while stack:
        x = stack.pop()
        yield x
        match x:
            case Field(obj=o) | Unary(operand=o):
                stack.append(o)
            case Index(key=k):
                stack.append(k)
            case Binary(left=l, right=r):
                stack += [r, l]
            case Builtin(args=xs) | SetLit(items=xs):
                stack += reversed(xs)
            case Quant(body=b):
                stack.append(b)


def names_in(e: Expr | None) -> set[str]:
    """The names used in e (a local never shares its name with another: the type checker rejects that)."""
    return {x.name for x in subexpressions(e) if isinstance(x, Name)}


def statements(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of a body, the branches of `if`s included."""
    for st in body:
        yield st
        if isinstance(st, If):
            yield from statements(st.then)
            yield from statements(st.orelse)


def statement_expressions(st: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement holds itself: an `if`'s condition, not its branches (`statements` has those)."""
    match st:
        case Assign(value=v):
            return (v,)
        case Insert(key=k, fields=fs):
            return (k, *(x for _, x in fs))
        case Update(key=k, value=v):
            return (k, v)
        case Delete(key=k):
            return (k,)
        case If(cond=c):
            return (c,)
        case _:
            assert_never(st)


def effect_statements(call: CallDecl) -> Iterator[Stmt]:
    """Every statement of a call's success effect."""
    for clause in call.clauses:
        if isinstance(clause, Effect):
            yield from statements(clause.body)
