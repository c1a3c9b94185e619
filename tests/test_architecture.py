"""The package's shape (STYLE.md): imports flow one way, one module per outside library, only the CLI prints."""

import ast
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
    """Map imports like checker.syntax.S or checker.specs to modules of the package."""
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
    ("lark", {"checker.parser"}),
    ("z3", {"checker.encode", "checker.solver"}),
    ("msgspec", {"checker.fastpath"}),
])
def test_one_module_talks_to_each_outside_library(library, allowed):
    users = {module_name(p) for p in MODULES
             if any(i == library or i.startswith(library + ".") for i in imports_of(p))}
    assert users <= allowed, f"{library} is imported by {sorted(users - allowed)}"


def test_the_cli_flows_last():
    for m, deps in GRAPH.items():
        if not m.startswith("checker.cli"):
            assert not any(d.startswith("checker.cli") for d in deps), f"{m} imports the CLI"


def calls_print(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]


def test_only_the_cli_prints():
    printing = {module_name(p): calls_print(p) for p in MODULES if not module_name(p).startswith("checker.cli")}
    assert not {m: lines for m, lines in printing.items() if lines}
