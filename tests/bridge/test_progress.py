"""The bridge passes an upstream's progress on: a client calling a mounted tool with a progress token hears
the upstream server's own notifications/progress; a call without a token hears none. Through the relay and
over Streamable HTTP, in both protocol eras, with a real upstream server over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.bridge.test_bridge import ONLY_BRIDGE, stdio_upstream
from tests.conftest import HTTP_TOKEN, HeardProgress, nexus_command, server_env, write_config

pytestmark = pytest.mark.anyio

FAST = {"NEXUS_PROGRESS_INTERVAL": "0.01"}  # the upstream reports every 0.05 s: each report gets through


async def check_progress_passes_through(client: Client, heard: HeardProgress) -> None:
    got: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append((progress, total, message))

    result = await client.call_tool("up_slow", {"steps": 8}, progress_callback=on_progress)
    assert not result.is_error and result.content[0].text == "8 steps"  # type: ignore[union-attr]
    assert len(got) >= 2 and all(t == 8 and m == f"step {int(p)} of 8" for p, t, m in got), got  # the upstream's
    before = len(heard.progress)
    assert not (await client.call_tool("up_slow", {"steps": 4})).is_error
    assert len(heard.progress) == before, "progress sent to a request that carried no progress token"


def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream())


async def test_an_upstreams_progress_reaches_a_client_of_the_relay(tmp_path: Path) -> None:
    command = nexus_command("serve", "--config", str(config(tmp_path)))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(**FAST), cwd=tmp_path)
    for mode in ("legacy", "2026-07-28"):  # the second relay finds the shared server the first one started
        heard = HeardProgress()
        async with Client(params, mode=mode, message_handler=heard) as client:
            await check_progress_passes_through(client, heard)


async def test_an_upstreams_progress_reaches_an_http_client(tmp_path: Path, http_server: Any) -> None:
    url = http_server("--config", str(config(tmp_path)), env=server_env(**FAST), cwd=tmp_path)
    for mode in ("legacy", "auto"):
        heard = HeardProgress()
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=60)
        async with http, Client(streamable_http_client(url, http_client=http), mode=mode, message_handler=heard) as c:
            await check_progress_passes_through(c, heard)
