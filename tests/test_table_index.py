"""The interval index of sized tables is exact: its candidates contain every true answer."""

from hypothesis import given, settings
from hypothesis import strategies as st

from checker.semantics import Table, contains_addr, contains_range, overlaps

ops = st.lists(st.tuples(st.booleans(), st.integers(0, 300), st.integers(-5, 40)), max_size=120)
queries = st.lists(st.tuples(st.integers(-50, 350), st.integers(-30, 60)), min_size=1, max_size=20)


def build(operations) -> Table:
    t = Table("size", "t")
    for remove, key, size in operations:
        if remove and t.rows:
            t.remove(sorted(t.rows)[key % len(t.rows)])
        else:
            t.put(key, {"size": size})
    return t


def answers(t: Table, pred, candidates):
    want = {k for k, r in t.rows.items() if pred((k, k + r["size"]))}
    got = {k for k, r in candidates if pred((k, k + r["size"]))}
    return want, got


@settings(max_examples=300, deadline=None)
@given(ops, queries)
def test_overlap_and_containment_probes_are_exact(operations, qs):
    t = build(operations)
    for base, size in qs:
        q = (base, base + size)
        want, got = answers(t, lambda r: overlaps(r, q), t.overlapping(*q))
        assert want == got
        want, got = answers(t, lambda r: contains_range(r, q), t.containing(*q))
        assert want == got
        want, got = answers(t, lambda r: contains_addr(r, base), t.containing(base, base + 1))
        assert want == got


@settings(max_examples=100, deadline=None)
@given(ops)
def test_journal_rollback_restores_the_table(operations):
    t = build(operations)
    before = (dict(t.rows), list(t.keys), t.max_size() if t.rows else None)
    t.journal = []
    for remove, key, size in operations[:20]:
        if remove:
            t.remove(key)
        else:
            t.put(key, {"size": size})
    for _, key, _, old in reversed(t.journal):
        t.restore(key, old)
    assert (dict(t.rows), list(t.keys), t.max_size() if t.rows else None) == before
