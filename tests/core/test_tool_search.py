"""Tool search through a real ``nexus serve`` (the relay to the shared server) and over Streamable HTTP,
with the official MCP client: a small tools/list, find_tools within the session's grants and profile,
list_changed and the found tool called directly, call_tool through the gate and the audit, a tool added later."""

from __future__ import annotations

import json
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from nexus_core import hookimpl
from nexus_core.builtin.tool_search import ToolSearchPlugin
from tests.conftest import http_client, nexus_command, server_env, write_config

pytestmark = pytest.mark.anyio

# files, graph, manual and memory off: hello's count_lines then needs the 'files' category, never granted here.
CONFIG = """[server]
data_dir = "data"
tool_dirs = ["tools"]
{server}
[plugins.tools]
poll_interval = 0.2
[plugins.files]
enabled = false
[plugins.graph]
enabled = false
[plugins.manual]
enabled = false
[plugins.memory]
enabled = false
[plugins.bridge]
enabled = false
[profiles.searching]
plugins = ["hello", "tools"]
tool_search = true
"""

CONVERT = '''
"""Convert a temperature from Celsius to Fahrenheit."""
parameters = {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]}

def execute(args, context):
    return str(args["celsius"] * 9 / 5 + 32)
'''


@asynccontextmanager
async def relay(config: Path, *args: str) -> AsyncIterator[tuple[ClientSession, list[str]]]:
    """The official client over a real ``nexus serve`` (relay and shared server), noting list_changed."""
    changes: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append("tools")

    command = nexus_command("serve", "--config", str(config), *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=config.parent)
    async with stdio_client(params) as (read, write), ClientSession(read, write, message_handler=on_message) as s:
        await s.initialize()
        yield s, changes


async def names(session: ClientSession) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}


async def found(session: Any, query: str, limit: int = 5) -> list[str]:
    result = await session.call_tool("find_tools", {"query": query, "limit": limit})
    assert not result.is_error, result
    return [t["name"] for t in result.structured_content["tools"]]


def audited(data: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (data / "audit.jsonl").read_text().splitlines()]


async def test_tool_search_through_the_relay_keeps_each_session_within_its_grants_and_profile(
    tmp_path: Path, isolated_user_dirs: Path
) -> None:
    config = write_config(tmp_path / "nexus.toml", CONFIG.format(server=""))
    (tmp_path / "tools").mkdir()
    async with relay(config, "--profile", "searching") as (searching, changes), relay(config) as (plain, _):
        assert await names(searching) == {"find_tools", "call_tool"}
        assert "hello" in await names(plain) and not {"find_tools", "call_tool"} & await names(plain)

        # Never a tool the session may not call: count_lines needs the ungranted 'files' category.
        assert "count_lines" not in await found(searching, "count the lines of a text file", limit=20)

        assert "hello" in await found(searching, "greet someone by name")
        with anyio.fail_after(10):
            while not changes:
                await anyio.sleep(0.02)
        assert "hello" in await names(searching)
        direct = await searching.call_tool("hello", {"name": "Ada"})
        assert direct.structured_content["text"] == "Hello, Ada!"

        through = await searching.call_tool("call_tool", {"name": "hello", "arguments": {"name": "Bo"}})
        assert not through.is_error and "Hello, Bo!" in through.content[0].text
        refused = await searching.call_tool("call_tool", {"name": "count_lines", "arguments": {"path": "x"}})
        assert refused.is_error and "'files' category" in refused.content[0].text

        # A tool file added while serving is found too.
        (tmp_path / "tools" / "convert.py").write_text(textwrap.dedent(CONVERT))
        with anyio.fail_after(20):
            while "convert" not in await found(searching, "celsius to fahrenheit temperature"):
                await anyio.sleep(0.2)
    records = audited(tmp_path / "data")
    assert any(r["tool"] == "count_lines" and r["outcome"] == "denied" for r in records)
    assert any(r["tool"] == "call_tool" and r["outcome"] == "error" for r in records)
    assert any(r["tool"] == "hello" and r["outcome"] == "ok" for r in records)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tool_search_over_streamable_http(http_server, tmp_path: Path, mode: str) -> None:
    config = write_config(tmp_path / "nexus.toml", CONFIG.format(server="tool_search = true"))
    url = http_server("--config", str(config))
    async with http_client(url, mode=mode) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"find_tools", "call_tool"}
        assert "hello" in await found(client, "say hi to someone")
        assert "count_lines" not in await found(client, "count lines in a file", limit=20)
        result = await client.call_tool("call_tool", {"name": "hello", "arguments": {"name": "Cy"}})
        assert not result.is_error and "Hello, Cy!" in result.content[0].text


