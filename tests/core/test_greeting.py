"""A cold start: the relay answers initialize while the shared server it started loads, with the server's own answer.

And plugins are asked to start loading (``nexus_prepare``) while a host that will serve is still being built.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from nexus_core import __version__, hookimpl
from nexus_core.host import sdk
from nexus_core.serve import greeting
from nexus_core.serve.client_pipes import ClientPipes
from tests.conftest import logs_dir, nexus_command, run_dir, server_env, write_config

pytestmark = pytest.mark.anyio

NAME = "work-nexus"


def initialize(version: str, request_id: int | str = 1, **params: Any) -> dict[str, Any]:
    base = {"protocolVersion": version, "capabilities": {"roots": {}}, "clientInfo": {"name": "c", "version": "1"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": base | params}


async def served_answer(host: Any, line: bytes) -> dict[str, Any]:
    """The answer of the server's own session code (what the shared server runs for a relay) to one line."""
    client_in, server_in = os.pipe()
    server_out, client_out = os.pipe()
    os.write(server_in, line + b"\n")
    os.close(server_in)  # the client is done: the session ends once the line is answered
    try:
        async with sdk.lifespan(host.server) as state:
            await ClientPipes(client_in, client_out).serve(sdk.lowlevel(host.server), state)
        return json.loads(os.read(server_out, 1 << 20).splitlines()[0])
    finally:
        for fd in (client_in, server_out, client_out):
            os.close(fd)


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS, "1999-01-01"])
async def test_the_relays_answer_is_the_servers_for_every_version(make_host, version: str) -> None:
    host = make_host({}, {"server": {"name": NAME}})
    line = json.dumps(initialize(version, request_id="a-1")).encode()
    found = greeting.answer(line, NAME, __version__)
    assert found is not None
    assert json.loads(found[0]) == await served_answer(host, line)
    assert found[1] == json.loads(found[0])["result"]


@pytest.mark.parametrize(
    "request_",
    [
        b"not json",
        json.dumps({"jsonrpc": "2.0", "method": "initialize", "params": initialize("2025-06-18")["params"]}).encode(),
        json.dumps(initialize("2025-06-18", request_id=True)).encode(),
        json.dumps(initialize("2025-06-18", clientInfo={"name": "c"})).encode(),
        json.dumps(initialize("2025-06-18", capabilities={"roots": True})).encode(),
        json.dumps({**initialize("2025-06-18"), "method": "tools/list"}).encode(),
        json.dumps({**initialize("2025-06-18"), "jsonrpc": "1.0"}).encode(),
    ],
    ids=["not-json", "notification", "bool-id", "client-without-version", "odd-capability", "other-method", "rpc-1"],
)
def test_a_request_the_relay_cannot_vouch_for_is_left_to_the_server(request_: bytes) -> None:
    assert greeting.answer(request_, NAME, __version__) is None


def test_the_name_is_the_one_the_server_will_read(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", '[server]\nname = "from-file"\n')
    assert greeting.server_name(None, (), None) == "nexus"
    assert greeting.server_name(config, (), None) == "from-file"
    assert greeting.server_name(config, ('server.name="from-set"', 'server.name="last"'), None) == "last"
    assert greeting.server_name(config, ('server.name="from-set"',), "from-flag") == "from-flag"
    assert greeting.server_name(write_config(tmp_path / "bad.toml", "[server\n"), (), None) is None
    assert greeting.server_name(write_config(tmp_path / "odd.toml", "[server]\nname = 3\n"), (), None) is None
    assert greeting.server_name(config, ("server.name=[",), None) is None


SLOW_PLUGIN = "import time\ntime.sleep(3)  # the server is slow to start: it listens 3 s after its spawn\n"


def test_a_cold_start_answers_initialize_before_the_server_listens(tmp_path: Path, isolated_user_dirs: Path) -> None:
    """The answer comes while the server is still loading (no socket yet); the session then goes on through the
    server, which replays the handshake: requests sent at once are answered, and its log has no differing answer."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slow.py").write_text(SLOW_PLUGIN)
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\nname = "{NAME}"\ndata_dir = "{tmp_path / "data"}"\nplugin_dirs = ["{plugins}"]\n'
        "[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    proc = subprocess.Popen(
        nexus_command("serve", "--config", str(config)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env(), cwd=tmp_path,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        lines = [initialize("2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        lines += [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 3, "method": "ping"}]
        proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert not list(run_dir(isolated_user_dirs).glob("*.sock"))  # answered before the server listens
        assert first["id"] == 1 and first["result"]["serverInfo"] == {"name": NAME, "version": __version__}
        replies = {first["id"]: first}
        deadline = time.monotonic() + 120
        while {2, 3} - set(replies) and time.monotonic() < deadline:
            reply = json.loads(proc.stdout.readline())
            replies[reply.get("id")] = reply
        assert any(tool["name"] == "read_file" for tool in replies[2]["result"]["tools"])
        assert replies[3]["result"] == {}
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    log = "".join(path.read_text() for path in logs_dir(isolated_user_dirs).glob("*.log"))
    assert "session" in log and "the relay answered initialize with" not in log


class Preparing:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    @hookimpl
    def nexus_register_tools(self, register, ctx) -> None:
        self.events.append(f"register {ctx.name}")

    @hookimpl
    def nexus_prepare(self, ctx) -> None:
        self.events.append(f"prepare {ctx.name}")


def test_plugins_prepare_while_a_serving_host_is_built_and_only_then(tmp_path: Path) -> None:
    from nexus_core.assembly import build_host
    from nexus_core.config.model import parse_config
    from nexus_core.host.discovery import get_plugin_manager

    def built(serving: bool) -> list[str]:
        events: list[str] = []
        pm = get_plugin_manager()
        for name in ("first", "second"):
            pm.register(Preparing(events), name=name)
        config = parse_config({"server": {"data_dir": str(tmp_path)}}, source="test.toml", base_dir=tmp_path)
        build_host(config, pm, serving=serving)
        return events

    # each right after its own registration: the first one's loading overlaps the second one's building
    assert built(serving=True) == ["register first", "prepare first", "register second", "prepare second"]
    assert built(serving=False) == ["register first", "register second"]
