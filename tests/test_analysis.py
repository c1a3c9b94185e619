"""Analyses of a spec's syntax (checker.language.analysis): the shape tests the walks rely on.

`symmetric_in` and `true_after_inserts` are sufficient tests: a yes must be right, a no may miss.
Their soundness on random specs is tests/test_simulate.py's recheck property; these tables pin
what each says of the shapes the bundled specs and users write."""

from __future__ import annotations

import pytest

from checker.language import syntax as S
from checker.language.analysis import (conjuncts, key_probe, key_probes, may_fail, negated, spelt_containment,
                                       symmetric_in, true_after_inserts)
from checker.language.printer import print_expr
from checker.language.load import check_source, load_spec
from checker.language.source import SourceFile

SPEC = """spec t "analyses"
source DOC "d" "d"
status int success 0
var n: int = 0
record A { sz: u64, on: bool }
table ta: addr -> A sized by sz
record B { sz: u64 }
table tb: addr -> B sized by sz
def big = exists b in tb: b.sz > 4096
def odd = n % 2 == 1
"""


def invariant(body: str):
    spec = check_source(SourceFile.of("<t>", SPEC + f'invariant INV-T: {body} cite DOC "d"\n'))
    return spec, spec.invariants[0].expr


@pytest.mark.parametrize("body, symmetric", [
    ("a.key != b.key implies not a.range overlaps b.range", True),
    ("not (b.range overlaps a.range) or a.key == b.key", True),
    ("a.sz + b.sz == b.sz + a.sz", True),
    ("a.key != b.key implies not a.range contains b.range", False),  # contains is not symmetric
    ("a.key < b.key", False),
    ("a.on and b.on", False),  # `and` stops early: exchanged, an error could appear where a value was
    ("a.key != b.key implies a.sz > 0", False),
])
def test_symmetric_in(body, symmetric):
    spec, e = invariant(f"forall a in ta: forall b in ta: {body}")
    assert symmetric_in(e.body.body, "a", "b") is symmetric


@pytest.mark.parametrize("body, kept", [
    ("forall a in ta: exists b in tb: b.range contains a.range", {"tb"}),
    ("forall a in ta: a.on implies (exists b in tb: b.range contains a.range and b.sz > 0)", {"tb"}),
    ("not (forall b in tb: b.sz > 0)", {"ta", "tb"}),  # a new entry can only falsify the forall
    ("(exists b in tb: b.sz > 0) implies n > 0", {"ta"}),  # tb on the left of implies: falls
    ("forall a in ta: not (exists b in tb: b.range overlaps a.range)", set()),
    ("forall a in ta: exists b in tb: b.key % 4096 == a.key", set()),  # the body may fail on a new entry
    ("forall a in ta: a.sz > 0", {"tb"}),  # every new entry of ta is asked
    ("big or n > 0", {"ta"}),  # tb read through a definition
    ("(exists b in tb: b.sz > 0) == (n > 0)", {"ta"}),  # a comparison of truths
    ("n >= 0", {"ta", "tb"}),  # a table it does not read is kept
])
def test_true_after_inserts(body, kept):
    spec, e = invariant(body)
    assert {t for t in ("ta", "tb") if true_after_inserts(spec, e, t)} == kept


def test_may_fail():
    spec, e = invariant("odd or (exists b in tb: b.sz > 0)")
    assert may_fail(spec, e) and not may_fail(spec, e.right)


def test_what_the_bundled_invariants_keep_under_inserts():
    """The invariants of the shape `forall r in regs: exists h in H: ...` keep under new entries
    of H; the no-overlap pairs are symmetric."""
    kept, symmetric = set(), set()
    for name in ("acl", "cupva", "cuda", "hip"):
        spec = load_spec(name)
        for inv in spec.invariants:
            kept |= {(name, inv.rule, t) for t in spec.tables if true_after_inserts(spec, inv.expr, t)
                     and any(isinstance(x, S.Quant) and x.table == t for x in S.subexpressions(inv.expr))}
            e = inv.expr
            if isinstance(e, S.Quant) and isinstance(e.body, S.Quant) and e.body.table == e.table:
                symmetric.add((name, inv.rule, symmetric_in(e.body.body, e.var, e.body.var)))
    assert ("acl", "ACL-INV-REG-IN-ALLOC", "host_allocs") in kept
    assert ("cupva", "PVA-INV-REG-IN-ALLOC", "cuda_allocs") in kept
    assert not any(t == "regs" for _, _, t in kept)
    assert ("acl", "ACL-INV-NO-OVERLAP", True) in symmetric and all(s for _, _, s in symmetric)


def _truth(e, values: dict) -> bool:
    if isinstance(e, S.Name):
        return values[e.name]
    if isinstance(e, S.Unary):
        return not _truth(e.operand, values)
    left, right = _truth(e.left, values), _truth(e.right, values)
    return {"and": left and right, "or": left or right, "implies": (not left) or right}[e.op]


def _formulas(depth: int):
    """Every formula over p, q, r of `not`, `and`, `or`, `implies` up to the depth (3: about 60,000)."""
    atoms = [S.Name(n) for n in "pqr"]
    if depth == 0:
        return atoms
    smaller = _formulas(depth - 1)
    out = atoms + [S.Unary("not", x) for x in smaller]
    if depth <= 2:
        out += [S.Binary(op, a, b) for op in ("and", "or", "implies") for a in smaller for b in smaller]
    else:  # the deepest level pairs a deeper formula with an atom or a negated atom, to stay small
        out += [S.Binary(op, a, b) for op in ("and", "or", "implies") for a in smaller
                for b in atoms + [S.Unary("not", x) for x in atoms]]
    return out


def test_negated_is_the_negation():
    """`negated` takes `not` through `implies`, `or` and `not` without changing the truth, and
    leaves conjuncts to find: on every assignment of every small formula."""
    assignments = [dict(zip("pqr", bits)) for bits in ((a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1))]
    formulas = _formulas(3)
    assert len(formulas) > 10_000
    for e in formulas:
        n = negated(e)
        assert all(_truth(n, v) == (not _truth(e, v)) for v in assignments), e
    assert negated(S.Unary("not", S.Name("p"))) == S.Name("p")
    assert list(conjuncts(negated(S.Binary("implies", S.Name("p"), S.Unary("not", S.Name("q")))))) == \
        [S.Name("p"), S.Name("q")]


@pytest.mark.parametrize("body, key, containment", [
    ("exists a in ta: a.key == n and a.on", "n", None),
    ("exists a in ta: n + 1 == a.key", "n + 1", None),
    ("exists a in ta: a.key == a.sz", None, None),  # not free of a
    ("exists a in ta: a.key <= n and n < a.key + a.sz", None, "n"),
    ("exists a in ta: a.on and n >= a.key and a.sz + a.key > n", None, "n"),
    ("exists a in ta: a.key <= n and n + 1 < a.key + a.sz", None, None),  # two different points
    ("exists a in ta: a.key < n and n < a.key + a.sz", None, None),  # `<` below: not the range test
])
def test_key_and_written_out_range_tests(body, key, containment):
    spec, e = invariant(body)
    printed = lambda x: None if x is None else print_expr(x)  # noqa: E731
    assert printed(key_probe(e)) == key and printed(spelt_containment(e, "sz")) == containment


def test_key_probes_with_their_positions():
    spec, e = invariant("exists a in ta: a.on and a.key == n and n + 1 == a.key and a.key == a.sz")
    assert [(i, print_expr(x)) for i, x in key_probes(e)] == [(1, "n"), (2, "n + 1")]
