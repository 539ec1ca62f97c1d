"""The gate every way in passes: tools, resources and prompts, for the session that asks.

One rule decides whether a session may use an item: the grants of its plugin
in the config (fixed when the host builds; a session's ``--enable`` replaces
their categories, see ``enable``), then what the session itself takes away (an
untrusted folder's ``nexus.toml``, a profile). A refused item is not
listed to that session, and a direct use gets the reason. Every use, refused or
not, leaves one audit record naming the client.

The middleware here also keeps each session's identity: the client's name from
``initialize``, and its roots, asked with ``roots/list`` once the client is
initialized and again whenever it says they changed.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from nexus_core.access.denied import PermissionDenied
from nexus_core.access.sessions import Session, bound, bound_session, current
from nexus_core.errors import NexusError

if TYPE_CHECKING:
    from nexus_core.access.audit import AuditLog

log = logging.getLogger("nexus")

ROOTS_WAIT = 3.0  # seconds a call waits for the client's answer to roots/list before going on without it


@dataclass(frozen=True)
class Item:
    """What the gate needs to know about a tool, resource or prompt."""

    kind: str  # "tool", "resource" or "prompt"
    plugin: str
    name: str  # public name, URI or URI template
    names: frozenset[str]  # every name allow_tools/deny_tools may use for it (own, public, the tool it needs)
    category: str | None
    refusal: str | None = None  # the config's own reason, fixed at build
    fixed: str | None = None  # the part of it no --enable lifts: allow/deny_tools, the plugin's own reason


def refusal(item: Item, session: Session | None = None) -> str | None:
    """Why ``session`` (default: the current one) may not use ``item``; None when it may."""
    session = session or current()
    if session.enabled is None:
        denied = item.refusal
    else:
        denied = item.fixed or session.enabled.refusal(item.plugin, item.name, item.category)
    if denied:
        return denied
    if session.profile is not None and (reason := session.profile.refusal(item.plugin, item.kind, item.names)):
        return f"permission denied: {reason}"
    if session.narrowing is not None:
        return session.narrowing.refusal(item.plugin, [*sorted(item.names, key=len), item.name], item.category)
    return None


class Gate:
    """Refuses or runs each use, and audits it."""

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit

    async def run(self, item: Item, arguments: dict[str, Any] | None, call: Callable[[], Awaitable[Any]]) -> Any:
        """Refuse, or call; either way, one audit record."""
        session = current()
        started = time.perf_counter()
        outcome, error = "ok", None
        try:
            if reason := refusal(item, session):
                outcome = "denied"
                raise PermissionDenied(reason)
            await _roots_settled(session)
            session.calls += 1
            result = await call()
            if getattr(result, "is_error", False):
                outcome, error = "error", _result_text(result)
            return result
        except anyio.get_cancelled_exc_class():
            outcome, error = "cancelled", "the call was cancelled"
            raise
        except Exception as exc:
            outcome, error = ("error" if outcome == "ok" else outcome), str(exc) or type(exc).__name__
            raise
        finally:
            self.audit.record(
                plugin=item.plugin,
                tool=item.name,
                kind=item.kind,
                outcome=outcome,
                duration_ms=(time.perf_counter() - started) * 1000,
                arguments=arguments,
                error=error,
                client=session.client,
                session=session.id,
            )

    def record_unknown(self, name: str, arguments: dict[str, Any] | None) -> None:
        """Audit a call to a tool no plugin serves: probing for names is worth seeing in the log."""
        session = current()
        self.audit.record(
            plugin="",
            tool=name,
            outcome="unknown",
            duration_ms=0.0,
            arguments=arguments,
            error=f"unknown tool '{name}'",
            client=session.client,
            session=session.id,
        )

    def guard_resource(self, item: Item, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a resource or template function) behind the gate; its signature is kept for the SDK."""

        @functools.wraps(fn)
        async def guarded(**kwargs: Any) -> Any:
            try:
                return await self.run(item, kwargs or None, functools.partial(_call, fn, kwargs))
            except (ToolError, NexusError) as exc:  # PermissionDenied included: the reader gets the reason
                raise ResourceError(str(exc)) from None

        return guarded

    def guard_prompt(self, item: Item, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def guarded(**kwargs: Any) -> Any:
            return await self.run(item, kwargs or None, functools.partial(_call, fn, kwargs))

        return guarded


async def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    return await anyio.to_thread.run_sync(functools.partial(fn, **kwargs))


async def _roots_settled(session: Session) -> None:
    """A call right after the handshake waits (briefly) for the client's roots, so it runs in the right folders."""
    wait = session._roots_wait
    if wait is not None and not wait.is_set():
        with anyio.move_on_after(ROOTS_WAIT):
            await wait.wait()


class Sessions:
    """Server middleware: every request runs as its connection's session, which learns who the client is."""

    def __init__(self, make: Callable[[], Session], serves: Callable[[str], bool]) -> None:
        self._make = make
        self._serves = serves  # whether the server has a handler for a method
        self._by_connection: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()
        self.open: weakref.WeakSet[Session] = weakref.WeakSet()

    def session_for(self, ctx: ServerRequestContext[Any, Any]) -> Session:
        if (bound_already := bound_session()) is not None:
            return bound_already  # a transport that serves one client per connection bound it
        connection = getattr(ctx.session, "_connection", None)
        if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            session = self._make()  # a 2026-07-28 request stands alone: nothing it keeps outlives it
            session.lasting = False
            return session
        session = self._by_connection.get(connection)
        if session is None:
            session = self._by_connection[connection] = self._make()
        return session

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        _refuse_before_initialize(ctx, self._serves)
        session = self.session_for(ctx)
        self.open.add(session)
        with bound(session):
            if ctx.method == "initialize":
                _learn_client(session, ctx.params or {})
            result = await call_next(ctx)
            if ctx.method == "notifications/roots/list_changed" or (
                ctx.method == "notifications/initialized" and session._roots_wait is not None
            ):
                await _fetch_roots(session, ctx)
            return result


def _refuse_before_initialize(ctx: ServerRequestContext[Any, Any], serves: Callable[[str], bool]) -> None:
    """A request before the handshake gets an error that says so (the SDK's says only "Invalid request parameters")."""
    connection = getattr(ctx.session, "_connection", None)
    if (
        ctx.request_id is not None
        and ctx.method not in ("initialize", "ping")
        and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        and connection is not None
        and not connection.initialize_accepted
        and serves(ctx.method)
    ):
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"'{ctx.method}' arrived before initialize: send initialize, then notifications/initialized",
        )


