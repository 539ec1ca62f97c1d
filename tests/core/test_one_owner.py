"""One shared server per user, however its clients were launched.

A terminal agent launches ``nexus serve`` with its full environment (``XDG_*`` variables included), an
SDK-based desktop client with the MCP SDKs' default one (``HOME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``,
``LOGNAME``), each from its own folder, with no config: both must reach one server and one set of stores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import http_client, nexus_command, server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def client(env: dict[str, str] | None, cwd: Path) -> AsyncIterator[ClientSession]:
    """``env=None``: the SDK's default environment, as desktop clients launch a server."""
    command = nexus_command("serve")
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content or {}


async def test_clients_launched_with_different_environments_share_one_server_and_its_stores(
    isolated_user_dirs: Path,
) -> None:
    home = isolated_user_dirs
    base = Path(tempfile.mkdtemp(prefix="xdg-"))  # short, like /run/user/UID: a socket path has ~107 bytes
    xdg = {name: base / name[4:8].lower() for name in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME")}
    for folder in xdg.values():
        folder.mkdir(mode=0o700)  # a real per-user runtime folder, as a login session gives
    terminal = server_env(**{name: str(folder) for name, folder in xdg.items()})
    async with client(terminal, home) as full, client(None, Path("/")) as desktop:
        stored = [
            await call(
                full,
                "store_memory",
                content="The staging database listens on port 6543.",
                context_name="infra",
                tags=["db"],
            ),
            await call(
                desktop,
                "store_memory",
                content="Release notes are drafted on Thursdays.",
                context_name="process",
                tags=["release"],
            ),
        ]
        for session in (full, desktop):  # each sees the other's memory at once
            found = await call(session, "recall_memories", query="staging database port", limit=3)
            assert stored[0]["memory_id"] in [m["id"] for m in found["memories"]]
            found = await call(session, "recall_memories", query="when are release notes drafted", limit=3)
            assert stored[1]["memory_id"] in [m["id"] for m in found["memories"]]
        status = json.loads(
            subprocess.run(
                [*nexus_command("server", "status", "--json")], capture_output=True, text=True, check=True
            ).stdout
        )
        assert len(status["sessions"]) == 2  # one server holds both sessions
    assert (home / ".local" / "share" / "nexus" / "memory").is_dir()
    assert not any(path for folder in xdg.values() for path in folder.rglob("*"))  # nothing followed XDG_*
    shutil.rmtree(base)


async def test_http_and_stdio_clients_share_the_shared_servers_state(
    http_server: Callable[..., str], tmp_path: Path
) -> None:
    """`nexus serve --transport http` makes the shared server serve HTTP: no second host on the same stores."""
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    url = http_server("--config", str(config))
    async with http_client(url) as web, stdio_session("--config", str(config), cwd=tmp_path) as local:
        over_http = await web.call_tool(
            "store_memory", {"content": "The cache is warmed at 06:00.", "context_name": "ops", "tags": ["cache"]}
        )
        assert not over_http.is_error, over_http.content
        over_stdio = await call(
            local, "store_memory", content="Deploys freeze on Fridays.", context_name="ops", tags=["deploy"]
        )
        found = (await web.call_tool("recall_memories", {"query": "deploy freeze day"})).structured_content
        assert over_stdio["memory_id"] in [m["id"] for m in found["memories"]]  # type: ignore[index]
        found = await call(local, "recall_memories", query="when is the cache warmed")
        assert over_http.structured_content["memory_id"] in [m["id"] for m in found["memories"]]  # type: ignore[index]
    status = json.loads(
        subprocess.run(
            nexus_command("server", "status", "--json", "--config", str(config)), capture_output=True, text=True
        ).stdout
    )
    assert status["http_listeners"] == [url]  # served by the one shared server, for as long as the command runs


async def test_a_client_whose_input_is_dev_null_does_not_take_the_shared_server_down(tmp_path: Path) -> None:
    """epoll refuses /dev/null: that session is read in a worker thread, and no session's error ends the server."""
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    async with stdio_session("--config", str(config), cwd=tmp_path) as first:
        before = _status("--config", str(config))
        with open(os.devnull, "rb") as nothing:
            done = subprocess.run(
                nexus_command("serve", "--config", str(config)), stdin=nothing, capture_output=True, timeout=60
            )
        assert done.returncode == 0, done.stderr
        after = _status("--config", str(config))
        assert after["pid"] == before["pid"] and len(after["sessions"]) == 1  # the same server, the first session
        assert not (await first.call_tool("get_stats", {})).is_error
    assert "Traceback" not in Path(after["log"]).read_text(errors="replace")


def _status(*args: str) -> dict[str, Any]:
    """`nexus server status --json ARGS` of the shared server those arguments name."""
    command = nexus_command("server", "status", "--json", *args)
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


async def test_every_way_in_reaches_one_state(
    http_server: Callable[..., str], isolated_user_dirs: Path, tmp_path: Path
) -> None:
    """One user's default config: a terminal client (full environment), a desktop client (the SDK's default
    one), a hand-started HTTP server and its client, write memories, graph entities and manual entities at
    once; each sees every write at once, and `nexus call` and `nexus memory export` reach the same store."""
    notes = tmp_path / "notes"
    notes.mkdir()
    user_config = isolated_user_dirs / ".config" / "nexus" / "nexus.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(
        '[plugins.graph]\ncategories = ["read", "write"]\n'
        f'[plugins.manual]\ncategories = ["read", "write"]\n[plugins.manual.libraries]\nnotes = "{notes}"\n'
    )
    url = http_server(cwd=isolated_user_dirs)
    xdg = server_env(XDG_RUNTIME_DIR=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "elsewhere"))
    async with client(xdg, isolated_user_dirs) as terminal, client(None, Path("/")) as desktop, http_client(url) as web:
        sessions = {"terminal": terminal, "desktop": desktop, "web": web}

        async def writes(name: str, session: Any) -> None:
            for n in range(4):
                args = {"content": f"{name} learned fact {n}.", "context_name": name, "tags": [name]}
                assert not (await session.call_tool("store_memory", args)).is_error
                entity = {"category": "concepts", "id": f"{name}-{n}", "type": "concept", "name": f"{name} {n}"}
                assert not (await session.call_tool("add_entity", entity | {"desc": "A test entity."})).is_error
                page = {"library_name": "notes", "entities": [{"name": f"{name} page {n}", "entity_type": "note"}]}
                assert not (await session.call_tool("add_entities", page)).is_error

        async with anyio.create_task_group() as tg:
            for name, session in sessions.items():
                tg.start_soon(writes, name, session)
        for session in sessions.values():  # 12 of each, seen by every session
            listed = (await session.call_tool("list_memories", {"limit": 100})).structured_content
            assert listed["total_count"] == 12  # type: ignore[index]
            found = (await session.call_tool("search_knowledge", {"query": "concept", "limit": 100})).structured_content
            assert found["total_entities"] == 12  # type: ignore[index]
            pages = (await session.call_tool("list_entities", {"library_name": "notes"})).structured_content
            assert len(pages["entities"]) == 12  # type: ignore[index]
        called = subprocess.run(
            nexus_command("call", "list_memories", "limit=100"), capture_output=True, text=True, cwd=tmp_path
        )
        assert called.returncode == 0 and json.loads(called.stdout)["total_count"] == 12, called.stderr
        dump = tmp_path / "memories.jsonl"
        exported = subprocess.run(nexus_command("memory", "export", str(dump)), capture_output=True, text=True)
        assert exported.returncode == 0 and "exported 12 memories" in exported.stderr, exported.stderr
        status = _status()  # one server held them all: both stdio sessions and the HTTP listener
        assert len(status["sessions"]) == 2 and status["http_listeners"] == [url]
