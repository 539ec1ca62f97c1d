"""`nexus serve --transport sse` (design 000): the legacy HTTP+SSE transport, behind the same token and checks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client

from tests.conftest import HTTP_TOKEN, nexus_command, server_env, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[plugins.memory]\nenabled = false\n'
        "[plugins.bridge]\nenabled = false\n",
    )


def sse_url(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp") + "/sse"


async def _hello_over_sse(url: str) -> str:
    """The official SDK's SSE client, with the bearer token: list the tools, call one."""
    async with (
        sse_client(url, headers={"Authorization": f"Bearer {HTTP_TOKEN}"}) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert "hello" in {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool("hello", {"name": "Ada"})
        return result.structured_content["text"]  # type: ignore[index]


async def _status(http: httpx2.AsyncClient, url: str, **headers: str) -> int:
    """The status a GET of the event stream answers with (the stream itself is not read)."""
    async with http.stream("GET", url, headers=headers) as response:
        return response.status_code


async def test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks(
    http_server: Any, config: Path
) -> None:
    sse = http_server("--config", str(config), "--transport", "sse")
    plain = http_server("--config", str(config))  # --transport http: the same shared server, no SSE
    assert await _hello_over_sse(sse_url(sse)) == "Hello, Ada!"
    status = subprocess.run(
        nexus_command("server", "status", "--json", "--config", str(config)), capture_output=True, text=True
    )
    assert sorted(json.loads(status.stdout)["http_listeners"]) == sorted([sse, plain])  # one server serves both
    token = {"Authorization": f"Bearer {HTTP_TOKEN}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        assert await _status(http, sse_url(sse)) == 401
        assert await _status(http, sse_url(sse), Authorization="Bearer wrong") == 401
        assert await _status(http, sse_url(sse), Origin="http://evil.example", **token) == 403
        posted = await http.post(sse.removesuffix("/mcp") + "/messages/?session_id=" + "0" * 32, json={})
        assert posted.status_code == 401  # the message endpoint too
        assert await _status(http, sse_url(plain), **token) == 404  # off unless asked
    port = plain.removesuffix("/mcp").rsplit(":", 1)[1]
    joined = subprocess.run(
        nexus_command("serve", "--config", str(config), "--transport", "sse", "--port", port),
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
        stdin=subprocess.DEVNULL,
    )
    assert joined.returncode == 2 and "is already served without SSE" in joined.stderr


async def test_standalone_serves_sse_too(http_server: Any, config: Path) -> None:
    url = http_server("--config", str(config), "--transport", "sse", "--standalone")
    assert await _hello_over_sse(sse_url(url)) == "Hello, Ada!"
