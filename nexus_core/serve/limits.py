"""The limits that keep one client (or one wedged server) from costing the others: message size, how long a
client may leave its answers unread, how many of its requests may be in flight, how long a relay waits.

Standard library only: the relay imports this at every launch. Each limit may be lowered (or raised) through
the environment the server inherits from the relay that started it (tests use small ones).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any


def _number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


MAX_MESSAGE = int(_number("NEXUS_MAX_MESSAGE_BYTES", 16 << 20))  # one JSON-RPC message, on every transport
WRITE_TIMEOUT = _number("NEXUS_WRITE_TIMEOUT", 30.0)  # seconds a client may leave its pipe full before it is cut
MAX_IN_FLIGHT = int(_number("NEXUS_MAX_IN_FLIGHT", 64))  # requests of one session being handled at once
SERVER_TIMEOUT = _number("NEXUS_SERVER_TIMEOUT", 10.0)  # seconds a relay or a command waits on the server's answer


def too_large(size: int | None = None) -> str:
    """The error message of a message over the limit."""
    return f"message too large: over {MAX_MESSAGE} bytes (NEXUS_MAX_MESSAGE_BYTES)" + (f", got {size}" if size else "")


_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()


def leading_id(prefix: bytes) -> int | str | None:
    """The id of a JSON-RPC request read from the first bytes of its line, if it comes before any value too long
    for them (clients write ``jsonrpc``, ``id``, ``method`` before ``params``): a line over the limit is dropped
    unread, and an error without the request's id would leave the client waiting on it."""
    text = prefix.decode("utf-8", "replace")
    pos = _SPACE.match(text).end() + 1  # type: ignore[union-attr]
    if text[pos - 1 : pos] != "{":
        return None
    try:
        while True:
            key, pos = _DECODER.raw_decode(text, _SPACE.match(text, pos).end())  # type: ignore[union-attr]
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos] != ":":
                return None
            value, pos = _DECODER.raw_decode(text, _SPACE.match(text, pos + 1).end())  # type: ignore[union-attr]
            if key == "id":
                return value if type(value) in (int, str) else None
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos] != ",":
                return None
            pos += 1
    except (ValueError, IndexError):  # the prefix ends inside a value: the id comes after it, unknown
        return None


ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


class LimitBody:
    """ASGI middleware: an HTTP request body over ``MAX_MESSAGE`` is answered 413 with a JSON-RPC error, never
    read whole into memory; one under it is read (at most the limit) and passed on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > MAX_MESSAGE:
            return await _refuse(send, int(length))
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, _replay([message]), send)  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > MAX_MESSAGE:
                return await _refuse(send, size)
        body = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
        await self.app(scope, _replay(body, receive), send)


def _replay(messages: list[dict[str, Any]], then: Any = None) -> Any:
    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        return await then() if then is not None else {"type": "http.disconnect"}

    return receive


async def _refuse(send: Any, size: int) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": too_large(size)}}
    body = json.dumps(error).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
