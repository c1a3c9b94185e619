"""Finding, reading, parsing and checking spec files; bundled specs are found by name (`acl`, `cupva`)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from .diagnostics import RegcheckError, error
from .parser import parse_spec
from .source import SourceFile, Span
from .typecheck import CheckedSpec, check_spec


def _spec_dir():
    """The bundled specs: package data when installed, the source tree's spec/ otherwise."""
    try:
        return resources.files("checker.specs")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "spec"


def bundled_spec_names() -> tuple[str, ...]:
    files = _spec_dir()
    return tuple(sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".spec")))


def read_spec_source(name_or_path: str) -> SourceFile:
    """A bundled spec name or a path; E0601 when neither exists, E0602 when it is not UTF-8."""
    path = Path(name_or_path)
    bundled = "/" not in name_or_path and path.suffix != ".spec" and _spec_dir().joinpath(f"{name_or_path}.spec").is_file()
    # A bundled name wins over a directory (or other non-file) of the same name in the working directory.
    if not bundled and (path.suffix == ".spec" or path.exists() or "/" in name_or_path):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RegcheckError([error("E0601", f"cannot read spec '{name_or_path}': {exc.strerror}",
                                       Span(name_or_path, 0, 0))]) from None
        display = name_or_path
    else:
        res = _spec_dir().joinpath(f"{name_or_path}.spec")
        if not res.is_file():
            known = ", ".join(bundled_spec_names())
            raise RegcheckError([error("E0601", f"unknown spec '{name_or_path}' (bundled specs: {known}; or give a path)")])
        data = res.read_bytes()
        display = f"spec/{name_or_path}.spec"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegcheckError([error("E0602", f"spec is not UTF-8 (byte {exc.start})", Span(display, 1, 1))]) from None
    return SourceFile.of(display, text)


def check_source(src: SourceFile) -> CheckedSpec:
    return check_spec(parse_spec(src.text, src.path))


@lru_cache(maxsize=16)
def load_spec(name_or_path: str) -> CheckedSpec:
    """Parse and check a spec (cached per name/path for the process)."""
    return check_source(read_spec_source(name_or_path))