async def test_a_bridged_server_that_connects_is_searched_within_its_deny_list(
    tmp_path: Path, isolated_user_dirs: Path
) -> None:
    """The npm @modelcontextprotocol/server-memory (scripts/setup installs it) mounted as ``kg``, deletes denied."""
    npm = Path(__file__).parents[1] / "bridge" / "npm"
    assert (npm / "node_modules" / "@modelcontextprotocol" / "server-memory").is_dir(), "run scripts/setup"
    config = CONFIG.format(server="tool_search = true").replace("[plugins.bridge]\nenabled = false\n", "")
    config += (
        '[plugins.bridge.servers.kg]\ntype = "npm"\npackage = "@modelcontextprotocol/server-memory"\n'
        f'cwd = "{npm}"\ndeny = ["delete_*"]\nenv = {{ MEMORY_FILE_PATH = "{tmp_path / "kg.jsonl"}" }}\n'
    )
    (tmp_path / "tools").mkdir()
    async with relay(write_config(tmp_path / "nexus.toml", config)) as (session, _):
        assert await names(session) == {"find_tools", "call_tool"}
        with anyio.fail_after(60):  # npm's server starts while the client is already served
            while "kg_create_entities" not in await found(session, "create entities in the knowledge graph"):
                await anyio.sleep(0.5)
        assert not any(n.startswith("kg_delete") for n in await found(session, "delete entities relations", 20))
        refused = await session.call_tool("call_tool", {"name": "kg_delete_entities", "arguments": {}})
        assert refused.is_error


async def test_a_2026_client_searches_and_calls_through_the_relay(tmp_path: Path, isolated_user_dirs: Path) -> None:
    """A 2026-07-28 request stands alone: the list stays pinned, call_tool reaches what find_tools found."""
    config = write_config(tmp_path / "nexus.toml", CONFIG.format(server="tool_search = true"))
    (tmp_path / "tools").mkdir()
    command = nexus_command("serve", "--config", str(config))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=tmp_path)
    async with Client(params, mode="2026-07-28") as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"find_tools", "call_tool"}
        assert "hello" in await found(client, "greet someone by name")
        assert "count_lines" not in await found(client, "count the lines of a text file", limit=20)
        result = await client.call_tool("call_tool", {"name": "hello", "arguments": {"name": "Di"}})
        assert not result.is_error and "Hello, Di!" in result.content[0].text


class Shelf:
    """Four look-alike tools; one has keywords its description never says."""

    @hookimpl
    def nexus_register_tools(self, register: Any) -> None:
        for verb in ("copy", "move", "tag", "drop"):

            def tool(item: str) -> str:
                return item

            tool.__name__ = f"{verb}_item"
            extra = {"keywords": "zorblax, quuxify"} if verb == "tag" else {}
            register(tool, category="default", description=f"{verb.capitalize()} an item.", **extra)


async def test_find_tools_matches_keywords_that_no_client_is_sent(make_host: Any) -> None:
    host = make_host({"tool_search": ToolSearchPlugin(True), "shelf": Shelf()}, {"server": {"tool_search": True}})
    async with Client(host.server, mode="legacy") as client:  # a session: what find_tools found joins its list
        assert (await found(client, "zorblax quuxify this item", limit=1)) == ["tag_item"]
        answer = (await client.call_tool("find_tools", {"query": "tag an item"})).structured_content
        listed = [t.model_dump(mode="json") for t in (await client.list_tools()).tools]
    assert "tag_item" in {t["name"] for t in listed} and "zorblax" not in json.dumps([answer, listed])
