"""The package's shape (STYLE.md): imports flow one way, one module per outside library, only the CLI prints."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "checker"
MODULES = sorted(p for p in PKG.rglob("*.py"))


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module this file imports (absolute names), at any depth of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:
                    found.update(f"{target}.{alias.name}" for alias in node.names)
                else:
                    found.add(target)
            else:
                found.add(node.module or "")
    return found


GRAPH = {module_name(p): {m for m in imports_of(p) if m.startswith("checker")} for p in MODULES}
KNOWN = set(GRAPH)


def internal(deps: set[str]) -> set[str]:
    """Map imports like checker.language.syntax.S or checker.specs to modules of the package."""
    out = set()
    for d in deps:
        while d and d not in KNOWN:
            d = d.rpartition(".")[0]
        if d:
            out.add(d)
    return out


def test_imports_flow_one_way():
    graph = {m: internal(d) - {m} for m, d in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("library, allowed", [
    ("lark", {"checker.language.parser"}),
    ("z3", {"checker.symbolic.terms", "checker.symbolic.tables", "checker.symbolic.encode", "checker.symbolic.solver"}),
    ("msgspec", {"checker.fast.fastpath"}),
])
def test_one_place_talks_to_each_outside_library(library, allowed):
    """lark: the parser; z3: the symbolic stage (encode is the one converter from the AST to terms; terms
    and tables are the values and states it builds, solver the one place queries run); msgspec: the fast path."""
    users = {module_name(p) for p in MODULES
             if any(i == library or i.startswith(library + ".") for i in imports_of(p))}
    assert users <= allowed, f"{library} is imported by {sorted(users - allowed)}"


def test_the_cli_flows_last():
    for m, deps in GRAPH.items():
        if not m.startswith("checker.cli") and m != "checker.__main__":  # `python -m checker` is the CLI
            assert not any(d.startswith("checker.cli") for d in deps), f"{m} imports the CLI"


def calls_print(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]


def test_only_the_cli_prints():
    printing = {module_name(p): calls_print(p) for p in MODULES if not module_name(p).startswith("checker.cli")}
    assert not {m: lines for m, lines in printing.items() if lines}


# ---------------------------------------------------------------- stages

# The package's stages in pipeline order, one subpackage each (README, "Architecture"; STYLE.md, "Shape
# of the package"). A module may import modules of an earlier stage, never of a later one; inside a
# stage it may import only the modules listed before it ("*" stands for the rest, in no order). A
# subpackage's __init__ comes after its modules. A new module must be listed here, or
# `test_every_module_has_a_stage` fails.
STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "the package (its version)", ("checker",)),
    ("language", "the spec language", ("source", "diagnostics", "files", "syntax", "parser", "printer", "checked",
                                       "exprtypes", "typecheck", "analysis", "load")),
    ("model", "the concrete semantics", ("state", "outcomes", "values", "codegen", "semantics")),
    ("trace", "trace files", ("events", "reader", "writer")),
    ("fast", "the fast path", ("stepcode", "fastpath")),
    ("symbolic", "the Z3 encoding and the solver", ("solver", "terms", "tables", "encode")),
    ("engines", "runs, proofs, bounded model checking, random walks, replay, scale-out, recording",
     ("runs", "bmc", "proof", "consistency", "prover", "simulate", "replay", "shrink", "parallel", "record")),
    ("drivers", "pinned memory, drivers, execution", ("ordered", "lockcounts", "pinning", "protocol", "memory", "acl", "cupva",
                                                      "pinned", "cuda", "hip", "executor", "lockcheck", "observed",
                                                      "execute")),
    ("testgen", "conformance suites and fuzzing", ("model", "configs", "coverage", "pool", "generate", "suite", "conform",
                                                  "specdriver", "fuzz")),
    ("emit", "output formats", ("sarif", "junit", "itf", "diagram", "timeline", "pytest_module")),
    ("cli", "the command line", ("progress", "common", "*")),
    ("", "entry points and the stable import paths of docs/drivers.md",
     ("pytest_plugin", "__main__", "diagnostics", "executor", "pinning")),
)


def rank_of(module: str) -> tuple[int, int | None] | None:
    """(stage, position in the stage or None for "*") of a module of the package, or None if unlisted."""
    parts = module.split(".")[1:]
    for i, (package, _, members) in enumerate(STAGES):
        if not package:
            short = "checker" if not parts else ".".join(parts)
            if short in members:
                return i, members.index(short)
            continue
        if not parts or parts[0] != package:
            continue
        if len(parts) == 1:  # the subpackage's __init__
            return i, len(members)
        if parts[1] in members:
            return i, members.index(parts[1])
        if "*" in members and len(parts) == 2:
            return i, None
    return None


def test_every_module_has_a_stage():
    assert len(MODULES) > 40, PKG  # the package was found
    assert [m for m in sorted(GRAPH) if rank_of(m) is None] == []


def test_every_stage_member_is_a_module():
    ranked = {rank_of(m) for m in GRAPH}
    assert [f"{package}.{name}" for i, (package, _, members) in enumerate(STAGES)
            for j, name in enumerate(members) if name != "*" and (i, j) not in ranked] == []


def test_the_stages_are_the_folder_tree():
    """Every subpackage of checker/ is a stage, and every stage but the top's is a subpackage."""
    folders = {p.parent.name for p in MODULES if p.parent != PKG}
    assert folders == {package for package, _, _ in STAGES if package}


