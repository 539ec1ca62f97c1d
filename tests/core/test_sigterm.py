"""SIGTERM on stdio: every plugin is stopped once and in full, and a call cut short is audited as cancelled."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import nexus_command, server_env, write_config

SLOW_STOP = """
import anyio
from pathlib import Path
from nexus_core import hookimpl

LOG = Path(__file__).with_name("stops.log")

@hookimpl
def nexus_register_tools(register):
    async def nap(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "rested"
    register(nap, category="default")

@hookimpl
async def nexus_shutdown():
    with LOG.open("a") as log:
        log.write("begin\\n")
    await anyio.sleep(0.3)
    with LOG.open("a") as log:
        log.write("end\\n")
"""


def test_sigterm_stops_each_plugin_once_and_audits_the_cut_call(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slowstop.py").write_text(SLOW_STOP)
    text = f'[server]\ndata_dir = "data"\nplugin_dirs = ["{plugins}"]\n'
    text += "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "hello"))
    config = write_config(tmp_path / "nexus.toml", text)
    proc = subprocess.Popen(
        nexus_command("serve", "--config", str(config), "--standalone"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nap", "arguments": {"seconds": 30}}},
    ):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    time.sleep(0.5)  # the nap is under way
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    assert (plugins / "stops.log").read_text().split() == ["begin", "end"]
    audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
    assert [(r["tool"], r["outcome"]) for r in audit] == [("nap", "cancelled")]
