"""Name resolution, type checking and lints: AST -> CheckedSpec, or every error at once.

Error codes (stable):
  E0201 unknown name                E0202 duplicate declaration       E0203 not a table / record / field
  E0204 missing or repeated header  E0205 missing status declaration  E0206 bad effect target
  E0207 record fields missing or repeated in an insert               E0208 name not allowed here
  E0209 a call's argument or output, a quantified or pinned variable named like a declaration
  E0301 type mismatch               E0302 wrong number of arguments   E0303 not a constant expression
  E0304 a value outside its declared type (a flag past 32 bits)     E0305 a failure's code is the success status
  E0401 duplicate rule ID           E0402 missing citation            E0403 unknown source
  E0404 bad order clause            E0405 empty citation text
  W0501 source never cited          W0502 call with no success effect W0504 flag value not a single bit
"""

from __future__ import annotations

from typing import Iterable, Iterator, assert_never

from . import syntax as S
from .checked import (ANY, BOOL, BUILTIN_TYPES, FLAGS_BOUNDS, INT_BOUNDS, RANGE, VERSION, Binding, CallInfo,
                      CheckedSpec, RuleInfo, TableInfo, Type, value_bounds)
from .diagnostics import Diagnostic, Note, RegcheckError, error, has_errors, warning
from .exprtypes import MAX_CONSTANT_BITS, NOT_FOLDED, ExpressionTyper, Scope, too_wide_to_fold
from .source import Span