def imports_out_of_order(module: str, deps: set[str]) -> list[str]:
    here = rank_of(module)
    late = []
    for d in sorted(internal(deps) - {module}):
        there = rank_of(d)
        if here is None or there is None:
            continue
        if there[0] > here[0] or (there[0] == here[0] and None not in (here[1], there[1]) and there[1] >= here[1]):
            late.append(f"{module} ({STAGES[here[0]][1]}) imports {d} ({STAGES[there[0]][1]})")
    return late


def test_modules_import_only_earlier_stages_and_earlier_modules_of_their_own():
    assert [bad for m, deps in GRAPH.items() for bad in imports_out_of_order(m, deps)] == []


def test_the_order_check_can_fail():
    assert imports_out_of_order("checker.language.syntax", {"checker.model.semantics"})
    assert imports_out_of_order("checker.language.syntax", {"checker.language.typecheck"})
    assert not imports_out_of_order("checker.language.typecheck", {"checker.language.syntax"})


# ---------------------------------------------------------------- private names stay private


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(path: Path) -> list[str]:
    """`from .x import _y` of a name (not of a submodule such as the C module checker._native), and
    `x._y` where x names a module of the package, imported here."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found, module_aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            if not base.startswith("checker"):
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in KNOWN or (PKG.parent / target.replace(".", "/")).with_suffix(".c").exists() \
                        or any(PKG.parent.glob(target.replace(".", "/") + ".*.so")):
                    module_aliases[alias.asname or alias.name] = target  # a module, not a name in one
                elif private(alias.name):
                    found.append(f"{module_name(path)}:{node.lineno}: from {base} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("checker") and alias.asname:
                    module_aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and private(node.attr)
                and module_aliases.get(node.value.id, module_name(path)) != module_name(path)
                and module_aliases[node.value.id] in KNOWN):
            found.append(f"{module_name(path)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    """STYLE.md: a name that other modules need is public and documented."""
    assert [use for p in MODULES for use in private_imports(p)] == []


def private_names_defined(path: Path) -> set[str]:
    """The private names a module defines: functions, classes, assigned names and attributes, slots."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # __slots__ entries, getattr names
    return {n for n in names if private(n)}


def test_no_module_reaches_into_another_modules_private_attributes():
    """`obj._x` where this module defines no `_x` and another module of the package does: the other
    module's object is being used through its private part."""
    defined = {p: private_names_defined(p) for p in MODULES}
    found = []
    for p in MODULES:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in defined[p]:
                owners = sorted(module_name(q) for q in MODULES if q != p and node.attr in defined[q])
                if owners:
                    found.append(f"{module_name(p)}:{node.lineno}: {ast.unparse(node)} (defined in {', '.join(owners)})")
    assert found == []


