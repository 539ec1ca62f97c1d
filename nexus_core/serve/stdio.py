"""Serving on stdio: what desktop clients launch.

stdout carries the protocol and nothing else: while plugins load, file
descriptor 1 points at stderr, and while serving the protocol has its own
copies of the client's pipes while fd 1 stays on stderr (``claimed_stdio``),
so a plugin (or a child process) that prints cannot corrupt the stream.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from nexus_core.access.sessions import bind, process_session
from nexus_core.host import sdk
from nexus_core.serve.client_pipes import ClientPipes

if TYPE_CHECKING:
    from nexus_core.host.build import Host

log = logging.getLogger("nexus")


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr for the duration, so stray prints cannot reach the protocol stream."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


async def serve_stdio(host: Host, pipes: tuple[int, int]) -> None:
    """One client on this process's stdin and stdout, as ``claimed_stdio`` gave them (``nexus serve --standalone``)."""
    bind(process_session())  # one client: the one that launched this process
    infd, outfd = pipes
    async with sdk.lifespan(host.server) as state, anyio.create_task_group() as serving:
        serving.start_soon(_stop_on_sigterm, host)
        await ClientPipes(infd, outfd).serve(sdk.lowlevel(host.server), state)
        serving.cancel_scope.cancel()


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """The protocol's own copies of fds 0 and 1. While serving, fd 0 reads nothing and fd 1 goes to stderr,
    so a plugin or a child process can neither eat the client's input nor write into the protocol."""
    infd, outfd, saved_in, saved_out = os.dup(0), os.dup(1), os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield infd, outfd
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out, infd, outfd):
            os.close(fd)


async def _stop_on_sigterm(host: Host) -> None:
    """SIGTERM stops the plugins the orderly way, so the processes they started (the bridge's servers) end too.

    Then the process exits at once: the SDK reads stdin in a thread that cancellation cannot interrupt.
    """
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            log.info("SIGTERM: stopping")
            await host.stop()
            os._exit(0)
