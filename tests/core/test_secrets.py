"""Secrets stay where they are kept: the relay's environment, the HTTP token file, rotation."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import config_dir, nexus_command, server_env, stdio_session, write_config

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def _as_this_user_without_privileges(*command: str) -> list[str]:
    """``command`` as a process of this user with no capabilities: root's CAP_SYS_PTRACE would read anything."""
    if os.getuid() != 0:
        return list(command)
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and no setpriv to drop capabilities")
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *command]


@pytest.mark.skipif(sys.platform != "linux", reason="/proc and PR_SET_DUMPABLE are Linux's")
def test_a_program_of_the_same_user_cannot_read_the_relays_environment(tmp_path: Path) -> None:
    """The relay outlives the hand-over, with the client's environment (NEXUS_TOKEN): a script the shared
    server runs as this user must not read it from /proc/<relay pid>/environ."""
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    # The relay too runs without capabilities: a process with fewer than its target's may never read it.
    relay = subprocess.Popen(
        _as_this_user_without_privileges(*nexus_command("serve", "--config", str(config))),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env=server_env(NEXUS_TOKEN="relay-secret-1234"),
    )
    assert relay.stdin is not None and relay.stdout is not None
    try:
        relay.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        relay.stdin.flush()
        assert json.loads(relay.stdout.readline())["id"] == 1  # served: the relay has handed its pipes over
        read = subprocess.run(
            _as_this_user_without_privileges("cat", f"/proc/{relay.pid}/environ"), capture_output=True, check=False
        )
        assert b"relay-secret-1234" not in read.stdout
        assert read.returncode != 0 and b"Permission denied" in read.stderr
    finally:
        relay.stdin.close()
        relay.wait(timeout=30)


def test_rotating_the_token_replaces_it_privately_and_never_prints_it(tmp_path: Path) -> None:
    token_file = config_dir(Path.home()) / "http-token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("old-token\n")
    done = subprocess.run(
        nexus_command("server", "token", "--rotate"), capture_output=True, text=True, env=server_env(), check=True
    )
    new = token_file.read_text().strip()
    assert new != "old-token" and len(new) >= 40
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert new not in done.stdout + done.stderr and str(token_file) in done.stderr


@pytest.mark.anyio
async def test_no_tool_reads_the_http_token_even_when_the_roots_cover_the_home_folder(tmp_path: Path) -> None:
    home = Path.home()
    token_file = config_dir(home) / "http-token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("kept-token-5678\n")
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    async with stdio_session(
        "--config", str(config), "--root", str(home), "--allow-broad-root", env=server_env(HOME=str(home))
    ) as s:
        read = await s.call_tool("read_file", {"path": str(token_file)})
        grep = await s.call_tool("grep", {"pattern": "kept-t.ken", "path": str(home)})
    assert read.is_error and "kept-token" not in str(read.content)
    assert "kept-token-5678" not in str(grep.content)
