"""Upstream servers that misbehave, mounted by a real ``nexus serve`` and driven through the official MCP client:
none of them may wedge a call beyond its timeout, or serve a name the config did not give it."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.bridge.test_bridge import ONLY_BRIDGE, nexus, server_table, stdio_upstream
from tests.conftest import write_config

pytestmark = pytest.mark.anyio


async def test_an_upstream_that_stops_reading_its_input_is_replaced(tmp_path: Path) -> None:
    """A server whose input pipe is full blocks every write to it: without pings to notice, only a bound on the
    write keeps the next call from waiting for ever."""
    upstream = stdio_upstream(timeout=1, ping_interval=0, backoff=0.1)
    async with nexus(write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + upstream)) as client:
        await client.wait_for_tool("up_stop_reading")
        stuck_pid = (await client.text("up_counter")).split(" in ")[1]
        stuck = await client.call_tool("up_stop_reading", {})
        assert stuck.is_error
        assert stuck.content[0].text == "upstream server 'up' did not answer tool 'stop_reading' within timeout = 1 s"  # type: ignore[union-attr]
        with anyio.fail_after(20):
            await client.call_tool("up_echo", {"text": "x" * 300_000})  # more than its pipe holds: the write gives up
            count, pid = (await client.text("up_counter")).split(" in ")
        assert count == "1" and pid != stuck_pid  # a new process answered


async def test_an_upstream_cannot_take_another_servers_names_or_invalid_ones(tmp_path: Path) -> None:
    """Server "a" lists "b_echo": as a_b_echo it would pose as server a_b's echo (here a_b is down, so nothing
    else claims the name). Names MCP does not allow are not mounted either: a client may refuse the whole list."""
    absent = server_table("a_b", type="stdio", command=str(tmp_path / "no-such-server"), retries=0)
    text = ONLY_BRIDGE + stdio_upstream("a", env={"UPSTREAM_SPOOF": "1"}) + absent
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("a_echo")
        names = await client.tool_names()
        assert "a_b_echo" not in names
        assert all(re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name) for name in names), names
        refused = await client.call_tool("a_b_echo", {"text": "x"})
        assert refused.is_error and "Unknown tool" in refused.content[0].text  # type: ignore[union-attr]
        for name in ("a_bad name", "a_" + "n" * 200):
            assert (await client.call_tool(name, {})).is_error
