"""The interval index of sized tables is exact: its candidates contain every true answer.

Every test runs on both tables: `PyTable` (pure Python, the reference) and, where the C module
checker._native is built, `Table` with its C put/remove/probes; `test_the_c_table_is_the_python_table`
also compares the two field by field after every operation."""

import copy
import gc
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from checker.model.state import Table
from checker.model.codegen import contains_addr, contains_range, overlaps
from checker.model.state import NATIVE, PyTable

# Keys and sizes are small (dense windows); in some examples a few are beyond 64 bits, which the
# C code hands to Python, and must still answer the same.
HUGE = 2**64
wide_keys = st.tuples(st.integers(0, 9), st.integers(0, 300)).map(
    lambda t: t[1] + (0 if t[0] < 8 else HUGE - 150 if t[0] == 8 else 2**63 - 150))
wide_sizes = st.tuples(st.integers(0, 19), st.integers(-5, 40)).map(
    lambda t: t[1] if t[0] < 18 else HUGE if t[0] == 18 else 2**63 - 20 + t[1])
keys = st.integers(0, 300)
ops = st.one_of(st.lists(st.tuples(st.booleans(), keys, st.integers(-5, 40)), max_size=120),
                st.lists(st.tuples(st.booleans(), wide_keys, wide_sizes), max_size=120))
queries = st.lists(st.tuples(st.one_of(st.integers(-50, 350), wide_keys), st.one_of(st.integers(-30, 60), wide_sizes)),
                   min_size=1, max_size=20)

CLASSES = [pytest.param(PyTable, id="python"),
           pytest.param(Table, id="c", marks=pytest.mark.skipif(NATIVE is None, reason="checker._native is not built"))]


def build(operations, load: int | None = None, small: int | None = None, cls=PyTable):
    """A table after the operations. `load`: a SortedList index with small sublists, so that a
    window spans several of them; `small`: the size at which the index moves from a plain list to
    a SortedList (and back below half of it)."""
    t = cls("size", "t", small=0 if load is not None else small)
    if load is not None:
        t.keys._reset(load)
    for remove, key, size in operations:
        if remove and t.rows:
            t.remove(sorted(t.rows)[key % len(t.rows)])
        else:
            t.put(key, {"size": size})
    return t


def answers(t, pred, candidates):
    want = {k for k, r in t.rows.items() if pred((k, k + r["size"]))}
    got = {k for k, r in candidates if pred((k, k + r["size"]))}
    return want, got


many_puts = st.lists(st.tuples(st.integers(0, 4).map(lambda x: x == 0), st.integers(0, 300), st.integers(-5, 40)),
                    min_size=30, max_size=150)


@pytest.mark.slow
@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.tuples(ops, st.just(None), st.sampled_from([None, 6])),
                 st.tuples(many_puts, st.sampled_from([4, 8]), st.just(None))), queries)
def test_overlap_and_containment_probes_are_exact(cls, case, qs):
    operations, load, small = case
    t = build(operations, load, small, cls)
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


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=200, deadline=None)
@given(ops)
def test_the_cached_largest_size_follows_every_change(cls, operations):
    """Probes remember the largest size; puts (new keys and updates), removals and copies keep it
    right, asked after every single change."""
    t = cls("size", "t")
    for remove, key, size in operations:
        if remove and t.rows:
            t.remove(sorted(t.rows)[key % len(t.rows)])
        else:
            t.put(key % 40, {"size": size})  # few keys: many updates of an entry's size
        if t.rows:
            assert t.max_size() == max(r["size"] for r in t.rows.values())
            assert t.copy().max_size() == t.max_size()


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=100, deadline=None)
@given(ops)
def test_journal_rollback_restores_the_table(cls, operations):
    t = build(operations, cls=cls)
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


