"""The shape of ``nexus_core``, read from its source with ``ast``: no import circles, short functions, and no
private name imported from another module (see ``docs/decisions/core-layout.md``).

Imports at module level and inside functions both count (a function-level import still ties the two modules
together); imports under ``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import nexus_core
from tests.test_plugin_structure import circles

PACKAGE = Path(nexus_core.__file__).parent
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:`` block."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def _imports(module: str) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or "", line) for every import of ``module`` that runs."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                yield base, alias.name, node.lineno


def _owner(dotted: str) -> str | None:
    """The module of ``nexus_core`` that ``dotted`` (a module, or a name in one) belongs to."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module in MODULES:
        for base, name, _ in _imports(module):
            target = _owner(f"{base}.{name}" if f"{base}.{name}" in MODULES else base)
            if target is not None and target != module:
                graph[module].add(target)
    return graph


def test_the_import_graph_is_read() -> None:
    """A guard for the guard: the graph sees the edges it must (a broken reader would find no circle)."""
    graph = import_graph()
    assert "nexus_core.host.build" in graph["nexus_core.assembly"]
    assert "nexus_core.serve.client_pipes" in graph["nexus_core.serve.stdio"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_nexus_core_has_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_the_host_does_not_import_the_console() -> None:
    """The composition root (``assembly``) installs the console on the host; the host knows nothing of it."""
    graph = import_graph()
    host = [m for m in graph if m.startswith("nexus_core.host")]
    assert not [(m, t) for m in host for t in graph[m] if t.startswith("nexus_core.console")]


def test_no_function_is_longer_than_80_lines() -> None:
    long = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{module}.{node.name}: {lines} lines")
    assert long == []


def test_no_private_name_is_imported_from_another_module() -> None:
    imported = []
    for module in MODULES:
        for base, name, line in _imports(module):
            if base.startswith("nexus_core") and name.startswith("_") and not name.startswith("__"):
                imported.append(f"{module}:{line} imports {name} from {base}")
    assert imported == []


def test_the_sdk_internals_are_reached_in_one_module() -> None:
    """``_lowlevel_server`` and its kind are the SDK's private names: only ``host.sdk`` may use them."""
    users = [m for m, path in MODULES.items() if "_lowlevel_server" in path.read_text(encoding="utf-8")]
    assert users == ["nexus_core.host.sdk"]
