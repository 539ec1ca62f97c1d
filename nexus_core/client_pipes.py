"""Serving one client on its own stdin and stdout, which its relay handed over (see ``relay``).

The shared server reads the client's requests from the client's pipe and
writes the answers straight to it, exactly as a standalone server on stdio
would: no process sits in between. What the relay needs should this server
die is kept where the relay can read it afterwards without being woken on
every call: the ids of the requests in flight, rewritten with one ``pwrite``
into a file the relay handed over with the pipes, and, on the relay's socket,
the client's handshake (``replay``, once per session). A relay that
reconnects after a crash sends that handshake back with whatever the client
sent meanwhile (``pending_input``); the replayed ``initialize`` is answered
into the void.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import SocketStream
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.message import SessionMessage

from nexus_core.transports import parse_error_replies

log = logging.getLogger("nexus")

REPLAY_ID = "nexus-relay-replay"
DRAIN_TIMEOUT = 60.0  # seconds answers may still take once the client has closed its input


class ClientPipes:
    """One client's session over its own pipes, with notes to its relay."""

    def __init__(self, relay: SocketStream, infd: int, outfd: int, trackfd: int, hello: dict[str, Any]) -> None:
        self.relay, self.infd, self.outfd, self.trackfd = relay, infd, outfd, trackfd
        self.replay: list[str] = list(hello.get("replay") or [])
        self.pending_input = (hello.get("pending_input") or "").encode("latin-1")
        self.in_flight: set[str] = set()
        self.answered = anyio.Event()  # set whenever the last request in flight is answered
        self._notes = anyio.Lock()
        self.client_closed = False

    async def serve(self, lowlevel: Any, state: Any) -> None:
        """Serve until the client closes its input (then tell the relay ``bye``) or the relay goes away."""
        for fd in (self.infd, self.outfd):
            os.set_blocking(fd, False)
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](16)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, incoming_send)
                tg.start_soon(self._write, outgoing_receive)
                tg.start_soon(self._watch_relay, tg.cancel_scope)
                await serve_dual_era_loop(
                    lowlevel,
                    parse_error_replies(incoming, outgoing),
                    outgoing,
                    lifespan_state=state,
                    init_options=lowlevel.create_initialization_options(),
                )
                tg.cancel_scope.cancel()
            if self.client_closed:
                await self._note({"bye": True})
        finally:
            for fd in (self.infd, self.outfd):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)  # the relay (or a terminal) shares these descriptors

    # -- the client's input ------------------------------------------------------------

    async def _read(self, send: Any) -> None:
        async with send:
            for line in self.replay:
                await self._take(send, line.encode(), replayed=True)
            buffer = bytearray(self.pending_input)
            while True:
                while (end := buffer.find(b"\n")) >= 0:
                    line, buffer = bytes(buffer[:end]), buffer[end + 1 :]
                    if line.strip():
                        await self._take(send, line)
                data = await self._read_some()
                if not data:
                    break
                buffer += data
            self.client_closed = True
            with anyio.move_on_after(DRAIN_TIMEOUT):  # answer what was asked before closing the session
                while self.in_flight:
                    self.answered = anyio.Event()
                    await self.answered.wait()

    async def _read_some(self) -> bytes:
        while True:
            await anyio.wait_readable(self.infd)
            try:
                return os.read(self.infd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return b""

    async def _take(self, send: Any, line: bytes, *, replayed: bool = False) -> None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # answered with -32700 / -32600 by parse_error_replies
            await send.send(exc)
            return
        if isinstance(message, types.JSONRPCRequest):
            if replayed and message.method == "initialize":
                message = message.model_copy(update={"id": REPLAY_ID})
            elif not replayed:
                self.in_flight.add(json.dumps(message.id))
                self._track()
        if not replayed and getattr(message, "method", None) in ("initialize", "notifications/initialized"):
            await self._note({"replay": line.decode()})
        await send.send(SessionMessage(message))

    # -- the client's output -----------------------------------------------------------

    async def _write(self, receive: Any) -> None:
        async with receive:
            async for item in receive:
                message = item.message
                answer = isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None
                if answer and message.id == REPLAY_ID:
                    continue  # the client already has its answer to initialize
                data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                if not await self._write_all(data):
                    return
                if answer:
                    self.in_flight.discard(json.dumps(message.id))
                    self._track()
                    if not self.in_flight:
                        self.answered.set()

    async def _write_all(self, data: bytes) -> bool:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.outfd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.outfd)
            except OSError:
                return False  # the client is gone
        return True

    # -- the relay -------------------------------------------------------------------------

    def _track(self) -> None:
        """The requests in flight, for the relay to answer should this server die: one write, no wake-up."""
        data = json.dumps(sorted(self.in_flight)).encode()
        with contextlib.suppress(OSError):
            os.pwrite(self.trackfd, len(data).to_bytes(8, "little") + data, 0)

    async def _note(self, note: dict[str, Any]) -> None:
        async with self._notes:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.relay.send(json.dumps(note).encode() + b"\n")

    async def _watch_relay(self, scope: anyio.CancelScope) -> None:
        """The relay went away (its client killed it): the session ends with it."""
        with contextlib.suppress(Exception):
            while await self.relay.receive():
                pass
        scope.cancel()
