"""Analyses of a spec's syntax that several stages ask: walking the tree, footprints, identifiers.

One copy each, so the generator, the prover, the encoder and the emitters agree on what a spec's
pieces are. Walks over expressions and statements of one kind live with the AST
(`syntax.subexpressions`, `syntax.statements`); this module holds the ones across node kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

from . import syntax as S

if TYPE_CHECKING:
    from .checked import CheckedSpec


def nodes(tree) -> Iterator:
    """Every AST node (a dataclass) inside tree, tree included, through tuples of nodes; spans skipped."""
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(x)
            continue
        if not hasattr(x, "__dataclass_fields__"):
            continue
        yield x
        for name in x.__dataclass_fields__:
            if name != "span":
                child = getattr(x, name)
                if isinstance(child, tuple) or hasattr(child, "__dataclass_fields__"):
                    stack.append(child)


def conjuncts(e: S.Expr) -> Iterator[S.Expr]:
    """The operands of a chain of `and`s, left to right (e itself when it is not an `and`)."""
    if isinstance(e, S.Binary) and e.op == "and":
        yield from conjuncts(e.left)
        yield from conjuncts(e.right)
    else:
        yield e


def range_probes(q: S.Quant) -> Iterator[tuple[int, S.Binary, S.Expr, bool]]:
    """The conjuncts of q's body that an interval index can answer: `v.range overlaps X` (either way
    round) or `v.range contains X`, X free of the bound variable v. Each as (its position among the
    conjuncts, the test, X, whether v.range is on the right), first match per conjunct, in order.
    The semantics' probes (`Emitter`) and the step compiler read quantifiers through this."""
    for i, conj in enumerate(conjuncts(q.body)):
        if not isinstance(conj, S.Binary) or conj.op not in ("overlaps", "contains"):
            continue
        sides = [(conj.left, conj.right, False)] + ([(conj.right, conj.left, True)] if conj.op == "overlaps" else [])
        for mine, other, swapped in sides:
            if _is_field_of(mine, q.var, "range") and q.var not in S.names_in(other):
                yield i, conj, other, swapped
                break


def key_probe(q: S.Quant) -> S.Expr | None:
    """For `exists v in T: ... v.key == X ...` (either way round; X free of v), X: only the entry
    at key X can satisfy the body, so the semantics tests that one alone."""
    return next((other for _, other in key_probes(q)), None)


def key_probes(q: S.Quant) -> Iterator[tuple[int, S.Expr]]:
    """The conjuncts of q's body of the form `v.key == X` (either way round; X free of v), each as
    (its position among the conjuncts, X), in order."""
    for i, conj in enumerate(conjuncts(q.body)):
        if isinstance(conj, S.Binary) and conj.op == "==":
            for mine, other in ((conj.left, conj.right), (conj.right, conj.left)):
                if _is_field_of(mine, q.var, "key") and q.var not in S.names_in(other):
                    yield i, other
                    break


def spelt_containment(q: S.Quant, size_field: str) -> S.Expr | None:
    """For `exists v in T: ... v.key <= X and X < v.key + v.F ...` (F: T's size field; each test
    either way round, the sum in either order; X free of v), X: the test `v.range contains X`
    written out, which the interval index answers as well."""
    lows, highs = [], []
    for conj in conjuncts(q.body):
        if not isinstance(conj, S.Binary):
            continue
        for op, small, big in ((conj.op, conj.left, conj.right), (_FLIPPED.get(conj.op), conj.right, conj.left)):
            if op == "<=" and _is_field_of(small, q.var, "key"):
                lows.append(big)
            elif op == "<" and _is_key_plus_size(big, q.var, size_field):
                highs.append(small)
    for x in lows:
        if q.var not in S.names_in(x) and any(h == x for h in highs):
            return x
    return None


_FLIPPED = {">=": "<=", ">": "<"}  # `a >= b` is `b <= a`