# ---------------------------------------------------------------- the test suite itself


TESTS = Path(__file__).resolve().parent


def test_hypothesis_tests_are_deterministic_in_ci():
    """conftest.py loads the "ci" profile (derandomize=True) under CI; a test's own settings keep it
    unless they set derandomize=False, or a @seed or database that would replace it."""
    from hypothesis import settings
    assert settings.get_profile("ci").derandomize and settings.get_profile("ci").database is None
    offending = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "derandomize" and not (
                    isinstance(node.value, ast.Constant) and node.value.value is True):
                offending.append(f"{path.name}:{node.value.lineno}: derandomize={ast.unparse(node.value)}")
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("seed", "hypothesis.seed"):
                offending.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert offending == []


def test_hypothesis_tests_use_the_loaded_profile():
    """Every @given test of the collected modules was built after conftest.py loaded the profile: its
    settings derandomize where the profile does (in CI, every run draws the same examples)."""
    import importlib
    from hypothesis import settings
    if str(TESTS) not in sys.path:  # pytest's default import mode puts tests/ there: modules are test_*
        pytest.fail("tests/ is not on sys.path: run pytest in its default (prepend) import mode")
    modules = [sys.modules.get(p.stem) or importlib.import_module(p.stem) for p in sorted(TESTS.glob("test_*.py"))]
    tests = [obj for mod in modules for obj in vars(mod).values() if callable(obj) and hasattr(obj, "hypothesis")]
    assert len(tests) >= 20  # the test modules' properties were found
    assert all(t._hypothesis_internal_use_settings.derandomize >= settings.default.derandomize for t in tests), \
        [t.__qualname__ for t in tests if not t._hypothesis_internal_use_settings.derandomize]


# ---------------------------------------------------------------- dead code


WHITELIST = TESTS / "vulture_whitelist.py"


def grammar_callbacks() -> set[str]:
    """Rule names and aliases of the grammar: lark calls the parser's methods of those names."""
    text = (PKG / "language" / "grammar.lark").read_text(encoding="utf-8")
    return set(re.findall(r"^[?!]?([a-z_][a-z0-9_]*)\s*:", text, re.M)) | set(re.findall(r"->\s*([a-z_][a-z0-9_]*)", text))


def test_no_dead_code():
    """vulture over the package, its tests and benchmarks (a name those use counts as used) and the
    whitelist (names used only dynamically: hooks, callbacks, fields read by position). Only what
    lies in checker/ is reported; the parser's grammar callbacks are lark's to call."""
    root = PKG.parent
    proc = subprocess.run([sys.executable, "-m", "vulture", "checker", "tests", "bench", "setup.py",
                           "--min-confidence", "60"], cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 3), f"vulture did not run (pip install -e '.[test]'): {proc.stderr}"
    callbacks = grammar_callbacks()
    dead = []
    for line in proc.stdout.splitlines():
        path, _, rest = line.partition(":")
        name = re.search(r"'([^']+)'", rest)
        if not path.startswith("checker/"):
            continue
        if path == "checker/language/parser.py" and "unused method" in rest and name and name[1] in callbacks:
            continue
        dead.append(line)
    assert dead == []


def test_the_whitelist_names_only_what_exists():
    """A whitelist entry whose name is no longer in the package keeps nothing alive: remove it."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in MODULES)
    names = {n.attr if isinstance(n, ast.Attribute) else n.id
             for n in ast.walk(ast.parse(WHITELIST.read_text(encoding="utf-8")))
             if isinstance(n, ast.Attribute) or (isinstance(n, ast.Name) and n.id != "_")}
    assert sorted(n for n in names if not re.search(rf"\b{re.escape(n)}\b", source)) == []


def test_pyproject_ships_every_subpackage():
    """An installed regcheck has every stage: pyproject's package list names each subpackage."""
    import tomllib
    listed = set(tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    subpackages = {module_name(p) for p in MODULES if p.name == "__init__.py"}
    assert subpackages <= listed, sorted(subpackages - listed)