class _Checker(ExpressionTyper):
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
        self.def_sizes: dict[str, int | None] = {}  # how many expressions each expands to; None: too many (E0104)
        self.def_types: dict[str, Type] = {}
        self.groups: dict[str, S.Expr] = {}
        self.rules: dict[str, RuleInfo] = {}
        self.calls: dict[str, CallInfo] = {}
        self.status: S.StatusDecl | None = None
        self.status_type: Type = ANY
        self.success: object = None
        self.suggestions_left = 200  # "did you mean" notes still to give (see ExpressionTyper.suggest)

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
        if cat == "record":  # (a table names its row record itself: nothing else can hold a record)
            self.err("E0301", f"record '{t.name}' is only a table's row type (a field, key, value or "
                              "argument cannot hold a record)", t.span)
            return ANY
        self.err("E0201", f"unknown type '{t.name}'", t.span, *self.suggest(t.name, self.type_names()))
        return ANY

    def type_names(self) -> list[str]:
        """Every name a type may be written as: the builtin types and the declared enums, flags and records."""
        declared = [n for n, (cat, _) in self.globals.items() if cat in ("enum", "flags", "record")]
        return [*BUILTIN_TYPES, *declared]

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
            t = self.expr(body, Scope(where="definition"))
            if t.kind == "table":  # (every back end reads a table by its own name)
                self.err("E0301", f"definition '{name}' stands for table {t.name}: a table is not a value "
                                  f"(use {t.name} itself)", body.span)
                t = ANY
            self.def_types[name] = t
        self.check_definition_sizes()
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
        self.check_expansion_sizes()
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
            if not FLAGS_BOUNDS[0] <= lit.value <= FLAGS_BOUNDS[1]:
                top = FLAGS_BOUNDS[1]
                self.err("E0304", f"flag '{name}' = {lit.value:#x} is outside a flags value (0 to {top:#x}: "
                                  "flags are 32-bit bit sets, whatever their base type)", lit.span)
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
        if value is NOT_FOLDED:
            self.err("E0303", f"the value of {category} '{d.name}' must be a constant expression"
                     + _power_hint(value_expr, self.constant), value_expr.span)
            return
        bounds = value_bounds(t)
        if bounds is not None and type(value) is int and not bounds[0] <= value <= bounds[1]:
            self.err("E0304", f"the value of {category} '{d.name}' is {value:#x}, outside {t} "
                              f"({bounds[0]:#x} to {bounds[1]:#x})" if abs(value) >= 4096 else
                     f"the value of {category} '{d.name}' is {value}, outside {t} ({bounds[0]} to {bounds[1]})",
                     value_expr.span)

    def check_definition_sizes(self) -> None:
        """Every back end expands a definition where it is used, so `def d2 = d1 + d1` doubles the
        code per line: a definition may expand to at most MAX_DEFINITION_NODES expressions (E0104),
        where forty such lines made `simulate`, `prove` and `replay` run for ever."""
        for name, body in self.defs.items():  # a definition uses only those above it (E0201)
            size = self.expanded_size((body,))
            if size is not None and size > MAX_DEFINITION_NODES:
                self.err("E0104", f"definition '{name}' expands to {size:,} expressions, more than "
                                  f"{MAX_DEFINITION_NODES:,} (each use of a definition is expanded in place)",
                         body.span)
                size = None
            self.def_sizes[name] = size

    def check_expansion_sizes(self) -> None:
        """The same bound for everything else a back end expands: one invariant, group or pinned
        condition, clause condition or success effect that uses a large definition many times
        (`d + d + d ...`) is as large as a definition that does, and hung `simulate` and `prove` alike.
        The parts together expand to at most MAX_SPEC_NODES expressions: thousands of invariants,
        each within its bound, added up without one and hung them too. That error is reported once,
        at the part (in source order) that takes the total past the bound."""
        total, parts = 0, 0
        for what, span, exprs in self.expanded_parts():
            size = self.expanded_size(exprs)
            if size is None:
                continue
            if size > MAX_DEFINITION_NODES:
                self.err("E0104", f"{what} expands to {size:,} expressions, more than {MAX_DEFINITION_NODES:,} "
                                  "(each use of a definition is expanded in place)", span)
                continue
            if total + size > MAX_SPEC_NODES >= total:
                self.err("E0104", f"{what} expands to {size:,} expressions and takes the whole spec to "
                                  f"{total + size:,}, more than {MAX_SPEC_NODES:,} (the {parts:,} conditions, "
                                  f"invariants and effects before it expand to {total:,}; each use of a definition "
                                  "is expanded in place)", span)
            total += size
            parts += 1

    def expanded_size(self, exprs: Iterable[S.Expr]) -> int | None:
        """How many expressions `exprs` become once every definition in them is expanded, computed
        from the definitions' own sizes (linear in the source); None when one of them is already
        too large (reported once, at that definition)."""
        size = 0
        for x in (x for e in exprs for x in S.subexpressions(e)):
            if isinstance(x, S.Name) and x.name in self.def_sizes:
                used = self.def_sizes[x.name]
                if used is None:
                    return None
                size += used
            else:
                size += 1
        return size

    def expanded_parts(self) -> Iterator[tuple[str, Span, tuple[S.Expr, ...]]]:
        """Each part of the spec that a back end expands as one piece: what to call it, where it is
        and its expressions."""
        for d in self.ast.decls:
            match d:
                case S.GroupDecl():
                    yield f"the condition of group {d.name}", d.cond.span, (d.cond,)
                case S.InvariantDecl():
                    yield f"invariant {d.rule}", d.expr.span, (d.expr,)
                case S.PinnedDecl():
                    yield f"the condition of pinned {d.rule}", d.cond.span, (d.cond,)
                case S.CallDecl():
                    yield from _call_parts(d)

    def declare_table(self, d: S.TableDecl) -> None:
        key = self.resolve_type(d.key)
        if not self.declare(d.name, "table", d, d.span):
            return
        fields = self.records.get(d.record)
        if fields is None:
            self.err("E0201", f"unknown record '{d.record}'", d.span, *self.suggest(d.record, self.records))
            fields = ()
        if d.sized_by is not None:
            ft = dict(fields).get(d.sized_by)
            if ft is None:
                self.err("E0203", f"record '{d.record}' has no field '{d.sized_by}' to size ranges by", d.span,
                         *self.suggest(d.sized_by, dict(fields)))
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
        if self.status_type.kind in ("bool", "version", "range"):  # (a trace's `ret` is an integer or a name)
            self.err("E0301", f"a status cannot be a {self.status_type.kind}: no trace can give one (a call's "
                              "`ret` is an integer or the name of an enum member)", d.type.span)
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
        self.calls[d.name] = CallInfo(d, params, outputs, self.check_defaults(d, dict(params)))
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
                            self.err("E0201", f"unknown API group '{g}' (declare it with `group`)", c.span,
                                     *self.suggest(g, self.groups))
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
            t = self.resolve_type(a.type)
            if t.kind == "range":  # (a trace line carries integers, names, versions: no range)
                self.err("E0301", f"{what} cannot be a range: no trace can give one (take its base and size as "
                                  "two arguments, and write range(base, size))", a.span)
            out.append((a.name, t))
        return tuple(out)

    def check_defaults(self, d: S.CallDecl, types: dict[str, Type]) -> tuple[tuple[str, object], ...]:
        """The values of the inputs' defaults: each a constant of its argument's type (an output
        always comes from the trace, so it has none)."""
        for a in d.outputs:
            if a.default is not None:
                self.err("E0301", f"output '{a.name}' of {d.name} cannot have a default: a success records "
                                  "every output", a.default.span)
        out = []
        for a, after in zip(d.params, d.params[1:]):
            if a.default is not None and after.default is None:
                # (as in Python: a line's inputs are matched by name, but every back end that builds
                # a call positionally, the fast path's structs among them, needs the defaults last)
                self.err("E0301", f"argument '{after.name}' of {d.name} has no default but follows '{a.name}', "
                                  "which has one: put the arguments with defaults last", after.span)
        for a in d.params:
            if a.default is None or a.name not in types:
                continue
            t = types[a.name]
            self.expect(a.default, t, Scope(state=False, where=f"default of argument '{a.name}'"))
            value = self.constant(a.default)
            if value is NOT_FOLDED:
                self.err("E0303", f"the default of argument '{a.name}' of {d.name} must be a constant expression",
                         a.default.span)
                continue
            bounds = value_bounds(t)
            if bounds is not None and type(value) is int and not bounds[0] <= value <= bounds[1]:
                self.err("E0304", f"the default of argument '{a.name}' of {d.name} is {value}, outside {t}",
                         a.default.span)
                continue
            out.append((a.name, value))
        return tuple(out)

    def check_codes(self, codes: S.Codes, scope: Scope) -> None:
        named = not isinstance(codes, S.AnyFailure)  # codes a failure has, not ones `any except` leaves out
        if isinstance(codes, S.AnyFailure):
            if codes.excluded is None:
                return
            codes = codes.excluded
        items = codes.items if isinstance(codes, S.SetLit) else (codes,)
        for item in items:
            # The call's inputs are in scope so that `fails R: x when ...` says "not a constant", not "unknown name".
            self.expect(item, self.status_type, Scope(inputs=scope.inputs, state=False, where="status code"))
            value = self.constant(item)
            if value is NOT_FOLDED:
                self.err("E0303", "a status code must be a constant", item.span)
            elif named and self.success is not None and value == self.success:
                # A failure with the success code would be judged a success and a failure at once.
                self.err("E0305", f"a failure's code cannot be the success status {value!r}", item.span)
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
                            self.err("E0203", f"record '{info.record}' has no field '{n}'", x.span,
                                     *self.suggest(n, dict(info.fields)))
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
                        self.err("E0203", f"record '{info.record}' has no field '{f}'", st.span,
                                 *self.suggest(f, dict(info.fields)))
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

    def lint(self) -> None:
        for name, src in self.sources.items():
            if name not in self.cited:
                self.diags.append(warning("W0501", f"source '{name}' is never cited", src.span))
        for info in self.calls.values():
            if info.decl.kind == "call" and not info.clauses(S.Effect):
                self.diags.append(warning("W0502", f"call {info.name} has no success effect", info.decl.span))


