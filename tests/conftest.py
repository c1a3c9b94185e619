"""Shared pytest options, Hypothesis profiles and fixtures.

`--update-golden` rewrites the golden files (traces/*/*.expect, tests/golden/**/*.expect) from the
current output instead of comparing against them; review the diff before committing it.

Hypothesis profiles: "ci" where the environment variable CI is set and not 0 or false (CI runs
`.ci/run` with CI=true), "dev" otherwise; `--hypothesis-profile NAME` overrides either. The profile
is loaded here, before any test module is imported, because a `@settings(...)` takes every option
it does not set from the profile loaded when it is built (nothing is merged later): a test's own
`max_examples` or `suppress_health_check` stays its own, and the rest (derandomize, in CI) comes
from the profile. In CI the examples are the same on every run: `derandomize=True` seeds each test
from its own name, and no test sets `derandomize=False` (tests/test_architecture.py checks both).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from checker.drivers.pinning import pinning_permitted

REPO_ROOT = Path(__file__).resolve().parent.parent

# deadline=None in both: a shared or loaded machine makes timing-based failures noise, not signal.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI", "").lower() not in ("", "0", "false") else "dev")


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden files (traces/*/*.expect, tests/golden/**/*.expect) from the current output "
                          "instead of comparing")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def repo_root(monkeypatch) -> Path:
    """Run the test from the repository root, so relative paths in output are stable."""
    monkeypatch.chdir(REPO_ROOT)
    return REPO_ROOT


@pytest.fixture
def real_pinning() -> None:
    """Skip the test, saying why, where this process may not lock memory for real."""
    ok, why = pinning_permitted()
    if not ok:
        pytest.skip(f"real pinning is not permitted here: {why}")
