"""A pytest plugin: run regcheck's conformance suite inside a driver team's own pytest run.

    pytest --regcheck-spec acl --regcheck-driver mypkg.driver:make_driver [--regcheck-suite DIR]

Without --regcheck-spec the plugin adds nothing. With it, every conformance test of the suite (read
from --regcheck-suite, written by `regcheck generate SPEC -o DIR`, or generated in the session when
no suite is given) becomes one pytest item, grouped under the rule it checks:

    regcheck.acl::ACL-REG-OVERLAP::ACL-REG-OVERLAP-1

so that `-k ACL-REG-OVERLAP` selects a rule's tests by its ID as written, a node ID (a test's, or a
rule's for all of its tests) runs just that, `--lf` re-runs the failures (the IDs are the suite's
test names, the same on every run), and JUnit XML (`--junitxml`) has classname
`regcheck.acl.ACL-REG-OVERLAP` and name `ACL-REG-OVERLAP-1`, as `regcheck conform --format junit`
writes them. A test passes, fails with regcheck's explanation (expected outcomes, actual result,
rule ID), or is skipped when it is inconclusive (the driver failed with an environmental failure
the spec allows, so the branch under test was not exercised). The driver factory defaults to
regcheck's reference driver; one that cannot be loaded, like an unknown spec, an unreadable suite
or a suite for another spec, is one usage error before any test runs; a driver that does not
implement the spec (X0807) is one usage error at the first test that starts it.

Registered through the `pytest11` entry point in pyproject.toml.
"""

from __future__ import annotations

import os

import pytest

# What pytest calls, by name: the plugin's interface.
__all__ = ["pytest_addoption", "pytest_load_initial_conftests", "pytest_configure", "pytest_collection_modifyitems"]

PREFIX = "regcheck."  # the suite's node ID is PREFIX + the spec's name

_driver_key = pytest.StashKey[object]()
_selected_key = pytest.StashKey[list]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("regcheck", "regcheck conformance suite")
    group.addoption("--regcheck-spec", metavar="SPEC",
                    help="run regcheck's conformance suite for this spec (acl, cupva or a .spec file)")
    group.addoption("--regcheck-driver", metavar="MODULE:FACTORY",
                    help="the driver under test (default: regcheck's reference driver)")
    group.addoption("--regcheck-suite", metavar="DIR",
                    help="a suite written by `regcheck generate SPEC -o DIR` (default: generate one now)")


def pytest_load_initial_conftests(early_config, parser, args) -> None:
    # pytest would look for a file named like a suite node ID and stop; take those arguments out
    # (before pytest reads them) and select by them once the suite is collected.
    named = {a: suite_node_id(a, str(early_config.invocation_params.dir), str(early_config.rootpath)) for a in args}
    args[:] = [a for a in args if named[a] is None]
    early_config.stash[_selected_key] = [n for n in named.values() if n is not None]


def suite_node_id(arg: str, here: str, rootdir: str) -> str | None:
    """The suite node ID an argument names, None for a file or an option's value: the ID itself, or
    the ID as pytest shows it run from a folder other than its rootdir (`../regcheck.acl::RULE`, where
    a spec given as `../my.spec` put the rootdir above this folder)."""
    if is_suite_node_id(arg):
        return arg
    where, sep, rest = arg.partition("::")
    if not sep or os.path.exists(where):
        return None
    nodeid = os.path.relpath(os.path.join(here, where), rootdir) + sep + rest
    return nodeid if is_suite_node_id(nodeid) else None


def is_suite_node_id(arg: str) -> bool:
    """An argument naming a rule or a test of the suite (`regcheck.acl::RULE[::TEST]`), not a file.
    The `::` is required, so that an option's value such as `--junitxml regcheck.xml` stays."""
    return arg.startswith(PREFIX) and "::" in arg and not os.path.exists(arg.split("::", 1)[0])


def pytest_configure(config) -> None:
    if not config.getoption("--regcheck-spec"):
        return
    from .drivers.executor import load_factory
    from .language.diagnostics import RegcheckError

    try:
        config.stash[_driver_key] = load_factory(config.getoption("--regcheck-driver"))
    except RegcheckError as exc:
        raise pytest.UsageError(f"regcheck: --regcheck-driver: {exc}") from None


