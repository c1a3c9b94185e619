"""Compiles a call's fast step into code for the step machine of the C module (`Step` in
checker/native/_native.c).

Why: with the trace decoded in C, the generated Python step is most of a fast-path event's cost
(field reads, clause tests, the outcome set, the effect: 30-40 lines of bytecode). The machine
runs the same clauses as a few dozen register instructions on 128-bit integers.

It is not a second semantics. The code is compiled from the same checked AST, clause by clause in
the order of `Semantics._bit` and the fast path's Python step, with the same folding of what the
configuration fixes (`Emitter.is_static` / `fold`), the same short-circuits and the same
interval-index probes; the outcome sets still come from `Semantics.allowed_for_mask`. The machine
gives up (the line goes to the general path, nothing changed) where the Python step would return
False or raise EvalError / KeyError, and where a value leaves 128 bits. A call whose step uses
something the machine does not do (versions, sets other than constants, a quantifier that is not
an index probe (a `forall v in T: A implies B` is one when `exists v in T: A and not B`, its
counterexample, is), a predicate with a quantifier in it, more than MAX_MASK_BITS mask
bits) gets no program and keeps its Python step. tests/test_fastpath.py replays traces with
both kinds of step against the general path.

The instruction set (names and operand counts) is the C module's `OPCODES`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from ..language import syntax as S
from ..language.analysis import counterexample_quant
from ..language.checked import value_bounds
from ..model.codegen import NOT_CONSTANT, Emitter, name_meaning
from ..model.semantics import Semantics

KIND_INT, KIND_BOOL, KIND_ENUM = 0, 1, 2
_KINDS = {"int": KIND_INT, "flags": KIND_INT, "bool": KIND_BOOL, "enum": KIND_ENUM}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # the machine's registers hold what as_i64 reads

Spelling = tuple  # (flag names -> value, or None; lo; hi)


def spelling_of(spec, t) -> Spelling | None:
    """How a value of integer type `t` may also be written on the fast path besides a JSON integer
    (trace-format.md): a "0x..." string, and for flags one flag's name or a list of names. The
    value read must lie in [lo, hi], the type's bounds within int64 (beyond them, the general path
    reads it). None for a type that is not an integer. The Python step and the machine read
    spellings by this one description."""
    if t.kind not in ("int", "flags"):
        return None
    lo, hi = value_bounds(t) or (INT64_MIN, INT64_MAX)
    return (dict(spec.flags[t.name]) if t.kind == "flags" else None, max(lo, INT64_MIN), min(hi, INT64_MAX))


def field_spellings(sem: Semantics, call: str) -> tuple[Spelling | None, ...]:
    """The spelling of each register the step loads: the call's parameters, then its outputs."""
    info = sem.calls[call].info
    return tuple(spelling_of(sem.spec, t) for _, t in (*info.params, *info.outputs))


def status_spelling(sem: Semantics) -> Spelling | None:
    """How an integer status may also be written: a "0x..." string (trace-format.md's `ret`), within
    the status type's bounds; None for a status type that is not an integer (names are read as they are)."""
    t = sem.spec.status_type
    return spelling_of(sem.spec, t) if t.kind == "int" else None


PROBE_OVERLAPPING, PROBE_CONTAINING, PROBE_CONTAINING_ADDR = 0, 1, 2
WIDE_LIMIT = 2**126  # constants stay well inside the machine's 128 bits
_ARITH = {"+": "ADD", "-": "SUB", "*": "MUL", "&": "AND", "|": "OR", "==": "EQ", "!=": "NE", "<": "LT",
          "<=": "LE", ">": "GT", ">=": "GE"}


class NotCompiled(Exception):
    """The step uses something the machine does not do; the call keeps its Python step."""


@dataclass(frozen=True)
class Program:
    """One call's step as machine code, with everything `Step` needs besides the replay's state."""

    code: tuple[int, ...]
    consts: tuple[int, ...]
    sets: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    entries: tuple[int, ...]  # mask_pc, ensures_pc, effect_pc, nregs, mask0, mask_bits, is_event, status_kind
    param_kinds: tuple[int, ...]
    output_kinds: tuple[int, ...]
    enums: tuple[dict, tuple[str, ...], tuple]  # member codes, members by code, field_spellings + the status's
    success: tuple[Any, int]


