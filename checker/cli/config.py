"""Project defaults: the `[tool.regcheck]` table of the nearest pyproject.toml.

    [tool.regcheck]
    spec_path = ["specs", "vendor/specs"]   # directories searched for a SPEC given by name
    env = { os_kernel = "5.10" }            # default --env values (commands that take --env)
    format = "json"                         # default --format (where the command offers it)

The file is found by walking up from the current directory; relative `spec_path` entries are taken
from the directory that holds it. `spec_path` also becomes $REGCHECK_SPEC_PATH for the run, the
loader's search path, so a spec named in a trace header is found the same way. Command-line flags
always win. A table that is not TOML, or keys of the wrong type, are error E0614 (exit 2).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..language.diagnostics import RegcheckError, error
from ..language.source import Span

PYPROJECT = "pyproject.toml"
# Every --format value some command offers (tests/test_cli.py checks it against the commands).
FORMATS_OFFERED = ("dot", "json", "junit", "markdown", "mermaid", "sarif", "text")


@dataclass(frozen=True)
class ProjectConfig:
    path: str | None = None  # the pyproject.toml read (None: none found, or no [tool.regcheck])
    spec_path: tuple[str, ...] = ()
    env: dict[str, Any] = field(default_factory=dict)
    format: str | None = None


def find_pyproject(start: str | os.PathLike | None = None) -> Path | None:
    """The nearest pyproject.toml at or above `start` (default: the current directory)."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file():
            return candidate
    return None


def load_project_config(start: str | os.PathLike | None = None) -> ProjectConfig:
    path = find_pyproject(start)
    if path is None:
        return ProjectConfig()
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:  # its message ends "(at line L, column C)": the place, for the span
        at = re.search(r"\(at line (\d+), column (\d+)\)$", str(exc))
        span = Span(str(path), int(at[1]), int(at[2])) if at else Span(str(path), 0, 0)
        raise RegcheckError([error("E0614", f"[tool.regcheck] in {path}: cannot read it: {exc}", span)]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise bad_config(path, f"cannot read it: {exc}") from None
    table = doc.get("tool", {}).get("regcheck") if isinstance(doc.get("tool"), dict) else None
    if table is None:
        return ProjectConfig()
    if not isinstance(table, dict):
        raise bad_config(path, "[tool.regcheck] must be a table")
    unknown = sorted(set(table) - {"spec_path", "env", "format"})
    if unknown:
        raise bad_config(path, f"unknown key {unknown[0]!r} (known: spec_path, env, format)")
    spec_path = table.get("spec_path", [])
    if not isinstance(spec_path, list) or not all(isinstance(d, str) for d in spec_path):
        raise bad_config(path, "spec_path must be a list of directory names")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, bool)) for v in env.values()):
        raise bad_config(path, "env must be a table of strings, integers and booleans")
    fmt = table.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise bad_config(path, "format must be a string")
    if fmt is not None and fmt not in FORMATS_OFFERED:  # (a typo would be ignored by every command)
        raise bad_config(path, f"format {fmt!r} is offered by no command (formats: {', '.join(FORMATS_OFFERED)})")
    dirs = tuple(str(path.parent / d) for d in spec_path)
    return ProjectConfig(str(path), dirs, dict(env), fmt)


def bad_config(path: Path, message: str) -> RegcheckError:
    return RegcheckError([error("E0614", f"[tool.regcheck] in {path}: {message}", Span(str(path), 0, 0))])


def env_items(env: dict[str, Any]) -> list[str]:
    """The table as NAME=VALUE strings, as --env takes them."""
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in env.items()]


def resolve_spec(name: str, spec_path: tuple[str, ...]) -> str:
    """`name` looked up on `spec_path` by the loader's one rule (language.load.find_on_spec_path)."""
    from ..language.load import find_on_spec_path  # here: the loader brings the parser, which --version skips

    return find_on_spec_path(name, spec_path)


SPEC_PATH_VARIABLE = "REGCHECK_SPEC_PATH"  # language.load's; named here so that --version skips the loader


def export_spec_path(spec_path: tuple[str, ...]) -> None:
    """Make the project's spec_path the loader's search path for this process and its workers, ahead
    of any the user set, so that a spec named in a trace header is found as the command line's is."""
    earlier = os.environ.get(SPEC_PATH_VARIABLE)
    os.environ[SPEC_PATH_VARIABLE] = os.pathsep.join(spec_path + ((earlier,) if earlier else ()))


def restore_spec_path(saved: str | None) -> None:
    """Undo export_spec_path when a run ends (main also runs in-process, from tests and the plugin)."""
    if saved is None:
        os.environ.pop(SPEC_PATH_VARIABLE, None)
    else:
        os.environ[SPEC_PATH_VARIABLE] = saved
