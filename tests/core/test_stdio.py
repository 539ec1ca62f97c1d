"""`nexus serve` over real stdio: the official client, raw JSON-RPC lines, and plugins that print."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import logs_dir, nexus_command, server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio

NOISY_PLUGIN = '''
import os
from nexus_core import hookimpl

print("noise at import")

@hookimpl
def nexus_register_tools(register):
    def shout(text: str) -> str:
        """Print, write to fd 1 directly, then answer."""
        print("noise from a tool")
        os.write(1, b"raw noise on fd 1\\n")
        return text.upper()
    register(shout, category="default")

    def big() -> int:
        """A number past 64 bits (JSON has no limit)."""
        return 2**70
    register(big, category="default")
'''

BROKEN_PLUGIN = "import not_a_module_anywhere\n"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "noisy.py").write_text(NOISY_PLUGIN)
    (plugins / "broken.py").write_text(BROKEN_PLUGIN)
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nplugin_dirs = ["{plugins}"]\n',
    )


async def test_the_official_client_over_stdio(config: Path, tmp_path: Path) -> None:
    async with stdio_session("--config", str(config), cwd=tmp_path) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"shout", "hello"} <= names  # from plugin_dirs, and the installed example's entry point
        result = await session.call_tool("shout", {"text": "quiet"})
        assert result.structured_content == {"result": "QUIET"}  # prints did not corrupt the stream
        hello = await session.call_tool("hello", {"name": "Ada"})
        assert hello.structured_content["text"] == "Hello, Ada!"
        unknown = await session.call_tool("nope", {"a": 1})
        assert unknown.is_error and "nope" in unknown.content[0].text  # type: ignore[union-attr]
    assert unknown_calls(tmp_path / "data") == [("nope", "unknown")]  # in the audit log all the same


def unknown_calls(data: Path) -> list[tuple[str, str]]:
    """The audit log's records of calls to tools no plugin serves."""
    records = [json.loads(line) for line in (data / "audit.jsonl").read_text().splitlines()]
    return [(r["tool"], r["outcome"]) for r in records if r["outcome"] == "unknown"]


async def test_client_auto_mode_over_stdio(config: Path, tmp_path: Path) -> None:
    command = nexus_command("serve", "--config", str(config))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=tmp_path)
    async with Client(params, mode="auto") as client:
        result = await client.call_tool("shout", {"text": "auto"})
        assert result.structured_content == {"result": "AUTO"}


@pytest.mark.parametrize("mode", ["relay", "standalone"])
async def test_a_2026_client_over_stdio(config: Path, tmp_path: Path, mode: str, isolated_user_dirs: Path) -> None:
    """The first request opens the 2026-07-28 era (no handshake): the pipes serve it in that era."""
    command = nexus_command("serve", "--config", str(config), *(["--standalone"] if mode == "standalone" else []))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=tmp_path)
    async with Client(params, mode="2026-07-28") as client:
        result = await client.call_tool("shout", {"text": "modern"})
        assert result.structured_content == {"result": "MODERN"}
        assert (await client.call_tool("shout", {"text": "again"})).structured_content == {"result": "AGAIN"}


@pytest.mark.parametrize("mode", ["relay", "standalone"])
def test_raw_lines_garbage_unknown_methods_and_stdout_purity(
    config: Path, tmp_path: Path, mode: str, isolated_user_dirs: Path
) -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "this is not json",
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": "not an object"},
        {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "x"}}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "big", "arguments": {}}},
        {  # a 2026-07-28 request on this handshake-era connection
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {
                "name": "shout",
                "arguments": {"text": "y"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            },
        },
    ]
    proc = subprocess.Popen(
        nexus_command("serve", "--config", str(config), *(["--standalone"] if mode == "standalone" else [])),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=server_env(),
    )
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        for line in lines:
            proc.stdin.write(((line if isinstance(line, str) else json.dumps(line)) + "\n").encode())
        proc.stdin.flush()
        replies = {}
        while {None, 1, 2, 3, 4, 5, 6} - set(replies):  # stdin stays open until every reply is in
            reply = json.loads(proc.stdout.readline())  # every stdout line is JSON-RPC
            replies[reply.get("id")] = reply
        proc.stdin.close()
        proc.wait()
        stdout_rest, stderr = proc.stdout.read(), proc.stderr.read().decode()
    finally:
        watchdog.cancel()
    assert replies[None]["error"]["code"] == -32700
    assert replies[2]["error"]["code"] == -32601
    assert replies[4]["error"]["code"] == -32600 and "params" in replies[4]["error"]["message"]
    assert replies[3]["result"]["structuredContent"] == {"result": "X"}  # still serving after the garbage
    assert replies[6]["result"]["structuredContent"] == {"result": 2**70}
    assert replies[5]["error"]["code"] == -32600 and "handshake protocol era" in replies[5]["error"]["message"]
    assert stdout_rest == b""
    assert proc.returncode == 0
    if mode == "relay":  # the plugins run in the shared server: what they print is in its log
        stderr = "".join(p.read_text() for p in logs_dir(isolated_user_dirs).glob("*.log"))
    assert "noise at import" in stderr and "noise from a tool" in stderr and "raw noise on fd 1" in stderr
    assert "plugin 'broken' not loaded" in stderr and "not_a_module_anywhere" in stderr


@pytest.mark.parametrize("mode", ["relay", "standalone"])
def test_an_invalid_config_fails_at_startup_naming_file_and_key(tmp_path: Path, mode: str) -> None:
    bad = write_config(tmp_path / "nexus.toml", "[server.http]\nport = 'eighty'\n")
    proc = subprocess.run(
        nexus_command("serve", "--config", str(bad), *(["--standalone"] if mode == "standalone" else [])),
        capture_output=True,
        timeout=60,
        env=server_env(),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert f"{bad}: server.http.port:" in proc.stderr.decode()
    assert proc.stdout == b""
