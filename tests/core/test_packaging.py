"""Every first-party distribution: a name of our own, complete metadata, one version, its imports declared.

That the built wheels install and compose is scripts/wheelhouse-test's job (run by .ci/run).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest
from click.testing import CliRunner

import nexus_core
from nexus_core.cli.main import cli
from nexus_core.serve.rendezvous import install_fingerprint

REPO = Path(__file__).resolve().parents[2]
PROJECTS = [REPO, *sorted((REPO / "plugins").glob("nexus_*")), *sorted((REPO / "examples").glob("nexus_*"))]
PREFIX = "nexus-stack-"  # nexus-core, nexus-memory and nexus-graph on PyPI are unrelated projects


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(meta: dict) -> set[str]:
    """Every distribution ``meta`` requires, its extras' included (an optional import is declared in one)."""
    deps = [*meta["dependencies"], *(d for extra in meta.get("optional-dependencies", {}).values() for d in extra)]
    return {normalized(re.match(r"[A-Za-z0-9._-]+", dep).group()) for dep in deps}


@functools.cache
def distributions_of(module: str) -> frozenset[str]:
    return frozenset(normalized(d) for d in packages_distributions().get(module, []))


def project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


def sources(folder: Path) -> list[Path]:
    wheel = project(folder)["tool"]["hatch"]["build"]["targets"]["wheel"]
    return [folder / part for part in wheel.get("packages", wheel.get("include", []))]


@pytest.mark.parametrize("folder", PROJECTS, ids=lambda folder: folder.name)
def test_name_metadata_and_the_one_version(folder: Path) -> None:
    meta = project(folder)["project"]
    assert meta["name"].startswith(PREFIX)
    assert meta["dynamic"] == ["version"] and "version" not in meta
    version_file = folder / project(folder)["tool"]["hatch"]["version"]["path"]
    assert version_file.resolve() == REPO / "nexus_core" / "__init__.py"
    assert version(meta["name"]) == nexus_core.__version__  # what the installed metadata says
    for key in ("description", "license", "requires-python", "authors", "keywords", "classifiers"):
        assert meta.get(key), key
    assert (folder / meta["readme"]).is_file()
    assert all((folder / name).read_text() == (REPO / "LICENSE").read_text() for name in meta["license-files"])
    if folder != REPO:
        assert f"{PREFIX}core" in requirement_names(meta)


@pytest.mark.parametrize("folder", PROJECTS, ids=lambda folder: folder.name)
def test_every_imported_distribution_is_declared(folder: Path) -> None:
    """Coming along with the host is not enough: a plugin declares what it imports."""
    first_party = {src.stem: project(p)["project"]["name"] for p in PROJECTS for src in sources(p)}
    declared = requirement_names(project(folder)["project"])
    own = {src.stem for src in sources(folder)}
    missing = set()
    for src in sources(folder):
        for file in [src] if src.is_file() else sorted(src.rglob("*.py")):
            if file.suffix != ".py":
                continue
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for top in {m.split(".")[0] for m in modules} - own - set(sys.stdlib_module_names) - {"__future__"}:
                    dists = distributions_of(top) | ({first_party[top]} if top in first_party else set())
                    if not dists & declared:
                        missing.add(f"{top} ({file.relative_to(REPO)})")
    assert not missing


def test_version_lists_the_host_and_every_plugin() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and lines[0] == f"{PREFIX}core {nexus_core.__version__}"
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    for name in ("bridge", "files", "graph", "hello", "manual", "memory"):
        assert rows[name] == [f"{PREFIX}{name}", nexus_core.__version__]


def test_the_install_fingerprint_moves_with_installs_not_with_bytecode(tmp_path: Path) -> None:
    """A fresh install's first start writes site-packages/__pycache__: its shared server is not stale for that."""
    (tmp_path / "pkg-1.0.dist-info").mkdir()
    before = install_fingerprint(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "typing_extensions.py").write_text("")
    assert install_fingerprint(tmp_path) == before
    (tmp_path / "pkg-1.0.dist-info").rename(tmp_path / "pkg-1.1.dist-info")  # an upgrade
    upgraded = install_fingerprint(tmp_path)
    (tmp_path / "plugin-0.1.dist-info").mkdir()  # an install
    assert len({before, upgraded, install_fingerprint(tmp_path)}) == 3


@pytest.mark.parametrize("folder", PROJECTS[1:], ids=lambda folder: folder.name)
def test_plugins_import_only_what_nexus_core_exports(folder: Path) -> None:
    """The host's internals may change under a plugin; its published names (nexus_core.__all__) may not."""
    reaching = set()
    for src in sources(folder):
        for file in [src] if src.suffix == ".py" else sorted(src.rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "nexus_core":
                    names = [alias.name for alias in node.names if alias.name not in nexus_core.__all__]
                elif isinstance(node, ast.ImportFrom | ast.Import):
                    modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                    names = [module for module in modules if module.startswith("nexus_core.")]
                else:
                    continue
                reaching |= {f"{name} ({file.relative_to(REPO)})" for name in names}
    assert not reaching