def _is_field_of(e: S.Expr, var: str, name: str) -> bool:
    return isinstance(e, S.Field) and e.name == name and isinstance(e.obj, S.Name) and e.obj.name == var


def _is_key_plus_size(e: S.Expr, var: str, size_field: str) -> bool:
    if not (isinstance(e, S.Binary) and e.op == "+"):
        return False
    left, right = e.left, e.right
    return ((_is_field_of(left, var, "key") and _is_field_of(right, var, size_field))
            or (_is_field_of(left, var, size_field) and _is_field_of(right, var, "key")))


def counterexample_quant(q: S.Quant) -> S.Quant | None:
    """For `forall v in T: B`, the quantifier `exists v in T: not B`, which holds exactly when the
    forall does not (for bodies that evaluate without error), with the negation taken through B's
    `implies`, `or` and `not` so that its conjuncts show (`negated`); None for an `exists`. With a
    range test among those conjuncts, the semantics and the step machine ask it as an index probe
    (`Emitter.probe_parts`), where the forall would walk every entry: `forall r in regs: not
    r.range overlaps X` as much as `forall r in regs: r.range contains p implies ...`."""
    if q.kind != "forall":
        return None
    return S.Quant("exists", q.var, q.table, negated(q.body), q.span)


def negated(e: S.Expr) -> S.Expr:
    """`not e`, with `not (A implies C)` as `A and not C`, `not (X or Y)` as `not X and not Y` and
    `not not X` as X: the same truth for an e that evaluates without error."""
    if isinstance(e, S.Unary) and e.op == "not":
        return e.operand
    if isinstance(e, S.Binary) and e.op == "implies":
        return S.Binary("and", e.left, negated(e.right), e.span)
    if isinstance(e, S.Binary) and e.op == "or":
        return S.Binary("and", negated(e.left), negated(e.right), e.span)
    return S.Unary("not", e, e.span)


# Binary operators whose operands can be exchanged without changing the value or whether it
# evaluates. Not `and`/`or`: they stop at the first operand that decides, so exchanging them can
# turn a value into an evaluation error (an entry's field read on the wrong kind of entry).
SYMMETRIC_OPS = frozenset({"==", "!=", "+", "*", "&", "|", "overlaps"})


def symmetric_in(e: S.Expr, v: str, w: str) -> bool:
    """Whether e reads the same with the names v and w exchanged, by its shape alone: the two are
    the same tree once the operands of each SYMMETRIC_OPS operator are put in one order. A
    sufficient test (a symmetry that needs algebra to see is missed), never a wrong yes."""
    return _shape(e, {v: w, w: v}) == _shape(e, {})


def _shape(e, rename: dict):
    """e as nested tuples without spans, its names renamed, symmetric operands in a fixed order.
    (No quantifier inside e binds v or w: the type checker gives every local its own name.)"""
    if isinstance(e, S.Name):
        return ("Name", rename.get(e.name, e.name))
    if isinstance(e, S.IntLit):
        return ("IntLit", e.value)  # as IntLit's equality: the spelling is presentation
    if isinstance(e, tuple):
        return tuple(_shape(x, rename) for x in e)
    if not hasattr(e, "__dataclass_fields__"):
        return e
    parts = tuple(_shape(getattr(e, f), rename) for f in e.__dataclass_fields__ if f != "span")
    if isinstance(e, S.Binary) and e.op in SYMMETRIC_OPS:
        parts = (e.op,) + tuple(sorted(parts[1:], key=repr))
    return (type(e).__name__,) + parts


