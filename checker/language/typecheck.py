"""Name resolution, type checking and lints: AST -> CheckedSpec, or every error at once.

Error codes (stable):
  E0201 unknown name                E0202 duplicate declaration       E0203 not a table / record / field
  E0204 missing or repeated header  E0205 missing status declaration  E0206 bad effect target
  E0207 record fields missing or repeated in an insert               E0208 name not allowed here
  E0209 a call's argument or output, a quantified or pinned variable named like a declaration
  E0301 type mismatch               E0302 wrong number of arguments   E0303 not a constant expression
  E0401 duplicate rule ID           E0402 missing citation            E0403 unknown source
  E0404 bad order clause            E0405 empty citation text
  W0501 source never cited          W0502 call with no success effect W0504 flag value not a single bit
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, assert_never

from . import syntax as S
from .diagnostics import Diagnostic, Note, RegcheckError, error, has_errors, warning
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


# ---------------------------------------------------------------- scopes

@dataclass(frozen=True, slots=True)
class Scope:
    """What names an expression may use: call inputs, outputs and quantifier variables."""

    inputs: tuple[tuple[str, Type], ...] = ()
    outputs: tuple[tuple[str, Type], ...] = ()
    locals: tuple[tuple[str, Type], ...] = ()
    state: bool = True
    where: str = "expression"

    def lookup(self, name: str) -> tuple[str, Type] | None:
        """(binding kind, type) of a local name, or None. Locals never share a name with each
        other (E0202) or with a declaration (E0209), so the order of the groups does not matter."""
        for kind, group in (("bound", self.locals), ("output", self.outputs), ("input", self.inputs)):
            for n, t in reversed(group):
                if n == name:
                    return kind, t
        return None

    def with_local(self, name: str, t: Type) -> "Scope":
        return Scope(self.inputs, self.outputs, self.locals + ((name, t),), self.state, self.where)


class _Checker:
    def __init__(self, ast: S.SpecFile):
        self.ast = ast
        self.diags: list[Diagnostic] = []
        self.types: dict[int, Type] = {}
        self.bindings: dict[int, Binding] = {}
        self.code_values: dict[int, object] = {}
        self.globals: dict[str, tuple[str, S.Decl | None]] = {}  # name -> (category, decl)
        self.sources: dict[str, S.SourceDecl] = {}
        self.cited: set[str] = set()
        self.enums: dict[str, tuple[str, ...]] = {}
        self.enum_of_member: dict[str, str] = {}
        self.flags: dict[str, dict[str, int]] = {}
        self.flag_member: dict[str, tuple[str, int]] = {}
        self.consts: dict[str, tuple[Type, object]] = {}
        self.params: dict[str, tuple[Type, object]] = {}
        self.vars: dict[str, tuple[Type, object]] = {}
        self.records: dict[str, tuple[tuple[str, Type], ...]] = {}
        self.tables: dict[str, TableInfo] = {}
        self.defs: dict[str, S.Expr] = {}
        self.def_types: dict[str, Type] = {}
        self.groups: dict[str, S.Expr] = {}
        self.rules: dict[str, RuleInfo] = {}
        self.calls: dict[str, CallInfo] = {}
        self.status: S.StatusDecl | None = None
        self.status_type: Type = ANY
        self.success: object = None

    def err(self, code: str, msg: str, span: Span, *notes: Note) -> None:
        self.diags.append(error(code, msg, span, *notes))

    # ------------------------------------------------------------ declarations
    def declare(self, name: str, category: str, decl: S.Decl, span: Span) -> bool:
        # API groups have their own namespace (only `only in` names them), so cuPVA's
        # `group Init when vm == Init` may share its name with the enum member.
        member = self.member_decl(name) if category != "group" else None
        if name in self.globals or name in BUILTIN_TYPES or member is not None:
            prev = self.globals.get(name)
            first = prev[1] if prev and prev[1] is not None else member
            # Enum and flags members are declared before everything else, wherever they stand.
            said = "first declared here" if first is not member else "also declared here, as a member"
            notes = (Note(said, first.span),) if first is not None else ()
            self.err("E0202", f"duplicate declaration of '{name}'", span, *notes)
            return False
        self.globals[name] = (category, decl)
        return True

    def member_taken(self, name: str) -> bool:
        """Whether an enum or flags member may not take `name`: another member, a declaration or a
        builtin type has it."""
        return name in self.enum_of_member or name in self.flag_member or name in self.globals or name in BUILTIN_TYPES

    def member_decl(self, name: str) -> S.Decl | None:
        """The enum or flags declaration that has a member called `name`, if any."""
        owner = self.enum_of_member.get(name) or self.flag_member.get(name, (None,))[0]
        return self.globals[owner][1] if owner is not None else None

    def no_shadowing(self, name: str, what: str, span: Span) -> None:
        """The shadowing rule: a local name (argument, output, quantified or pinned variable)
        differs from every declaration, so a name means one thing in every back end (E0209).
        Builtin type names (`addr`, `u64`, ...) are allowed: a type never appears in an expression."""
        prev = self.globals.get(name)
        decl, category = (prev[1], prev[0]) if prev else (self.member_decl(name), None)
        if decl is None:
            return
        if category is None:
            category = "enum member" if name in self.enum_of_member else "flag"
        words = _CATEGORY_WORDS.get(category, category)
        self.err("E0209", f"'{name}', {what}, has the same name as the {words} declared at line {decl.span.line}; "
                          "rename one of them", span, Note(f"the {words} '{name}'", decl.span))

    def resolve_type(self, t: S.TypeRef) -> Type:
        if t.name in INT_BOUNDS:
            return Type("int", t.name)
        if t.name == "bool":
            return BOOL
        if t.name == "version":
            return VERSION
        if t.name == "range":
            return RANGE
        cat = self.globals.get(t.name, (None,))[0]
        if cat == "enum":
            return Type("enum", t.name)
        if cat == "flags":
            return Type("flags", t.name)
        if cat == "record":
            return Type("record", t.name)
        self.err("E0201", f"unknown type '{t.name}'", t.span)
        return ANY

    def run(self) -> CheckedSpec:
        decls = self.ast.decls
        headers = [d for d in decls if isinstance(d, S.SpecHeader)]
        if len(headers) != 1:
            span = headers[1].span if len(headers) > 1 else Span(self.ast.path, 1, 1)
            self.err("E0204", "a spec needs exactly one `spec NAME \"title\"` header", span)
        # Pass 1: type-level declarations, so later declarations may refer to them in any order.
        for d in decls:
            match d:
                case S.SourceDecl():
                    if self.declare(d.name, "source", d, d.span):
                        self.sources[d.name] = d
                case S.EnumDecl():
                    self.declare_enum(d)
                case S.FlagsDecl():
                    self.declare_flags(d)
                case S.RecordDecl():
                    self.declare(d.name, "record", d, d.span)
        for d in decls:
            if isinstance(d, S.RecordDecl) and d.name in self.globals:
                self.records[d.name] = self.check_fields(d)
        for d in decls:
            if isinstance(d, S.FlagsDecl):
                base = self.resolve_type(d.base)
                if base != ANY and base.kind != "int":
                    self.err("E0301", f"flags '{d.name}' need an integer base type, not {base}", d.base.span)
        # Pass 2: values and state, in order (constants may only use earlier constants).
        for d in decls:
            match d:
                case S.ConstDecl():
                    self.declare_value(d, "const", self.consts, d.value)
                case S.ParamDecl():
                    self.declare_value(d, "param", self.params, d.default)
                case S.VarDecl():
                    self.declare_value(d, "var", self.vars, d.init)
                case S.TableDecl():
                    self.declare_table(d)
                case S.StatusDecl():
                    self.declare_status(d)
        if self.status is None:
            self.err("E0205", "missing `status TYPE success VALUE` declaration", Span(self.ast.path, 1, 1))
        for d in decls:
            if isinstance(d, S.DefDecl) and self.declare(d.name, "def", d, d.span):
                self.defs[d.name] = d.body
        for name, body in self.defs.items():
            self.def_types[name] = self.expr(body, Scope(where="definition"))
        for d in decls:
            if isinstance(d, S.GroupDecl) and self.declare(d.name, "group", d, d.span):
                self.groups[d.name] = d.cond
                self.expect(d.cond, BOOL, Scope(where="group condition"))
        # Pass 3: invariants and calls.
        invariants = []
        pinned = []
        for d in decls:
            if isinstance(d, S.PinnedDecl):
                pinned.append(d)
                self.check_pinned(d)
            if isinstance(d, S.InvariantDecl):
                invariants.append(d)
                self.expect(d.expr, BOOL, Scope(where="invariant"))
                self.add_rule(d.rule, "invariant", None, d.cite, d.span, f"invariant {d.rule}")
            elif isinstance(d, S.CallDecl):
                self.check_call(d)
        self.lint()
        if has_errors(self.diags):
            raise RegcheckError(sorted(self.diags, key=_diag_key))
        header = headers[0]
        return CheckedSpec(
            ast=self.ast, name=header.name, title=header.title, sources=self.sources, params=self.params,
            enums=self.enums, enum_of_member=self.enum_of_member, flags=self.flags,
            flag_member=self.flag_member, consts=self.consts, status_type=self.status_type,
            success=self.success, groups=self.groups, vars=self.vars, records=self.records,
            tables=self.tables, defs=self.defs, def_types=self.def_types, invariants=tuple(invariants),
            pinned=tuple(pinned),
            calls=self.calls, rules=self.rules, types=self.types, bindings=self.bindings, code_values=self.code_values,
            warnings=tuple(sorted(self.diags, key=_diag_key)),
        )

    def declare_enum(self, d: S.EnumDecl) -> None:
        if not self.declare(d.name, "enum", d, d.span):
            return
        self.enums[d.name] = d.members
        for m in d.members:
            if self.member_taken(m):
                self.err("E0202", f"enum member '{m}' is declared twice", d.span)
            self.enum_of_member[m] = d.name

    def declare_flags(self, d: S.FlagsDecl) -> None:
        if not self.declare(d.name, "flags", d, d.span):
            return
        members: dict[str, int] = {}
        for name, lit in d.members:
            if name in members or self.member_taken(name):
                self.err("E0202", f"flag '{name}' is declared twice", lit.span)
                continue
            if lit.value == 0 or lit.value & (lit.value - 1):
                self.diags.append(warning("W0504", f"flag '{name}' = {lit.value:#x} is not a single bit", lit.span))
            members[name] = lit.value
            self.flag_member[name] = (d.name, lit.value)
        self.flags[d.name] = members

    def check_fields(self, d: S.RecordDecl) -> tuple[tuple[str, Type], ...]:
        seen: set[str] = set()
        out = []
        for name, t in d.fields:
            if name in seen or name in ("key", "range"):
                self.err("E0202", f"field '{name}' of record '{d.name}' is declared twice or reserved", t.span)
                continue
            seen.add(name)
            out.append((name, self.resolve_type(t)))
        return tuple(out)

    def declare_value(self, d, category: str, into: dict, value_expr: S.Expr) -> None:
        t = self.resolve_type(d.type)
        if not self.declare(d.name, category, d, d.span):
            return
        self.expect(value_expr, t, Scope(state=False, where=f"{category} value"))
        value = self.constant(value_expr)
        into[d.name] = (t, value)
        if value is _NOT_CONST:
            self.err("E0303", f"the value of {category} '{d.name}' must be a constant expression"
                     + _power_hint(value_expr), value_expr.span)

    def declare_table(self, d: S.TableDecl) -> None:
        key = self.resolve_type(d.key)
        if not self.declare(d.name, "table", d, d.span):
            return
        fields = self.records.get(d.record)
        if fields is None:
            self.err("E0201", f"unknown record '{d.record}'", d.span)
            fields = ()
        if d.sized_by is not None:
            ft = dict(fields).get(d.sized_by)
            if ft is None:
                self.err("E0203", f"record '{d.record}' has no field '{d.sized_by}' to size ranges by", d.span)
            elif not ft.numeric:
                self.err("E0301", f"field '{d.sized_by}' is {ft}, not an integer size", d.span)
            if key != ANY and key.kind != "int":
                self.err("E0301", f"a sized table needs an integer key, not {key}", d.key.span)
        self.tables[d.name] = TableInfo(d.name, key, d.record, fields, d.sized_by)

    def declare_status(self, d: S.StatusDecl) -> None:
        if self.status is not None:
            self.err("E0202", "duplicate status declaration", d.span, Note("first declared here", self.status.span))
            return
        self.status = d
        self.status_type = self.resolve_type(d.type)
        self.expect(d.success, self.status_type, Scope(state=False, where="status value"))
        self.success = self.constant(d.success)

    # ------------------------------------------------------------ rules and calls
    def add_rule(self, rule: str, kind: str, call: str | None, cite: S.Cite | None, span: Span, summary: str) -> None:
        if rule in self.rules:
            self.err("E0401", f"duplicate rule ID '{rule}'", span, Note("first used here", self.rules[rule].span))
            return
        source = None
        if cite is None:
            self.err("E0402", f"rule '{rule}' has no citation (add `cite SOURCE \"clause\"`)", span)
        else:
            source = self.sources.get(cite.source)
            if source is None:
                self.err("E0403", f"unknown source '{cite.source}' (declare it with `source`)", cite.span)
            else:
                self.cited.add(cite.source)
            if not cite.clause.strip():
                self.err("E0405", f"the citation of rule '{rule}' names no clause", cite.span)
        self.rules[rule] = RuleInfo(rule, kind, call, cite, span, summary, source)

    def check_pinned(self, d: S.PinnedDecl) -> None:
        info = self.table_or_err(d.table, d.span)
        if info is not None and info.sized_by is None:
            self.err("E0203", f"table '{d.table}' has no ranges (declare it `sized by` a field)", d.span)
        self.no_shadowing(d.var, "the variable of a pinned declaration", d.span)
        scope = Scope(locals=((d.var, Type("entry", d.table) if info else ANY),), where="pinned condition")
        self.expect(d.cond, BOOL, scope)
        self.add_rule(d.rule, "pinned", None, d.cite, d.span, f"pinned {d.rule}: {d.var} in {d.table}")

    def check_call(self, d: S.CallDecl) -> None:
        if d.name in self.calls:
            self.err("E0202", f"duplicate call '{d.name}'", d.span, Note("first declared here", self.calls[d.name].decl.span))
            return
        params = self.check_args(d.params, set(), f"an argument of {d.name}")
        outputs = self.check_args(d.outputs, {n for n, _ in params}, f"an output of {d.name}")
        self.calls[d.name] = CallInfo(d, params, outputs)
        inputs = Scope(inputs=params, where=f"clause of {d.name}")
        with_out = Scope(inputs=params, outputs=outputs, where=f"clause of {d.name}")
        from .printer import print_clause  # local import: printing is only needed for rule summaries

        fails_rules: list[str] = []
        for c in d.clauses:
            summary = " ".join(print_clause(c).split("\n    cite")[0].split())
            match c:
                case S.Requires():
                    self.expect(c.cond, BOOL, inputs)
                    self.add_rule(c.rule, "undefined" if c.undefined else "requires", d.name, c.cite, c.span, summary)
                case S.Fails():
                    self.check_codes(c.codes, inputs)
                    self.expect(c.cond, BOOL, inputs)
                    self.add_rule(c.rule, "fails", d.name, c.cite, c.span, summary)
                    fails_rules.append(c.rule)
                case S.MayFail():
                    self.check_codes(c.codes, inputs)
                    if c.cond is not None:
                        self.expect(c.cond, BOOL, inputs)
                    self.add_rule(c.rule, "may-fail", d.name, c.cite, c.span, summary)
                case S.Unspecified():
                    self.expect(c.cond, BOOL, inputs)
                    self.add_rule(c.rule, "unspecified", d.name, c.cite, c.span, summary)
                case S.Ensures():
                    self.expect(c.cond, BOOL, with_out)
                    self.add_rule(c.rule, "ensures", d.name, c.cite, c.span, summary)
                case S.NotThreadSafe():
                    self.add_rule(c.rule, "usage", d.name, c.cite, c.span, summary)
                case S.OnlyIn():
                    for g in c.groups:
                        if g not in self.groups:
                            self.err("E0201", f"unknown API group '{g}' (declare it with `group`)", c.span)
                    self.add_rule(c.rule, "usage", d.name, c.cite, c.span, summary)
                case S.Effect():
                    self.check_stmts(c.body, with_out)
                    self.add_rule(c.rule, "effect", d.name, c.cite, c.span, "success effect of " + d.name)
                case S.Order():
                    pass
                case _:
                    assert_never(c)
        for c in d.clauses:
            if isinstance(c, S.Order):
                repeated = sorted({r for r in c.rules if c.rules.count(r) > 1})
                if repeated:
                    self.err("E0404", f"order names {', '.join(repeated)} more than once", c.span)
                for r in c.rules:
                    if r not in fails_rules:
                        self.err("E0404", f"order names '{r}', which is not a `fails` clause of {d.name}", c.span)
        effects = [c for c in d.clauses if isinstance(c, S.Effect)]
        if len(effects) > 1:
            self.err("E0202", f"call {d.name} has more than one success effect", effects[1].span)

    def check_args(self, args: tuple[S.ArgDecl, ...], taken: set[str], what: str) -> tuple[tuple[str, Type], ...]:
        out = []
        for a in args:
            if a.name in taken:
                self.err("E0202", f"argument '{a.name}' is declared twice", a.span)
                continue
            taken.add(a.name)
            self.no_shadowing(a.name, what, a.span)
            out.append((a.name, self.resolve_type(a.type)))
        return tuple(out)

    def check_codes(self, codes: S.Codes, scope: Scope) -> None:
        if isinstance(codes, S.AnyFailure):
            if codes.excluded is None:
                return
            codes = codes.excluded
        items = codes.items if isinstance(codes, S.SetLit) else (codes,)
        for item in items:
            # The call's inputs are in scope so that `fails R: x when ...` says "not a constant", not "unknown name".
            self.expect(item, self.status_type, Scope(inputs=scope.inputs, state=False, where="status code"))
            value = self.constant(item)
            if value is _NOT_CONST:
                self.err("E0303", "a status code must be a constant", item.span)
            self.code_values[id(item)] = value
        if isinstance(codes, S.SetLit):
            self.types[id(codes)] = Type("set", self.status_type.kind)

    def check_stmts(self, body: Iterable[S.Stmt], scope: Scope) -> None:
        for st in body:
            match st:
                case S.Assign(var=v, value=x):
                    if v not in self.vars:
                        self.err("E0206", f"'{v}' is not a state variable (only `var`s can be assigned)", st.span)
                        self.expr(x, scope)
                    else:
                        self.expect(x, self.vars[v][0], scope)
                case S.Insert(table=t, key=k, fields=fs):
                    info = self.table_or_err(t, st.span)
                    if info is None:
                        continue
                    self.expect(k, info.key, scope)
                    given = [n for n, _ in fs]
                    for n, x in fs:
                        ft = info.field_type(n)
                        if ft is None:
                            self.err("E0203", f"record '{info.record}' has no field '{n}'", x.span)
                            self.expr(x, scope)
                        else:
                            self.expect(x, ft, scope)
                    missing = [n for n, _ in info.fields if n not in given]
                    dup = sorted({n for n in given if given.count(n) > 1})
                    if missing or dup:
                        what = (f"missing {', '.join(missing)}" if missing else "") + \
                               ("; " if missing and dup else "") + (f"repeated {', '.join(dup)}" if dup else "")
                        self.err("E0207", f"insert into '{t}' must give every field once: {what}", st.span)
                case S.Update(table=t, key=k, field=f, value=x):
                    info = self.table_or_err(t, st.span)
                    if info is None:
                        continue
                    self.expect(k, info.key, scope)
                    ft = info.field_type(f)
                    if ft is None:
                        self.err("E0203", f"record '{info.record}' has no field '{f}'", st.span)
                    else:
                        self.expect(x, ft, scope)
                case S.Delete(table=t, key=k):
                    info = self.table_or_err(t, st.span)
                    if info is not None:
                        self.expect(k, info.key, scope)
                case S.If(cond=c, then=th, orelse=el):
                    self.expect(c, BOOL, scope)
                    self.check_stmts(th, scope)
                    self.check_stmts(el, scope)
                case _:
                    assert_never(st)

    def table_or_err(self, name: str, span: Span) -> TableInfo | None:
        info = self.tables.get(name)
        if info is None:
            self.err("E0203", f"'{name}' is not a table", span)
        return info

    # ------------------------------------------------------------ expressions
    def expect(self, e: S.Expr, want: Type, scope: Scope) -> None:
        got = self.expr(e, scope)
        if not _assignable(got, want):
            self.err("E0301", f"expected {want}, found {got}", e.span)

    def expr(self, e: S.Expr, scope: Scope) -> Type:
        t = self._expr(e, scope)
        self.types[id(e)] = t
        return t

    def _expr(self, e: S.Expr, scope: Scope) -> Type:
        match e:
            case S.IntLit():
                return INT
            case S.BoolLit():
                return BOOL
            case S.VersionLit():
                return VERSION
            case S.Name():
                return self.name_type(e, scope)
            case S.Field(obj=o, name=n):
                return self.field_type(self.expr(o, scope), n, e.span)
            case S.Index(table=t, key=k):
                info = self.table_or_err(t, e.span)
                if info is None:
                    self.expr(k, scope)
                    return ANY
                if not scope.state:
                    self.err("E0208", f"state (table '{t}') cannot be used in a {scope.where}", e.span)
                self.expect(k, info.key, scope)
                return Type("entry", t)
            case S.Unary(op="not", operand=o):
                self.expect(o, BOOL, scope)
                return BOOL
            case S.Unary(op=_, operand=o):
                self.expect_numeric(o, scope)
                return INT
            case S.Binary():
                return self.binary(e, scope)
            case S.Builtin(func=f, args=args):
                return self.builtin(e, f, args, scope)
            case S.Quant(var=v, table=t, body=b):
                info = self.table_or_err(t, e.span)
                if not scope.state:
                    self.err("E0208", f"state (table '{t}') cannot be used in a {scope.where}", e.span)
                clash = scope.lookup(v)
                if clash is not None:
                    other = {"input": "an argument", "output": "an output", "bound": "a quantified variable"}[clash[0]]
                    self.err("E0209", f"'{v}', a quantified variable, has the same name as {other} in scope; "
                                      "rename one of them", e.span)
                else:
                    self.no_shadowing(v, "a quantified variable", e.span)
                inner = scope.with_local(v, Type("entry", t) if info else ANY)
                self.expect(b, BOOL, inner)
                return BOOL
            case S.SetLit(items=items):
                types = [self.expr(x, scope) for x in items]
                first = next((t for t in types if t != ANY), ANY)
                for x, t in zip(items, types):
                    if not _comparable(first, t):
                        self.err("E0301", f"set elements must have one type: {first} and {t}", x.span)
                return Type("set", first.kind if first.kind != "int" else "int")
            case _:
                assert_never(e)

    def name_type(self, e: S.Name, scope: Scope) -> Type:
        """The type of a name, recording what it binds (`CheckedSpec.bindings`): the one place
        where names are resolved."""
        n, span = e.name, e.span
        local = scope.lookup(n)
        if local is not None:
            self.bindings[id(e)] = Binding(local[0], n)
            return local[1]
        cat = self.globals.get(n, (None,))[0]
        if cat in ("var", "param", "const", "def", "table"):
            self.bindings[id(e)] = Binding(cat, n)
        elif n in self.enum_of_member:
            self.bindings[id(e)] = Binding("enum", n)
        elif n in self.flag_member:
            self.bindings[id(e)] = Binding("flag", n)
        if cat == "var":
            if not scope.state:
                self.err("E0208", f"state variable '{n}' cannot be used in a {scope.where}", span)
            return self.vars[n][0]
        if cat in ("param", "const"):
            return (self.params if cat == "param" else self.consts)[n][0]
        if cat == "def":
            if n in self.def_types:
                return self.def_types[n]
            self.err("E0201", f"'{n}' is used before its definition is complete", span)
            return ANY
        if n in self.enum_of_member:
            return Type("enum", self.enum_of_member[n])
        if n in self.flag_member:
            return Type("flags", self.flag_member[n][0])
        if cat == "table":
            return Type("table", n)
        if cat is not None:
            self.err("E0208", f"'{n}' is a {cat}, not a value", span)
            return ANY
        self.err("E0201", f"unknown name '{n}'", span)
        return ANY

    def field_type(self, obj: Type, n: str, span: Span) -> Type:
        if obj == ANY:
            return ANY
        if obj.kind == "range" and n in ("base", "size", "end"):
            return INT
        if obj.kind == "entry":
            info = self.tables[obj.name]
            if n == "key":
                return info.key
            if n == "range" and info.sized_by:
                return RANGE
            ft = info.field_type(n)
            if ft is not None:
                return ft
            self.err("E0203", f"entries of '{obj.name}' have no field '{n}'", span)
            return ANY
        self.err("E0203", f"{obj} has no field '{n}'", span)
        return ANY

    def expect_numeric(self, e: S.Expr, scope: Scope) -> Type:
        t = self.expr(e, scope)
        if t != ANY and not t.numeric:
            self.err("E0301", f"expected an integer, found {t}", e.span)
        return t

    def binary(self, e: S.Binary, scope: Scope) -> Type:
        op = e.op
        if op in ("and", "or", "implies"):
            self.expect(e.left, BOOL, scope)
            self.expect(e.right, BOOL, scope)
            return BOOL
        if op in ("+", "-", "*", "%", "**"):
            self.expect_numeric(e.left, scope)
            self.expect_numeric(e.right, scope)
            return INT
        if op in ("&", "|"):
            lt = self.expect_numeric(e.left, scope)
            rt = self.expect_numeric(e.right, scope)
            if lt.kind == "flags" and rt.kind == "flags" and lt.name == rt.name:
                return lt
            return INT
        if op in ("==", "!="):
            lt, rt = self.expr(e.left, scope), self.expr(e.right, scope)
            if not _comparable(lt, rt):
                self.err("E0301", f"cannot compare {lt} with {rt}", e.span)
            return BOOL
        if op in ("<", "<=", ">", ">="):
            lt, rt = self.expr(e.left, scope), self.expr(e.right, scope)
            ordered = (lt.numeric and rt.numeric) or (lt.kind == rt.kind == "version")
            if ANY not in (lt, rt) and not ordered:
                self.err("E0301", f"cannot order {lt} and {rt} (integers or versions only)", e.span)
            return BOOL
        if op == "in":
            return self.membership(e, scope)
        if op == "overlaps":
            self.expect(e.left, RANGE, scope)
            self.expect(e.right, RANGE, scope)
            return BOOL
        if op == "contains":
            self.expect(e.left, RANGE, scope)
            rt = self.expr(e.right, scope)
            if rt != ANY and rt != RANGE and not rt.numeric:
                self.err("E0301", f"`contains` takes a range or an address on the right, not {rt}", e.right.span)
            return BOOL
        raise AssertionError(op)

    def membership(self, e: S.Binary, scope: Scope) -> Type:
        lt = self.expr(e.left, scope)
        rt = self.expr(e.right, scope)
        if ANY in (lt, rt):
            return BOOL
        if rt.kind == "table":
            if not scope.state:
                self.err("E0208", f"state (table '{rt.name}') cannot be used in a {scope.where}", e.right.span)
            key = self.tables[rt.name].key
            if not _comparable(lt, key):
                self.err("E0301", f"keys of '{rt.name}' are {key}, not {lt}", e.left.span)
        elif rt.kind == "flags":
            if not lt.numeric:
                self.err("E0301", f"a flag test needs a flag on the left, not {lt}", e.left.span)
        elif rt.kind == "set":
            if lt.kind != rt.name and not (lt.numeric and rt.name in ("int", "flags")):
                self.err("E0301", f"cannot look for {lt} in a set of {rt.name}", e.left.span)
        elif rt.kind == "range":
            if not lt.numeric:
                self.err("E0301", f"`in` a range needs an address on the left, not {lt}", e.left.span)
        else:
            self.err("E0301", f"`in` needs a table, flags, a set or a range on the right, not {rt}", e.right.span)
        return BOOL

    def builtin(self, e: S.Builtin, f: str, args: tuple[S.Expr, ...], scope: Scope) -> Type:
        arity = {"range": 2, "aligned": 2, "min": 2, "max": 2}
        if f not in arity:
            self.err("E0201", f"unknown function '{f}' (builtins: {', '.join(sorted(arity))})", e.span)
            for a in args:
                self.expr(a, scope)
            return ANY
        if len(args) != arity[f]:
            self.err("E0302", f"{f}() takes {arity[f]} arguments, {len(args)} given", e.span)
        for a in args:
            self.expect_numeric(a, scope)
        return {"range": RANGE, "aligned": BOOL}.get(f, INT)

    # ------------------------------------------------------------ constants
    def constant(self, e: S.Expr) -> object:
        """The value of a constant expression (literals, constants, enum/flag members, | and arithmetic)."""
        match e:
            case S.IntLit(value=v):
                return v
            case S.BoolLit(value=v):
                return v
            case S.VersionLit(parts=p):
                return normalise_version(p)
            case S.Name(name=n):
                if n in self.consts:
                    return self.consts[n][1]
                if n in self.enum_of_member:
                    return n
                if n in self.flag_member:
                    return self.flag_member[n][1]
                return _NOT_CONST
            case S.Unary(op="-", operand=o):
                v = self.constant(o)
                # Only integers negate; `-ok` (an enum member) is a type error reported elsewhere.
                return -v if isinstance(v, int) and not isinstance(v, bool) else _NOT_CONST
            case S.Binary(op=op, left=l, right=r) if op in ("|", "+", "-", "*", "**"):
                a, b = self.constant(l), self.constant(r)
                if a is _NOT_CONST or b is _NOT_CONST or not isinstance(a, int) or not isinstance(b, int):
                    return _NOT_CONST
                if op == "**" and not 0 <= b < 512:  # exact integers only: no fractions, no giant powers
                    return _NOT_CONST
                return {"|": a | b, "+": a + b, "-": a - b, "*": a * b, "**": a ** b if op == "**" else 0}[op]
            case _:
                return _NOT_CONST

    # ------------------------------------------------------------ lints
    def lint(self) -> None:
        for name, src in self.sources.items():
            if name not in self.cited:
                self.diags.append(warning("W0501", f"source '{name}' is never cited", src.span))
        for info in self.calls.values():
            if info.decl.kind == "call" and not info.clauses(S.Effect):
                self.diags.append(warning("W0502", f"call {info.name} has no success effect", info.decl.span))


_NOT_CONST = object()
_CATEGORY_WORDS = {"var": "state variable", "param": "configuration parameter", "const": "constant",
                   "def": "definition", "flags": "flags type", "enum": "enum type", "source": "source",
                   "group": "API group"}


def normalise_version(parts) -> tuple[int, ...]:
    """Trailing zero components carry no meaning: 5.10.0 is 5.10."""
    parts = tuple(parts)
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts


def _assignable(got: Type, want: Type) -> bool:
    if ANY in (got, want):
        return True
    if got == want:
        return True
    if want.kind == "int" and got.numeric:
        return True
    if want.kind == "flags" and got.kind == "int":
        return True
    return False


def _comparable(a: Type, b: Type) -> bool:
    if ANY in (a, b):
        return True
    if a.numeric and b.numeric:
        return True
    if a.kind == "entry" or b.kind == "entry":
        return False
    return a == b


def _diag_key(d: Diagnostic):
    return (d.span.path, d.span.line, d.span.column, d.code)


def check_spec(ast: S.SpecFile) -> CheckedSpec:
    """Type-check a parsed spec; raise RegcheckError listing every error found."""
    return _Checker(ast).run()


def _power_hint(e: S.Expr) -> str:
    """Why a constant `**` did not fold: its exponent is outside 0..511 (exact integers, bounded size)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, S.Binary):
            if x.op == "**" and isinstance(x.right, S.IntLit) and not 0 <= x.right.value < 512:
                return f" (a constant power takes an exponent of 0 to 511, not {x.right.value})"
            stack += [x.left, x.right]
        elif isinstance(x, S.Unary):
            stack.append(x.operand)
    return ""