def compile_step(sem: Semantics, call: str, opcodes: dict[str, tuple[int, int]], max_regs: int,
                 max_mask_bits: int) -> Program | None:
    """The machine code of `call`'s fast step, or None when the machine cannot run it."""
    try:
        return _Compiler(sem, call, opcodes, max_regs, max_mask_bits).program()
    except NotCompiled:
        return None


def disassemble(program: Program, opcodes: dict[str, tuple[int, int]]) -> list[tuple[int, str, tuple[int, ...]]]:
    """The program's code as (position, instruction name, operands), for tests and debugging."""
    names = {code: (name, arity) for name, (code, arity) in opcodes.items()}
    out, pc, code = [], 0, program.code
    while pc < len(code):
        name, arity = names[code[pc]]
        n = arity + (3 * code[pc + 3] if name == "PUT" else 0)  # PUT: three more per field
        out.append((pc, name, tuple(code[pc + 1:pc + 1 + n])))
        pc += 1 + n
    return out


def enum_codes(sem: Semantics) -> tuple[dict[str, int], tuple[str, ...]]:
    """Each enum member's code (members are unique across a spec's enums), and the member of each code."""
    names = tuple(m for members in sem.spec.enums.values() for m in members)
    return {m: i for i, m in enumerate(names)}, names


class _Temp(int):
    """A temporary register, numbered until the constants are known."""


class _Const(int):
    """The register of a constant, by its index among the constants."""


class _Label:
    """A jump target, placed by `_Compiler.land`."""

    at: int | None = None


