"""Finding, reading, parsing and checking spec files; bundled specs are found by name (`acl`, `cupva`)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import re
import tempfile
from dataclasses import fields, is_dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from . import syntax as S
from .checked import CheckedSpec
from .diagnostics import RegcheckError, error
from .files import open_input, private_cache_dir
from .source import SourceFile, Span
from .typecheck import check_spec


def _spec_dir():
    """The bundled specs: package data when installed, the source tree's spec/ otherwise."""
    try:
        return resources.files("checker.specs")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "spec"


def bundled_spec_names() -> tuple[str, ...]:
    files = _spec_dir()
    return tuple(sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".spec")))


# Directories searched for a spec given by a bare name that is neither bundled nor a file here:
# os.pathsep-separated, as PATH is. The CLI sets it from `[tool.regcheck] spec_path`, so a trace
# header's name is found as the command line's is, in -j worker processes too (they inherit it).
SPEC_PATH_VARIABLE = "REGCHECK_SPEC_PATH"


def spec_path_dirs() -> tuple[str, ...]:
    return tuple(d for d in os.environ.get(SPEC_PATH_VARIABLE, "").split(os.pathsep) if d)


def find_on_spec_path(name: str, dirs: tuple[str, ...] | None = None) -> str:
    """`name` as given when it is a path, a file here or a bundled spec; else NAME or NAME.spec in
    the first of `dirs` (default: $REGCHECK_SPEC_PATH) that has it; else `name` unchanged (reading
    it then reports it)."""
    dirs = spec_path_dirs() if dirs is None else dirs
    if not dirs or "/" in name or _exists(Path(name)) or name in _bundled_name_set():
        return name
    for folder in dirs:
        for candidate in (name, f"{name}.spec"):
            path = os.path.join(folder, candidate)
            if _is_file(Path(path)):
                return path
    return name


MAX_SPEC_BYTES = 1 << 20  # 1 MiB: the bundled specs are about 15 KB; a larger file is E0604


def _is_file(p) -> bool:
    try:
        return p.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except (OSError, ValueError):
        return False


def read_spec_source(name_or_path: str, max_bytes: int | None = None, shown: str | None = None) -> SourceFile:
    """A bundled spec name or a path; E0601 when neither exists (or the path is not a regular
    file), E0602 when it is not UTF-8, E0604 when it is larger than `max_bytes` (MAX_SPEC_BYTES).
    `shown`: how the source and these errors name the spec (default: a file by its path as given,
    a bundled spec as spec/NAME.spec)."""
    limit = _limits["bytes"] if max_bytes is None else max_bytes
    name_or_path = find_on_spec_path(name_or_path)
    path = Path(name_or_path)
    bundled = ("/" not in name_or_path and path.suffix != ".spec"
               and _is_file(_spec_dir().joinpath(f"{name_or_path}.spec")))
    # A bundled name wins over a directory (or other non-file) of the same name in the working directory.
    if not bundled and (path.suffix == ".spec" or _exists(path) or "/" in name_or_path):
        display = name_or_path if shown is None else shown
        try:
            with open_input(name_or_path, "E0601", f"spec '{display}'", "read", shown=display) as f:
                data = f.read(limit + 1)
        except ValueError:  # a NUL byte in the path
            raise RegcheckError([error("E0601", f"cannot read spec {display!r}: not a file name")]) from None
        if len(data) > limit:
            raise RegcheckError([error("E0604", f"spec '{display}' is larger than {limit} bytes, the "
                                       "maximum spec size (raise it with --max-spec-bytes)", Span(display, 0, 0))])
    else:
        res = _spec_dir().joinpath(f"{name_or_path}.spec")
        if not _is_file(res):
            known = ", ".join(bundled_spec_names())
            raise RegcheckError([error("E0601", f"unknown spec '{name_or_path}' (bundled specs: {known}; or give a path)")])
        data = res.read_bytes()
        display = f"spec/{name_or_path}.spec" if shown is None else shown
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegcheckError([error("E0602", f"spec is not UTF-8 (byte {exc.start})", Span(display, 1, 1))]) from None
    return SourceFile.of(display, text)


