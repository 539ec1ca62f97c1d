"""A client of the user's shared server from a command: ``nexus call``, and plugins' own commands.

The shared server owns the stores, so a command that needs them is one more client session: a relay launched
from the command's folder, with its ``--root`` and ``--profile``, through the gate and the audit log.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from nexus_core.config import lookup
from nexus_core.serve import rendezvous
from nexus_core.serve.options import ServeOptions

if TYPE_CHECKING:
    from mcp import ClientSession


@asynccontextmanager
async def shared_session(
    config: str | None = None,
    *,
    roots: Sequence[str] = (),
    profile: str | None = None,
    options: ServeOptions | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session of the shared server for ``config`` (started if none runs)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    options = options or ServeOptions(config=config, roots=tuple(roots), profile=profile)
    relay = [sys.executable, "-m", "nexus_core", "serve", *options.argv()]
    params = StdioServerParameters(command=relay[0], args=relay[1:], env=dict(os.environ), cwd=os.getcwd())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def stop_shared_server(
    config: str | None = None, *, options: ServeOptions | None = None, timeout: float = 30.0
) -> int | None:
    """Stop the shared server for ``config`` and wait until it let go of its lock; its pid, None if none ran.

    For commands that need a store to themselves (``nexus memory reindex``): the relays of open sessions start
    a new server when their client next sends.
    """
    options = options or ServeOptions(config=config)
    choice = lookup.find_config(options.config)
    key = rendezvous.server_key(choice.path, options.server_args(choice.path))
    answer = rendezvous.ask(key, "stop")
    if answer is None:
        return None
    lock = rendezvous.server_files(key)["lock"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and rendezvous.is_held(lock):
        time.sleep(0.05)
    return int(answer.get("pid") or 0)