class _Compiler:
    """Emits instructions with symbolic registers and labels; `program` lays them out.

    Registers: the parameters, then the outputs (the machine loads them), then the constants (it
    copies them in), then the temporaries. Conditions compile to jumps (`jump_unless` /
    `jump_if`) with Python's short-circuit order; values (`expr`) to registers."""

    def __init__(self, sem: Semantics, call: str, opcodes: dict[str, tuple[int, int]], max_regs: int,
                 max_mask_bits: int):
        self.sem, self.spec, self.call = sem, sem.spec, call
        self.info = sem.calls[call].info
        self.opcodes, self.max_regs, self.max_mask_bits = opcodes, max_regs, max_mask_bits
        self.em = Emitter(sem.spec, sem.config)  # for the configuration's folding, as the Python step
        self.tables = list(sem.spec.tables)
        self.instructions: list[list] = []
        self.consts: list[int] = []
        self.const_at: dict[tuple[type, int], int] = {}
        self.sets: list[tuple[int, ...]] = []
        self.names: list[str] = []
        self.codes, self.members = enum_codes(sem)
        self.params = [n for n, _ in self.info.params]
        self.outputs = [n for n, _ in self.info.outputs]
        self.temps = 0
        self.locals: dict[str, int] = {}
        self.entry_var: str | None = None  # the quantified variable, inside a predicate
        self.predicates: list[tuple[_Label, S.Quant, list[S.Expr]]] = []
        # One predicate per distinct quantifier: the machine then knows a probe asked again (the
        # same `exists` in two clauses) by its predicate's place, and answers it without walking.
        self.predicate_labels: dict[S.Quant, _Label] = {}

    # ---- the program
    def program(self) -> Program:
        param_kinds = tuple(self._type_kind(t) for _, t in self.info.params)
        output_kinds = tuple(self._type_kind(t) for _, t in self.info.outputs)
        status_kind = self._type_kind(self.spec.status_type)
        success = self.sem.success
        success_code = self._value_code(success)
        self._use_locals(self.params)
        mask, mask0, bits = self.land(_Label()), *self._mask()
        if bits > self.max_mask_bits or bits != len(self.sem.calls[self.call].bits):
            raise NotCompiled("mask")
        self.emit("END")
        self._use_locals(self.params + self.outputs)
        ensures, effect = self.info.clauses(S.Ensures), self.info.clauses(S.Effect)
        ensures_at = self.land(_Label()) if ensures else None
        if ensures:
            broken = [j for c in ensures for j in self.jump_unless(c.cond)]
            self.emit("END")
            self.land_all(broken)
            self.emit("GIVEUP")
        effect_at = self.land(_Label()) if effect else None
        for c in effect:
            self.stmts(c.body)
        if effect:
            self.emit("END")
        self._emit_predicates()
        code, nregs, pcs = self._layout()
        entries = (pcs[mask.at], pcs[ensures_at.at] if ensures_at else -1, pcs[effect_at.at] if effect_at else -1,
                   nregs, mask0, bits, self.info.decl.kind == "event", status_kind)
        return Program(code, tuple(self.consts), tuple(self.sets), tuple(sys.intern(n) for n in self.names),
                       entries, param_kinds, output_kinds,
                       (self.codes, self.members, (*field_spellings(self.sem, self.call), status_spelling(self.sem))),
                       (success, success_code))

    def _layout(self) -> tuple[tuple[int, ...], int, list[int]]:
        """The code with registers and labels as numbers, the register count, and the position of
        each instruction (by index; one more for the end)."""
        base = len(self.params) + len(self.outputs)
        nregs = base + len(self.consts) + self.temps
        if nregs > self.max_regs:
            raise NotCompiled("registers")
        pcs = [0]
        for ins in self.instructions:
            pcs.append(pcs[-1] + len(ins))

        def number(x) -> int:
            if isinstance(x, _Label):
                return pcs[x.at]
            if isinstance(x, _Temp):
                return base + len(self.consts) + x
            if isinstance(x, _Const):
                return base + x
            return x
        code = [self.opcodes[ins[0]][0] if k == 0 else number(x) for ins in self.instructions for k, x in enumerate(ins)]
        return tuple(code), nregs, pcs

    def _use_locals(self, names: list[str]) -> None:
        order = self.params + self.outputs
        self.locals = {n: order.index(n) for n in names}

    def _mask(self) -> tuple[int, int]:
        """The mask's instructions, in the clause order of `Semantics._bit`: (constant bits, bit count)."""
        mask0, bit = 0, 0
        for c in self.info.decl.clauses:
            skip = self._bit_skips(c)
            if skip is None:
                continue
            if skip is True:
                mask0 |= 1 << bit
            elif skip is not False:
                self.emit("MASK", 1 << bit)
                self.land_all(skip)
            bit += 1
        return mask0, bit

    def _bit_skips(self, c: S.Clause):
        """For a clause that is a mask bit: jumps past its MASK taken when the bit is clear (True /
        False: the bit is always set / clear); None for other clauses. See `Semantics._bit`."""
        match c:
            case S.OnlyIn():
                return self._constant_or([g for grp in c.groups for g in [self.spec.groups[grp]]], negate=True)
            case S.Requires():
                return self._constant_or([c.cond], negate=True)
            case S.Fails() | S.Unspecified():
                return self._constant_or([c.cond])
            case S.MayFail():
                return self._constant_or([c.cond]) if c.cond is not None else True
        return None

    def _constant_or(self, conds: list[S.Expr], negate: bool = False):
        """Jumps taken when `any(conds)` (negate: `not any(conds)`) is false, or a constant truth."""
        if all(self._static(e) is not NOT_CONSTANT for e in conds):
            value = any(self._static(e) for e in conds)
            return (not value) if negate else bool(value)
        if negate:
            return [j for e in conds for j in self.jump_if(e)]
        if len(conds) == 1:
            return self.jump_unless(conds[0])
        raise NotCompiled("several conditions")  # not reached: only only_in has several

    def _emit_predicates(self) -> None:
        one, zero = self.const(True), self.const(False)
        while self.predicates:
            label, q, rest = self.predicates.pop(0)
            self.land(label)
            self.entry_var = q.var
            fails = [j for c in rest for j in self.jump_unless(c)]
            self.emit("RET", one)
            self.land_all(fails)
            self.emit("RET", zero)
            self.entry_var = None

    # ---- emitting
    def emit(self, op: str, *operands) -> list:
        """Append an instruction (operands: numbers, registers, labels)."""
        arity = self.opcodes[op][1]
        if op != "PUT" and len(operands) != arity:
            raise AssertionError(f"{op} takes {arity} operands")
        ins = [op, *operands]
        self.instructions.append(ins)
        return ins

    def land(self, label: _Label) -> _Label:
        """Place a label at the next instruction."""
        label.at = len(self.instructions)
        return label

    def land_all(self, labels: list[_Label]) -> None:
        for label in labels:
            self.land(label)

    def reg(self) -> _Temp:
        self.temps += 1
        return _Temp(self.temps - 1)

    def const(self, value) -> _Const:
        """The register of a constant. One register per value *and kind*: the machine boxes a
        register's value into the Python object of the kind it is first read as, so `true`, an enum
        member coded 1 and the integer 1 must not share one."""
        v = self._value_code(value)
        key = (type(value), v)
        at = self.const_at.get(key)
        if at is None:
            at = self.const_at[key] = len(self.consts)
            self.consts.append(v)
        return _Const(at)

    def name(self, n: str) -> int:
        if n not in self.names:
            self.names.append(n)
        return self.names.index(n)

    def _value_code(self, value) -> int:
        if value is True or value is False:
            return int(value)
        if type(value) is int and -WIDE_LIMIT < value < WIDE_LIMIT:
            return value
        if type(value) is str and value in self.codes:
            return self.codes[value]
        raise NotCompiled(f"value {value!r}")

    def _type_kind(self, t) -> int:
        if t.kind not in _KINDS:
            raise NotCompiled(f"type {t}")
        return _KINDS[t.kind]

    def kind(self, e: S.Expr) -> int:
        return self._type_kind(self.em.type_of(e))

    def op(self, name: str, *regs) -> _Temp:
        d = self.reg()
        self.emit(name, d, *regs)
        return d

    def jump(self, op: str, *regs) -> _Label:
        label = _Label()
        self.emit(op, *regs, label)
        return label

    # ---- conditions: jumps to labels the caller places
    def _static(self, e: S.Expr):
        """e's value when the configuration fixes it (as the Python step folds it), else NOT_CONSTANT."""
        return self.em.fold(e) if self.em.is_static(e) else NOT_CONSTANT

    def jump_unless(self, e: S.Expr) -> list[_Label]:
        """Code that goes on when e holds, and otherwise jumps to the labels returned."""
        value = self._static(e)
        if value is not NOT_CONSTANT:
            return [] if value else [self.jump("JMP")]
        match e:
            case S.Binary(op="and", left=l, right=r):
                return self.jump_unless(l) + self.jump_unless(r)
            case S.Binary(op="or" | "implies", left=l, right=r):
                holds = self.jump_if(l) if e.op == "or" else self.jump_unless(l)
                fails = self.jump_unless(r)
                self.land_all(holds)
                return fails
            case S.Unary(op="not", operand=o):
                return self.jump_if(o)
            case S.Binary(op="==" | "!=" | "<" | "<=" | ">" | ">=", left=l, right=r):
                a, b = self.expr(l), self.expr(r)
                return [self.jump(_JUMP[_NEGATED[e.op]], a, b)]
        return [self.jump("JZ", self.expr(e))]

    def jump_if(self, e: S.Expr) -> list[_Label]:
        """Code that goes on when e does not hold, and otherwise jumps to the labels returned."""
        value = self._static(e)
        if value is not NOT_CONSTANT:
            return [self.jump("JMP")] if value else []
        match e:
            case S.Binary(op="and", left=l, right=r):
                fails = self.jump_unless(l)
                holds = self.jump_if(r)
                self.land_all(fails)
                return holds
            case S.Binary(op="or", left=l, right=r):
                return self.jump_if(l) + self.jump_if(r)
            case S.Binary(op="implies", left=l, right=r):
                return self.jump_unless(l) + self.jump_if(r)
            case S.Unary(op="not", operand=o):
                return self.jump_unless(o)
            case S.Binary(op="==" | "!=" | "<" | "<=" | ">" | ">=", left=l, right=r):
                a, b = self.expr(l), self.expr(r)
                return [self.jump(_JUMP[e.op], a, b)]
        return [self.jump("JNZ", self.expr(e))]

    def _truth(self, e: S.Expr) -> _Temp:
        """A condition as a 0/1 value."""
        d = self.reg()
        fails = self.jump_unless(e)
        self.emit("MOV", d, self.const(True))
        end = self.jump("JMP")
        self.land_all(fails)
        self.emit("MOV", d, self.const(False))
        self.land(end)
        return d

    # ---- expressions: each gives the register holding its value
    def expr(self, e: S.Expr):
        if not isinstance(e, (S.IntLit, S.BoolLit, S.Name)):
            value = self._static(e)
            if value is not NOT_CONSTANT:
                return self.const(value)
        return self._code(e)

    def _code(self, e: S.Expr):
        match e:
            case S.IntLit(value=v):
                return self.const(int(v))
            case S.BoolLit(value=v):
                return self.const(bool(v))
            case S.Name():
                return self._name(e)
            case S.Field(obj=o, name=n):
                return self._field(e, o, n)
            case S.Unary(op="not", operand=o):
                return self.op("NOT", self.expr(o))
            case S.Unary(op="-", operand=o):
                return self.op("NEG", self.expr(o))
            case S.Unary(op="~", operand=o):
                return self.op("INV", self.expr(o))
            case S.Binary(op="and" | "or" | "implies"):
                return self._truth(e)
            case S.Binary():
                return self._binary(e)
            case S.Builtin(func="aligned", args=(x, a)):
                return self.op("EQ", self.op("MOD", self.expr(x), self.expr(a)), self.const(0))
            case S.Builtin(func="min" | "max", args=(x, y)):
                return self.op(e.func.upper(), self.expr(x), self.expr(y))
            case S.Quant(kind="forall"):
                counter = counterexample_quant(e)  # as the semantics asks it (`Emitter.quant`)
                if counter is None:
                    raise NotCompiled("quantifier")
                return self.op("NOT", self._probe(counter))
            case S.Quant():
                return self._probe(e)
        raise NotCompiled(type(e).__name__)

    def _name(self, e: S.Name):
        b = self.spec.binding(e)
        if b.local:
            if b.name in self.locals:
                return self.locals[b.name]
            raise NotCompiled("an entry as a value")  # the quantified variable: only its fields are values
        kind, x = name_meaning(self.spec, self.sem.config, b)
        if kind == "var":
            return self.op("VAR", self.name(b.name), self._type_kind(self.spec.vars[b.name][0]))
        if kind == "table":
            raise NotCompiled("a table as a value")
        return self.expr(x) if kind == "def" else self.const(x)

    def _field(self, e: S.Field, o: S.Expr, n: str):
        if self.em.type_of(o).kind == "range":
            base, end = self.range(o)
            if n == "base":
                return base
            return end if n == "end" else self.op("SUB", end, base)
        entry = isinstance(o, S.Name) and o.name == self.entry_var
        if n == "key":
            if entry:
                return self.op("EKEY")
            if isinstance(o, S.Index):
                key = self.expr(o.key)
                self.emit("HASKEY", self.table(o.table), key)
                return key
        elif n != "range":
            if entry:
                return self.op("EROWF", self.name(n), self.kind(e))
            if isinstance(o, S.Index):
                return self.op("ROWF", self.table(o.table), self.expr(o.key), self.name(n), self.kind(e))
        raise NotCompiled(f"field {n}")

    def range(self, e: S.Expr) -> tuple:
        """(base, end) registers of a range expression."""
        if isinstance(e, S.Builtin) and e.func == "range":
            base = self.expr(e.args[0])
            return base, self.op("ADD", base, self.expr(e.args[1]))
        if isinstance(e, S.Field) and e.name == "range":
            o = e.obj
            if isinstance(o, S.Name) and o.name == self.entry_var:
                table = self.em.type_of(o).name
                base = self.op("EKEY")
                return base, self.op("ADD", base, self.op("EROWF", self.name(self.spec.tables[table].sized_by), KIND_INT))
            if isinstance(o, S.Index):
                base = self.expr(o.key)
                size = self.op("ROWF", self.table(o.table), base,
                               self.name(self.spec.tables[o.table].sized_by), KIND_INT)
                return base, self.op("ADD", base, size)
        raise NotCompiled("range")

    def table(self, t: str) -> int:
        """A table's index in the binding; its keys must be integers (the machine boxes keys as such)."""
        if self._type_kind(self.spec.tables[t].key) != KIND_INT:
            raise NotCompiled(f"table {t}")
        return self.tables.index(t)

    def _binary(self, e: S.Binary):
        op = e.op
        if op == "in":
            return self._membership(e)
        if op in _ARITH:
            return self.op(_ARITH[op], self.expr(e.left), self.expr(e.right))
        if op == "%":
            return self.op("MOD", self.expr(e.left), self.expr(e.right))
        if op in ("overlaps", "contains"):
            x = self.range(e.left)
            if op == "contains" and self.em.type_of(e.right).kind != "range":
                return self._contains_addr(x, self.expr(e.right))
            y = self.range(e.right)
            if op == "overlaps":
                return self._all_of([(x[0], y[1]), (y[0], x[1]), (x[0], x[1]), (y[0], y[1])], "LT")
            return self._all_of([(x[0], y[0]), (y[1], x[1])], "LE")
        raise NotCompiled(f"operator {op}")

    def _all_of(self, pairs: list[tuple], cmp: str) -> _Temp:
        """The conjunction of `a cmp b` over the pairs (all of them pure comparisons)."""
        r = self.op(cmp, *pairs[0])
        for a, b in pairs[1:]:
            r = self.op("AND", r, self.op(cmp, a, b))
        return r

    def _contains_addr(self, rng: tuple, x) -> _Temp:
        return self.op("AND", self.op("LE", rng[0], x), self.op("LT", x, rng[1]))

    def _membership(self, e: S.Binary):
        rt = self.em.type_of(e.right)
        if rt.kind == "table":
            return self.op("INTAB", self.expr(e.left), self.table(e.right.name))  # type: ignore[union-attr]
        if rt.kind == "flags" or (rt.kind == "int" and self.em.type_of(e.left).kind == "flags"):
            bit = self.expr(e.left)
            return self.op("EQ", self.op("AND", self.expr(e.right), bit), bit)
        if rt.kind == "range":
            return self._contains_addr(self.range(e.right), self.expr(e.left))
        items = self._static(e.right)
        if isinstance(items, frozenset):
            codes = tuple(sorted({self._value_code(v) for v in items}))
            left = self.expr(e.left)
            self.sets.append(codes)
            return self.op("INSET", left, len(self.sets) - 1)
        raise NotCompiled("membership")

    def _probe(self, q: S.Quant) -> _Temp:
        """`exists v in T: v.range overlaps X and REST` as an index probe, as the emitted Python probe (`Emitter.quant`)."""
        parts = self.em.probe_parts(q)
        if parts is None or self.entry_var is not None:
            raise NotCompiled("quantifier")
        conj, rest = parts
        if any(_has_quantifier(c) for c in rest):
            raise NotCompiled("predicate")
        other, table = conj.right, self.table(q.table)
        if self.em.type_of(other).kind != "range":
            mode, (a, b) = PROBE_CONTAINING_ADDR, (self.expr(other),) * 2
        else:
            mode, (a, b) = (PROBE_OVERLAPPING if conj.op == "overlaps" else PROBE_CONTAINING), self.range(other)
        d = self.reg()
        if rest:
            label = self.predicate_labels.get(q)
            if label is None:
                label = self.predicate_labels[q] = _Label()
                self.predicates.append((label, q, rest))
            self.emit("PROBE", d, table, mode, a, b, label)
        else:
            self.emit("PROBE", d, table, mode, a, b, -1)
        return d

    # ---- statements
    def stmts(self, body: tuple[S.Stmt, ...]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: S.Stmt) -> None:
        match s:
            case S.Assign(var=v, value=x):
                self.emit("SET", self.name(v), self.expr(x), self._type_kind(self.spec.vars[v][0]))
            case S.Insert(table=t, key=k, fields=fs):
                key = self.expr(k)
                values = [(self.name(n), self.expr(x), self.kind(x)) for n, x in fs]
                self.emit("PUT", self.table(t), key, len(values), *[v for f in values for v in f])
            case S.Update(table=t, key=k, field=n, value=x):
                key = self.expr(k)
                self.emit("UPD", self.table(t), key, self.name(n), self.expr(x), self.kind(x))
            case S.Delete(table=t, key=k):
                self.emit("DEL", self.table(t), self.expr(k))
            case S.If(cond=c, then=th, orelse=el):
                fails = self.jump_unless(c)
                self.stmts(th)
                if el:
                    end = self.jump("JMP")
                    self.land_all(fails)
                    self.stmts(el)
                    self.land(end)
                else:
                    self.land_all(fails)
            case _:
                raise NotCompiled(type(s).__name__)


_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_JUMP = {"==": "JEQ", "!=": "JNE", "<": "JLT", "<=": "JLE", ">": "JGT", ">=": "JGE"}


def _has_quantifier(e: S.Expr) -> bool:
    return any(isinstance(x, S.Quant) for x in S.subexpressions(e))
