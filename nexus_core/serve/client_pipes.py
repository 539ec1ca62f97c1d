"""Serving one client on its own stdin and stdout: a standalone server's, or those a relay handed over.

A standalone ``nexus serve --standalone`` serves its own stdin and stdout this
way, and the shared server serves each relay's client's (see ``relay``): the
pipes are waited on with the event loop's epoll, not read and written through
worker threads as the SDK's stdio transport does, which saves two thread
hand-offs a call. The shared server reads the client's requests from the client's pipe and
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

import asyncio
import contextlib
import json
import logging
import os
import select
import stat
from collections import deque
from typing import Any, Self

import anyio
import anyio.to_thread
import mcp_types as types
import orjson
from anyio.abc import SocketStream
from mcp.server.runner import serve_dual_era_loop, serve_loop
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from nexus_core.serve.limits import MAX_IN_FLIGHT, MAX_MESSAGE, WRITE_TIMEOUT, leading_id, too_large

log = logging.getLogger("nexus")

REPLAY_ID = "nexus-relay-replay"
# orjson writes only JSON's own types: anything else raises and is written by pydantic instead.
_PLAIN = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# The SDK's answer (in its handshake-era loop) to a 2026-07-28 request on a handshake-era connection.
MIXED = (
    "this connection serves the handshake protocol era; "
    "requests carrying the 2026-07-28 envelope are not accepted on it"
)
DRAIN_TIMEOUT = 60.0  # seconds answers may still take once the client has closed its input


class ClientPipes:
    """One client's session over its own pipes, with notes to its relay."""

    def __init__(
        self, infd: int, outfd: int, *, relay: SocketStream | None = None, trackfd: int | None = None, hello: Any = None
    ) -> None:
        hello = hello or {}
        self.relay, self.infd, self.outfd, self.trackfd = relay, infd, outfd, trackfd
        self.pollable = {fd: _pollable(fd) for fd in (infd, outfd)}
        self.replay: list[str] = list(hello.get("replay") or [])
        self.pending_input = (hello.get("pending_input") or "").encode("latin-1")
        self.greeted = hello.get("answered")  # the initialize result the relay gave while this server started
        self.in_flight: set[str] = set()
        self.answered = anyio.Event()  # set whenever the last request in flight is answered
        self._notes = anyio.Lock()
        self.client_closed = False
        self._buffer = bytearray(self.pending_input)
        self._gone = False  # a write to the client failed
        self._readable: _Readable | None = None
        self._skipping = 0  # bytes of an over-long line dropped so far (it is answered once its end comes)
        self._skipped_id: int | str | None = None  # that line's request id, if its first bytes tell it
        self._scope: anyio.CancelScope | None = None
        self.cut_reason: str | None = None  # why this server ended the session itself

    async def serve(self, lowlevel: Any, state: Any) -> None:
        """Serve until the client closes its input (then tell the relay ``bye``) or the relay goes away."""
        for fd, pollable in self.pollable.items():
            if pollable:
                os.set_blocking(fd, False)
        self._writing = anyio.Lock(fast_acquire=True)  # one answer's bytes at a time; no checkpoint when free
        incoming, outgoing = _Incoming(self), _Outgoing(self)
        options = {"lifespan_state": state, "init_options": lowlevel.create_initialization_options()}
        try:
            async with anyio.create_task_group() as tg:
                self._scope = tg.cancel_scope
                if self.relay is not None:
                    tg.start_soon(self._watch_relay, tg.cancel_scope)
                if await incoming.opens_modern():
                    await serve_dual_era_loop(lowlevel, incoming, outgoing, **options)
                else:  # the handshake era, decided here: the SDK's loop for it, without a task relaying every message
                    incoming.legacy = True
                    await serve_loop(lowlevel, incoming, outgoing, **options)
                tg.cancel_scope.cancel()
            if self.cut_reason:
                await self._note({"bye": True, "reason": self.cut_reason})
            elif self.client_closed:
                await self._note({"bye": True})
        finally:
            if self._readable is not None:
                self._readable.close()
            for fd in (self.infd, self.outfd):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)  # the relay (or a terminal) shares these descriptors

    # -- the client's input ------------------------------------------------------------

    async def next_message(self) -> SessionMessage | Exception:
        """The client's next message (or the parse error of its next line); ``EndOfStream`` once it closed
        its input and every request in flight was answered (up to ``DRAIN_TIMEOUT``)."""
        while True:
            if self.replay:
                if (item := await self._take(self.replay.pop(0).encode(), replayed=True)) is not None:
                    return item
                continue
            end = self._buffer.find(b"\n")
            if end >= 0 and self._skipping:  # the end of a line over the limit: it gets its error now
                size, self._skipping = self._skipping + end, 0
                del self._buffer[: end + 1]
                return MessageTooLarge(size, self._skipped_id)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if line.strip() and (item := await self._take(line)) is not None:
                    return item
                continue
            if len(self._buffer) > MAX_MESSAGE or self._skipping:  # never held whole: dropped as it comes
                if not self._skipping:
                    self._skipped_id = leading_id(bytes(self._buffer[:4096]))
                self._skipping += len(self._buffer)
                self._buffer.clear()
            if self.client_closed:
                raise anyio.EndOfStream
            while len(self.in_flight) >= MAX_IN_FLIGHT and not self._gone:  # backpressure: read on as answers go
                self.answered = anyio.Event()
                await self.answered.wait()
            data = await self._read_some()
            if data:
                self._buffer += data
                continue
            self.client_closed = True
            with anyio.move_on_after(DRAIN_TIMEOUT):  # answer what was asked before closing the session
                while self.in_flight and not self._gone:
                    self.answered = anyio.Event()
                    await self.answered.wait()
            raise anyio.EndOfStream

    async def _read_some(self) -> bytes:
        if not self.pollable[self.infd]:  # a regular file: read it in a worker thread
            return await anyio.to_thread.run_sync(os.read, self.infd, 1 << 16)
        if self._readable is None:
            self._readable = _Readable(self.infd)
        while True:
            await self._readable.wait()
            try:
                return os.read(self.infd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return b""

    async def _take(self, line: bytes, *, replayed: bool = False) -> SessionMessage | Exception | None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # answered with -32700 / -32600 (``_Incoming``)
            return exc
        if isinstance(message, types.JSONRPCRequest):
            if replayed and message.method == "initialize":
                message = message.model_copy(update={"id": REPLAY_ID})
            elif not replayed:
                self.in_flight.add(orjson.dumps(message.id).decode())
                self._track()
        if not replayed and getattr(message, "method", None) in ("initialize", "notifications/initialized"):
            await self._note({"replay": line.decode()})
        return SessionMessage(message)

    # -- the client's output -----------------------------------------------------------

    async def send(self, item: SessionMessage) -> None:
        """Write one message to the client, from the task that answers (no writer task to hand it to)."""
        message = item.message
        answer = isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None
        if answer and message.id == REPLAY_ID:
            self._compare_greeting(message)
            return  # the client already has its answer to initialize
        if self._gone:
            raise anyio.BrokenResourceError
        data = _line(message)
        async with self._writing:
            if not await self._write_all(data):
                self._gone = True  # the client is gone: later messages are refused, the drain stops waiting
                self.answered.set()
                return
        if answer:
            self.in_flight.discard(orjson.dumps(message.id).decode())
            self._track()
            self.answered.set()  # the drain waits for none left; backpressure, for fewer than the limit

    async def _write_all(self, data: bytes) -> bool:
        if not self.pollable[self.outfd]:
            return await anyio.to_thread.run_sync(_write_blocking, self.outfd, data)
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.outfd, view) :]
            except BlockingIOError:
                with anyio.move_on_after(WRITE_TIMEOUT) as waited:
                    await anyio.wait_writable(self.outfd)
                if waited.cancelled_caught:
                    self._cut(f"the client read none of its answers for {WRITE_TIMEOUT:g} s")
                    return False
            except OSError:
                return False  # the client is gone
        return True

    def _cut(self, reason: str) -> None:
        """End this session: a client that stops reading would otherwise hold its answers in memory forever."""
        log.warning("a session was ended: %s", reason)
        self.cut_reason = reason
        if self._scope is not None:
            self._scope.cancel()

    def _compare_greeting(self, message: types.JSONRPCMessage) -> None:
        """The relay answered initialize itself (``greeting``): say so in the log if this server answers otherwise."""
        if self.greeted is None:
            return
        ours = orjson.loads(_line(message)).get("result")
        if ours != self.greeted:
            log.warning("the relay answered initialize with %s; this server answers %s", self.greeted, ours)
        self.greeted = None

    # -- the relay -------------------------------------------------------------------------

    def _track(self) -> None:
        """The requests in flight, for the relay to answer should this server die: one write, no wake-up."""
        if self.trackfd is None:
            return
        data = orjson.dumps(sorted(self.in_flight))
        with contextlib.suppress(OSError):
            os.pwrite(self.trackfd, len(data).to_bytes(8, "little") + data, 0)

    async def _note(self, note: dict[str, Any]) -> None:
        if self.relay is None:
            return
        async with self._notes:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.relay.send(json.dumps(note).encode() + b"\n")

    async def _watch_relay(self, scope: anyio.CancelScope) -> None:
        """The relay went away (its client killed it): the session ends with it."""
        with contextlib.suppress(Exception):
            while await self.relay.receive():
                pass
        scope.cancel()


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: pipes, sockets and terminals; not regular files or ``/dev/null``
    (epoll refuses both; a client launched with its input from ``/dev/null`` is read in a worker thread)."""
    if not hasattr(select, "epoll"):
        return not stat.S_ISREG(os.fstat(fd).st_mode)
    with select.epoll() as poll:
        try:
            poll.register(fd, select.EPOLLIN)
        except PermissionError:
            return False
    return True


class _Readable:
    """Waits until a descriptor is readable. It stays registered with the event loop from one wait to the next
    (``anyio.wait_readable`` registers and unregisters it every time: two ``epoll_ctl`` calls a request)."""

    def __init__(self, fd: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._fd = fd
        self._waiter: asyncio.Future[None] | None = None
        self._registered = False

    async def wait(self) -> None:
        if not self._registered:
            self._loop.add_reader(self._fd, self._ready)
            self._registered = True
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _ready(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        else:  # nobody is waiting: unregister, or a readable descriptor would call back on every turn of the loop
            self.close()

    def close(self) -> None:
        if self._registered:
            self._loop.remove_reader(self._fd)
            self._registered = False


class _Stream:
    """What the SDK asks of a stream besides reading or writing: closing it, alone or as a context manager."""

    def __init__(self, pipes: ClientPipes) -> None:
        self._pipes = pipes
        self._closed = False

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class _Incoming(_Stream):
    """The SDK's read stream: each ``receive`` reads the client's pipe itself (no reader task, no memory
    stream: two fewer hand-offs a request); a line that is not JSON-RPC is answered with an error.

    The client's first request decides the protocol era, as in the SDK's ``serve_dual_era_loop``; on a
    handshake-era connection (``legacy``) a request carrying the 2026-07-28 envelope is refused here with
    the SDK's own error.
    """

    def __init__(self, pipes: ClientPipes) -> None:
        super().__init__(pipes)
        self._held: deque[SessionMessage | Exception] = deque()  # read to find the first request, not received
        self.legacy = False

    async def opens_modern(self) -> bool:
        """Whether the client's first request opens a 2026-07-28 session (what came up to it is kept)."""
        while True:
            try:
                item = await self._pipes.next_message()
            except anyio.EndOfStream:
                return False
            self._held.append(item)
            if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCRequest):
                return item.message.method != "initialize" and _enveloped(item.message)

    async def receive(self) -> SessionMessage:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            item = self._held.popleft() if self._held else await self._pipes.next_message()
            if isinstance(item, Exception):
                reply = error_for(item)
            elif self.legacy and isinstance(item.message, types.JSONRPCRequest) and _enveloped(item.message):
                reply = types.JSONRPCError(
                    jsonrpc="2.0", id=item.message.id, error=types.ErrorData(code=types.INVALID_REQUEST, message=MIXED)
                )
            else:
                return item
            with contextlib.suppress(anyio.BrokenResourceError):
                await self._pipes.send(SessionMessage(reply))

    def __aiter__(self) -> _Incoming:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


