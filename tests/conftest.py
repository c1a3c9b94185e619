"""Shared pytest options and fixtures.

`--update-golden` rewrites the golden files (traces/*/*.expect, tests/golden/**/*.expect) from the
current output instead of comparing against them; review the diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.pinning import pinning_permitted

REPO_ROOT = Path(__file__).resolve().parent.parent


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
