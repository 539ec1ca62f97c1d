"""The bridge end to end: real upstream servers (Python over stdio and Streamable HTTP, an npm package),
mounted by a real ``nexus serve`` and driven through the official MCP client."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS
from mcp.shared.exceptions import MCPError

from tests.conftest import (
    alive,
    free_port,
    http_client,
    nexus_command,
    run_dir,
    server_env,
    stdio_session,
    stop_shared_servers,
    wait_listening,
    write_config,
)

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("upstream_server.py")
NPM_DIR = Path(__file__).with_name("npm")
# Only the bridge: the other plugins are tested elsewhere and would only slow these servers down.
ONLY_BRIDGE = '[server]\ndata_dir = "data"\n' + "".join(
    f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "hello")
)
# A busy machine may take seconds to start a Python upstream: the first tools/list waits for it that long.
ONLY_BRIDGE += "[plugins.bridge]\nstartup_wait = 30\n"


def stdio_upstream(name: str = "up", **keys: Any) -> str:
    return server_table(name, type="stdio", command=sys.executable, args=[str(UPSTREAM)], **keys)


def server_table(name: str, **keys: Any) -> str:
    lines = [f"[plugins.bridge.servers.{name}]"]
    lines += [f"{key} = {_toml(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


class Session:
    """A client of ``nexus serve`` that keeps the list_changed notifications it receives."""

    def __init__(self, session: ClientSession, changes: list[str]) -> None:
        self.session, self.changes = session, changes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)

    async def tool_names(self) -> list[str]:
        return [tool.name for tool in (await self.session.list_tools()).tools]

    async def wait_for_tool(self, name: str, timeout: float = 30) -> types.Tool:
        with anyio.fail_after(timeout):
            while True:
                tools = {tool.name: tool for tool in (await self.session.list_tools()).tools}
                if name in tools:
                    return tools[name]
                await anyio.sleep(0.05)

    async def wait_for_changes(self, count: int = 1, timeout: float = 10) -> None:
        """Until ``count`` tools/list_changed notifications have arrived (one may trail the list it announces)."""
        with anyio.fail_after(timeout):
            while self.changes.count("tools") < count:
                await anyio.sleep(0.02)

    async def text(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        result = await self.session.call_tool(tool, arguments or {})
        assert not result.is_error, result
        return result.content[0].text  # type: ignore[union-attr]


@asynccontextmanager
async def nexus(config: Path, env: dict[str, str] | None = None) -> AsyncIterator[Session]:
    changes: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append("tools")

    async with stdio_session("--config", str(config), cwd=config.parent, env=env, message_handler=on_message) as s:
        yield Session(s, changes)


@pytest.fixture
def upstream_http(isolated_user_dirs: Path) -> Iterator[Callable[..., str]]:
    """Start the test upstream over Streamable HTTP on 127.0.0.1 (on ``port`` if given); returns its URL.

    The shared server the test used stops first: its open connection would hold up the upstream's exit.
    """
    procs: list[subprocess.Popen[bytes]] = []

    def start(port: int | None = None, token: str | None = None, transport: str = "http") -> str:
        port = port or free_port()
        env = server_env(UPSTREAM_TOKEN=token) if token else server_env()
        procs.append(subprocess.Popen([sys.executable, str(UPSTREAM), transport, str(port)], env=env))
        wait_listening(procs[-1], port)
        return f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"

    yield start
    stop_shared_servers(run_dir(isolated_user_dirs))
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_a_stdio_upstream_is_proxied_with_its_schemas_annotations_and_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(deny=["write_*"]))
    async with nexus(config) as client:
        # The first tools/list waits (startup_wait) for servers still connecting, so no polling here.
        add = {tool.name: tool for tool in (await client.list_tools()).tools}["up_add"]
        assert add.input_schema["required"] == ["a", "b"]
        assert add.annotations is not None and add.annotations.read_only_hint is True
        assert add.output_schema is not None and "total" in add.output_schema["properties"]
        assert add.meta is not None and add.meta["nexus/plugin"] == "bridge"

        result = await client.call_tool("up_add", {"a": 2, "b": 40})
        assert not result.is_error and result.structured_content == {"total": 42}
        failed = await client.call_tool("up_fail", {"message": "it broke"})
        assert failed.is_error and "it broke" in failed.content[0].text  # type: ignore[union-attr]
        invalid = await client.call_tool("up_add", {"a": "two", "b": 1})
        assert invalid.is_error and "a" in invalid.content[0].text  # type: ignore[union-attr]


async def test_a_denied_upstream_tool_is_neither_listed_nor_callable(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(deny=["write_*"], allow=["*"]))
    async with nexus(config) as client:
        await client.wait_for_tool("up_echo")
        assert "up_write_note" not in await client.tool_names()
        refused = await client.call_tool("up_write_note", {"text": "x"})
        assert refused.is_error
        assert "matches deny pattern 'write_*' of [plugins.bridge.servers.up]" in refused.content[0].text  # type: ignore[union-attr]
    audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
    assert {"plugin": "bridge", "tool": "up_write_note", "outcome": "denied"}.items() <= audit[-1].items()


async def test_categories_mount_an_upstream_read_only(tmp_path: Path) -> None:
    text = ONLY_BRIDGE.replace("startup_wait = 30", 'startup_wait = 30\ncategories = ["read"]')
    text += stdio_upstream(read_tools=["echo", "add", "count*"])
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("up_echo")
        names = await client.tool_names()
        assert {"up_echo", "up_add", "up_counter"} <= set(names)
        assert not {"up_write_note", "up_crash", "up_grow"} & set(names)  # not named in read_tools
        refused = await client.call_tool("up_crash", {})
        assert refused.is_error and "'write' category" in refused.content[0].text  # type: ignore[union-attr]


async def test_an_upstreams_read_only_hint_does_not_make_its_tool_read(tmp_path: Path) -> None:
    """The upstream marks echo, add, counter readOnlyHint: only the config decides, so under a read-only grant
    only those read_tools names are served, and a call to another is refused (it could write, whatever it says)."""
    text = ONLY_BRIDGE.replace("startup_wait = 30", 'startup_wait = 30\ncategories = ["read"]')
    text += stdio_upstream(read_tools=["echo"]) + stdio_upstream("all", trusted=True)
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("up_echo")
        await client.wait_for_tool("all_write_note")  # trusted = true: every tool of that server is read
        names = set(await client.tool_names())
        assert not {"up_add", "up_counter"} & names
        refused = await client.call_tool("up_add", {"a": 1, "b": 2})
        assert refused.is_error and "'write' category" in refused.content[0].text  # type: ignore[union-attr]


async def test_resources_templates_and_prompts_are_proxied(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream())
    async with nexus(config) as client:
        await client.wait_for_tool("up_echo")
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "up+upstream://readme" in resources  # the server's own URI, behind its prefix
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "up+upstream://items/{item}" in templates
        readme = await client.read_resource("up+upstream://readme")
        assert readme.contents[0].text.startswith("# Upstream")  # type: ignore[union-attr]
        assert str(readme.contents[0].uri) == "up+upstream://readme"
        item = await client.read_resource("up+upstream://items/7")
        assert item.contents[0].text == "item 7"  # type: ignore[union-attr]
        assert "up_review" in {p.name for p in (await client.list_prompts()).prompts}
        prompt = await client.get_prompt("up_review", {"topic": "the bridge"})
        assert prompt.messages[0].content.text == "Please review the bridge."  # type: ignore[union-attr]


async def test_two_upstreams_serving_the_same_uris_each_serve_theirs_under_their_prefix(tmp_path: Path) -> None:
    servers = [stdio_upstream(name, env={"UPSTREAM_NAME": name}) for name in ("a", "b")]
    servers.append(stdio_upstream("plain", prefix="", env={"UPSTREAM_NAME": "plain"}, allow=["links"]))
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + "".join(servers))
    async with nexus(config) as client:
        for tool in ("a_echo", "b_echo", "links"):
            await client.wait_for_tool(tool)
        assert not {"echo", "add", "counter"} & set(await client.tool_names())  # 'plain' allows only links
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"a+upstream://readme", "b+upstream://readme", "upstream://readme"} <= resources
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert {"a+upstream://items/{item}", "b+upstream://items/{item}", "upstream://items/{item}"} <= templates

        async def read(uri: str) -> str:
            return (await client.read_resource(uri)).contents[0].text  # type: ignore[union-attr]

        assert await read("a+upstream://readme") == "# Upstream a\nA resource from the upstream server."
        assert await read("b+upstream://readme") == "# Upstream b\nA resource from the upstream server."
        assert await read("upstream://readme") == "# Upstream plain\nA resource from the upstream server."
        assert await read("a+upstream://items/7") == "item 7 from a"
        assert await read("b+upstream://items/7") == "item 7 from b"

        # Links in a server's answers point where a client can read them: its resources get its prefix.
        links = (await client.call_tool("b_links", {})).content
        uris = [str(link.uri) for link in links]  # type: ignore[union-attr]
        assert uris == ["b+upstream://readme", "b+upstream://items/3", "https://example.com/"]
        assert await read(uris[1]) == "item 3 from b"
        plain = [str(link.uri) for link in (await client.call_tool("links", {})).content]  # type: ignore[union-attr]
        assert plain == ["upstream://readme", "upstream://items/3", "https://example.com/"]


async def test_the_upstreams_own_list_changes_are_followed(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream())
    async with nexus(config) as client:
        await client.wait_for_tool("up_grow")
        before = client.changes.count("tools")
        assert await client.text("up_grow", {"name": "sprout"}) == "added sprout"
        await client.wait_for_tool("up_sprout", timeout=10)
        await client.wait_for_changes(before + 1)
        assert await client.text("up_sprout") == "I am sprout"


async def test_an_upstream_that_crashes_mid_call_gives_a_clear_error_and_comes_back(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream())
    async with nexus(config) as client:
        await client.wait_for_tool("up_crash")
        first_pid = (await client.text("up_counter")).split(" in ")[1]
        crashed = await client.call_tool("up_crash", {})
        assert crashed.is_error
        message = crashed.content[0].text  # type: ignore[union-attr]
        assert "upstream server 'up' failed during tool 'crash'" in message and "reconnecting" in message
        with anyio.fail_after(30):
            while (result := await client.call_tool("up_counter", {})).is_error:
                assert "upstream server 'up'" in result.content[0].text  # type: ignore[union-attr]
                await anyio.sleep(0.1)
        count, pid = result.content[0].text.split(" in ")  # type: ignore[union-attr]
        assert pid != first_pid and count == "1"  # a new process answered
        assert await client.text("up_echo", {"text": "still here"}) == "still here"


async def test_the_first_call_after_a_stdio_upstream_died_reconnects_within_the_call(tmp_path: Path) -> None:
    """No call fails because the upstream died between calls: the call that finds it gone reconnects, once."""
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(backoff=0.6))
    async with nexus(config) as client:
        await client.wait_for_tool("up_counter")
        for _ in range(2):  # a young connection too: the call waits out the backoff
            old = int((await client.text("up_counter")).split(" in ")[1])
            _kill(old)
            await anyio.sleep(0.3)  # the bridge has seen it go (a closed pipe): down, its retry not yet due
            result = await client.call_tool("up_counter", {})
            assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
            count, pid = result.content[0].text.split(" in ")  # type: ignore[union-attr]
            assert count == "1" and int(pid) != old
        # The connection lost during the call itself (the bridge could not have seen it go before): sent once more.
        again = await client.text("up_crash_once", {"marker": str(tmp_path / "crashed")})
        assert again == "answered after the crash"


async def test_retries_is_the_number_of_failed_attempts_before_giving_up(tmp_path: Path) -> None:
    """As documented: `retries = 2` gives up after 2 failed attempts (connections that die young), not 3."""
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(retries=2, backoff=0.05))
    async with nexus(config) as client:
        await client.wait_for_tool("up_crash")
        with anyio.fail_after(20):
            while "up_echo" in await client.tool_names():
                await client.call_tool("up_crash", {})
                await anyio.sleep(0.05)
        result = await client.call_tool("up_echo", {"text": "x"})
        assert "is unavailable: gave up after 2 failed attempts" in result.content[0].text  # type: ignore[union-attr]


async def test_over_http_the_call_after_a_crash_reconnects_and_retries_give_up_as_documented(
    tmp_path: Path, http_server: Callable[..., str]
) -> None:
    """The two tests above, for a client over Streamable HTTP: one server mounting both upstreams."""
    upstreams = stdio_upstream(backoff=0.6) + stdio_upstream("flaky", retries=2, backoff=0.05)
    url = http_server("--config", str(write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + upstreams)), cwd=tmp_path)
    async with http_client(url) as client:

        async def names() -> set[str]:
            return {tool.name for tool in (await client.list_tools()).tools}

        with anyio.fail_after(30):
            while not {"up_counter", "flaky_crash"} <= await names():
                await anyio.sleep(0.05)
        for _ in range(2):  # a young connection too: the call waits out the backoff
            old = int((await client.call_tool("up_counter", {})).content[0].text.split(" in ")[1])  # type: ignore[union-attr]
            _kill(old)
            await anyio.sleep(0.3)  # the bridge has seen it go: down, its retry not yet due
            result = await client.call_tool("up_counter", {})
            assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
            count, pid = result.content[0].text.split(" in ")  # type: ignore[union-attr]
            assert count == "1" and int(pid) != old
        again = await client.call_tool("up_crash_once", {"marker": str(tmp_path / "crashed")})
        assert again.content[0].text == "answered after the crash"  # type: ignore[union-attr]
        with anyio.fail_after(20):
            while "flaky_echo" in await names():
                await client.call_tool("flaky_crash", {})
                await anyio.sleep(0.05)
        result = await client.call_tool("flaky_echo", {"text": "x"})
        assert "is unavailable: gave up after 2 failed attempts" in result.content[0].text  # type: ignore[union-attr]


async def test_pings_keep_a_healthy_connection(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(ping_interval=0.1))
    async with nexus(config) as client:
        await client.wait_for_tool("up_counter")
        first = await client.text("up_counter")
        await anyio.sleep(1)  # ten pings
        assert await client.text("up_counter") == "2 in " + first.split(" in ")[1]  # the same process


async def test_a_hung_upstream_is_noticed_by_its_pings_and_replaced(tmp_path: Path) -> None:
    """A frozen server keeps its pipe open: only an unanswered ping tells it from a slow one."""
    upstream = stdio_upstream(ping_interval=0.2, timeout=1, backoff=0.1)
    async with nexus(write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + upstream)) as client:
        await client.wait_for_tool("up_counter")
        frozen = int((await client.text("up_counter")).split(" in ")[1])
        os.kill(frozen, signal.SIGSTOP)
        try:
            with anyio.fail_after(20):
                while (result := await client.call_tool("up_counter", {})).is_error:
                    await anyio.sleep(0.1)  # each call waits `timeout` (1 s) for the frozen process
        finally:
            _kill(frozen)
        count, pid = result.content[0].text.split(" in ")  # type: ignore[union-attr]
        assert count == "1" and int(pid) != frozen  # a new process answered


async def test_after_giving_up_its_tools_are_withdrawn_and_a_call_says_why(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(retries=0))
    async with nexus(config) as client:
        await client.wait_for_tool("up_crash")
        await client.call_tool("up_crash", {})  # a connection that dies young, and no retries left
        with anyio.fail_after(10):
            while "up_echo" in await client.tool_names():
                await anyio.sleep(0.05)
        result = await client.call_tool("up_echo", {"text": "x"})
        assert result.is_error
        assert "upstream server 'up' is unavailable: gave up after 1 failed attempts" in result.content[0].text  # type: ignore[union-attr]


async def test_read_only_idempotent_results_are_cached_for_the_ttl(tmp_path: Path) -> None:
    text = ONLY_BRIDGE + stdio_upstream("cached", cache_ttl=60, trusted=True) + stdio_upstream("fresh")
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("cached_counter")
        await client.wait_for_tool("fresh_counter")
        assert await client.text("cached_counter") == await client.text("cached_counter")
        first, second = await client.text("fresh_counter"), await client.text("fresh_counter")
        assert first.startswith("1 in") and second.startswith("2 in")
        assert [await client.text("cached_ticks") for _ in range(2)] == ["tick 1", "tick 2"]  # not idempotent
        sums = [await client.call_tool("cached_add", {"a": 1, "b": n}) for n in (1, 2)]  # not idempotent-marked
        assert [s.structured_content for s in sums] == [{"total": 2}, {"total": 3}]


async def test_a_cached_result_expires_after_the_ttl(tmp_path: Path) -> None:
    text = ONLY_BRIDGE + stdio_upstream("cached", cache_ttl=3, trusted=True)
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("cached_counter")
        first = await client.text("cached_counter")
        assert first.startswith("1 in ") and await client.text("cached_counter") == first
        await anyio.sleep(3.5)
        assert await client.text("cached_counter") == "2 in " + first.split(" in ")[1]


async def test_an_http_upstream_is_proxied_with_its_token_from_the_environment(
    tmp_path: Path, upstream_http: Callable[..., str]
) -> None:
    url = upstream_http(token="s3cret")
    table = server_table("web", type="http", url=url, headers={"Authorization": {"env": "WEB_TOKEN"}})
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + table)
    async with nexus(config, env=server_env(WEB_TOKEN="Bearer s3cret")) as client:
        await client.wait_for_tool("web_add")
        result = await client.call_tool("web_add", {"a": 1, "b": 2})
        assert result.structured_content == {"total": 3}
        item = await client.read_resource("web+upstream://items/x")
        assert item.contents[0].text == "item x"  # type: ignore[union-attr]


async def test_an_sse_upstream_is_proxied(tmp_path: Path, upstream_http: Callable[..., str]) -> None:
    url = upstream_http(token="s3cret", transport="sse")
    table = server_table("old", type="sse", url=url, headers={"Authorization": {"env": "OLD_TOKEN"}})
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + table)
    async with nexus(config, env=server_env(OLD_TOKEN="Bearer s3cret")) as client:
        await client.wait_for_tool("old_echo")
        assert await client.text("old_echo", {"text": "over SSE"}) == "over SSE"
        prompt = await client.get_prompt("old_review", {"topic": "SSE"})
        assert prompt.messages[0].content.text == "Please review SSE."  # type: ignore[union-attr]


async def test_an_upstream_that_is_down_does_not_delay_the_server_and_appears_when_it_comes_up(
    tmp_path: Path, upstream_http: Callable[..., str]
) -> None:
    port = free_port()
    table = server_table("late", type="http", url=f"http://127.0.0.1:{port}/mcp", backoff=0.2, retries=50)
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + table)
    async with nexus(config) as client:
        assert "late_echo" not in await client.tool_names()  # serving already, without it
        missing = await client.call_tool("late_echo", {"text": "x"})
        assert missing.is_error
        upstream_http(port=port)
        await client.wait_for_tool("late_echo")
        await client.wait_for_changes()
        assert await client.text("late_echo", {"text": "made it"}) == "made it"


async def test_a_slow_upstream_does_not_delay_initialize(tmp_path: Path) -> None:
    slow = server_table("slow", type="stdio", command=sys.executable, args=["-c", "import time; time.sleep(60)"])
    text = ONLY_BRIDGE.replace("startup_wait = 30", "startup_wait = 1") + slow + stdio_upstream()
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:  # initialized; 'slow' never answers
        await client.wait_for_tool("up_echo")
        assert not [name for name in await client.tool_names() if name.startswith("slow_")]
        missing = await client.call_tool("slow_anything", {})  # waits startup_wait at most, then:
        assert missing.is_error and "Unknown tool" in missing.content[0].text  # type: ignore[union-attr]


def test_nexus_plugins_and_tools_show_each_upstream(tmp_path: Path) -> None:
    down = server_table("gone", type="http", url=f"http://127.0.0.1:{free_port()}/mcp", retries=0)
    down += server_table("later", type="http", url=f"http://127.0.0.1:{free_port()}/mcp", retries=3, backoff=60)
    keyless = server_table("keyless", type="stdio", command="true", env={"KEY": {"env": "NEXUS_TEST_UNSET"}})
    dies = "import sys; print('Traceback: it broke', file=sys.stderr); sys.exit(7)"
    keyless += server_table("dies", type="stdio", command=sys.executable, args=["-c", dies], retries=0)
    config = write_config(
        tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(deny=["write_*"], read_tools=["add"]) + down + keyless
    )
    out = subprocess.run(
        nexus_command("plugins", "--config", str(config)), capture_output=True, text=True, env=server_env(), timeout=60
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    up = next(line for line in lines if line.strip().startswith("up (stdio"))
    assert "connected; 12 tools, 2 resources, 1 prompt (1 tool excluded by allow/deny)" in up
    gone = next(line for line in lines if line.strip().startswith("gone (http"))
    assert "unavailable: gave up after 1 failed attempts" in gone and "ConnectError" in gone
    later = next(line for line in lines if line.strip().startswith("later (http"))  # counted as `retries` is
    assert "down: ConnectError" in later and "(1 of 3 failed attempts; retry in " in later, later
    keyless = next(line for line in lines if line.strip().startswith("keyless (stdio"))
    assert "gave up after 1 failed attempts: KEY: environment variable NEXUS_TEST_UNSET is not set" in keyless
    dies = next(line for line in lines if line.strip().startswith("dies (stdio"))  # how it ended, and its last words
    assert (
        "gave up after 1 failed attempts: Connection closed (the server exited with status 7: Traceback: it broke)"
        in dies
    )

    out = subprocess.run(
        nexus_command("tools", "--config", str(config)), capture_output=True, text=True, env=server_env(), timeout=60
    )
    rows = {line.split()[0]: line.split(None, 3)[1:] for line in out.stdout.splitlines()[1:]}
    assert rows["up_add"] == ["bridge", "read", "granted"]
    assert rows["up_write_note"][:2] == ["bridge", "write"] and "matches deny pattern" in rows["up_write_note"][2]


async def test_a_real_npm_server_is_proxied(tmp_path: Path) -> None:
    """@modelcontextprotocol/server-memory, installed from the npm registry by scripts/setup."""
    assert (NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory").is_dir(), "run scripts/setup"
    memory_file = tmp_path / "memory.jsonl"
    table = server_table(
        "kg",
        type="npm",
        package="@modelcontextprotocol/server-memory",
        cwd=str(NPM_DIR),
        env={"MEMORY_FILE_PATH": str(memory_file)},
        deny=["delete_*"],
    )
    async with nexus(write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + table)) as client:
        await client.wait_for_tool("kg_create_entities", timeout=60)
        names = await client.tool_names()
        assert {"kg_read_graph", "kg_search_nodes"} <= set(names) and "kg_delete_entities" not in names
        entity = {"name": "Nexus", "entityType": "project", "observations": ["mounts MCP servers"]}
        created = await client.call_tool("kg_create_entities", {"entities": [entity]})
        assert not created.is_error, created
        found = await client.call_tool("kg_search_nodes", {"query": "Nexus"})
        assert "mounts MCP servers" in found.content[0].text  # type: ignore[union-attr]
    assert "Nexus" in memory_file.read_text()


async def test_a_stdio_upstream_gets_a_minimal_environment_without_the_servers_secrets(tmp_path: Path) -> None:
    secrets = {"AWS_SECRET_ACCESS_KEY": "aws-s3cret", "NEXUS_TOKEN": "nexus-s3cret", "GITHUB_TOKEN": "ghp-s3cret"}
    home = tmp_path / "home"
    home.mkdir()
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(env={"UPSTREAM_NAME": "given"}))
    async with nexus(config, env=server_env(HOME=str(home), **secrets)) as client:
        await client.wait_for_tool("up_whereabouts")
        seen = (await client.call_tool("up_whereabouts", {})).structured_content
    assert seen is not None
    variables: dict[str, str] = seen["environment"]
    assert not set(secrets) & set(variables)
    assert not [name for name, value in variables.items() if any(s in value for s in secrets.values())]
    # Only the SDK's safe set, PATH and the table's own env (LC_CTYPE: Python's locale coercion, PEP 538).
    assert set(variables) <= {*DEFAULT_INHERITED_ENV_VARS, "UPSTREAM_NAME", "LC_CTYPE"}
    assert variables["UPSTREAM_NAME"] == "given" and variables["HOME"] == str(home)


async def test_an_npm_server_runs_in_the_data_folder_not_in_the_workspace(tmp_path: Path) -> None:
    """npx resolves the package from node_modules in its folder: a workspace's could swap it for its own."""
    workspace, data = tmp_path / "workspace", tmp_path / "data" / "bridge"
    for folder in (workspace, data):  # the package is found in both, so the server starts wherever it runs
        folder.mkdir(parents=True)
        for name in ("node_modules", "package.json"):
            (folder / name).symlink_to(NPM_DIR / name)
    marker = f"--nexus-cwd-probe-{os.getpid()}"  # passed on to the server: finds its processes
    table = server_table(
        "kg",
        type="npm",
        package="@modelcontextprotocol/server-memory",
        args=[marker],
        env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl"), "NPM_CONFIG_UPDATE_NOTIFIER": "false"},
    )
    text = ONLY_BRIDGE.replace("[server]\n", '[server]\nroots = ["workspace"]\n', 1) + table
    async with nexus(write_config(tmp_path / "nexus.toml", text), env=server_env(HOME=str(tmp_path))) as client:
        await client.wait_for_tool("kg_read_graph", timeout=60)
        folders = {os.readlink(f"/proc/{pid}/cwd") for pid in _processes_with(marker)}
    assert folders == {str(data.resolve())}


