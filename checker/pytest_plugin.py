"""A pytest plugin: run regcheck's conformance suite inside a driver team's own pytest run.

    pytest --regcheck-spec acl --regcheck-driver mypkg.driver:make_driver [--regcheck-suite DIR]

Without --regcheck-spec the plugin adds nothing. With it, every conformance test of the suite (read
from --regcheck-suite, written by `regcheck generate SPEC -o DIR`, or generated in the session when
no suite is given) becomes one pytest item named after the rule it checks. A test passes, fails
with regcheck's explanation (expected outcomes, actual result, rule ID), or is skipped when it is
inconclusive (the driver failed with an environmental failure the spec allows, so the branch under
test was not exercised). The driver factory defaults to regcheck's reference driver.

Registered through the `pytest11` entry point in pyproject.toml.
"""

from __future__ import annotations

import pytest

def pytest_addoption(parser) -> None:
    group = parser.getgroup("regcheck", "regcheck conformance suite")
    group.addoption("--regcheck-spec", metavar="SPEC",
                    help="run regcheck's conformance suite for this spec (acl, cupva or a .spec file)")
    group.addoption("--regcheck-driver", metavar="MODULE:FACTORY",
                    help="the driver under test (default: regcheck's reference driver)")
    group.addoption("--regcheck-suite", metavar="DIR",
                    help="a suite written by `regcheck generate SPEC -o DIR` (default: generate one now)")


def pytest_collection_modifyitems(session, config, items) -> None:
    spec = config.getoption("--regcheck-spec")
    if not spec:
        return
    suite = RegcheckSuite.from_parent(session, name=f"regcheck[{spec}]")
    items.extend(suite.collect())


def _load_suite(config):
    from .testgen.generate import generate_suite
    from .testgen.suite import read_suite

    directory = config.getoption("--regcheck-suite")
    return read_suite(directory) if directory else generate_suite(config.getoption("--regcheck-spec"))


class RegcheckSuite(pytest.Collector):
    """The conformance tests of one spec, as pytest items."""

    def collect(self):
        from .language.diagnostics import RegcheckError

        try:
            suite = _load_suite(self.config)
        except RegcheckError as exc:
            raise pytest.UsageError(f"regcheck: {exc}") from None
        for test in suite.tests:
            yield RegcheckItem.from_parent(self, name=test.pytest_name, test=test)


class RegcheckItem(pytest.Item):
    def __init__(self, *, test, **kwargs):
        super().__init__(**kwargs)
        self.test = test
        self.user_properties.append(("rule", test.rule))

    def runtest(self) -> None:
        from .testgen.conform import run_test

        result = run_test(self.test, self.config.getoption("--regcheck-driver"))
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
