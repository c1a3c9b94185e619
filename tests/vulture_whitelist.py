"""Names vulture cannot see used: tests/test_architecture.py::test_no_dead_code reads this file.

Never imported or run. vulture matches by name alone, so `_.name` keeps every `name` in the
package alive: each entry says who uses it. An entry marked TODO is dead code in a file that was
being edited by someone else when the test was written: delete the code and its entry.
"""

# Hypothesis calls a RuleBasedStateMachine's teardown after each run (checker/testgen/fuzz.py, SpecMachine).
_.teardown

# pytest calls the plugin's hooks and an Item's runtest/reportinfo (checker/pytest_plugin.py).
_.pytest_addoption
_.pytest_collection_modifyitems
_.runtest
_.reportinfo

# A SarifResult is also taken as a plain 6-tuple: sarif_run unpacks the field by position.
_.related_locations

# io.BufferedReader calls its raw stream's readinto (checker/language/files.py, _Prefixed and _ZstdFrames).
_.readinto

# IntMap (checker/drivers/ordered.py) replaces the dict methods that would go around its order with
# one that raises: Python calls them by their dict names.
_.popitem

# PyTable's written-out SortedList insertion and removal (checker/model/state.py) keep the list's
# own length count, which SortedList's methods read.
_._len
