"""Progress of a tool call: what a tool reports, sent to its client as ``notifications/progress``.

A client asks for progress by giving its request a progress token (``_meta.progressToken``). While such a
call runs, ``report_progress`` records the tool's latest figures, from the event loop or any thread the
call runs in, and costs nothing when no token was given. A task beside the call sends the latest figures at
most every ``INTERVAL`` seconds: a tool may report on every file it reads, the client still gets a few
notifications a second, each with a larger ``progress`` than the last (as MCP requires), and none after the
answer. A call shorter than ``INTERVAL`` sends none.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

log = logging.getLogger("nexus")

T = TypeVar("T")
Send = Callable[[float, float | None, str | None], Awaitable[None]]


def _interval() -> float:
    try:
        value = float(os.environ.get("NEXUS_PROGRESS_INTERVAL", ""))
    except ValueError:
        return 0.25
    return value if value > 0 else 0.25


INTERVAL = _interval()  # seconds between two notifications of one call (tests use smaller)
MAX_MESSAGE = 300  # characters of a message; a command's last line of output can be any length


class Reporter:
    """The latest figures of one call, taken by its pump; set from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: tuple[float, float | None, str | None] | None = None
        self._sent: float | None = None  # the progress last sent: the next must be larger

    def set(self, progress: float, total: float | None, message: str | None) -> None:
        if message is not None and len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        with self._lock:
            self._latest = (float(progress), None if total is None else float(total), message)

    def take(self) -> tuple[float, float | None, str | None] | None:
        """The figures to send now: the latest, if its progress is above the last sent."""
        with self._lock:
            latest, self._latest = self._latest, None
        if latest is None or (self._sent is not None and latest[0] <= self._sent):
            return None
        self._sent = latest[0]
        return latest

    async def pump(self, send: Send) -> None:
        while True:
            await anyio.sleep(INTERVAL)
            update = self.take()
            if update is None:
                continue
            with anyio.CancelScope(shield=True):  # never cut a notification in half: the answer follows it
                try:
                    await send(*update)
                except Exception as exc:  # the client went away: the call itself goes on
                    log.debug("progress notification not sent: %s", exc)
                    return


_current: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar("nexus_progress", default=None)


def report_progress(progress: float, total: float | None = None, message: str | None = None) -> bool:
    """Report how far the running tool call has come; the host sends it to the client as MCP progress.

    Call it as often as you like, from the tool's body or a thread it started with its context (the latest
    figures go out a few times a second). ``progress`` must grow from one report to the next (a report that
    does not is not sent); ``total`` when known; ``message`` says what is going on, in a few words.

    :returns: whether the caller asked for progress (else the report is dropped, at no cost).
    """
    reporter = _current.get()
    if reporter is None:
        return False
    reporter.set(progress, total, message)
    return True


def sender(context: Any) -> Send | None:
    """How to send progress for the request ``context`` (the SDK's tool context) serves; None when its client
    gave no progress token, or when a call already reports (a tool calling another: one reporter per request)."""
    if context is None or _current.get() is not None:
        return None
    try:
        meta = context.request_context.meta
    except ValueError:  # not a client's request: the host calling a tool itself
        return None
    if not meta or meta.get("progress_token") is None:
        return None
    return context.report_progress  # type: ignore[no-any-return]


async def reported(send: Send, call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, with what it reports sent through ``send``; nothing is sent once it has returned."""
    reporter = Reporter()
    token = _current.set(reporter)
    error: Exception | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reporter.pump, send)
            try:
                result = await call()
            except Exception as exc:  # raised as it is below, not wrapped in the task group's ExceptionGroup
                error = exc
            finally:
                tg.cancel_scope.cancel()
    finally:
        _current.reset(token)
    if error is not None:
        raise error
    return result
