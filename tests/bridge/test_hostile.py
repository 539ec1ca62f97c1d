"""Upstream servers that misbehave, mounted by a real ``nexus serve`` and driven through the official MCP client:
none of them may wedge a call beyond its timeout, or serve a name the config did not give it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from nexus_bridge.process import STDERR_LINES
from nexus_bridge.upstream import MAX_DESCRIPTION
from tests.bridge.test_bridge import ONLY_BRIDGE, nexus, server_table, stdio_upstream
from tests.conftest import alive, logs_dir, nexus_command, run_dir, server_env, write_config

pytestmark = pytest.mark.anyio

HOSTILE = {"UPSTREAM_HOSTILE": "1"}


async def test_an_upstream_that_stops_reading_its_input_is_replaced(tmp_path: Path) -> None:
    """A server whose input pipe is full blocks every write to it: without pings to notice, only a bound on the
    write keeps the next call from waiting for ever."""
    upstream = stdio_upstream(timeout=1, ping_interval=0, backoff=0.1, env=HOSTILE)
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
        assert "a_b_echo" not in names and "a_bulky" not in names  # its 120 KB schema would fill every context
        assert all(re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name) for name in names), names
        refused = await client.call_tool("a_b_echo", {"text": "x"})
        assert refused.is_error and "Unknown tool" in refused.content[0].text  # type: ignore[union-attr]
        for name in ("a_bad name", "a_" + "n" * 200):
            assert (await client.call_tool(name, {})).is_error
        wordy = next(t for t in (await client.list_tools()).tools if t.name == "a_wordy")
        assert len(wordy.description or "") == MAX_DESCRIPTION and wordy.description.endswith("…")  # not 1.2 MB


async def test_an_upstreams_oversized_answer_fails_its_call_and_bad_bytes_do_not_end_the_connection(
    tmp_path: Path,
) -> None:
    """A message over NEXUS_MAX_MESSAGE_BYTES is never held whole: the call it answers fails at once, saying so,
    as does one nested too deep to read. Bytes that are not UTF-8 are replaced; the connection (the same
    process) serves on through all of it."""
    text = ONLY_BRIDGE + stdio_upstream(timeout=5, env=HOSTILE)
    async with nexus(
        write_config(tmp_path / "nexus.toml", text), env=server_env(NEXUS_MAX_MESSAGE_BYTES="200000")
    ) as c:
        await c.wait_for_tool("up_big")
        pid = (await c.text("up_counter")).split(" in ")[1]
        assert len(await c.text("up_big", {"size": 50_000})) == 50_000  # twice in the message: text, structured
        with anyio.fail_after(4):  # not the call's timeout: no wait for an answer that was dropped
            too_big = await c.call_tool("up_big", {"size": 300_000})
        assert too_big.is_error
        message = too_big.content[0].text  # type: ignore[union-attr]
        assert "over the limit of 200000 (NEXUS_MAX_MESSAGE_BYTES)" in message and len(message) < 300
        with anyio.fail_after(4):
            deep = await c.call_tool("up_deep", {})
        assert deep.is_error and "its message is not valid JSON-RPC" in deep.content[0].text  # type: ignore[union-attr]
        assert await c.text("up_bad_bytes") == "caf\ufffd"
        assert await c.text("up_counter") == f"2 in {pid}"


async def test_an_upstreams_stderr_reaches_the_log_a_bounded_number_of_lines_at_a_time(
    tmp_path: Path, isolated_user_dirs: Path
) -> None:
    """The server's stderr is read (its pipe never fills) into the log as the bridge's lines, at most 100 a
    minute: a server that writes without end does not fill the disk through Nexus's log."""
    text = ONLY_BRIDGE + stdio_upstream(env=HOSTILE)
    async with nexus(write_config(tmp_path / "nexus.toml", text)) as client:
        await client.wait_for_tool("up_shout")
        assert await client.text("up_shout", {"lines": 5000}) == "shouted"
        assert await client.text("up_echo", {"text": "still here"}) == "still here"
    log = "".join(path.read_text() for path in logs_dir(isolated_user_dirs).glob("*.log"))
    lines = [line for line in log.splitlines() if "upstream 'up' stderr: line " in line]
    assert len(lines) == STDERR_LINES and lines[0].endswith("stderr: line 0 of 5000")
    assert "line 4999 of 5000" not in log


async def test_an_upstreams_huge_line_is_never_held_whole(tmp_path: Path, isolated_user_dirs: Path) -> None:
    """A line of 64 MB, over NEXUS_MAX_MESSAGE_BYTES: the shared server keeps its start (the id it answers) and
    drops the rest as it comes, so its peak memory does not grow by the line's size."""
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stdio_upstream(env=HOSTILE))
    async with nexus(config, env=server_env(NEXUS_MAX_MESSAGE_BYTES="200000")) as client:
        await client.wait_for_tool("up_long_line")
        server = int(next(run_dir(isolated_user_dirs).glob("*.lock")).read_text())
        before = _peak_kb(server)
        result = await client.call_tool("up_long_line", {"mb": 64})
        assert result.is_error and "over the limit of 200000" in result.content[0].text  # type: ignore[union-attr]
        assert _peak_kb(server) - before < 32_000
        assert await client.text("up_echo", {"text": "still here"}) == "still here"


def _peak_kb(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in kB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))


STUBBORN = """import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
ignore = 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'
child = subprocess.Popen([sys.executable, '-c', ignore])
open(sys.argv[1] + '.part', 'w').write(f'{os.getpid()} {child.pid}')
os.rename(sys.argv[1] + '.part', sys.argv[1])
time.sleep(600)
"""


def test_an_upstream_that_ignores_sigterm_is_killed_with_its_children_when_nexus_stops(tmp_path: Path) -> None:
    """It ignores SIGTERM and the end of its input, and so does the process it started: `nexus server stop`
    still leaves neither running (SIGKILL to its process group)."""
    pids = tmp_path / "pids"
    stubborn = server_table("stubborn", type="stdio", command=sys.executable, args=["-c", STUBBORN, str(pids)])
    config = write_config(tmp_path / "nexus.toml", ONLY_BRIDGE + stubborn)
    with subprocess.Popen(
        nexus_command("serve", "--config", str(config)),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(),
        cwd=tmp_path,
    ) as relay:  # a relay starts the shared server, which starts the upstream at once
        deadline = time.monotonic() + 30
        while not pids.exists():
            assert time.monotonic() < deadline, "the upstream never started"
            time.sleep(0.05)
        stop = subprocess.run(nexus_command("server", "stop", "--config", str(config)), env=server_env(), timeout=60)
        assert stop.returncode == 0
        relay.kill()
    started = [int(pid) for pid in pids.read_text().split()]
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if alive(pid)]