def _learn_client(session: Session, params: dict[str, Any]) -> None:
    info = params.get("clientInfo") or {}
    session.client = str(info.get("name") or session.client or "unknown")
    if (params.get("capabilities") or {}).get("roots") is not None:
        session._roots_wait = anyio.Event()  # calls wait for the answer to roots/list


async def _fetch_roots(session: Session, ctx: ServerRequestContext[Any, Any]) -> None:
    """Ask the client for its roots; a client that cannot answer keeps the launch roots."""
    try:
        with anyio.fail_after(30):
            result = await ctx.session.list_roots()
        session.set_client_roots(list(_paths(r.uri for r in result.roots)))
        log.info("%s: roots %s", session.describe(), ", ".join(map(str, session.roots())) or "none")
    except Exception as exc:  # no roots capability, a timeout, a client error: keep what the session had
        log.info("%s: roots/list failed (%s); keeping its launch roots", session.describe(), exc)
    finally:
        if session._roots_wait is not None:
            session._roots_wait.set()


def _paths(uris: Iterable[Any]) -> Iterable[Path]:
    for uri in uris:
        parsed = urlparse(str(uri))
        if parsed.scheme == "file" and parsed.path:
            yield Path(unquote(parsed.path))


def _result_text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in getattr(result, "content", []) or [])
