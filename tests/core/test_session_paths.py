"""Which folders a session may work in, as clients really launch Nexus: the real `nexus serve` relay and shared server.

No default root in a system folder or a folder of projects; the client's roots win even when they
arrive after the first call; a root of `/` never shows the kernel's folders; an untrusted
`nexus.toml` in the launch folder narrows the roots and adds deny_paths.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import nexus_command, run_dir, server_env, stop_shared_servers

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@asynccontextmanager
async def launched(
    cwd: Path, home: Path, *args: str, roots: list[Path] | None = None, answer_after: float = 0.0
) -> AsyncIterator[ClientSession]:
    """`nexus serve` launched in ``cwd`` with no config; a client offering ``roots`` answers roots/list late."""
    command = nexus_command("serve", *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(HOME=str(home)), cwd=cwd)

    async def list_roots(_context: Any) -> types.ListRootsResult:
        await anyio.sleep(answer_after)
        return types.ListRootsResult(roots=[types.Root(uri=r.as_uri()) for r in roots or []])

    callback = {"list_roots_callback": list_roots} if roots is not None else {}
    async with stdio_client(params) as (read, write), ClientSession(read, write, **callback) as session:
        await session.initialize()
        yield session


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def assert_no_roots(session: ClientSession, where: Path) -> None:
    listing = await session.call_tool("list_directory", {"path": "."})
    assert listing.is_error and "no roots" in text(listing), f"launched in {where}: {text(listing)[:300]}"


async def test_launched_in_a_system_folder_there_is_no_default_root(home: Path) -> None:
    for folder in (Path("/etc"), Path("/usr")):
        async with launched(folder, home) as session:
            await assert_no_roots(session, folder)
            passwd = await session.call_tool("read_file", {"path": "/etc/passwd"})
            assert passwd.is_error and "root:x:0" not in text(passwd)


@pytest.fixture
def home_outside_containers() -> Iterator[Path]:
    """A home outside /tmp, /var, /opt, /srv, /mnt: a folder above home is never a root, which would hide the rule."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("needs /dev/shm for a home outside /tmp and /var")
    folder = Path(tempfile.mkdtemp(prefix="nexus-home-", dir="/dev/shm"))
    yield folder
    stop_shared_servers(run_dir(folder))  # outside the run's folders: the suite's own check would not see it
    shutil.rmtree(folder, ignore_errors=True)


async def test_launched_in_a_folder_of_projects_there_is_no_default_root(home_outside_containers: Path) -> None:
    for folder in map(Path, ("/tmp", "/var", "/opt", "/srv", "/mnt")):
        if not folder.is_dir():
            continue
        async with launched(folder, home_outside_containers) as session:
            await assert_no_roots(session, folder)


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")
async def test_a_call_right_after_the_handshake_waits_for_the_clients_roots(home: Path, tmp_path: Path) -> None:
    launch, offered = tmp_path / "launch", tmp_path / "offered"
    for folder in (launch, offered):
        folder.mkdir()
        (folder / "notes.txt").write_text(f"in {folder.name}\n")
    # The launch folder is a root of its own: without the wait, the first call would run there.
    async with launched(launch, home, roots=[offered], answer_after=1.0) as session:
        first = await session.call_tool("read_file", {"path": "notes.txt"})
        assert not first.is_error and "in offered" in first.structured_content["content"]  # type: ignore[index]


async def test_a_walk_of_the_root_folder_never_shows_proc_sys_or_dev(home: Path) -> None:
    async with launched(Path("/"), home, "--root", "/", "--allow-broad-root") as session:
        for tool in ("list_directory", "directory_tree"):
            result = await session.call_tool(tool, {"path": "/", "depth": 1})
            assert not result.is_error, text(result)
            names = {Path(name).name for name in _names(result.structured_content)}
            assert {"etc", "tmp"} <= names  # the walk itself works
            assert not names & {"proc", "sys", "dev"}, f"{tool} showed {sorted(names & {'proc', 'sys', 'dev'})}"


def _names(tree: Any) -> Iterator[str]:
    """Every path or name a listing or a tree holds."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key in ("path", "name") and isinstance(value, str):
                yield value
            else:
                yield from _names(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _names(item)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project whose own (untrusted) nexus.toml will narrow the session launched in it."""
    folder = tmp_path / "repo"
    (folder / "src" / "private").mkdir(parents=True)
    (folder / "README.md").write_text("top of the repository\n")
    (folder / "src" / "app.py").write_text("print('app')\n")
    (folder / "src" / "private" / "plan.txt").write_text("the plan\n")
    return folder


async def test_an_untrusted_configs_roots_narrow_the_sessions_roots(home: Path, repo: Path) -> None:
    (repo / "nexus.toml").write_text('[server]\nroots = ["src"]\n')
    async with launched(repo, home) as session:
        inside = await session.call_tool("read_file", {"path": "app.py"})  # relative to the first root: src
        assert not inside.is_error and "print('app')" in inside.structured_content["content"]  # type: ignore[index]
        above = await session.call_tool("read_file", {"path": str(repo / "README.md")})
        assert above.is_error and "outside the allowed roots" in text(above)


async def test_an_untrusted_configs_deny_paths_are_added(home: Path, repo: Path) -> None:
    (repo / "nexus.toml").write_text('[server]\ndeny_paths = ["private/"]\n')
    async with launched(repo, home) as session:
        refused = await session.call_tool("read_file", {"path": "src/private/plan.txt"})
        assert refused.is_error and "deny_paths pattern 'private/'" in text(refused)
        listing = await session.call_tool("list_directory", {"path": "src", "depth": 3})
        assert not listing.is_error and "app.py" in json.dumps(listing.structured_content)
        assert "private" not in json.dumps(listing.structured_content)