@pytest.mark.parametrize("cls", CLASSES)
def test_the_index_moves_between_a_list_and_a_sortedlist(cls):
    t = cls("size", "t", small=8)
    for k in range(0, 200, 10):
        t.put(k, {"size": 5})
    # past `small`: a SortedList in Python, the C module's SortedKeys in the C table
    assert type(t.keys).__name__ == ("SortedList" if cls is PyTable else "SortedKeys") and list(t.keys) == sorted(t.rows)
    for k in range(0, 170, 10):
        t.remove(k)
    assert type(t.keys) is list and t.keys == sorted(t.rows) == [170, 180, 190]
    assert [k for k, _ in t.overlapping(172, 186)] == [170, 180]
    c = t.copy()
    c.put(1, {"size": 1})
    assert t.keys == [170, 180, 190] and c.keys == [1, 170, 180, 190] and c.small == 8


def fields(t) -> tuple:
    """A table's fields; of its key index, the keys and whether it is a plain list (a large index is a
    SortedList in Python and a SortedKeys in C, unless a key beyond 64 bits made it a SortedList)."""
    return (t.name, t.rows, t.sized_by, list(t.keys) if t.keys is not None else None, type(t.keys) is list, t.small,
            t._size_count, t._size_heap, t._largest, t.journal)