MAX_NESTING = 100  # the deepest AST a spec may have (expressions nested in clauses in calls); deeper is E0104
_limits = {"bytes": MAX_SPEC_BYTES, "nesting": MAX_NESTING}


def set_spec_limits(max_bytes: int | None = None, max_nesting: int | None = None) -> None:
    """The spec size and nesting limits for what is read from now on (None: the default; the CLI's
    --max-spec-bytes / --max-spec-nesting). Nesting beyond what the parser's and the checker's
    recursion allow is still E0104."""
    limits = {"bytes": max_bytes or MAX_SPEC_BYTES, "nesting": max_nesting or MAX_NESTING}
    if limits != _limits:
        _limits.update(limits)
        clear_spec_cache()  # a spec read under other limits is read again


def check_source(src: SourceFile, cached: bool = False) -> CheckedSpec:
    """Parse and check; a spec nested deeper than MAX_NESTING (251 `and` terms, 5,000 `not`s) is
    E0104 before any recursive pass sees it. With `cached`, the parse is kept in this user's cache
    folder and read from there the next time (`parsed`)."""
    try:
        spec = parsed(src, cached)
    except RecursionError:
        raise _too_deep(f"more than the parser can nest (at most {_limits['nesting']} levels are allowed)",
                        Span(src.path, 0, 0)) from None
    depth, span = _deepest(spec)
    if depth > _limits["nesting"]:
        raise _too_deep(f"{depth} levels, more than the {_limits['nesting']} allowed (--max-spec-nesting); split "
                        "the expression with `def`s", span)
    try:
        return check_spec(spec)
    except RecursionError:  # a pass that recurses more per level than the limit allows for
        raise _too_deep(f"too deep to check (at most {_limits['nesting']} levels are allowed)",
                        Span(src.path, 0, 0)) from None


def parsed(src: SourceFile, cached: bool = False) -> S.SpecFile:
    """The spec file's AST. Parsing a bundled spec costs more than the rest of a short replay (lark's
    import, its tables, the parse), so with `cached` the AST of a spec that parsed is pickled into
    `private_cache_dir()` under a digest of its path and text and of the parser's own code and
    grammar, and read from there while all of them stay the same (any failure to read it: parsed
    again). Only specs read from files are cached (load_spec), and at most AST_CACHE_FILES of them."""
    path = _ast_cache_path(src) if cached else None
    if path is not None:
        try:
            with open(path, "rb") as f:
                spec = pickle.load(f)
            if isinstance(spec, S.SpecFile):
                return spec
        except Exception:  # noqa: BLE001 - a missing, truncated or stale file: parse instead
            pass
    from .parser import parse_spec  # lark: imported only when a spec must be parsed

    spec = parse_spec(src.text, src.path)
    if path is not None:
        _store_ast(path, spec)
    return spec


AST_CACHE_FILES = 64


@lru_cache(maxsize=1)
def _parser_fingerprint() -> bytes:
    """The parser's code, its AST's classes, the grammar and lark's release (its package's
    __init__, which names it, read without importing lark): a change to any makes every cached AST
    stale."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("grammar.lark", "parser.py", "syntax.py", "source.py"):
        digest.update((here / name).read_bytes())
    lark = importlib.util.find_spec("lark")
    if lark is None or lark.origin is None:
        raise OSError("lark is not installed")
    digest.update(Path(lark.origin).read_bytes())
    return digest.digest()


def _ast_cache_path(src: SourceFile) -> str | None:
    folder = private_cache_dir()
    if folder is None:
        return None
    try:
        fingerprint = _parser_fingerprint()
    except OSError:
        return None
    key = hashlib.sha256(fingerprint + src.path.encode("utf-8", "surrogatepass") + b"\0" +
                         src.text.encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(folder, f"spec-ast-{key[:40]}.pickle")


def _store_ast(path: str, spec: S.SpecFile) -> None:
    """Write the AST beside the others (atomically: a reader never sees half a file), then keep the
    AST_CACHE_FILES newest. A failure only means the next run parses again."""
    folder = os.path.dirname(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".spec-ast-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(spec, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        kept = sorted((e for e in os.scandir(folder) if e.name.startswith("spec-ast-")),
                      key=lambda e: e.stat().st_mtime, reverse=True)
        for old in kept[AST_CACHE_FILES:]:
            os.unlink(old.path)
    except (OSError, pickle.PicklingError, RecursionError):
        pass


def _too_deep(what: str, span: Span) -> RegcheckError:
    return RegcheckError([error("E0104", f"the spec nests too deeply: {what}", span)])


def _deepest(root) -> tuple[int, Span]:
    """The depth of the deepest node of an AST (iteratively: no recursion) and that node's span."""
    best, where = 0, Span("", 0, 0)
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > best:
            best = depth
            where = getattr(node, "span", where) or where
        if isinstance(node, (tuple, list)):
            stack.extend((x, depth) for x in node)
        elif is_dataclass(node) and not isinstance(node, (Span, type)):
            for f in fields(node):
                if f.name != "span":
                    child = getattr(node, f.name)
                    if isinstance(child, (tuple, list)) or is_dataclass(child):
                        stack.append((child, depth + 1))
    return best, where


