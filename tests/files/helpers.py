"""Helpers shared by the files plugin tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from mcp import Client

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
ALL = ["read", "search", "write", "execute", "python", "vcs"]


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ | GIT_ENV | (env or {}),
    ).stdout


async def call(client: Client, tool: str, **args: Any) -> Any:
    """The structured result of a call that must succeed."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None
    assert result.content and result.content[0].text  # readable text as well
    return result.structured_content


async def fail(client: Client, tool: str, **args: Any) -> str:
    """The error text of a call that must fail."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.content[0].text[:300]}"
    return result.content[0].text


def alive(marker: str) -> list[int]:
    """Processes whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and b"pytest" not in cmdline:
                found.append(int(name))
    return found


def survivors(marker: str, wait: float = 5.0) -> list[int]:
    """Processes holding ``marker`` still alive after ``wait`` seconds; they are killed, so none outlives the test."""
    deadline = time.monotonic() + wait
    while alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = alive(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left
