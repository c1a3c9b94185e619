"""checker.drivers.ordered: IntKeys against a sorted list, both kinds (the C module's SortedKeys and
a SortedList), keys at and beyond the 64-bit edges (which move a SortedKeys to a SortedList)."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.drivers.ordered import IntKeys, IntMap
from checker.model.state import NATIVE

EDGES = [2**63 - 1, 2**63, 2**64 - 1, -1, -(2**63), -(2**63) - 1]
KEY = st.one_of(st.integers(0, 80), st.sampled_from(EDGES))
OPS = st.lists(st.tuples(st.sampled_from(["add", "remove", "within", "before"]), KEY, st.integers(0, 90)),
               max_size=80)


@pytest.mark.parametrize("native", [True, False], ids=["sortedkeys", "sortedlist"])
@settings(max_examples=200, deadline=None)
@given(ops=OPS)
def test_int_keys_answer_as_a_sorted_list(native, ops):
    keys, model = IntKeys(native), []
    for op, key, width in ops:
        if op == "add" and key not in model:  # the caller adds a key only once (its dict did not have it)
            keys.add(key)
            model = sorted(model + [key])
        elif op == "remove" and key in model:
            keys.remove(key)
            model.remove(key)
        elif op == "within":
            assert keys.within(key, key + width) == [k for k in model if key <= k < key + width]
        elif op == "before":
            below = [k for k in model if k < key]
            assert keys.before(key) == (below[-1] if below else None)
        assert len(keys) == len(model)
    assert list(keys) == model
    keys.clear()
    assert list(keys) == [] and keys.before(2**70) is None


def test_a_key_beyond_64_bits_moves_the_keys_to_a_sorted_list():
    keys = IntKeys()
    keys.add(7)
    keys.add(2**64)
    assert keys.native is False
    assert keys.within(0, 2**65) == [7, 2**64] and keys.before(2**64) == 7


def test_the_c_module_is_used_where_it_is_built():
    assert IntKeys().native is (NATIVE is not None)
    assert IntKeys(native=False).native is False


MAP_OPS = st.lists(st.tuples(st.sampled_from(["set", "del", "pop", "floor", "irange", "clear"]), KEY,
                             st.integers(0, 90)), max_size=80)


@settings(max_examples=200, deadline=None)
@given(ops=MAP_OPS)
def test_int_map_answers_as_a_dict_searched_in_full(ops):
    table, model = IntMap(), {}
    for op, key, n in ops:
        if op == "set":
            table[key] = model[key] = n if n % 7 else None  # values may be None
        elif op == "del" and key in model:
            del table[key]
            del model[key]
        elif op == "pop":
            assert table.pop(key, "absent") == model.pop(key, "absent")
        elif op == "floor":
            below = [k for k in sorted(model) if k <= key]
            assert table.floor_item(key) == ((below[-1], model[below[-1]]) if below else None)
        elif op == "irange":
            assert table.irange(key, key + n) == [k for k in sorted(model) if key <= k < key + n]
            below = [k for k in sorted(model) if k < key]
            assert table.meeting(key, key + n) == below[-1:] + [k for k in sorted(model) if key <= k < key + n]
        elif op == "clear" and n % 10 == 0:
            table.clear()
            model.clear()
        assert table == model and list(table.order) == sorted(model)


@pytest.mark.parametrize("call", [lambda m: m.setdefault(1, 2), lambda m: m.update({1: 2}), lambda m: m.popitem(),
                                  lambda m: m.__ior__({1: 2})])
def test_int_map_refuses_the_dict_methods_that_would_go_around_its_order(call):
    table = IntMap()
    table[3] = "x"
    with pytest.raises(TypeError):
        call(table)
    assert table == {3: "x"} and list(table.order) == [3]


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))],
                         ids=["copy", "deepcopy", "pickle"])
def test_an_int_map_copy_keeps_an_order_of_its_own(clone):
    table = IntMap()
    for key in (9, 2, 2**64, 5):
        table[key] = [key]
    twin = clone(table)
    assert twin == table and list(twin.order) == [2, 5, 9, 2**64]
    del twin[5]
    twin[7] = None
    assert list(table.order) == [2, 5, 9, 2**64] and list(twin.order) == [2, 7, 9, 2**64]
    assert twin.floor_item(8) == (7, None) and table.floor_item(8) == (5, [5])