def pytest_collection_modifyitems(session, config, items) -> None:
    spec = config.getoption("--regcheck-spec")
    selected = config.stash.get(_selected_key, [])
    if not spec:
        if selected:
            raise pytest.UsageError(f"regcheck: {selected[0]} names a conformance test; give --regcheck-spec too")
        return
    checked = load_checked_spec(config)
    suite = load_suite(config, checked)
    name = PREFIX + checked.name  # the spec's declared name, as `regcheck conform` names it: never a path
    # An explicit node ID: under the session, pytest would start it with "::".
    collector = RegcheckSuite.from_parent(session, name=name, nodeid=name, suite=suite)
    ours = []
    for rule in collector.collect():
        tests = rule.collect()
        # Reported like a collected file, so that pytest counts the tests ("collected N items").
        config.hook.pytest_collectreport(report=pytest.CollectReport(rule.nodeid, "passed", None, tests))
        ours += tests
    if selected:
        keep = [item for item in ours if any(matches(item.nodeid, s) for s in selected)]
        unknown = [s for s in selected if not any(matches(item.nodeid, s) for item in ours)]
        if unknown:
            raise pytest.UsageError(f"regcheck: no conformance test or rule {unknown[0]} in the suite "
                                    f"(node IDs look like {ours[0].nodeid if ours else PREFIX + 'SPEC::RULE::TEST'})")
        # Only node IDs of the suite were given (pytest fell back to testpaths or the current
        # folder): the rest of the session is not what was asked for.
        others = [] if config.args_source == pytest.Config.ArgsSource.ARGS else list(items)
        dropped = others + [i for i in ours if i not in keep]
        if others:
            items.clear()
        ours = keep
        if dropped:
            config.hook.pytest_deselected(items=dropped)
    items.extend(ours)


def matches(nodeid: str, selected: str) -> bool:
    return nodeid == selected or nodeid.startswith(selected + "::")


def load_checked_spec(config):
    """The spec of --regcheck-spec; one that cannot be read is a usage error."""
    from .language.diagnostics import RegcheckError
    from .language.load import load_spec

    try:
        return load_spec(config.getoption("--regcheck-spec"))
    except RegcheckError as exc:
        raise pytest.UsageError(f"regcheck: {exc}") from None


def load_suite(config, spec):
    """The suite of --regcheck-suite, which must be for `spec` (T0736, as `regcheck conform` checks),
    or one generated now; bad input is a usage error."""
    from .language.diagnostics import RegcheckError, error
    from .language.load import is_spec
    from .testgen.generate import generate_suite
    from .testgen.suite import read_suite

    directory = config.getoption("--regcheck-suite")
    named = config.getoption("--regcheck-spec")
    try:
        if not directory:
            return generate_suite(named)
        suite = read_suite(directory)
        if not is_spec(suite.spec, spec, named):
            raise RegcheckError([error("T0736", f"the suite in {directory} is for spec '{suite.spec}', not '{named}'")])
        return suite
    except RegcheckError as exc:
        raise pytest.UsageError(f"regcheck: {exc}") from None


class RegcheckSuite(pytest.Collector):
    """The conformance tests of one spec, one collector per rule."""

    def __init__(self, *, suite, **kwargs):
        super().__init__(**kwargs)
        self.suite = suite

    def collect(self):
        rules: dict[str, list] = {}
        for test in self.suite.tests:
            rules.setdefault(test.rule, []).append(test)
        return [RegcheckRule.from_parent(self, name=rule, tests=tests) for rule, tests in rules.items()]


class RegcheckRule(pytest.Collector):
    """The tests of one rule ID."""

    def __init__(self, *, tests, **kwargs):
        super().__init__(**kwargs)
        self.tests = tests

    def collect(self):
        return [RegcheckItem.from_parent(self, name=test.name, test=test) for test in self.tests]


class RegcheckItem(pytest.Item):
    def __init__(self, *, test, **kwargs):
        super().__init__(**kwargs)
        self.test = test
        self.user_properties.append(("rule", test.rule))
        # -k matches the rule ID as written and the generated module's function name alike.
        self.extra_keyword_matches.update({test.rule, test.pytest_name})

    def runtest(self) -> None:
        from .language.diagnostics import RegcheckError
        from .testgen.conform import run_test

        try:
            result = run_test(self.test, self.config.stash.get(_driver_key, None))
        except RegcheckError as exc:
            # Bad input, not a failing test: the driver does not implement the spec or the test's
            # configuration (X0807), or the test does not fit the spec. `regcheck conform` stops at
            # it with exit 2; here it ends the session as a usage error, without a traceback.
            pytest.exit(f"regcheck: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
        if result.status == "inconclusive":
            pytest.skip(result.explain())
        if not result.passed:
            raise RegcheckFailure(result.explain())

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, RegcheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.test.name} [{self.test.rule}]"


class RegcheckFailure(Exception):
    """A conformance test failed; the message is regcheck's explanation."""
