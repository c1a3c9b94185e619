"""Z3 values of the spec's types: sorts, fresh values and their bounds (Types), the shapes of encoded
values (Rng, Ver, Entry), and the formula helpers the layers above combine them with."""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import z3

from ..language import syntax as S
from ..language.analysis import nodes
from ..language.checked import FLAGS_BOUNDS, INT_BOUNDS, CheckedSpec, Type, normalise_version
from ..language.diagnostics import RegcheckError, error
from ..language.source import NO_SPAN, Span


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


def unsupported(msg: str, span: Span = NO_SPAN) -> RegcheckError:
    return RegcheckError([error("P0901", f"cannot encode for the solver: {msg}", span)])



# ---------------------------------------------------------------- sorts, fresh values, bounds


class Types:
    """Per-spec knowledge of how each type is represented."""

    def __init__(self, spec: CheckedSpec, longest: int = 0):
        """`longest`: the most components of a version given from outside the spec (a concrete
        configuration's); versions get room for it too, so that such a version is encoded exactly
        (a shortened one compares like it only with the spec's literals, not with the inputs)."""
        self.spec = spec
        hit = _VERSION_WIDTH.get(id(spec))
        if hit is None or hit[0] is not spec:  # the AST walk is costly: once per spec
            hit = _VERSION_WIDTH[id(spec)] = (spec, _longest_version(spec) + 1)
        self.version_width = max(hit[1], longest + 1)

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
                return numeral(int(value))
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
                return int_in(model, v)
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


def rebuild(like, parts):
    if isinstance(like, Rng):
        return Rng(*parts)
    if isinstance(like, Ver):
        return Ver(parts)
    return parts[0]


def is_const(v) -> bool:
    return z3.is_int_value(v)


def int_value(v) -> int:
    return _decimal(v.as_string())


# Z3 takes and gives integer numerals in decimal, and Python converts an int of more than 4,300
# decimal digits to or from a string only on request (ValueError otherwise): a spec's constants may
# have 65,536 bits (about 19,700 digits), and its arithmetic has no bound at all.
_NUMERAL_BITS = 8192  # (2,467 digits)


def numeral(v: int):
    """v as a Z3 integer, exactly, however wide: as a numeral within _NUMERAL_BITS, else as the term
    hi * 2**_NUMERAL_BITS + lo, which Z3 evaluates exactly (it is no numeral: `is_const` says no)."""
    if -(1 << _NUMERAL_BITS) < v < (1 << _NUMERAL_BITS):
        return z3.IntVal(v)
    hi, lo = divmod(v, 1 << _NUMERAL_BITS)
    return numeral(hi) * z3.IntVal(1 << _NUMERAL_BITS) + z3.IntVal(lo)


def _decimal(text: str) -> int:
    """int(text) for a decimal numeral of any length (in halves past 4,000 digits)."""
    digits = text.lstrip("-")
    if len(digits) <= 4000:
        return int(text)
    half = len(digits) // 2
    value = _decimal(digits[:half]) * 10 ** (len(digits) - half) + _decimal(digits[half:])
    return -value if text.startswith("-") else value


# ---------------------------------------------------------------- formulas for the layers above

# The prover and the bounded model checker combine the formulas built here; they do it through
# these helpers so that z3 stays behind this module and `checker.symbolic.solver`. No formula is
# kept at module level: each belongs to the Z3 context current when it is built (see
# `checker.symbolic.solver.isolated_context`).


def _flat(fs) -> list:
    return list(fs[0]) if len(fs) == 1 and isinstance(fs[0], (list, tuple)) else list(fs)


def conj(*fs):
    """And of formulas (given as arguments or one list); True when there are none."""
    fs = _flat(fs)
    return z3.And(fs) if fs else z3.BoolVal(True)


def disj(*fs):
    """Or of formulas (given as arguments or one list); False when there are none."""
    fs = _flat(fs)
    return z3.Or(fs) if fs else z3.BoolVal(False)


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
    return int_value(model.eval(term, model_completion=True))