def may_fail(spec: "CheckedSpec", e: S.Expr, fixed: Callable[[S.Expr], int | None] | None = None) -> bool:
    """Whether evaluating e can raise: a table lookup, a remainder (`%`, `aligned`) or a power, in e
    or in a definition it names. `fixed` (where given) says which integer a configuration fixes an
    expression to (None: not fixed): a remainder by a fixed divisor other than 0 (`x % PAGE`) cannot
    raise then, nor can a power fixed whole (`2 ** 64`)."""
    for x in S.subexpressions(e):
        match x:
            case S.Index():
                return True
            case S.Binary(op="%", right=d) | S.Builtin(func="aligned", args=(_, d)):
                divisor = None if fixed is None else fixed(d)
                if divisor is None or divisor == 0:
                    return True
            case S.Binary(op="**"):
                if fixed is None or fixed(x) is None:
                    return True
            case S.Builtin(func="aligned"):  # (not two arguments: the type checker has said so)
                return True
            case S.Name():
                b = spec.binding(x)
                if b.kind == "def" and may_fail(spec, spec.defs[b.name], fixed):
                    return True
    return False


def true_after_inserts(spec: "CheckedSpec", e: S.Expr, table: str) -> bool:
    """Whether a true e stays true when entries are put into `table` (none changed or removed), by
    its shape: `table` is read only as the domain of `exists` quantifiers where e rises with their
    truth (or of `forall`s where it falls), through `not`, `and`, `or`, `implies` and quantifiers,
    and their bodies cannot fail to evaluate on a new entry. A sufficient test, never a wrong yes."""
    return _rises_with_inserts(spec, e, table, True)


def _rises_with_inserts(spec: "CheckedSpec", e: S.Expr, table: str, rising: bool) -> bool:
    """With `rising`, whether e cannot turn from true to false as entries are put into `table`;
    without, whether it cannot turn from false to true."""
    if not any(b.kind == "table" and b.name == table for b in spec.reads(e, defs=True)):
        return True
    if isinstance(e, S.Unary) and e.op == "not":
        return _rises_with_inserts(spec, e.operand, table, not rising)
    if isinstance(e, S.Binary) and e.op in ("and", "or", "implies"):
        left_rising = rising if e.op != "implies" else not rising  # `A implies B` is `not A or B`
        return (_rises_with_inserts(spec, e.left, table, left_rising)
                and _rises_with_inserts(spec, e.right, table, rising))
    if isinstance(e, S.Quant):
        if e.table == table and ((e.kind == "exists") != rising or may_fail(spec, e.body)):
            return False
        return _rises_with_inserts(spec, e.body, table, rising)
    return False  # read any other way (a lookup, a definition, a comparison of truths)


def identifier(text: str) -> str:
    """text as part of a Python or Mermaid identifier: each character other than a letter, digit or _ becomes _."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)


def reads_and_writes(spec: CheckedSpec) -> tuple[Callable[[S.Expr], frozenset], Callable[[str], frozenset]]:
    """Syntactic footprints: what an expression reads and what a call's effect writes.

    Items: ("var", name), ("present", table), ("field", table, name). An invariant whose reads miss
    an effect's writes is preserved by it (the frame argument the prover's fast path uses).
    """

    def reads(e, seen_defs=frozenset()) -> frozenset:
        out: set = set()
        stack = [e]
        while stack:
            x = stack.pop()
            match x:
                case S.Name():
                    b = spec.binding(x)
                    if b.kind == "var":
                        out.add(("var", b.name))
                    elif b.kind == "def" and b.name not in seen_defs:
                        out |= reads(spec.defs[b.name], seen_defs | {b.name})
                    elif b.kind == "table":
                        out.add(("present", b.name))
                case S.Field(obj=o, name=n):
                    ot = spec.types.get(id(o))
                    if ot is not None and ot.kind == "entry":
                        if n == "range":
                            out.add(("field", ot.name, spec.tables[ot.name].sized_by))
                        elif n != "key":
                            out.add(("field", ot.name, n))
                    stack.append(o)
                case S.Index(table=t, key=k):
                    out.add(("present", t))  # a lookup's value depends on which keys exist
                    stack.append(k)
                case S.Quant(table=t, body=b):
                    out.add(("present", t))
                    stack.append(b)
                case S.Unary(operand=o):
                    stack.append(o)
                case S.Binary(left=l, right=r):
                    stack += [l, r]
                case S.Builtin(args=args) | S.SetLit(items=args):
                    stack += list(args)
                case _:
                    pass
        return frozenset(out)

    def writes(call: str) -> frozenset:
        out: set = set()
        effects = spec.calls[call].clauses(S.Effect)
        stack = list(effects[0].body) if effects else []
        while stack:
            s = stack.pop()
            match s:
                case S.Assign(var=v):
                    out.add(("var", v))
                case S.Insert(table=t):
                    out.add(("present", t))
                    out |= {("field", t, n) for n, _ in spec.tables[t].fields}
                case S.Update(table=t, field=n):
                    out.add(("field", t, n))
                case S.Delete(table=t):
                    out.add(("present", t))
                case S.If(then=th, orelse=el):
                    stack += list(th) + list(el)
        return frozenset(out)

    return reads, writes


@dataclass(frozen=True, slots=True)
class Allocator:
    """A call that hands out memory: its address output and the argument giving the size; `table`
    the table its entry goes into; `exact`: the entry's size is that argument itself (else a value
    computed from it alone, such as mmap's length rounded up to whole pages)."""

    output: str
    size_param: str
    table: str = ""
    exact: bool = True


