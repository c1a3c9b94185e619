"""Typing expressions: the half of the type checker that gives every expression its type, resolves its
names and folds constants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from . import syntax as S
from .checked import ANY, BOOL, INT, RANGE, VERSION, Binding, TableInfo, Type, normalise_version
from .diagnostics import Note, did_you_mean
from .source import Span


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

    def names(self) -> tuple[str, ...]:
        """Every local name in scope, for suggestions."""
        return tuple(n for group in (self.locals, self.outputs, self.inputs) for n, _ in group)

    def with_local(self, name: str, t: Type) -> "Scope":
        return Scope(self.inputs, self.outputs, self.locals + ((name, t),), self.state, self.where)


NOT_FOLDED = object()

# The widest value a constant expression folds to. A chain of declarations that each square the one
# above (`const K2: int = K1 * K1`, or `K1 ** 511`) doubles the width per line: without a bound a
# few lines of spec would take hours and all the memory (the nesting limit bounds one expression only).
MAX_CONSTANT_BITS = 65_536


def too_wide_to_fold(op: str, a: int, b: int) -> bool:
    """Whether `a op b` may be wider than MAX_CONSTANT_BITS, judged from the operands' widths before
    computing it (`+`, `-` and `|` add at most one bit)."""
    if op == "*":
        return a.bit_length() + b.bit_length() > MAX_CONSTANT_BITS + 1
    if op == "**":
        return abs(a) > 1 and b > 1 and (abs(a).bit_length() - 1) * b > MAX_CONSTANT_BITS
    return False


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


# Kinds of expression a set literal cannot hold, with how to name them: sets are for `in` and status
# codes, and no back end compares tables, entries or sets as elements (the encoder cannot, the
# replayer's code cannot hash an entry, and a table is read by its name alone).
NOT_SET_ELEMENTS = {"table": "table {}", "entry": "an entry of {}", "set": "a set"}

# Names that an expression can use as a value, by the category `globals` records them under.
VALUE_CATEGORIES = ("var", "param", "const", "def", "table")
BUILTIN_FUNCTIONS = {"range": 2, "aligned": 2, "min": 2, "max": 2}  # name -> arity
RANGE_FIELDS = ("base", "size", "end")


class ExpressionTyper:
    """The expression half of the type checker. The declaration half (`typecheck`'s checker, its
    subclass) provides what it reads: the declared tables, calls, values and enums, `err`, the
    recorded `types` and `bindings`, and `suggestions_left`."""

    def suggest(self, name: str, candidates) -> tuple[Note, ...]:
        """A "did you mean" note for an unknown `name`. Each costs a comparison with every candidate,
        so a spec full of unknown names gets notes on its first ones only."""
        pool = list(candidates)
        if not pool or self.suggestions_left <= 0:
            return ()
        self.suggestions_left -= 1
        return did_you_mean(name, pool)

    def value_names(self, scope: Scope) -> list[str]:
        """Every name an expression in `scope` may use as a value."""
        declared = [n for n, (cat, _) in self.globals.items() if cat in VALUE_CATEGORIES]
        return [*scope.names(), *declared, *self.enum_of_member, *self.flag_member]

    def table_or_err(self, name: str, span: Span) -> TableInfo | None:
        info = self.tables.get(name)
        if info is None:
            self.err("E0203", f"'{name}' is not a table", span, *self.suggest(name, self.tables))
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
                rejected = [(x, t) for x, t in zip(items, types) if t.kind in NOT_SET_ELEMENTS]
                for x, t in rejected:  # (replay crashed on `t in {t}`, which passed this check)
                    self.err("E0301", f"a set holds values, not {NOT_SET_ELEMENTS[t.kind].format(t.name)}", x.span)
                if rejected:
                    return ANY  # (no second error where the set is used)
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
        if cat in ("var", "param", "const"):
            declared = {"var": self.vars, "param": self.params, "const": self.consts}[cat].get(n)
            if declared is None:  # named in its own initial value: its declaration is not done yet
                self.err("E0201", f"'{n}' is used in its own declaration", span)
                return ANY
            if cat == "var" and not scope.state:
                self.err("E0208", f"state variable '{n}' cannot be used in a {scope.where}", span)
            return declared[0]
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
        self.err("E0201", f"unknown name '{n}'", span, *self.suggest(n, self.value_names(scope)))
        return ANY

    def field_type(self, obj: Type, n: str, span: Span) -> Type:
        if obj == ANY:
            return ANY
        if obj.kind == "range" and n in RANGE_FIELDS:
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
            known = [*(f for f, _ in info.fields), "key", *(("range",) if info.sized_by else ())]
            self.err("E0203", f"entries of '{obj.name}' have no field '{n}'", span, *self.suggest(n, known))
            return ANY
        known = RANGE_FIELDS if obj.kind == "range" else ()
        self.err("E0203", f"{obj} has no field '{n}'", span, *self.suggest(n, known))
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
            if "table" in (lt.kind, rt.kind):  # (no back end compares whole tables)
                self.err("E0301", f"cannot compare {lt} with {rt}: a table is not a value (test a key with `in`, "
                                  "or its entries with `exists`/`forall`)", e.span)
            elif not _comparable(lt, rt):
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
        arity = BUILTIN_FUNCTIONS
        if f not in arity:
            self.err("E0201", f"unknown function '{f}' (builtins: {', '.join(sorted(arity))})", e.span,
                     *self.suggest(f, arity))
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
                return NOT_FOLDED
            case S.Unary(op="-", operand=o):
                v = self.constant(o)
                # Only integers negate; `-ok` (an enum member) is a type error reported elsewhere.
                return -v if isinstance(v, int) and not isinstance(v, bool) else NOT_FOLDED
            case S.Binary(op=op, left=l, right=r) if op in ("|", "+", "-", "*", "**"):
                a, b = self.constant(l), self.constant(r)
                if a is NOT_FOLDED or b is NOT_FOLDED or not isinstance(a, int) or not isinstance(b, int):
                    return NOT_FOLDED
                if op == "**" and not 0 <= b < 512:  # exact integers only: no fractions, no giant powers
                    return NOT_FOLDED
                if too_wide_to_fold(op, a, b):
                    return NOT_FOLDED
                return {"|": lambda: a | b, "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                        "**": lambda: a ** b}[op]()
            case _:
                return NOT_FOLDED

    # ------------------------------------------------------------ lints