class _Outgoing(_Stream):
    """The SDK's write stream: ``send`` writes to the client's pipe from the answering task."""

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        await self._pipes.send(item)


def _line(message: types.JSONRPCMessage) -> bytes:
    """A message as one line of JSON. An answer's result is the SDK's dict in JSON form already: orjson writes the
    same bytes as pydantic's serialiser in a third of the time (a 10 KB read_file answer: 7 against 20 us)."""
    if isinstance(message, types.JSONRPCResponse):
        try:
            return orjson.dumps({"jsonrpc": message.jsonrpc, "id": message.id, "result": message.result}, option=_PLAIN)
        except TypeError:  # a value orjson does not write as pydantic would (an int past 64 bits, a datetime, ...)
            pass
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def _enveloped(request: types.JSONRPCRequest) -> bool:
    """Whether a request (other than ``initialize``) carries the 2026-07-28 per-request envelope."""
    meta = (request.params or {}).get("_meta") if request.method != "initialize" else None
    return isinstance(meta, dict) and types.PROTOCOL_VERSION_META_KEY in meta


def _write_blocking(fd: int, data: bytes) -> bool:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        return False
    return True


class MessageTooLarge(Exception):
    """A client's line over ``MAX_MESSAGE`` bytes: dropped as it was read, answered with -32600 (with its request's
    id when the line's first bytes tell it)."""

    def __init__(self, size: int, request_id: int | str | None = None) -> None:
        super().__init__(too_large(size))
        self.request_id = request_id


def error_for(exc: Exception) -> JSONRPCError:
    """The answer to a client's line that is not JSON-RPC: -32700 for a line that is not JSON; -32600 for JSON
    that is not a valid message, with its id when it has one."""
    if isinstance(exc, MessageTooLarge):
        log.warning("stdio: %s", exc)
        error = ErrorData(code=INVALID_REQUEST, message=str(exc))
        return JSONRPCError(jsonrpc="2.0", id=exc.request_id, error=error)
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        log.info("stdio: a line that is not JSON")
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
    request_id = next(
        (e["input"]["id"] for e in errors if isinstance(e["input"], dict) and type(e["input"].get("id")) in (int, str)),
        None,
    )
    log.info("stdio: an invalid JSON-RPC message (id %r)", request_id)
    message = f"Invalid Request: {errors[0]['msg']} at {'.'.join(map(str, errors[0]['loc'][1:])) or 'top level'}"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message=message))