@dataclass(frozen=True, slots=True)
class MemoryShape:
    allocators: dict[str, Allocator]  # call -> allocator
    releases: dict[str, frozenset[str]]  # call -> params that name an allocation to release (its base)
    addr_params: dict[str, tuple[str, ...]]  # call -> params of type addr


def computed_from(spec: CheckedSpec, e: S.Expr) -> str | None:
    """The one name an expression reads besides the spec's constants (a size computed from one
    argument, as mmap's `length + (PAGE - length % PAGE) % PAGE` is), or None."""
    read = {n.name for n in nodes(e) if isinstance(n, S.Name)} - set(spec.consts)
    return read.pop() if len(read) == 1 else None


def memory_shape(spec: CheckedSpec, computed_sizes: bool = False) -> MemoryShape:
    """Read from the spec's effects which calls allocate and which release memory, and with which
    arguments: an allocator inserts its address output as the key of a sized table, sized by one of
    its arguments; a release deletes the entry keyed by one of its arguments from such a table.
    `computed_sizes`: also an allocator whose entry's size is computed from one argument alone
    (`exact` False), as mmap's whole pages are: what the executor relocates (the generators ask
    for sizes, so they take only the exact ones)."""
    allocators: dict[str, Allocator] = {}
    tables: set[str] = set()
    for name, info in spec.calls.items():
        outs = {n for n, t in info.outputs if t.kind == "int" and t.name == "addr"}
        params = {n for n, _ in info.params}
        for st in S.effect_statements(info.decl):
            if isinstance(st, S.Insert) and isinstance(st.key, S.Name) and st.key.name in outs:
                sized = spec.tables[st.table].sized_by
                size = dict(st.fields).get(sized)
                # sized by an argument: an output or a parameter of the spec is no size a caller asks for
                if sized and isinstance(size, S.Name) and size.name in params:
                    allocators[name] = Allocator(st.key.name, size.name, st.table)
                    tables.add(st.table)
                elif sized and size is not None and computed_sizes:
                    param = computed_from(spec, size)
                    if param in params:
                        allocators[name] = Allocator(st.key.name, param, st.table, exact=False)
                        tables.add(st.table)
    releases = {}
    for name, info in spec.calls.items():
        keys = frozenset(st.key.name for st in S.effect_statements(info.decl)
                         if isinstance(st, S.Delete) and st.table in tables and isinstance(st.key, S.Name))
        if keys:
            releases[name] = keys
    addr = {name: tuple(n for n, t in info.params if t.kind == "int" and t.name == "addr")
            for name, info in spec.calls.items()}
    return MemoryShape(allocators, releases, addr)
