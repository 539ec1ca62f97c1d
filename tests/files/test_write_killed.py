"""Issue 37: a server killed (kill -9) in the middle of a large write leaves no temp file in the user's tree."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import anyio
import pytest

from tests.conftest import server_env, stdio_session, write_config
from tests.core.test_atomic import writing_into

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the write under way"),
]

SIZE = 40 * 1024 * 1024


def server_pid(config: Path) -> int | None:
    """The pid of the ``nexus serve`` started with ``config`` (the MCP client does not tell it)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if str(config).encode() in Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0"):
                    return int(entry)
    return None


async def test_kill_9_mid_write_leaves_no_temp_file_in_the_tree(repo: Path, tmp_path: Path):
    others = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("memory", "graph", "manual", "hello", "bridge"))
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "data"\n{others}[plugins.files]\nroots = ["{repo}"]\n'
        f'categories = ["read", "write"]\nmax_file_size = {2 * SIZE}\n',
    )
    before = sorted(p.name for p in (repo / "src").iterdir())
    killed = seen = False
    with contextlib.suppress(Exception):  # the client's pipes break when the server dies
        env = server_env(NEXUS_MAX_MESSAGE_BYTES=str(2 * SIZE))  # the write is one message over the default limit
        async with stdio_session("--config", str(config), "--standalone", cwd=tmp_path, env=env) as session:
            pid = server_pid(config)
            assert pid is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.call_tool, "write_file", {"path": "src/big.txt", "content": "x" * SIZE})
                deadline = time.monotonic() + 15  # bounded: the write is usually seen within a second
                while not (seen := writing_into(pid, repo / "src")) and time.monotonic() < deadline:
                    await anyio.sleep(0.001)
                os.kill(pid, signal.SIGKILL)
                killed = True
    assert killed and seen, "the write was never seen under way"
    after = sorted(p.name for p in (repo / "src").iterdir())
    assert after in (before, sorted([*before, "big.txt"])), after  # no .big.txt.XXXX.tmp
    if (repo / "src" / "big.txt").exists():
        assert (repo / "src" / "big.txt").stat().st_size == SIZE  # whole, never half
