"""The first-party plugins stay readable: no function over 80 lines, no import circle inside a plugin.

Read with ``ast`` only, nothing is imported. An import counts wherever it is written (at module level or
inside a function: a function-level import closes a circle as surely, only later); imports under
``if TYPE_CHECKING:`` do not, since they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 80


@dataclass(frozen=True)
class Plugin:
    folder: Path  # the distribution's folder, with its pyproject.toml
    modules: dict[str, Path]  # dotted name -> file, for every module of its packages

    @property
    def packages(self) -> set[str]:
        """Modules that are packages (their file is an ``__init__.py``)."""
        return {name for name, path in self.modules.items() if path.name == "__init__.py"}


def plugins() -> list[Plugin]:
    """Every distribution under plugins/ and examples/, with the Python modules it ships."""
    found = []
    for pyproject in sorted([*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("examples/*/pyproject.toml")]):
        folder = pyproject.parent
        modules: dict[str, Path] = {}
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if not all((folder.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts))):
                continue  # not inside a package: tests, scripts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
        found.append(Plugin(folder, modules))
    return found


def functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those only a type checker runs."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.If) and _type_checking(node):
            children = node.orelse  # the else branch runs
        pending.extend(children)


def imported(plugin: Plugin, module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The plugin's own modules that ``node``, written in ``module``, imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in plugin.modules}
    base = node.module or ""
    if node.level:
        package = module if module in plugin.packages else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    found = set()
    for alias in node.names:
        if f"{base}.{alias.name}" in plugin.modules:  # `from package import module`
            found.add(f"{base}.{alias.name}")
        elif base in plugin.modules:
            found.add(base)
    return found


def import_graph(plugin: Plugin) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in plugin.modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = set().union(*(imported(plugin, name, node) for node in imports(tree)))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a circle in them (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


PLUGINS = plugins()
CASES = [pytest.param(p, id=p.folder.name) for p in PLUGINS]  # one case per plugin


def test_every_plugin_is_found() -> None:
    names = {p.folder.name for p in PLUGINS}
    assert {"nexus_files", "nexus_graph", "nexus_manual", "nexus_bridge", "nexus_memory", "nexus_hello"} <= names
    assert all(p.modules for p in PLUGINS), "a plugin without a module: the discovery missed its layout"


@pytest.mark.parametrize("plugin", CASES)
def test_no_function_is_over_80_lines(plugin: Plugin) -> None:
    long = []
    for path in plugin.modules.values():
        for fn in functions(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if length > MAX_LINES:
                long.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}: {length} lines")
    assert not long, f"functions over {MAX_LINES} lines (split them):\n" + "\n".join(long)


@pytest.mark.parametrize("plugin", CASES)
def test_no_import_circle_inside_the_plugin(plugin: Plugin) -> None:
    found = circles(import_graph(plugin))
    assert not found, "modules that import each other, directly or around a circle:\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_checks_see_circles_and_long_functions(tmp_path: Path) -> None:
    """The checks themselves: a function-level import closes a circle, a TYPE_CHECKING one does not."""
    package = tmp_path / "demo" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def hook():\n    from demo import a\n")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def later():\n    from .a import x\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from demo import a\n")
    (package / "d.py").write_text("def long():\n" + "    pass\n" * MAX_LINES)
    modules = {p.stem if p.stem != "__init__" else "": p for p in package.glob("*.py")}
    plugin = Plugin(package.parent, {f"demo.{k}".rstrip("."): v for k, v in modules.items()})
    assert circles(import_graph(plugin)) == [["demo.a", "demo.b"]]
    assert import_graph(plugin)["demo.c"] == set()
    assert import_graph(plugin)["demo"] == {"demo.a"}
    lengths = {fn.name: fn.end_lineno - fn.lineno + 1 for fn in functions(ast.parse(modules["d"].read_text()))}
    assert lengths == {"long": MAX_LINES + 1}
