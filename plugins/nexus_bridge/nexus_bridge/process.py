"""An upstream server's process over stdio, with the bounds a server Nexus did not write must not push past.

The SDK's stdio client reads a line into one growing string, re-split at every chunk: a server that sends a
huge line, or never ends one, grows Nexus's memory without bound and spends its time copying. Its first byte
that is not UTF-8 stops the reading for good (calls then wait out their timeout), and the server's stderr is
Nexus's own: the shared server's log, written unbounded and unattributed. Here a line over ``limit`` bytes is
dropped as it comes (the request it answers fails at once, saying so), bytes that are not UTF-8 are replaced,
and the server's stderr reaches the log as the bridge's lines, cut short and at most ``STDERR_LINES`` a minute.
Stopping is the SDK's: close stdin, wait, then SIGTERM and SIGKILL to the process group.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectSendStream, Process
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

STDERR_LINES = 100  # a minute, per server: the rest are counted, not logged
STDERR_WIDTH = 1000  # characters of one stderr line that reach the log
STOP_WAIT = 2.0  # seconds for the server to exit once its stdin is closed, then for SIGTERM before SIGKILL
LEADING_ID = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"\\]*")')


@dataclass
class Ending:
    """How the server's process ended, when it ended by itself, and the last line it wrote to stderr."""

    status: int | None = None
    last_line: str = ""

    def why(self) -> str:
        if self.status is None:
            return ""
        said = f": {self.last_line}" if self.last_line else ""
        return f"the server exited with status {self.status}{said}"


@contextlib.asynccontextmanager
async def process_streams(
    params: StdioServerParameters, limit: int, log: logging.Logger, name: str, ending: Ending
) -> AsyncIterator[tuple[Any, Any]]:
    """The session's read and write streams to the server ``params`` runs; how it ended goes into ``ending``."""
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        start_new_session=True,  # its own process group: stopping it stops what it started
    )
    read_sink, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, write_source = anyio.create_memory_object_stream[SessionMessage](0)
    assert process.stdin and process.stdout and process.stderr
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process.stdout, read_sink, limit, log, name)
        tasks.start_soon(_write, process.stdin, write_source)
        tasks.start_soon(_log_stderr, process.stderr, log, name, ending)
        try:
            yield read, write
        finally:
            for stream in (read, write):  # the tasks that feed them end; the process is told to stop
                stream.close()
            with anyio.CancelScope(shield=True):
                signalled = await _stop(process)
            ending.status = None if signalled else process.returncode or None  # a failure of its own
            tasks.cancel_scope.cancel()


async def _read(
    stdout: ByteReceiveStream, sink: ObjectSendStream[Any], limit: int, log: logging.Logger, name: str
) -> None:
    """Each line the server writes, as a message; a line over ``limit`` is dropped unread but for its start."""
    line, dropped = bytearray(), 0  # dropped: bytes of the current line over the limit, not kept
    async with sink:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    line += chunk[start:end]
                    start = end + 1
                    if dropped or len(line) > limit:
                        size = dropped + len(line)
                        reason = f"its message of {size} bytes is over the limit of {limit} (NEXUS_MAX_MESSAGE_BYTES)"
                        log.warning("upstream '%s': %s; dropped", name, reason)
                        await sink.send(_unreadable(bytes(line[:4096]), reason))
                    elif line.strip():
                        await sink.send(_parsed(bytes(line)))
                    line, dropped = bytearray(), 0
                line += chunk[start:]
                if len(line) > limit:  # keep its start (the id of the request it answers), drop the rest
                    dropped += len(line) - 4096
                    del line[4096:]


def _parsed(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line.decode(errors="replace")))
    except ValueError as exc:  # e.g. JSON nested too deep: the call it answers fails now, not at its timeout
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _unreadable(line[:4096], f"its message is not valid JSON-RPC ({first})")


def _unreadable(start: bytes, reason: str) -> SessionMessage | Exception:
    """For a message that could not be read, the error answer to the request it answers when its id comes first
    (as the SDKs write it); else an error the session drops (a notification, or a line of garbage)."""
    if (found := LEADING_ID.match(start)) is None:
        return ValueError(reason)
    found_id = found.group(1).decode()
    request_id = found_id[1:-1] if found_id.startswith('"') else int(found_id)
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=reason)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _write(stdin: ByteSendStream, source: Any) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdin.send(data.encode() + b"\n")


async def _log_stderr(stderr: ByteReceiveStream, log: logging.Logger, name: str, ending: Ending) -> None:
    """The server's stderr, read as it comes (so it never fills a pipe), into the log a bounded number of lines
    at a time: a server that writes without end costs neither the disk nor the other servers' lines."""
    window, logged, skipped, rest = time.monotonic(), 0, 0, b""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async for chunk in stderr:
            *lines, rest = (rest + chunk).split(b"\n")
            rest = rest[:STDERR_WIDTH]
            for line in lines:
                text = "".join(c if c.isprintable() else "?" for c in line[:STDERR_WIDTH].decode(errors="replace"))
                if not text.strip():
                    continue
                ending.last_line = text.strip()
                if time.monotonic() - window > 60:
                    if skipped:
                        log.warning("upstream '%s': %d more lines of its stderr not logged", name, skipped)
                    window, logged, skipped = time.monotonic(), 0, 0
                if logged < STDERR_LINES:
                    log.info("upstream '%s' stderr: %s", name, text.rstrip())
                    logged += 1
                else:
                    skipped += 1


async def _stop(process: Process) -> bool:
    """Stop the server as the SDK does; whether it took a signal (it did not exit once its stdin closed)."""
    assert process.stdin is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    with anyio.move_on_after(STOP_WAIT):
        await process.wait()
    if process.returncode is not None:
        return False
    await terminate_posix_process_tree(process, STOP_WAIT)
    with anyio.move_on_after(STOP_WAIT):
        await process.wait()
    return True