@pytest.mark.slow
@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
@settings(max_examples=300, deadline=None)
@given(ops, queries, st.sampled_from([None, 6]), st.booleans())
def test_the_c_table_is_the_python_table(operations, qs, small, journal):
    """The same puts, removals, updates and probes give the same answers and the same fields
    (sorted keys, size counts, the heap, the cached largest size, the journal) after every step."""
    py, c = PyTable("size", "t", small=Table.SMALL if small is None else small), Table("size", "t", small=small)
    if journal:
        py.journal, c.journal = [], []
    for (remove, key, size), (base, length) in zip(operations, qs * len(operations)):
        for t in (py, c):
            if remove:
                t.remove(key if key in t.rows or not t.rows else sorted(t.rows)[key % len(t.rows)])
            else:
                t.put(key, {"size": size})
                t.set_field(key, "tag", size % 5)  # a plain field: copy-on-write, journaled
                if size % 3 == 0:
                    t.set_field(key, "size", size // 3)  # the size: the index follows
        assert fields(c) == fields(py) and c.rows == py.rows
        edges = [base]
        if py.rows:  # also probe at the edges of an entry, where an off-by-one shows
            k = sorted(py.rows)[base % len(py.rows)]
            end = k + py.rows[k]["size"]
            edges += [k - 1, k, k + 1, end - 1, end, end + 1]
        for x in edges:
            for probe in ("any_overlapping", "any_containing"):
                assert getattr(c, probe)(x, x + length) == getattr(py, probe)(x, x + length), (probe, x, length)
            assert c.any_containing_addr(x) == py.any_containing_addr(x), x
        assert fields(c) == fields(py)  # probes may fill the cached largest size, in both alike


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_a_large_c_table_keeps_its_index_in_c_until_a_key_does_not_fit():
    t = Table("size", "t", small=4)
    for k in range(0, 100, 10):
        t.put(k, {"size": 5})
    assert type(t.keys) is NATIVE.SortedKeys and t.any_overlapping(52, 53) and not t.any_overlapping(56, 60)
    t.put(2**64 + 10, {"size": 5})  # beyond 64 bits: SortedKeys cannot hold it
    assert type(t.keys).__name__ == "SortedList" and list(t.keys) == sorted(t.rows)
    assert t.any_containing_addr(2**64 + 12) and t.any_overlapping(52, 53)


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_a_predicate_that_changes_a_large_table_mid_walk_is_safe():
    """A walk of a SortedKeys that ran Python code which changed the index stops there and the
    Python method answers, on the table as it now is (the spec's predicates never change tables:
    this guards memory, not a meaning; freed chunks would otherwise be read)."""
    t = Table("size", "t", small=4)
    for k in range(0, 20000, 10):
        t.put(k, {"size": 15})
    t.max_size()  # the largest size known: the C code walks (it hands an unknown one to Python)
    calls = []

    def pred(entry):
        calls.append(entry[0])
        if len(calls) == 1:
            for k in range(0, 20000, 20):  # empties and frees most chunks
                t.remove(k)
        return entry[0] == 1010
    assert t.any_overlapping(995, 1011, pred) is True
    assert calls[0] == 990 and calls[-1] == 1010  # the walk began in C, the Python method finished


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_sorted_keys_is_a_sorted_list_of_int64_keys():
    import random
    rng, ref, sk = random.Random(5), [], NATIVE.SortedKeys()
    for _ in range(8000):  # enough to split chunks (of 64 keys), and to empty some
        if ref and rng.random() < 0.4:
            k = ref.pop(rng.randrange(len(ref)))
            sk.remove(k)
        else:
            k = rng.randrange(-2**63, 2**63)
            if k not in ref:
                ref.append(k)
                sk.add(k)
    ref.sort()
    assert list(sk) == ref and len(sk) == len(ref) and ref[7] in sk and 2**64 not in sk
    assert len(ref) > 1500
    lo, hi = ref[100], ref[1400]
    assert sk.irange(lo, hi) == ref[100:1400] and sk.irange(-2**70, 2**70) == ref
    assert list(sk.copy()) == ref and list(pickle.loads(pickle.dumps(sk))) == ref
    for x in [ref[0] - 1, ref[0], ref[-1], ref[-1] + 1, -2**70, 2**70] + [ref[i] + d for i in (63, 64, 700) for d in (-1, 0, 1)]:
        below, above = [k for k in ref if k < x], [k for k in ref if k > x]  # at chunk edges too
        assert sk.neighbours(x) == (below[-1] if below else None, above[0] if above else None), x
    for k in rng.sample(ref, len(ref) * 19 // 20):  # sparse chunks join their neighbours
        sk.remove(k)
        ref.remove(k)
    assert list(sk) == ref and sk.irange(ref[3], ref[-3]) == ref[3:-3]
    for k in range(-2**62, -2**62 + 3000):  # and split again
        sk.add(k)
    assert list(sk) == sorted(ref + list(range(-2**62, -2**62 + 3000)))
    with pytest.raises(OverflowError):
        sk.add(2**63)
    with pytest.raises(ValueError):
        sk.remove(2**63)


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_the_c_table_raises_what_python_raises():
    """Odd records go to the Python methods, which raise; a predicate's error comes through."""
    tables = PyTable("size", "t", small=Table.SMALL), Table("size", "t")  # (PyTable.SMALL is larger)
    for t in tables:
        with pytest.raises(KeyError):
            t.put(1, {"length": 5})  # no size field
    assert fields(tables[0]) == fields(tables[1])
    for t in tables:
        t.put(10, {"size": 5})
        with pytest.raises(ZeroDivisionError):
            t.any_overlapping(10, 12, lambda entry: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            t.any_containing_addr(12, lambda entry: 1 / 0)
        with pytest.raises(TypeError):
            t.any_overlapping(10)
        with pytest.raises(KeyError):
            t.set_field(99, "tag", 1)  # no such entry
        unsized = type(t)(None, "u")
        unsized.journal = []
        unsized.put("a", {"x": 1})
        unsized.remove("a")
        unsized.remove("a")  # absent: nothing
        assert unsized.rows == {} and unsized.journal == [("u", "a", "put", None), ("u", "a", "remove", {"x": 1})]


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_the_c_table_shows_its_fields_to_the_garbage_collector():
    t = Table("size", "t")
    t.put(1, {"size": 2, "table": t})  # a cycle through the C fields
    assert t.rows in gc.get_referents(t) and t.keys in gc.get_referents(t)
    assert gc.is_tracked(t)


@pytest.mark.parametrize("cls", CLASSES)
def test_tables_pickle_and_copy(cls):
    t = build([(False, k, 10) for k in range(0, 300, 7)] + [(True, 3, 0)], cls=cls)
    t.max_size()
    t.journal = [("t", 1, "put", None)]
    for twin in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert type(twin) is cls and fields(twin) == fields(t)
        twin.put(1000, {"size": 50})
        assert 1000 not in t.rows and twin.any_overlapping(1040, 1041) and not t.any_overlapping(1040, 1041)


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_equal_sizes_of_other_types_and_fresh_key_objects_keep_the_tables_equal():
    """The C put and remove find a size's count by value in the few counts (the count's key is another
    object than the record's size), and a large table's rows by the index's own key object (the
    event's key is another int object): sizes equal but not ints (8.0, True) must still find their
    counts as the dict does, and keys made anew each time must find their rows."""
    import random
    rng = random.Random(3)
    tables = [cls("size", "t", small=6) for cls in (PyTable, Table)]
    for t in tables:
        t.journal = []
    for i in range(600):
        key = int(str(rng.randrange(40) * 4096))  # a fresh int object each time
        size = rng.choice([8, 8.0, 16, 1, True, 2**70])
        remove = rng.random() < 0.4
        for t in tables:
            if remove and key in t.rows:
                t.remove(int(str(key)))
            else:
                t.put(int(str(key)), {"size": size})
            t.journal.clear()
        assert fields(tables[0]) == fields(tables[1]), i
        assert all(type(k) is type(c) for k, c in zip(tables[0]._size_count, tables[1]._size_count))


KEY_INDEX = pytest.mark.skipif(NATIVE is None or not NATIVE.KEY_INDEX,
                               reason="checker._native is not built, or keeps no key index (CPython 3.12 and later)")


def key_index_matches(t) -> bool | None:
    """None while the C table's key index does not match its rows (it is then not used); else whether
    it holds exactly the rows: each key's own object, its record (the same object) and its size."""
    entries = t._key_index()
    if entries is None:
        return None
    own = {id(k) for k in t.rows}
    return len(entries) == len(t.rows) and all(
        id(k) in own and t.rows[k] is record and size == (record[t.sized_by] if t.sized_by else 0)
        for k, record, size in entries)


def rebuild_key_index(t) -> None:
    """Uses enough to have the key index rebuilt (it is, once found out of date len(rows) / 8 times)."""
    for _ in range(len(t.rows) // 8 + 2):
        t.remove(-1)  # no such entry: nothing changes


class Record(dict):
    """A record the C put hands to the Python method (it takes exact dicts only)."""


# What the key index must follow: the C put, remove and set_field (a plain field, the size), the
# journal's rollback, and changes the C code does not see: the Python methods (a put of a Record, a
# removal by the Python method itself), an assignment to the rows (a record of the same size, so
# the table stays whole) and a float key equal to an entry's.
key_index_ops = st.lists(st.tuples(
    st.sampled_from(["put", "put", "remove", "tag", "size", "python_put", "python_remove", "rows", "float", "rollback"]),
    st.integers(0, 2 * 2200), st.integers(1, 40)), max_size=60)


@KEY_INDEX
@settings(max_examples=80, deadline=None)
@given(key_index_ops, st.sampled_from([50, 2100]))
def test_the_key_index_follows_the_rows(operations, n):
    """The C table's index of entries by key value answers as the rows do, whatever changed them: it
    matches them exactly whenever it says it does, and the C table answers as the Python one after
    every operation (probes whose predicate reads the record included). 2,100 entries: past SMALL."""
    py, c = PyTable("size", "t", small=Table.SMALL), Table("size", "t")
    for t in (py, c):
        for k in range(n):
            t.put(k * 16, {"size": 8 + k % 5})
        t.journal = []
    rebuild_key_index(c)  # (the put past SMALL was the Python method's: the index is out of date)
    assert key_index_matches(c) is True
    for op, i, size in operations:
        key = int(str(i * 8))  # a fresh int object; half the keys are entries', half fall between
        for t in (py, c):
            if op == "put":
                t.put(key, {"size": size})
            elif op == "remove":
                t.remove(key)
            elif op in ("tag", "size") and key in t.rows:
                t.set_field(key, op, size)
            elif op == "python_put":
                t.put(key, Record(size=size))
            elif op == "python_remove":
                t._slow_remove(key)
            elif op == "rows" and key in t.rows:
                t.rows[key] = {**t.rows[key], "tag": -1}
            elif op == "float" and key in t.rows:
                t.put(float(key), {"size": t.rows[key]["size"], "tag": -2})  # updates entry `key`
            elif op == "rollback":
                for _, k, _, old in reversed(t.journal):
                    t.restore(k, old)
                t.journal.clear()
        assert fields(c) == fields(py) and key_index_matches(c) is not False, op
        for x in (key, key + 4, key - 4):
            assert c.any_containing_addr(x, lambda e: "tag" in e[1]) == py.any_containing_addr(x, lambda e: "tag" in e[1])
            assert c.any_overlapping(x, x + size) == py.any_overlapping(x, x + size)
            assert c.any_containing(x, x + 1) == py.any_containing(x, x + 1)
        assert key_index_matches(c) is not False
    rebuild_key_index(c)  # (made of plain dicts only: a Record's size is not read in C)
    assert key_index_matches(c) is (True if all(type(r) is dict for r in c.rows.values()) else None)


@KEY_INDEX
def test_a_change_to_the_rows_behind_the_c_code_is_seen():
    """The key index is believed only while the rows are unchanged since it last matched them (the
    dict's version tag): an assignment to the rows makes the C probes ask the rows, until the index
    is rebuilt from them."""
    t = Table("size", "t")
    for k in range(3000):
        t.put(k * 16, {"size": 8, "tag": 0})
    assert key_index_matches(t) is True
    t.rows[160] = {"size": 8, "tag": 1}  # the same size: the table stays whole
    assert key_index_matches(t) is None
    assert t.any_containing_addr(160, lambda e: e[1]["tag"] == 1)
    assert t.any_overlapping(160, 161, lambda e: e[1]["tag"] == 1)
    rebuild_key_index(t)
    assert key_index_matches(t) is True
    assert t.any_containing(160, 161, lambda e: e[1]["tag"] == 1)
    twin = t.copy()  # new rows: its index is made when it has been used enough
    assert key_index_matches(twin) is None
    rebuild_key_index(twin)
    assert key_index_matches(twin) is True


@KEY_INDEX
def test_a_key_index_is_not_made_of_rows_it_cannot_hold():
    """Keys beyond 64 bits (or not ints), sizes that are not 64-bit ints: no key index (the rows answer),
    and one again once they are gone."""
    t = Table("size", "t")
    for k in range(100):
        t.put(k, {"size": 1})
    for odd in ((2**70, {"size": 1}), (200, {"size": 2.0})):
        t.put(*odd)
        assert key_index_matches(t) is None
        rebuild_key_index(t)
        assert key_index_matches(t) is None and t.any_containing_addr(odd[0]) and t.any_containing_addr(5)
        t.remove(odd[0])
        rebuild_key_index(t)
        assert key_index_matches(t) is True
    u = Table(None, "u")
    u.put("a", {"x": 1})
    rebuild_key_index(u)
    assert key_index_matches(u) is None


@KEY_INDEX
def test_a_key_index_of_megabytes_follows_the_rows():
    """Past 2 MiB of slots (40,000 entries) a key index's memory is mapped in huge pages: it still
    holds exactly the rows as it grows there, and as the table empties and the index shrinks back."""
    py, c = PyTable("size", "t", small=Table.SMALL), Table("size", "t")
    for t in (py, c):
        for k in range(40_000):
            t.put(0x7F00_0000_0000 + k * 16384, {"size": 4096})
    rebuild_key_index(c)  # (the put past SMALL was the Python method's)
    assert key_index_matches(c) is True and fields(c) == fields(py)
    for t in (py, c):
        for k in range(0, 40_000 - 100):
            t.remove(0x7F00_0000_0000 + k * 16384)
    assert key_index_matches(c) is True and fields(c) == fields(py)
    assert c.any_containing_addr(0x7F00_0000_0000 + 39_950 * 16384 + 7) and not c.any_containing_addr(0x7F00_0000_0000)


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60), st.integers(1, 9), st.sampled_from(["oldest", "newest", "middle"]), st.booleans())
def test_ascending_puts_and_ordered_frees_are_the_python_table(n, step, order, huge_last):
    """Allocations at ever higher addresses freed oldest or newest first, the order that the C
    list index's bisection asks its end keys about first: probes past, at and before the last key,
    puts past it and removals of the first and last keys answer as the Python table does (also with a
    key beyond 64 bits last, which the C code cannot read)."""
    py, c = PyTable("size", "t", small=100), Table("size", "t", small=100)
    py.journal, c.journal = [], []
    keys = [1000 + i * 10 * step for i in range(n)] + ([HUGE] if huge_last else [])
    for k in keys:
        for x in (k - 1, k, k + 3, k + 10 * step):
            assert c.any_overlapping(x, x + 2) == py.any_overlapping(x, x + 2), x
            assert c.any_containing(x, x + 1) == py.any_containing(x, x + 1), x
        for t in (py, c):
            t.put(k, {"size": 3 * step})
    assert fields(c) == fields(py)
    while py.rows:
        live = sorted(py.rows)
        k = live[0] if order == "oldest" else live[-1] if order == "newest" else live[len(live) // 2]
        for t in (py, c):
            t.remove(k)
        assert fields(c) == fields(py)
        for x in (k - 1, k, k + 1, 999, 10**6):
            assert c.any_overlapping(x, x + 5) == py.any_overlapping(x, x + 5), x
            assert c.any_containing_addr(x) == py.any_containing_addr(x), x


# ---- separated tables: the probes ask only the entry before an address (and, for an overlap, the
# entries from it on), which is exact only while no key lies inside another entry's range

def truly_separated(t) -> bool:
    return not any(a != b and size > 0 and a <= b < a + size
                   for a, ra in t.rows.items() for size in [ra["size"]] for b in t.rows)


# Mostly entries in their own slot of 100 (a separated table), some wide enough to hold other keys
# (one large entry among small ones is what made the window walk the whole table), a few removals.
separated_ops = st.lists(st.tuples(st.integers(0, 5).map(lambda x: x == 0), st.integers(0, 30),
                                   st.integers(0, 40), st.integers(-3, 60),
                                   st.integers(0, 12).map(lambda x: 2_000 if x == 0 else 0)), max_size=60)


def walk_order(t, probe: str, *args) -> tuple[bool, list]:
    """A probe's answer and the keys its predicate was asked about, in order."""
    asked: list = []
    answer = getattr(t, probe)(*args, lambda entry: asked.append(entry[0]) or entry[0] % 3 == 0)
    return answer, asked


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=200, deadline=None)
@given(separated_ops, st.lists(st.tuples(st.integers(-50, 3_200), st.integers(-20, 300)), min_size=1, max_size=8),
       st.sampled_from([None, 4]))
def test_separated_tables_probe_exactly_and_ask_what_the_walk_asks(cls, operations, qs, small):
    """After every change: a table that says it is separated is; every probe is exact; and the
    predicate is asked about the same entries in the same order as by the window's walk (the same
    table told it is not separated), so the two ways cannot differ even by an exception."""
    t = cls("size", "t", small=small)
    for remove, slot, offset, size, wide in operations:
        if remove and t.rows:
            t.remove(sorted(t.rows)[slot % len(t.rows)])
        else:
            t.put(slot * 100 + offset, {"size": size + wide})
        assert not t._separated or truly_separated(t)
        walker = t.copy()
        walker._separated = False
        ranges = [(base, base + length) for base, length in qs]
        if t.rows:  # also at the edges of an entry, where an off-by-one shows
            k = sorted(t.rows)[qs[0][0] % len(t.rows)]
            e = k + t.rows[k]["size"]
            ranges += [(b, x) for b in (k - 1, k, k + 1, e - 1, e) for x in (b + 1, e - 1, e, e + 1)]
        for base, end in ranges:
            entries = [(k, k + r["size"]) for k, r in t.rows.items()]
            assert t.any_overlapping(base, end) == any(overlaps(e, (base, end)) for e in entries)
            assert t.any_containing(base, end) == any(contains_range(e, (base, end)) for e in entries)
            assert t.any_containing_addr(base) == any(contains_addr(e, base) for e in entries)
            for probe, args in (("any_overlapping", (base, end)), ("any_containing", (base, end)),
                                ("any_containing_addr", (base,))):
                assert walk_order(t, probe, *args) == walk_order(walker, probe, *args), (probe, args)
            want, got = answers(t, lambda r: overlaps(r, (base, end)), t.overlapping(base, end))
            assert want == got
            want, got = answers(t, lambda r: contains_range(r, (base, end)), t.containing(base, end))
            assert want == got


def test_a_table_is_separated_again_once_empty():
    for cls in [PyTable] + ([Table] if NATIVE is not None else []):
        t = cls("size", "t")
        t.put(0, {"size": 100})
        t.put(10, {"size": 5})
        assert not t._separated
        t.remove(10)
        assert not t._separated  # (separated again, but only an empty table is known to be)
        t.remove(0)
        assert t._separated


@pytest.mark.skipif(NATIVE is None, reason="checker._native is not built")
def test_a_put_at_the_edge_of_a_chunk_judges_separation_by_its_true_neighbours():
    """The C put judges separation from the place its insertion gave the key: where that is the first
    or last key of a SortedKeys chunk (64 keys), its neighbours lie in the chunk before or after."""
    py, c = PyTable("size", "t", small=8), Table("size", "t", small=8)
    for k in range(0, 300_000, 1_000):
        py.put(k, {"size": 10})
        c.put(k, {"size": 10})
    assert type(c.keys) is NATIVE.SortedKeys and c._separated and py._separated
    # (offset from an entry, size): clear of both neighbours, or reaching the next, or inside the last
    cases = [(-500, 10), (-5, 5), (-5, 6), (10, 5), (9, 5), (995, 5), (995, 6)]
    for k in range(0, 300_000, 1_000):
        for offset, size in cases:
            p, t = py.copy(), c.copy()
            p.put(k + offset, {"size": size})
            t.put(k + offset, {"size": size})
            assert t._separated == p._separated, (k, offset, size)


@settings(max_examples=200, deadline=None)
@given(separated_ops, st.lists(st.integers(0, 3), min_size=1, max_size=60))
def test_the_written_out_sortedlist_add_and_removal_are_sortedlists(operations, reads):
    """PyTable's put and remove on a SortedList index (sublists of 4-8 keys here, so that keys go
    to sublist ends and sublists split and merge) keep it a valid SortedList holding the rows'
    keys, its positional index too once one is built; and the separation they work out from the
    insertion's neighbours is the one a plain list index works out."""
    t, plain = PyTable("size", "t", small=0), PyTable("size", "t")
    t.keys._reset(4)
    for (remove, slot, offset, size, wide), read in zip(operations, reads * len(operations)):
        for table in (t, plain):
            if remove and table.rows:
                table.remove(sorted(table.rows)[slot % len(table.rows)])
            else:
                table.put(slot * 100 + offset, {"size": size + wide})
        if read == 0 and t.rows:
            assert t.keys[len(t.rows) // 2] == sorted(t.rows)[len(t.rows) // 2]  # builds the positional index
        t.keys._check()
        assert type(t.keys) is SortedList and list(t.keys) == sorted(t.rows) == plain.keys
        assert t._separated == plain._separated
        assert not t._separated or truly_separated(t)
