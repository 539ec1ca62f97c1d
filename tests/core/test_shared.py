"""One shared server for every client: several `nexus serve` relays on one config, as desktop clients run them.

Each client is the official MCP client over real stdio, talking to a real relay
process, which talks to a real shared server over its Unix socket. Nothing is
shared in-process: what one session writes, the others must see at once, and a
server killed mid-stream must not lose a client's session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.conftest import nexus_command, server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio

CLIENTS = 4
EACH = 6  # writes of each kind per client


@pytest.fixture
def shared_config(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n'
        '[plugins.graph]\ncategories = ["read", "write"]\n[plugins.manual]\ncategories = ["read", "write"]\n'
        f'[plugins.manual.libraries]\nnotes = "{tmp_path / "notes"}"\n'
        "[plugins.bridge]\nenabled = false\n",
    )


@asynccontextmanager
async def clients(config: Path, n: int, cwd: Path) -> AsyncIterator[list[ClientSession]]:
    async with AsyncExitStack() as stack:
        sessions = []
        for _ in range(n):
            sessions.append(await stack.enter_async_context(stdio_session("--config", str(config), cwd=cwd)))
        yield sessions


def status(config: Path) -> dict[str, Any]:
    out = subprocess.run(
        nexus_command("server", "status", "--json", "--config", str(config)),
        capture_output=True,
        timeout=60,
        env=server_env(),
    )
    return json.loads(out.stdout)


async def ok(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    return result.structured_content or {}


async def test_four_clients_write_at_once_and_every_open_session_sees_every_write(
    shared_config: Path, tmp_path: Path
) -> None:
    async with clients(shared_config, CLIENTS, tmp_path) as sessions:
        assert len({p["pid"] for p in [status(shared_config)]}) == 1 and len(status(shared_config)["sessions"]) == 4

        async def writer(i: int, session: ClientSession) -> None:
            for j in range(EACH):
                await ok(
                    session,
                    "store_memory",
                    {"content": f"client {i} learned fact {j}: cobalt{i}x{j}", "context_name": f"p{i}", "tags": ["t"]},
                )
                await ok(
                    session,
                    "add_entity",
                    {"category": "concepts", "id": f"e-{i}-{j}", "type": "t", "name": f"E {i} {j}", "desc": "d"},
                )
                await ok(
                    session,
                    "add_manual_section",
                    {"library_name": "notes", "toc": f"Client {i}", "new_content": f"line {i}.{j}"},
                )

        async with anyio.create_task_group() as tg:
            for i, session in enumerate(sessions):
                tg.start_soon(writer, i, session)

        total = CLIENTS * EACH
        for i, session in enumerate(sessions):  # every session, not only a new one, sees everything at once
            listed = await ok(session, "list_memories", {"limit": 100})
            assert listed["total_count"] == total
            other = (i + 1) % CLIENTS
            recalled = await ok(session, "recall_memories", {"query": f"cobalt{other}x{EACH - 1}", "limit": 3})
            assert f"cobalt{other}x{EACH - 1}" in json.dumps(recalled)
            found = await ok(session, "search_knowledge", {"query": f"E {other}"})
            assert len(json.dumps(found)) > 0
        manual = await ok(sessions[0], "read_manual", {"library_name": "notes"})
        text = json.dumps(manual)
        assert all(f"line {i}.{j}" in text for i in range(CLIENTS) for j in range(EACH))
    graph = "".join(p.read_text() for p in (tmp_path / "data" / "graph").rglob("*.jsonl"))
    assert all(f'"e-{i}-{j}"' in graph for i in range(CLIENTS) for j in range(EACH))


async def test_relays_started_at_the_same_instant_end_up_on_one_server(shared_config: Path, tmp_path: Path) -> None:
    ready, done = [], anyio.Event()

    async def one_client() -> None:  # each client lives in its own task, as it would in its own process
        async with stdio_session("--config", str(shared_config), cwd=tmp_path) as session:
            ready.append(len((await session.list_tools()).tools))
            await done.wait()

    async with anyio.create_task_group() as tg:
        for _ in range(CLIENTS):
            tg.start_soon(one_client)  # no server runs yet: all four relays race to start one
        with anyio.fail_after(180):
            while len(ready) < CLIENTS:
                await anyio.sleep(0.05)
        now = status(shared_config)
        done.set()
    assert len(now["sessions"]) == CLIENTS and len(set(ready)) == 1 and ready[0] > 0


async def test_a_killed_server_is_replaced_and_the_sessions_go_on(shared_config: Path, tmp_path: Path) -> None:
    async with clients(shared_config, 2, tmp_path) as (first, second):
        stored = await ok(
            first, "store_memory", {"content": "The cache key must include the locale.", "context_name": "web"}
        )
        old_pid = status(shared_config)["pid"]
        os.kill(old_pid, signal.SIGKILL)
        with anyio.fail_after(120):
            while True:  # the next calls succeed once a relay has started a new server (errors meanwhile say why)
                try:
                    result = await first.call_tool("get_memory", {"memory_id": stored.get("id") or stored["memory_id"]})
                except Exception as exc:
                    assert "shared Nexus server stopped" in str(exc), exc
                    await anyio.sleep(0.1)
                    continue
                if not result.is_error:
                    break
        assert status(shared_config)["pid"] != old_pid
        again = await ok(second, "recall_memories", {"query": "locale in the cache key"})
        assert "locale" in json.dumps(again)  # the store survived the kill
        assert len(status(shared_config)["sessions"]) == 2


async def test_each_client_works_in_its_own_launch_folder(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    for name in ("app", "api"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "README.md").write_text(f"This is {name}.\n")
    async with (
        stdio_session("--config", str(config), cwd=tmp_path / "app") as app,
        stdio_session("--config", str(config), cwd=tmp_path / "api") as api,
    ):
        assert "This is app." in (await ok(app, "read_file", {"path": "README.md"}))["content"]
        assert "This is api." in (await ok(api, "read_file", {"path": "README.md"}))["content"]
        refused = await app.call_tool("read_file", {"path": str(tmp_path / "api" / "README.md")})
        assert refused.is_error and "outside the allowed roots" in refused.content[0].text  # type: ignore[union-attr]


async def test_a_changed_config_restarts_the_server_without_losing_open_sessions(
    shared_config: Path, tmp_path: Path
) -> None:
    async with stdio_session("--config", str(shared_config), cwd=tmp_path) as first:
        await ok(first, "get_stats", {})
        old_pid = status(shared_config)["pid"]
        shared_config.write_text(shared_config.read_text() + '[plugins.hello]\ngreeting = "Howdy"\n')
        async with stdio_session("--config", str(shared_config), cwd=tmp_path) as second:
            assert (await ok(second, "hello", {"name": "Ada"}))["text"] == "Howdy, Ada!"
            assert status(shared_config)["pid"] != old_pid
            with anyio.fail_after(60):
                while True:  # the first client's relay reconnects and replays its handshake
                    try:
                        result = await first.call_tool("hello", {"name": "Bo"})
                    except Exception as exc:
                        assert "shared Nexus server stopped" in str(exc), exc
                        await anyio.sleep(0.1)
                        continue
                    if not result.is_error:
                        break
            assert result.structured_content["text"] == "Howdy, Bo!"


def test_the_server_exits_when_idle_and_status_says_when_none_runs(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\nidle_timeout = 1\n')
    started = subprocess.run(
        nexus_command("server", "start", "--config", str(config)), capture_output=True, timeout=120, env=server_env()
    )
    assert started.returncode == 0 and "shared server" in started.stdout.decode()
    pid = int(started.stdout.decode().split("pid ")[1].split(",")[0])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1]
    none = subprocess.run(
        nexus_command("server", "status", "--config", str(config)), capture_output=True, timeout=60, env=server_env()
    )
    assert none.returncode == 3 and "no shared server is running" in none.stdout.decode()


NAP_PLUGIN = """
import anyio
from nexus_core import hookimpl

@hookimpl
def nexus_register_tools(register):
    async def nap(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "rested"
    register(nap, category="default")
"""


async def test_a_call_in_flight_when_the_server_dies_gets_an_error_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "napper.py").write_text(NAP_PLUGIN)
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nplugin_dirs = ["{tmp_path / "plugins"}"]\n',
    )
    async with stdio_session("--config", str(config), cwd=tmp_path) as session:
        assert (await ok(session, "nap", {"seconds": 0}))["result"] == "rested"
        pid = status(config)["pid"]
        outcome: dict[str, Any] = {}

        async def long_call() -> None:
            try:
                outcome["result"] = await session.call_tool("nap", {"seconds": 60})
            except Exception as exc:
                outcome["error"] = str(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_call)
            await anyio.sleep(1.0)  # the call is in flight
            os.kill(pid, signal.SIGKILL)
        assert "shared Nexus server stopped while handling this request" in outcome["error"]
        again = await ok(session, "nap", {"seconds": 0})  # the next call starts a new server; the session goes on
        assert again["result"] == "rested" and status(config)["pid"] != pid
