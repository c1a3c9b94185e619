"""The interval index of sized tables is exact: its candidates contain every true answer."""

from hypothesis import given, settings
from hypothesis import strategies as st

from checker.semantics import Table, contains_addr, contains_range, overlaps

ops = st.lists(st.tuples(st.booleans(), st.integers(0, 300), st.integers(-5, 40)), max_size=120)
queries = st.lists(st.tuples(st.integers(-50, 350), st.integers(-30, 60)), min_size=1, max_size=20)


def build(operations, load: int | None = None, small: int | None = None) -> Table:
    """A table after the operations. `load`: a SortedList index with small sublists, so that a
    window spans several of them; `small`: the size at which the index moves from a plain list to
    a SortedList (and back below half of it)."""
    t = Table("size", "t", small=0 if load is not None else small)
    if load is not None:
        t.keys._reset(load)
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


many_puts = st.lists(st.tuples(st.integers(0, 4).map(lambda x: x == 0), st.integers(0, 300), st.integers(-5, 40)),
                    min_size=30, max_size=150)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.tuples(ops, st.just(None), st.sampled_from([None, 6])),
                 st.tuples(many_puts, st.sampled_from([4, 8]), st.just(None))), queries)
def test_overlap_and_containment_probes_are_exact(case, qs):
    operations, load, small = case
    t = build(operations, load, small)
    assert load is None or len(t.rows) <= 2 * load or len(t.keys._lists) > 1  # windows span sublists
    for base, size in qs:
        q = (base, base + size)
        want, got = answers(t, lambda r: overlaps(r, q), t.overlapping(*q))
        assert want == got
        want, got = answers(t, lambda r: contains_range(r, q), t.containing(*q))
        assert want == got
        want, got = answers(t, lambda r: contains_addr(r, base), t.containing(base, base + 1))
        assert want == got
        # the fast path's whole `exists` tests
        assert t.any_overlapping(*q) == any(overlaps((k, k + r["size"]), q) for k, r in t.rows.items())
        assert t.any_containing(*q) == any(contains_range((k, k + r["size"]), q) for k, r in t.rows.items())
        assert t.any_containing_addr(base) == any(contains_addr((k, k + r["size"]), base) for k, r in t.rows.items())
        odd = lambda entry: entry[0] % 2 == 1  # noqa: E731 - a predicate on the rest of an entry
        assert t.any_overlapping(*q, odd) == any(overlaps((k, k + r["size"]), q) and k % 2 for k, r in t.rows.items())
        assert t.any_containing(*q, odd) == any(contains_range((k, k + r["size"]), q) and k % 2
                                                for k, r in t.rows.items())
        assert t.any_containing_addr(base, odd) == any(contains_addr((k, k + r["size"]), base) and k % 2
                                                       for k, r in t.rows.items())


@settings(max_examples=200, deadline=None)
@given(ops)
def test_the_cached_largest_size_follows_every_change(operations):
    """Probes remember the largest size; puts (new keys and updates), removals and copies keep it
    right, asked after every single change."""
    t = Table("size", "t")
    for remove, key, size in operations:
        if remove and t.rows:
            t.remove(sorted(t.rows)[key % len(t.rows)])
        else:
            t.put(key % 40, {"size": size})  # few keys: many updates of an entry's size
        if t.rows:
            assert t.max_size() == max(r["size"] for r in t.rows.values())
            assert t.copy().max_size() == t.max_size()


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


def test_the_index_moves_between_a_list_and_a_sortedlist():
    t = Table("size", "t", small=8)
    for k in range(0, 200, 10):
        t.put(k, {"size": 5})
    assert type(t.keys).__name__ == "SortedList" and list(t.keys) == sorted(t.rows)
    for k in range(0, 170, 10):
        t.remove(k)
    assert type(t.keys) is list and t.keys == sorted(t.rows) == [170, 180, 190]
    assert [k for k, _ in t.overlapping(172, 186)] == [170, 180]
    c = t.copy()
    c.put(1, {"size": 1})
    assert t.keys == [170, 180, 190] and c.keys == [1, 170, 180, 190] and c.small == 8
