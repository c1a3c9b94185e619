"""Random well-typed specs, as spec text, for the agreement properties of tests/test_agreement.py.

A generated spec has a header, a source, `status int success 0`, an enum, a flags type, constants
(positive and negative), configuration parameters (int, bool, and sometimes an enum and a
version), one to three state variables (int, i64, u64, bool, enum), one or two tables (the first
sized by a size field, mostly a u64 keyed by `addr`, sometimes an i64 (negative sizes) or keyed by
an i64; others also keyed by an enum or a boolean), sometimes an API group, definitions, invariants and one
to three calls or events using every kind of clause and statement. Expressions are built by type
and cover the operators of the language: `%` by positive and negative constants and by values that
may be zero, `**`, `&`, `|`, `~`, `min`/`max`, comparisons, ranges, flag and set membership,
lookups of entries that may be absent, and quantifiers, both in the index-probe shapes
(`exists r in T: r.range overlaps range(p, s) and ...`, the range test either way round, and
`forall r in T: (r.range overlaps range(p, s) and ...) implies ...`, `not (...)`, `B implies not
(...)` or `not (...) or B`, whose counterexample is one), the entry at a key (`exists r in T:
r.key == k and ...`) and the range test written out (`r.key <= p and p < r.key + r.sz`), and in
others (`forall`, nested).

Effects often fail midway (an update or lookup of a key that may be absent, a remainder by a value
that may be zero, after an earlier assignment), so that the undo of a failed effect is exercised.

Local names (call inputs and outputs, quantified variables) never share a name with a global one.
What the solver encoding cannot take (checker/symbolic/encode.py: `&` of two values that are not both
bounded and non-negative, a non-constant exponent) is never generated. Some calls are kept in the
step machine's fragment (checker/fast/stepcode.py: no quantifier but an index probe or a `forall`
whose counterexample is one, no `**`), so that the fast path runs them on the machine.

The generator takes its choices from a `Chooser`: `DrawChooser` (Hypothesis draws, so that a
failing spec shrinks) or `RandomChooser` (a seeded `random.Random`, for statistics).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import strategies as st


# ---------------------------------------------------------------- where the choices come from


class Chooser:
    def int(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def coin(self, p: float = 0.5) -> bool:
        return self.int(0, 99) < int(p * 100)


class RandomChooser(Chooser):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class DrawChooser(Chooser):
    def __init__(self, draw):
        self.draw = draw

    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


# ---------------------------------------------------------------- the spec's shape


ENUM = ("Mode", ("M_IDLE", "M_SLOW", "M_FAST"))
FLAGS = ("Fl", (("F_A", 0x1), ("F_B", 0x4), ("F_C", 0x100), ("F_D", 0x10000000)))
STATUS_CODES = (1, 2, 3, 4, 5)
# field name -> type; `sz` is the size field of sized tables
FIELD_TYPES = {"sz": "u64", "tag": "int", "on": "bool", "md": "Mode", "fl": "Fl", "lim": "i64"}


@dataclass
class TableSpec:
    name: str
    record: str
    key: str  # its type
    fields: list  # (name, type)
    sized: bool


@dataclass
class GenSpec:
    """A generated spec: its text, and what the generator knows about it."""

    text: str
    machine_calls: tuple  # calls kept in the step machine's fragment
    calls: tuple


@dataclass
class Scope:
    """What an expression may use: typed atoms, tables, quantified variables."""

    g: "_Gen"
    state: bool = True  # state (vars, tables) allowed
    locals: dict = field(default_factory=dict)  # input/output name -> type
    bound: dict = field(default_factory=dict)  # quantified variable -> table name
    machine: bool = False  # keep to the step machine's fragment
    safe: bool = False  # nothing that may raise (%, **, lookups): probe predicates
    quants: bool = True  # quantifiers allowed

    def sub(self, **kw) -> "Scope":
        s = Scope(self.g, self.state, dict(self.locals), dict(self.bound), self.machine, self.safe, self.quants)
        for k, v in kw.items():
            setattr(s, k, v)
        return s


# Switches for what the generator draws. The first two were off while the tool got them wrong (found
# by these tests, fixed, each with its regression test in tests/test_agreement.py):
# sets with a non-constant item (`a in {1, b}`: test_a_set_with_a_local_in_it) and `aligned(x, n)`
# that may raise in the predicate of an index probe (test_a_probe_predicate_that_may_raise).
NONCONSTANT_SETS = True
RAISING_PROBE_PREDICATES = True
# `x & y` / `x | y` of two state values of a bounded type stays off: an effect may take such a value
# past its bound (`n = n + 1` for a u64 n), where the encoding leaves `&` unconstrained on purpose
# (test_bits_of_a_variable_past_its_bound_are_not_claimed), so exact agreement cannot be asked.
# Inputs and outputs, which nothing assigns, are used either way.
BITWISE_OF_BOUNDED_STATE = False
# Tables keyed by an enum or a boolean, or by a signed integer, and sized by a signed field (negative
# sizes): shapes the bundled specs never have.
ENUM_AND_NEGATIVE_KEYS = True
KIND_INT = {"int", "i64", "u64", "u32", "addr"}
NONNEG = {"u64", "u32", "addr", "Fl"}  # bounded, non-negative: `&` of two such values is encodable


class _Gen:
    def __init__(self, c: Chooser):
        self.c = c
        self.rules = 0
        self.qn = 0
        self.consts: dict[str, tuple[str, int]] = {}
        self.params: dict[str, str] = {}  # name -> type
        self.vars: dict[str, str] = {}
        self.tables: list[TableSpec] = []
        self.defs: dict[str, str] = {}  # name -> "num" | "bool"
        self.groups: list[str] = []
        self.raising_defs: set[str] = set()  # definitions whose evaluation may raise

    def rule(self, prefix: str = "GEN") -> str:
        self.rules += 1
        return f"{prefix}-R{self.rules}"

    def cite(self) -> str:
        return 'cite DOC "generated"'

    # ---- atoms by type
    def num_atoms(self, s: Scope) -> list[tuple[str, str]]:
        """(code, kind): kind `const` (a constant to the encoder), `nonneg` (bounded and non-negative),
        `sym` (anything else)."""
        c = self.c
        out = [(str(c.pick([0, 1, 2, 3, 7, 4096, 255])), "const"), (f"(-{c.pick([1, 3, 5])})", "const")]
        out += [(n, "const") for n in self.consts]
        out += [(n, "sym") for n, t in self.params.items() if t == "int"]
        state_kind = "nonneg" if BITWISE_OF_BOUNDED_STATE else "sym"
        if s.state:
            out += [(n, state_kind if t in NONNEG else "sym") for n, t in self.vars.items() if t in KIND_INT]
        out += [(n, "nonneg" if t in NONNEG else "sym") for n, t in s.locals.items() if t in KIND_INT or t == "Fl"]
        for v, tname in s.bound.items():
            t = self.table(tname)
            if t.key in KIND_INT:
                out.append((f"{v}.key", state_kind if t.key in NONNEG else "sym"))
            out += [(f"{v}.{f}", state_kind if ft in NONNEG else "sym") for f, ft in t.fields
                    if ft in KIND_INT or ft == "Fl"]
            if t.sized:
                out.append((f"{v}.range.{c.pick(['base', 'end', 'size'])}", "sym"))
        out += [(n, "sym") for n, k in self.defs.items() if k == "num" and s.state and self.def_ok(n, s)]
        return out

    def def_ok(self, name: str, s: Scope) -> bool:
        return not s.safe or RAISING_PROBE_PREDICATES or name not in self.raising_defs

    def bool_atoms(self, s: Scope) -> list[str]:
        out = ["true", "false"] + [n for n, t in self.params.items() if t == "bool"]
        if s.state:
            out += [n for n, t in self.vars.items() if t == "bool"]
            out += [n for n, k in self.defs.items() if k == "bool" and self.def_ok(n, s)]
        out += [n for n, t in s.locals.items() if t == "bool"]
        for v, tname in s.bound.items():
            t = self.table(tname)
            out += [f"{v}.{f}" for f, ft in t.fields if ft == "bool"] + ([f"{v}.key"] if t.key == "bool" else [])
        return out

    def enum_atoms(self, s: Scope) -> list[str]:
        out = list(ENUM[1]) + [n for n, t in self.params.items() if t == "Mode"]
        if s.state:
            out += [n for n, t in self.vars.items() if t == "Mode"]
        out += [n for n, t in s.locals.items() if t == "Mode"]
        for v, tname in s.bound.items():
            t = self.table(tname)
            out += [f"{v}.{f}" for f, ft in t.fields if ft == "Mode"] + ([f"{v}.key"] if t.key == "Mode" else [])
        return out

    def flag_atoms(self, s: Scope) -> list[str]:
        out = [n for n, t in s.locals.items() if t == "Fl"]
        for v, tname in s.bound.items():
            out += [f"{v}.{f}" for f, ft in self.table(tname).fields if ft == "Fl"]
        return out

    def addr_atoms(self, s: Scope) -> list[str]:
        out = [n for n, t in s.locals.items() if t in ("addr", "u64")]
        out += [f"{v}.key" for v, tname in s.bound.items() if self.table(tname).key in KIND_INT]
        return out or ["4096"]

    def table(self, name: str) -> TableSpec:
        return next(t for t in self.tables if t.name == name)

    # ---- numeric expressions
    def num(self, s: Scope, depth: int) -> tuple[str, str]:
        c = self.c
        if depth <= 0 or c.coin(0.35):
            return c.pick(self.num_atoms(s))
        choices = ["arith", "arith", "mod", "mod", "bit", "bit", "unary", "minmax"]
        if not s.machine:
            choices.append("pow")
        if s.state and not s.safe:
            choices += ["lookup"]
        kind = c.pick(choices)
        if kind == "arith":
            (a, ka), (b, kb) = self.num(s, depth - 1), self.num(s, depth - 1)
            return f"({a} {c.pick(['+', '-', '*'])} {b})", _join(ka, kb)
        if kind == "mod":
            a, ka = self.num(s, depth - 1)
            if s.safe:
                d = c.pick(["3", "7", "4096", "(-3)", "(-7)"] + [n for n, (_, v) in self.consts.items() if v != 0])
                return f"({a} % {d})", _join(ka, "const")
            d, kd = c.pick([("3", "const"), ("7", "const"), ("4096", "const"), ("(-3)", "const"), ("(-5)", "const"),
                            c.pick([(n, "const") for n in self.consts]), c.pick(self.num_atoms(s)),
                            c.pick(self.num_atoms(s))])
            return f"({a} % {d})", _join(ka, kd)
        if kind == "pow":
            a, ka = self.num(s, depth - 1)
            return f"({a} ** {c.pick([0, 1, 2, 3])})", ka
        if kind == "bit":
            op = c.pick(["&", "|"])
            if c.coin(0.3):
                nonneg = [x for x, k in self.num_atoms(s) if k == "nonneg"]
                if len(nonneg) >= 1:
                    return f"({c.pick(nonneg)} {op} {c.pick(nonneg)})", "sym"
            a, ka = self.num(s, depth - 1)
            k = c.pick(["0xff", "0x1000", "F_A", "F_B", "(F_A | F_C)", "(~F_A)", "(~(F_B | F_D))", "(-4096)", "7",
                        c.pick(list(self.consts))])
            return (f"({a} {op} {k})" if c.coin() else f"({k} {op} {a})"), _join(ka, "const")
        if kind == "unary":
            a, ka = self.num(s, depth - 1)
            return f"({c.pick(['-', '~'])}{a})", ka
        if kind == "minmax":
            (a, _), (b, _) = self.num(s, depth - 1), self.num(s, depth - 1)
            return f"{c.pick(['min', 'max'])}({a}, {b})", "sym"
        # a lookup: the key may be absent
        t = c.pick(self.tables)
        f, _ = c.pick([(f, ft) for f, ft in t.fields if ft in KIND_INT] or [("key", "addr")])
        if f == "key" and t.key not in KIND_INT:
            return "(-1)", "const"
        key = self.key_expr(s, t)
        return f"{t.name}[{key}].{f}", "sym"

    def key_expr(self, s: Scope, t: TableSpec) -> str:
        c = self.c
        if t.key == "Mode":
            return c.pick(self.enum_atoms(s))
        if t.key == "bool":
            return c.pick(self.bool_atoms(s))
        a = c.pick(self.addr_atoms(s))
        return c.pick([a, a, a, f"({a} + 4096)", "4096", "0"] + (["(-4096)"] if t.key in ("i64", "int") else []))

    # ---- boolean expressions
    def boolean(self, s: Scope, depth: int) -> str:
        c = self.c
        if depth <= 0 or c.coin(0.15):
            return c.pick(self.bool_atoms(s))
        choices = ["cmp", "cmp", "cmp", "logic", "logic", "not", "enum", "set", "flag", "range", "aligned"]
        if s.state and self.tables:
            choices += ["member", "quant", "quant", "quant"] if s.quants else ["member"]
            if not s.safe:
                choices.append("lookup")
        if "cfg_ver" in self.params:
            choices.append("version")
        kind = c.pick(choices)
        if kind == "cmp":
            (a, _), (b, _) = self.num(s, depth - 1), self.num(s, depth - 1)
            return f"({a} {c.pick(['==', '!=', '<', '<=', '>', '>='])} {b})"
        if kind == "logic":
            a, b = self.boolean(s, depth - 1), self.boolean(s, depth - 1)
            return f"({a} {c.pick(['and', 'or', 'implies', '=='])} {b})"
        if kind == "not":
            return f"(not {self.boolean(s, depth - 1)})"
        if kind == "enum":
            atoms = self.enum_atoms(s)
            return f"({c.pick(atoms)} {c.pick(['==', '!='])} {c.pick(atoms)})"
        if kind == "set":
            a, _ = self.num(s, depth - 1)
            items = [c.pick(["0", "1", "3", "4096", "(-1)"] + list(self.consts)) for _ in range(c.int(1, 3))]
            if NONCONSTANT_SETS and not s.machine and c.coin(0.3):
                items.append(c.pick(self.num_atoms(s))[0])
            if c.coin(0.2):
                e = c.pick(self.enum_atoms(s))
                return f"({e} in {{{', '.join(c.pick(ENUM[1]) for _ in range(c.int(1, 2)))}}})"
            return f"({a} in {{{', '.join(items)}}})"
        if kind == "flag":
            fl = self.flag_atoms(s)
            if not fl:
                return self.boolean(s, depth - 1)
            target = c.pick(fl + [f"({c.pick(fl)} | F_B)", f"({c.pick(fl)} & (F_A | F_C))"])
            return f"({c.pick(['F_A', 'F_B', 'F_C', 'F_D', '(F_A | F_B)'])} in {target})"
        if kind == "range":
            x = self.range_expr(s, depth - 1)
            op = c.pick(["overlaps", "contains", "contains_addr", "in"])
            if op == "contains_addr":
                return f"({x} contains {self.num(s, depth - 1)[0]})"
            if op == "in":
                return f"({self.num(s, depth - 1)[0]} in {x})"
            return f"({x} {op} {self.range_expr(s, depth - 1)})"
        if kind == "aligned":
            a, _ = self.num(s, depth - 1)
            divisors = ["4096", "64", "(-8)"]
            if not s.safe or RAISING_PROBE_PREDICATES:
                divisors.append(c.pick(self.num_atoms(s))[0])  # may be zero
            d = c.pick(divisors)
            return f"aligned({a}, {d})"
        if kind == "member":
            t = c.pick(self.tables)
            return f"({self.key_expr(s, t)} in {t.name})"
        if kind == "lookup":
            t = c.pick(self.tables)
            key = self.key_expr(s, t)
            f, ft = c.pick(t.fields)
            test = {"bool": f"{t.name}[{key}].{f}", "Mode": f"({t.name}[{key}].{f} == {c.pick(ENUM[1])})"}.get(
                ft, f"({t.name}[{key}].{f} > {c.pick(['0', '1', '4096'])})")
            return f"(({key} in {t.name}) and {test})" if c.coin(0.7) else f"({test})"
        if kind == "version":
            op = c.pick(["<", "<=", ">", ">=", "==", "!="])
            return f"(cfg_ver {op} {c.pick(['5.10', '5.10.1', '6.6', '4.19.90', '5.10.0'])})"
        return self.quant(s, depth - 1)

    def range_expr(self, s: Scope, depth: int) -> str:
        c = self.c
        opts = [f"range({self.num(s, depth)[0]}, {self.num(s, depth)[0]})",
                f"range({c.pick(self.addr_atoms(s))}, "
                f"{c.pick(['0', '1', '4096', '8192'] + [x for x, _ in self.num_atoms(s)])})"]
        opts += [f"{v}.range" for v, t in s.bound.items() if self.table(t).sized]
        sized = [t for t in self.tables if t.sized]
        if s.state and sized and not s.safe:
            t = c.pick(sized)
            opts.append(f"{t.name}[{self.key_expr(s, t)}].range")
        return c.pick(opts)

    def quant(self, s: Scope, depth: int) -> str:
        c = self.c
        self.qn += 1
        v = f"qv{self.qn}"
        sized = [t for t in self.tables if t.sized]
        if not s.machine and c.coin(0.2):  # the entry at a key, or the range test written out
            return self.keyed_quant(s, depth, v)
        probe = sized and (s.machine or c.coin(0.6))
        if probe:
            t = c.pick(sized)
            inner = s.sub(bound={**s.bound, v: t.name})
            if s.machine:
                inner = inner.sub(safe=True, quants=False)
            op = c.pick(["overlaps", "contains", "contains_addr"])
            outer = s.sub(quants=False) if s.machine else s
            other = (c.pick(self.addr_atoms(outer)) if op == "contains_addr" else self.range_expr(outer, 1))
            test = f"{v}.range {'contains' if op == 'contains_addr' else op} {other}"
            if op == "overlaps" and c.coin(0.3):
                test = f"{other} overlaps {v}.range"  # the same probe, written the other way round
            rest = [self.boolean(inner, depth) for _ in range(c.pick([0, 1, 1, 2]))]
            parts = [test] + rest
            if c.coin(0.3):
                parts.reverse()
            if c.coin(0.25):  # a forall whose counterexample is such a probe (`counterexample_quant`)
                probe, other_test = f"({' and '.join(parts)})", self.boolean(inner, depth)
                body = c.pick([f"{probe} implies {other_test}", f"not {probe}", f"{other_test} implies not {probe}",
                               f"not {probe} or {other_test}"])
                return f"(forall {v} in {t.name}: {body})"
            return f"(exists {v} in {t.name}: {' and '.join(parts)})"
        t = c.pick(self.tables)
        inner = s.sub(bound={**s.bound, v: t.name})
        return f"({c.pick(['exists', 'forall'])} {v} in {t.name}: {self.boolean(inner, depth)})"

    def keyed_quant(self, s: Scope, depth: int, v: str) -> str:
        """`exists v in T: v.key == X and ...`, or `v.key <= X and X < v.key + v.sz and ...` (each
        either way round), or a forall whose counterexample is one of them."""
        c = self.c
        t = c.pick(self.tables)
        inner = s.sub(bound={**s.bound, v: t.name})
        x = self.key_expr(s, t)
        if t.sized and c.coin(0.5):
            tests = [c.pick([f"{v}.key <= {x}", f"{x} >= {v}.key"]),
                     c.pick([f"{x} < {v}.key + {v}.sz", f"{v}.sz + {v}.key > {x}"])]
        else:
            tests = [c.pick([f"{v}.key == {x}", f"{x} == {v}.key"])]
        parts = tests + [self.boolean(inner, depth) for _ in range(c.pick([0, 1, 1, 2]))]
        if c.coin(0.3):
            parts.reverse()
        if c.coin(0.3):
            return f"(forall {v} in {t.name}: ({' and '.join(parts)}) implies {self.boolean(inner, depth)})"
        return f"(exists {v} in {t.name}: {' and '.join(parts)})"

    # ---- values of declared types (fields, variables)
    def value_of(self, t: str, s: Scope, depth: int) -> str:
        c = self.c
        if t == "bool":
            return self.boolean(s, depth)
        if t == "Mode":
            return c.pick(self.enum_atoms(s))
        if t == "Fl" and c.coin(0.5):
            fl = self.flag_atoms(s)
            return c.pick(fl + ["F_A", "(F_B | F_C)", "0"])
        if t in ("u64", "addr") and c.coin(0.4):
            return c.pick(self.addr_atoms(s) + ["4096", "0"])
        return self.num(s, depth)[0]

    # ---- statements
    def stmts(self, s: Scope, n: int, depth: int, risky: bool) -> list[str]:
        out = []
        for i in range(n):
            out.append(self.stmt(s, depth, risky and i == n - 1))
        return out

    def stmt(self, s: Scope, depth: int, risky: bool) -> str:
        c = self.c
        kinds = ["assign", "insert", "insert", "update", "delete"] + (["if"] if depth > 0 else [])
        kind = "risky" if risky else c.pick(kinds)
        if kind == "risky":
            kind = c.pick(["update", "assign_mod", "assign_lookup"])
        t = c.pick(self.tables)
        if kind == "assign" or kind.startswith("assign_"):
            v, vt = c.pick(list(self.vars.items()))
            if kind == "assign_mod" and vt in KIND_INT:
                return f"{v} = ({c.pick(self.num_atoms(s))[0]} % {c.pick([x for x, _ in self.num_atoms(s)])})"
            ints = [f for f, ft in t.fields if ft in KIND_INT] + (["key"] if t.key in KIND_INT else [])
            if kind == "assign_lookup" and vt in KIND_INT and ints:
                return f"{v} = {t.name}[{self.key_expr(s, t)}].{c.pick(ints)}"
            return f"{v} = {self.value_of(vt, s, 2)}"
        if kind == "insert":
            fields = ", ".join(f"{f}: {self.value_of(ft, s, 1)}" for f, ft in t.fields)
            return f"{t.name}[{self.key_expr(s, t)}] = {{ {fields} }}"
        if kind == "update":
            f, ft = c.pick(t.fields)
            return f"{t.name}[{self.key_expr(s, t)}].{f} = {self.value_of(ft, s, 1)}"
        if kind == "delete":
            return f"delete {t.name}[{self.key_expr(s, t)}]"
        cond = self.boolean(s, 2)
        then = " ".join(self.stmts(s, c.int(1, 2), depth - 1, False))
        if c.coin(0.5):
            return f"if {cond} {{ {then} }} else {{ {' '.join(self.stmts(s, c.int(0, 2), depth - 1, False))} }}"
        return f"if {cond} {{ {then} }}"


def _join(a: str, b: str) -> str:
    return "const" if a == b == "const" else "sym"


LOCAL_TYPES = ("int", "i64", "u64", "addr", "addr", "u32", "bool", "Mode", "Fl")


def gen_spec(c: Chooser) -> GenSpec:
    """One random spec (see the module docstring)."""
    g = _Gen(c)
    lines = ['spec gen "a generated spec"', 'source DOC "generated" "generated"', "status int success 0",
             f"enum {ENUM[0]} {{ {', '.join(ENUM[1])} }}",
             f"flags {FLAGS[0]}: u32 {{ {', '.join(f'{n} = {v:#x}' for n, v in FLAGS[1])} }}"]
    # constants: one positive, one negative, maybe more
    consts = [("K_POS", "int", c.pick([3, 5, 7, 4096])), ("K_NEG", "int", -c.pick([2, 3, 5, 7]))]
    if c.coin(0.5):
        consts.append(("K_BIG", "u64", c.pick([2**40, 2**63, 2**64 - 1])))
    if c.coin(0.3):
        consts.append(("K_ZERO", "int", 0))
    for n, t, v in consts:
        g.consts[n] = (t, v)
        lines.append(f"const {n}: {t} = {v}" if v >= 0 else f"const {n}: {t} = -{-v}")
    # configuration
    params = [("cfg_lvl", "int", str(c.pick([-3, 0, 2, 5])))]
    if c.coin(0.6):
        params.append(("cfg_on", "bool", c.pick(["true", "false"])))
    if c.coin(0.3):
        params.append(("cfg_mode", "Mode", c.pick(ENUM[1])))
    if c.coin(0.25):
        params.append(("cfg_ver", "version", c.pick(["5.10", "6.6"])))
    for n, t, v in params:
        g.params[n] = t
        lines.append(f"param {n}: {t} = {v}")
    # state
    var_types = ["int", "i64", "u64", "bool", "Mode"]
    for i in range(c.int(1, 3)):
        t = c.pick(var_types)
        g.vars[f"v_{i}"] = t
        init = {"bool": c.pick(["true", "false"]), "Mode": c.pick(ENUM[1])}.get(t, str(c.pick([0, 1, 5])))
        lines.append(f"var v_{i}: {t} = {init}")
    if not any(t in KIND_INT for t in g.vars.values()):
        g.vars["v_n"] = "int"
        lines.append("var v_n: int = 0")
    for i in range(c.int(1, 2)):
        sized = i == 0 or c.coin(0.5)
        names = ["tag", "on", "md", "fl", "lim"]
        chosen = [f for f in names if c.coin(0.45)] or ["tag"]
        # sizes and keys: mostly what memory has (u64, addr), sometimes negative ones (an i64 size, an
        # i64 key), and tables keyed by an enum or a boolean (no interval index there)
        size = "u64" if not ENUM_AND_NEGATIVE_KEYS or c.coin(0.8) else "i64"
        fields = ([("sz", size)] if sized else []) + [(f, FIELD_TYPES[f]) for f in chosen]
        if not ENUM_AND_NEGATIVE_KEYS:
            key = "addr" if sized or c.coin(0.7) else "i64"
        elif sized:
            key = "addr" if c.coin(0.85) else "i64"
        else:
            key = "addr" if c.coin(0.6) else c.pick(["i64", "Mode", "bool"])
        t = TableSpec(f"tbl{i}", f"Rec{i}", key, fields, sized)
        g.tables.append(t)
        lines.append(f"record Rec{i} {{ {', '.join(f'{f}: {ft}' for f, ft in fields)} }}")
        lines.append(f"table tbl{i}: {key} -> Rec{i}" + (" sized by sz" if sized else ""))
    if c.coin(0.3):
        g.groups = ["grp_a", "grp_b"]
        mode_vars = [n for n, t in g.vars.items() if t == "Mode"]
        if mode_vars:
            lines.append(f"group grp_a when {mode_vars[0]} == {c.pick(ENUM[1])}")
        else:
            lines.append(f"group grp_a when {g.boolean(Scope(g, machine=True, safe=True, quants=False), 1)}")
        lines.append(f"group grp_b when {g.boolean(Scope(g, machine=True, safe=True, quants=False), 1)}")
    # definitions: in the machine's fragment (they are expanded where they are used)
    for i in range(c.int(0, 2)):
        s = Scope(g, machine=True, quants=c.coin(0.5))
        if c.coin(0.5):
            text, kind = g.num(s, 2)[0], "num"
        else:
            text, kind = g.boolean(s, 2), "bool"
        lines.append(f"def dfn{i} = {text}")
        if any(x in text for x in ("%", "**", "[", "aligned(")) or any(d in text for d in g.raising_defs):
            g.raising_defs.add(f"dfn{i}")
        g.defs[f"dfn{i}"] = kind
    # invariants
    for _ in range(c.int(0, 3)):
        lines.append(f"invariant {g.rule('INV')}: {_invariant(g)} {g.cite()}")
    # calls
    calls, machine = [], []
    for i in range(c.int(1, 3)):
        name, kind = f"op{i}", "event" if c.coin(0.2) else "call"
        m = c.coin(0.6)
        calls.append(name)
        if m:
            machine.append(name)
        lines.append(_call(g, name, kind, m))
    return GenSpec("\n".join(lines) + "\n", tuple(machine), tuple(calls))


def _invariant(g: _Gen) -> str:
    c = g.c
    ints = [n for n, t in g.vars.items() if t in KIND_INT]
    t = c.pick(g.tables)
    templates = [
        lambda: f"{c.pick(ints)} >= {c.pick(['0', '(-1)', 'K_NEG'])}",
        lambda: f"forall qi{g.rule()[4:].replace('-', '')} in {t.name}: true",
        lambda: g.boolean(Scope(g), 2),
        lambda: g.boolean(Scope(g), 3),
    ]
    if t.sized:
        templates.append(lambda: f"forall qa in {t.name}: qa.sz > 0")
        templates.append(lambda: f"forall qa in {t.name}: forall qb in {t.name}: qa.key != qb.key implies "
                                 f"not qa.range overlaps qb.range")
    return c.pick(templates)()


def _call(g: _Gen, name: str, kind: str, machine: bool) -> str:
    c = g.c
    params = {}
    for i in range(c.int(0 if kind == "event" else 1, 4)):
        params[f"a{name[2:]}_{i}"] = c.pick(LOCAL_TYPES)
    outputs = {}
    if c.coin(0.35):
        for i in range(c.int(1, 2)):
            outputs[f"o{name[2:]}_{i}"] = c.pick(["addr", "addr", "int", "bool"])
    s = Scope(g, locals=dict(params), machine=machine)
    so = s.sub(locals={**params, **outputs})
    sig = ", ".join(f"{n}: {t}" for n, t in params.items())
    last = list(params)[-1] if params else None
    if last is not None and params[last] != "Fl" and c.coin(0.3):  # a default a trace line may leave out
        sig += " = " + (c.pick(["true", "false"]) if params[last] == "bool" else
                        c.pick(ENUM[1]) if params[last] == "Mode" else c.pick(["0", "1", "7"]))
    out = f" -> ({', '.join(f'{n}: {t}' for n, t in outputs.items())})" if outputs else ""
    clauses = []
    fails = []
    # a "clean" call has no obligations and no silence, so that its conforming lines are many (the
    # fast path takes only those: its step gives the others to the general path)
    clean = c.coin(0.4)
    for _ in range(c.int(0, 5)):
        k = c.pick((["fails", "fails", "may"] if clean else
                    ["requires", "undefined", "fails", "fails", "fails", "may", "unspecified"]
                    + (["usage"] if g.groups else [])) + (["ensures"] if outputs else []))
        r = g.rule()
        if k == "requires":
            clauses.append(f"requires {r}: {g.boolean(s, 3)} {g.cite()}")
        elif k == "undefined":
            clauses.append(f"requires {r}: {g.boolean(s, 3)} undefined {g.cite()}")
        elif k == "fails":
            codes = c.pick([str(c.pick(STATUS_CODES)), "{1, 2}", "{3, 4, 5}"])
            clauses.append(f"fails {r}: {codes} when {g.boolean(s, 3)} {g.cite()}")
            fails.append(r)
        elif k == "may":
            codes = c.pick(["any", "any except {1, 2}", "4", "{2, 5}"])
            when = f" when {g.boolean(s, 2)}" if c.coin(0.6) else ""
            clauses.append(f"may fail {r}: {codes}{when} {g.cite()}")
        elif k == "unspecified":
            clauses.append(f"unspecified {r}: when {g.boolean(s, 2)} {g.cite()}")
        elif k == "ensures":
            clauses.append(f"ensures {r}: {g.boolean(so, 3)} {g.cite()}")
        else:
            clauses.append(f"usage {r}: only in {', '.join(g.groups[:c.int(1, 2)])} {g.cite()}")
    if c.coin(0.1):  # such a call has no fast step: its lines all take the general path
        clauses.append(f"usage {g.rule()}: not thread_safe {g.cite()}")
    if len(fails) >= 2 and c.coin(0.4):
        clauses.append(f"order {fails[-1]} > {fails[0]}")
    if kind == "call" or c.coin(0.7):
        n = c.int(1, 4)
        body = g.stmts(so, n, 2, risky=c.coin(0.5))
        ints = [v for v, t in g.vars.items() if t in KIND_INT]
        if c.coin(0.5):
            v = c.pick(ints)
            body.insert(0, f"{v} = ({v} + 1)")  # an earlier assignment the undo must reverse
        if c.coin(0.5):  # an edge the final state shows: an equal pair, a remainder of mixed signs
            atoms = [x for x, _ in g.num_atoms(so)]
            a, b, v = c.pick(atoms), c.pick(atoms), c.pick(ints)
            d = c.pick(["(-3)", "(-7)", "K_NEG", "3", c.pick(atoms)])
            body.insert(c.int(0, len(body)), c.pick([
                f"{v} = ({a} % {d})",
                f"if ({a} {c.pick(['<=', '>=', '<', '>'])} {b}) {{ {v} = ({v} + 2) }} else {{ {v} = ({v} - 3) }}",
                f"{v} = min({a}, {b})"]))
        clauses.append(f"effect {g.rule()}: {{ {' '.join(body)} }} {g.cite()}")
    inner = "\n  ".join(clauses)
    return f"{kind} {name}({sig}){out} {{\n  {inner}\n}}"


@st.composite
def specs(draw) -> GenSpec:
    """A Hypothesis strategy of generated specs (shrinks towards smaller choices)."""
    return gen_spec(DrawChooser(draw))
