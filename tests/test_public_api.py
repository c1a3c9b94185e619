"""The public entry points stay where users reach them (issue 18): the documented imports of
docs/drivers.md and docs/trace-format.md, the console script's function, `python -m checker.cli`,
and the pytest plugin's entry point."""

import re
import subprocess
import sys
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMPORT = re.compile(r"^\s*from (checker[\w.]*) import ([\w, ]+)$", re.M)


def documented_imports(doc: str) -> list[tuple[str, str]]:
    return [(m.group(1), name.strip()) for m in IMPORT.finditer((ROOT / "docs" / doc).read_text(encoding="utf-8"))
            for name in m.group(2).split(",")]


@pytest.mark.parametrize("doc", ["drivers.md", "trace-format.md", "conformance.md"])
def test_documented_imports_work(doc):
    found = documented_imports(doc)
    assert found, f"docs/{doc} has no `from checker... import` lines"
    missing = [f"{module}.{name}" for module, name in found if not hasattr(import_module(module), name)]
    assert missing == []


def test_the_drivers_page_imports_its_stable_paths():
    """docs/drivers.md's imports are the stable ones (checker.executor, checker.pinning,
    checker.diagnostics), not the stage modules behind them."""
    modules = {module for module, _ in documented_imports("drivers.md")}
    assert modules <= {"checker.executor", "checker.pinning", "checker.diagnostics"}, modules


def test_entry_points_resolve():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    module, _, attr = project["scripts"]["regcheck"].partition(":")
    assert callable(getattr(import_module(module), attr))
    assert hasattr(import_module(project["entry-points"]["pytest11"]["regcheck"]), "pytest_addoption")


def test_python_m_checker_cli_runs():
    done = subprocess.run([sys.executable, "-m", "checker.cli", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.startswith("regcheck"), done.stdout + done.stderr