_CATEGORY_WORDS = {"var": "state variable", "param": "configuration parameter", "const": "constant",
                   "def": "definition", "flags": "flags type", "enum": "enum type", "source": "source",
                   "group": "API group"}


def _call_parts(d: S.CallDecl) -> Iterator[tuple[str, Span, tuple[S.Expr, ...]]]:
    """A call's conditions, one per clause, and its success effect as a whole (compiled as one piece)."""
    for c in d.clauses:
        match c:
            case S.Requires() | S.Fails() | S.MayFail() | S.Unspecified() | S.Ensures() if c.cond is not None:
                yield f"the condition of {c.rule} in call {d.name}", c.cond.span, (c.cond,)
            case S.Effect():
                statements = S.statements(c.body)
                yield (f"the success effect of {d.name}", c.span,
                       tuple(x for st in statements for x in S.statement_expressions(st)))


def _diag_key(d: Diagnostic):
    return (d.span.path, d.span.line, d.span.column, d.code)


def check_spec(ast: S.SpecFile) -> CheckedSpec:
    """Type-check a parsed spec; raise RegcheckError listing every error found."""
    return _Checker(ast).run()


MAX_DEFINITION_NODES = 100_000  # expressions one definition, condition, invariant or effect expands to
# ... and all of a spec's conditions, invariants and effects together: two parts as large as one may
# be (the bundled specs expand to 429-956 in all, none past 55 in one part)
MAX_SPEC_NODES = 200_000


def _power_hint(e: S.Expr, constant) -> str:
    """Why a constant `**` or `*` did not fold: an exponent outside 0..511, or a value wider than
    MAX_CONSTANT_BITS (exact integers, bounded size). `constant` folds a subexpression."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, S.Binary):
            if x.op == "**" and isinstance(x.right, S.IntLit) and not 0 <= x.right.value < 512:
                return f" (a constant power takes an exponent of 0 to 511, not {x.right.value})"
            if x.op in ("*", "**"):
                a, b = constant(x.left), constant(x.right)
                if type(a) is int and type(b) is int and too_wide_to_fold(x.op, a, b):
                    return f" (its value would be wider than {MAX_CONSTANT_BITS:,} bits, the widest constant)"
            stack += [x.left, x.right]
        elif isinstance(x, S.Unary):
            stack.append(x.operand)
    return ""