def load_spec(name_or_path: str) -> CheckedSpec:
    """Parse and check a spec (cached per name/path for the process; a bare name is looked up on
    the spec path first, so the cache never serves a spec the search path no longer finds)."""
    return _load_found(find_on_spec_path(name_or_path))


@lru_cache(maxsize=16)
def _load_found(name_or_path: str) -> CheckedSpec:
    return check_source(read_spec_source(name_or_path), cached=True)


def load_spec_as(path: str, shown: str) -> CheckedSpec:
    """The spec `path` names, its spans (and so its diagnostics and notes) naming it `shown`: a
    worker process opens the absolute path of a spec file the user named from the working directory,
    and reports it as the user named it. Cached like `load_spec`."""
    if shown == path:
        return load_spec(path)
    return _load_shown(find_on_spec_path(path), shown)


@lru_cache(maxsize=16)
def _load_shown(path: str, shown: str) -> CheckedSpec:
    return check_source(read_spec_source(path, shown=shown), cached=True)


def is_spec(ref: str, spec: CheckedSpec, named: str) -> bool:
    """Whether `ref` (a bundled name or a path, as load_spec takes it) is `spec`, which the user
    named `named`: the same name, or a file that declares it. Raises RegcheckError when `ref` must
    be read and cannot be."""
    return ref in (named, spec.name) or load_spec(ref).name == spec.name


def clear_spec_cache() -> None:
    """Forget every spec read so far (after its file changed, or under other limits)."""
    _load_found.cache_clear()
    _load_shown.cache_clear()


# How a spec's documents are named to a user (SARIF help, replay's notes). A bundled spec's
# documents all have an entry in docs/sources.md, which says where to read one the user lacks.
SOURCES_DOC = "docs/sources.md"


def is_url(text: str) -> bool:
    return text.startswith(("https://", "http://"))


@lru_cache(maxsize=1)
def _bundled_name_set() -> frozenset[str]:
    return frozenset(bundled_spec_names())


def bundled_spec_name(path: str | None) -> str | None:
    """The bundled spec a span's path names (`spec/NAME.spec`); None for any other file."""
    m = re.fullmatch(r"spec/([A-Za-z0-9_-]+)\.spec", path or "")
    return m.group(1) if m is not None and m.group(1) in _bundled_name_set() else None


def source_anchor(spec: str, source: str) -> str:
    """The anchor of a bundled spec's source in docs/sources.md (its heading's GitHub slug)."""
    return f"{spec}-{source}".lower()


def document_where(source, spec: str | None = None) -> str:
    """Where a user reads a `source`: its URL; for a bundled spec's document without one, its entry
    in docs/sources.md; else the location as the spec gives it."""
    if is_url(source.location):
        return source.location
    return f"{SOURCES_DOC}#{source_anchor(spec, source.name)}" if spec else source.location


def document_text(source, spec: str | None = None) -> str:
    """How a document is named to a user: its title and its URL; a document without a URL (a
    research file of the project, a standard) by its title and its entry in docs/sources.md."""
    where = document_where(source, spec)
    return f"{source.title}, {where}" if is_url(where) else f"{source.title}; see {where}"