async def test_resources_of_a_mount_are_refused_without_the_read_grant(tmp_path: Path) -> None:
    text = ONLY_BRIDGE.replace("startup_wait = 30", 'startup_wait = 30\ncategories = ["write"]') + stdio_upstream()
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("up_write_note")  # mounted: its tools of the granted category are served
        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert not [uri for uri in resources + templates if uri.startswith("up+")]
        for uri in ("up+upstream://readme", "up+upstream://items/7"):  # a resource, and one by its template
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert "needs the 'read' category of plugin 'bridge'" in str(refused.value)
    audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
    denied = [(r["tool"], r["outcome"]) for r in audit if r.get("kind") == "resource"]
    assert denied == [("up+upstream://readme", "denied"), ("up+upstream://items/{item}", "denied")]


@pytest.mark.parametrize("mode", ["standalone", "shared"])
def test_stopping_nexus_stops_the_servers_it_started(tmp_path: Path, mode: str) -> None:
    """SIGTERM to a standalone server, or `nexus server stop` of the shared one: upstreams must not outlive it."""
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream())
    command = nexus_command("serve", "--config", str(config), *(["--standalone"] if mode == "standalone" else []))
    nexus_proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env()
    )
    assert nexus_proc.stdin is not None and nexus_proc.stdout is not None

    def request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        nexus_proc.stdin.write(
            (json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n").encode()
        )  # type: ignore[union-attr]
        nexus_proc.stdin.flush()  # type: ignore[union-attr]
        while True:
            reply = json.loads(nexus_proc.stdout.readline())  # type: ignore[union-attr]
            if reply.get("id") == id_:
                return reply

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    request(1, "initialize", hello)
    deadline = time.monotonic() + 60
    while not any(t["name"] == "up_counter" for t in request(9, "tools/list", {})["result"]["tools"]):
        assert time.monotonic() < deadline, "the upstream never connected"
        time.sleep(0.1)  # a busy machine may take longer than startup_wait to start the upstream
    counted = request(2, "tools/call", {"name": "up_counter", "arguments": {}})
    upstream_pid = int(counted["result"]["content"][0]["text"].split(" in ")[1])
    if mode == "standalone":
        nexus_proc.send_signal(signal.SIGTERM)
    else:
        stop = subprocess.run(nexus_command("server", "stop", "--config", str(config)), env=server_env(), timeout=60)
        assert stop.returncode == 0
        nexus_proc.stdin.close()  # type: ignore[union-attr]
    assert nexus_proc.wait(timeout=20) is not None
    deadline = time.monotonic() + 10
    while alive(upstream_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(upstream_pid)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _processes_with(marker: str) -> list[int]:
    """The processes whose command line holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
    return found


async def test_an_upstream_without_a_prefix_cannot_shadow_nexuss_own_tools_or_resources(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shadowed.txt").write_text("the real file")
    files_on = ONLY_BRIDGE.replace("[plugins.files]\nenabled = false\n", "").replace(
        'data_dir = "data"\n', f'data_dir = "data"\nroots = ["{project}"]\n'
    )
    text = files_on + stdio_upstream(prefix="", env={"UPSTREAM_SHADOW": "1"})
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("echo")  # mounted without a prefix
        read = await client.read_resource("file:///shadowed.txt")
        assert read.contents[0].text == "the real file"  # type: ignore[union-attr]
        called = await client.call_tool("read_file", {"path": str(project / "shadowed.txt")})
        assert "the real file" in str(called.content) and "from the upstream" not in str(called.content)
