"""`nexus serve --transport http`: the official client, bearer tokens, and Host/Origin checks."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import HTTP_TOKEN, config_dir, http_client, logs_dir, server_env, write_config
from tests.core.test_stdio import unknown_calls

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def token_config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[server.http]\ntoken = {{ env = "TEST_NEXUS_TOKEN" }}\n',
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_official_client_over_streamable_http(http_server, tmp_path: Path, mode: str) -> None:
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    url = http_server("--config", str(config))
    async with http_client(url, mode=mode) as client:
        assert "hello" in {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("hello", {"name": "Ada"})
        assert result.structured_content["text"] == "Hello, Ada!"
        refused = await client.call_tool("count_lines", {"path": "x"})
        assert refused.is_error and "'files' category" in refused.content[0].text
        unknown = await client.call_tool("nope", {})
        assert unknown.is_error and "nope" in unknown.content[0].text
    assert unknown_calls(tmp_path / "data") == [("nope", "unknown")]  # audited all the same


async def test_a_configured_token_is_required_on_every_request(http_server, token_config: Path) -> None:
    url = http_server("--config", str(token_config), env=server_env(TEST_NEXUS_TOKEN="right-token"))
    async with httpx2.AsyncClient() as http:
        missing = await http.post(url, json=INITIALIZE, headers=HEADERS)
        wrong = await http.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": "Bearer wrong-token"})
        right = await http.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": "Bearer right-token"})
    assert missing.status_code == 401 and "Bearer" in missing.headers["www-authenticate"]
    assert wrong.status_code == 401
    assert right.status_code == 200


async def test_the_sdk_client_with_the_token(http_server, token_config: Path) -> None:
    url = http_server("--config", str(token_config), env=server_env(TEST_NEXUS_TOKEN="right-token"))
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer right-token"})
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        assert (await client.call_tool("hello", {"name": "Bo"})).structured_content["text"] == "Hello, Bo!"


async def test_without_a_configured_token_a_generated_one_is_required(http_server, tmp_path: Path) -> None:
    url = http_server()
    async with httpx2.AsyncClient() as http:
        missing = await http.post(url, json=INITIALIZE, headers=HEADERS)
        right = await http.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": f"Bearer {HTTP_TOKEN}"})
    assert missing.status_code == 401 and right.status_code == 200


@pytest.mark.parametrize("mode", ["shared", "standalone"])
def test_the_token_is_generated_once_private_and_never_logged(
    tmp_path: Path, isolated_user_dirs: Path, mode: str
) -> None:
    import os
    import selectors
    import stat
    import subprocess
    import time

    from tests.conftest import free_port, nexus_command, wait_listening

    port = free_port()
    extra = ["--standalone"] if mode == "standalone" else []
    proc = subprocess.Popen(
        nexus_command("serve", "--transport", "http", "--port", str(port), *extra),
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=server_env(),
    )
    assert proc.stderr is not None
    seen = b""
    try:
        wait_listening(proc, port)
        with selectors.DefaultSelector() as selector:  # until it has said where the console is
            selector.register(proc.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + 60
            while b"console:" not in seen and time.monotonic() < deadline and selector.select(1):
                seen += os.read(proc.stderr.fileno(), 1 << 16)
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    stderr = seen + stderr
    assert b"console:" in stderr
    token_file = config_dir(isolated_user_dirs) / "http-token"
    token = token_file.read_text().strip()
    assert len(token) >= 40 and stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    logs = [stderr.decode()] + [f.read_text() for f in logs_dir(isolated_user_dirs).glob("*.log*")]
    assert str(token_file) in logs[0]
    for text in logs:  # neither the token nor a console login link (it opens the console) is ever logged
        assert token not in text and "login?token=" not in text, text
    for log in logs_dir(isolated_user_dirs).glob("*.log*"):
        assert stat.S_IMODE(log.stat().st_mode) == 0o600 and stat.S_IMODE(log.parent.stat().st_mode) == 0o700


async def test_foreign_origins_and_hosts_are_refused(http_server, tmp_path: Path) -> None:
    url = http_server()
    headers = HEADERS | {"Authorization": f"Bearer {HTTP_TOKEN}"}
    async with httpx2.AsyncClient() as http:
        evil_origin = await http.post(url, json=INITIALIZE, headers=headers | {"Origin": "http://evil.example"})
        evil_host = await http.post(url, json=INITIALIZE, headers=headers | {"Host": "evil.example:80"})
        other_port = await http.post(url, json=INITIALIZE, headers=headers | {"Origin": "http://localhost:3000"})
        own = await http.post(url, json=INITIALIZE, headers=headers | {"Origin": url.rsplit("/", 1)[0]})
    assert evil_origin.status_code == 403
    assert evil_host.status_code == 421
    assert other_port.status_code == 403  # a page another local program serves may not call the tools
    assert own.status_code == 200


async def test_allowed_origins_admits_a_configured_browser_origin(http_server, tmp_path: Path) -> None:
    text = f'[server]\ndata_dir = "{tmp_path / "data"}"\n[server.http]\nallowed_origins = ["https://app.example"]\n'
    url = http_server("--config", str(write_config(tmp_path / "nexus.toml", text)))
    headers = HEADERS | {"Authorization": f"Bearer {HTTP_TOKEN}"}
    async with httpx2.AsyncClient() as http:
        allowed = await http.post(url, json=INITIALIZE, headers=headers | {"Origin": "https://app.example"})
        other = await http.post(url, json=INITIALIZE, headers=headers | {"Origin": "https://other.example"})
    assert allowed.status_code == 200
    assert other.status_code == 403


def test_a_token_variable_that_is_not_set_stops_startup(tmp_path: Path, token_config: Path) -> None:
    import subprocess

    from tests.conftest import nexus_command

    proc = subprocess.run(
        nexus_command("serve", "--config", str(token_config), "--transport", "http", "--port", "0"),
        capture_output=True,
        timeout=60,
        env=server_env(),
    )
    assert proc.returncode == 2
    assert "server.http.token: environment variable TEST_NEXUS_TOKEN is not set" in proc.stderr.decode()


def test_listening_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import nexus_command

    proc = subprocess.run(
        nexus_command("serve", "--transport", "http", "--host", "0.0.0.0", "--port", "0"),
        capture_output=True,
        timeout=60,
        env=server_env(),
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in proc.stderr.decode()
