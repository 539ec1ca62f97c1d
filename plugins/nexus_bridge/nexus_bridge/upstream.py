"""One upstream MCP server: its connection, kept alive in the background, and the calls Nexus forwards to it.

``Upstream.run`` connects with the official client, publishes the server's
tools, resources and prompts through ``ctx.publish``, then watches the
connection: the server's own list_changed notifications republish, a lost
connection reconnects with exponential backoff, and after ``retries`` failed
attempts in a row it gives up. Calls while it is down fail at once with the
reason, instead of waiting on a dead pipe.
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import functools
import json
import math
import os
import re
import shutil
import sys
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import version
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from nexus_bridge.config import ServerTable, prefix_of
from nexus_bridge.process import Ending, process_streams
from nexus_core import (
    MAX_MESSAGE,
    EnvRef,
    LivePrompt,
    LiveResource,
    LiveTool,
    PluginContext,
    ToolError,
    prefixed,
    report_progress,
)

MAX_BACKOFF = 60.0
PROTOCOL_META = "io.modelcontextprotocol/"
LOST_SESSION = ("Session terminated", "Session not found")  # how Streamable HTTP says a restarted server forgot us
ResultT = TypeVar("ResultT", bound=types.Result)
ContentT = TypeVar("ContentT", bound=types.ContentBlock)
ItemT = TypeVar("ItemT")
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # the MCP specification's rule for tool names
MAX_DESCRIPTION = 4096  # characters of an upstream tool's description that clients see; a longer one is cut
# An upstream tool whose input and output schemas are larger is not mounted: every client would carry them in its
# model's context on every turn (the largest schemas of common servers are a few KB).
MAX_SCHEMA_BYTES = 64 << 10
STABLE = 5.0  # seconds a connection must have lasted for its loss to start a fresh run of retries
CLIENT_INFO = types.Implementation(name="nexus-bridge", version=version("nexus-stack-bridge"))


class Upstream:
    def __init__(self, name: str, table: ServerTable, ctx: PluginContext) -> None:
        self.name, self.table, self.ctx = name, table, ctx
        self.prefix = prefix_of(name, table)
        self.state = "connecting"  # connecting | connected | down | gave up
        self.reason = ""  # why it is down
        self.failures = 0  # failed attempts in a row
        self.retry_at: float | None = None
        self._since = 0.0  # when the current connection was made
        self.counts: dict[str, int] = {}
        self.problems: list[str] = []
        self.settled = anyio.Event()  # set once the first attempt has ended, either way
        self._client: Client | None = None
        self._signals: anyio.abc.ObjectSendStream[str] | None = None
        self._read_only: set[str] = set()  # upstream tools whose results may be cached
        self._tools: list[LiveTool] = []  # as last published
        self._uris: set[str] = set()  # the server's resources and templates (its own URIs), to relink answers
        self._templates: list[UriTemplate] = []
        self._cache = ResultCache(table.cache_ttl)
        self._ending = Ending()  # how the last stdio process ended
        others = [prefix_of(n, t) for n, t in ctx.config.servers.items() if t.enabled and n != name]
        self._longer_prefixes = [p for p in others if p.startswith(self.prefix) and len(p) > len(self.prefix)]

    # -- the background task --------------------------------------------------------

    async def run(self) -> None:
        delay = self.table.backoff
        while True:
            unfixable, self._ending = False, Ending()
            try:
                await self._connect_and_watch()
            except Exception as exc:
                self.reason, unfixable = describe(exc), isinstance(exc, Unfixable)
            finally:
                was_connected = self.state == "connected"
                self._client, self._signals = None, None
                self._cache.clear()
            if why := self._ending.why():  # a stdio server that exited: its status says more than a closed pipe
                self.reason = f"{self.reason} ({why})"
            if was_connected and time.monotonic() - self._since >= STABLE:
                # It had worked: reconnect at once, with a fresh run of retries.
                self.ctx.log.warning("upstream '%s': %s; reconnecting", self.name, self.reason)
                self.failures, delay, self.state = 0, self.table.backoff, "connecting"
                continue
            self.failures += 1  # a failed attempt, or a connection that died young
            if self.failures >= self.table.retries or unfixable:  # `retries` failed attempts in all, as documented
                await self._give_up()
                return
            self.state, self.retry_at = "down", time.monotonic() + delay
            self.settled.set()
            self.ctx.log.warning(
                "upstream '%s' is down (%s); %d of %d failed attempts, retrying in %.1f s",
                self.name,
                self.reason,
                self.failures,
                self.table.retries,
                delay,
            )
            await anyio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)
            self.state, self.retry_at = "connecting", None

    async def _connect_and_watch(self) -> None:
        send, receive = anyio.create_memory_object_stream[str](16)
        client = Client(
            self._transport(lambda: _notify(send, "lost")),
            read_timeout_seconds=self.table.timeout,
            mode=self.table.protocol,
            message_handler=functools.partial(_on_message, send),
            client_info=CLIENT_INFO,
            cache=None,
        )
        # One scope for the whole connection (anyio scopes must close in order); its deadline
        # covers connecting only.
        with anyio.CancelScope(deadline=anyio.current_time() + self.table.connect_timeout) as scope:
            async with client, receive:
                await self._publish(client)
                scope.deadline = math.inf
                self._client, self._signals = client, send
                self.state, self.reason, self._since = "connected", "", time.monotonic()
                self.ctx.log.info("upstream '%s' connected: %s", self.name, self._summary())
                self.settled.set()
                await self._watch(client, receive)
                self.reason = "the connection was lost"
        if scope.cancelled_caught:
            raise TimeoutError(f"no answer within connect_timeout = {self.table.connect_timeout:g} s")

    async def _watch(self, client: Client, signals: anyio.abc.ObjectReceiveStream[str]) -> None:
        async with anyio.create_task_group() as helpers:
            if self.table.ping_interval:
                helpers.start_soon(self._ping, client)
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS and _announces_changes(client.server_capabilities):
                helpers.start_soon(self._listen, client)
            async for signal in signals:
                if signal == "lost" or "lost" in _drain(signals):
                    break
                await self._publish(client)  # the server said its lists changed (once for a burst)
            helpers.cancel_scope.cancel()

    async def _listen(self, client: Client) -> None:
        """Change events on a 2026-07-28 connection come on a subscriptions/listen stream, not as notifications."""
        try:
            filters = {"tools_list_changed": True, "prompts_list_changed": True, "resources_list_changed": True}
            async with client.listen(**filters) as events:
                async for _event in events:
                    self.lost_or_changed("changed")
        except Exception as exc:
            self.ctx.log.info("upstream '%s': no change events (%s)", self.name, describe(exc))

    async def _ping(self, client: Client) -> None:
        """Every ping_interval, make sure the server still answers; any answer, even an error, will do."""
        while True:
            await anyio.sleep(self.table.ping_interval)
            modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
            try:
                with anyio.fail_after(self.table.timeout):
                    if modern:  # ping is gone at 2026-07-28; any answer to server/discover will do
                        await client.session.send_discover(client.protocol_version)
                    else:
                        await client.session.send_ping()
            except Exception as exc:
                if modern and isinstance(exc, MCPError) and not _connection_failed(exc) and exc.code != REQUEST_TIMEOUT:
                    continue  # an answer, even an error, means the server is there
                self.ctx.log.warning("upstream '%s' did not answer a ping: %s", self.name, describe(exc))
                self.lost(client)
                return

    async def _give_up(self) -> None:
        self.state, self.retry_at = "gave up", None
        self.ctx.log.error(
            "upstream '%s': giving up after %d failed attempts: %s", self.name, self.failures, self.reason
        )
        self.counts = {}
        # Its tools are no longer listed; a call to one still gets the reason.
        gone = [
            LiveTool(t.definition, t.call, t.category, f"upstream server '{self.name}' is {self.describe_state()}")
            for t in self._tools
        ]
        await self.ctx.publish(self.name, tools=gone)
        self.settled.set()

    def lost(self, client: Client) -> None:
        if client is self._client:  # not a late failure from a connection already replaced
            self.lost_or_changed("lost")

    def lost_or_changed(self, signal: str) -> None:
        if self._signals is not None:
            _notify(self._signals, signal)

    # -- connecting -------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _transport(self, on_end: Any) -> AsyncIterator[Any]:
        """The client transport for the server's type; its read stream reports when it ends."""
        table = self.table
        async with contextlib.AsyncExitStack() as stack:
            if table.type in ("stdio", "npm") and sys.platform == "win32":
                streams = await stack.enter_async_context(stdio_client(self._process()))
            elif table.type in ("stdio", "npm"):
                process = process_streams(self._process(), MAX_MESSAGE, self.ctx.log, self.name, self._ending)
                streams = await stack.enter_async_context(process)
            elif table.type == "http":
                http = await stack.enter_async_context(create_mcp_http_client(headers=self._headers()))
                streams = await stack.enter_async_context(streamable_http_client(table.url or "", http_client=http))
            else:
                streams = await stack.enter_async_context(
                    sse_client(table.url or "", headers=self._headers(), timeout=table.connect_timeout)
                )
            read, write = streams[0], streams[1]

            def stuck() -> None:
                self.ctx.log.warning("upstream '%s' has not read its input for %g s", self.name, table.timeout)
                on_end()

            yield _Watched(read, on_end), _BoundedWrites(write, table.timeout, stuck)

    def _process(self) -> StdioServerParameters:
        table = self.table
        if table.type == "npm":
            npx = shutil.which("npx")
            if npx is None:
                raise Unfixable("npx is not on PATH: install Node.js to run npm package servers")
            command, args = npx, ["-y", table.package or "", *table.args]
        else:
            command, args = table.command or "", table.args
        # npx resolves packages from node_modules and .npmrc in its folder: not a workspace's, by default.
        # Servers start before any client connects, so a relative cwd is taken from the configured roots only.
        configured = table.type != "npm" and self.ctx.paths.configured
        base = self.ctx.paths.roots[0] if configured else self.ctx.data_dir
        cwd = base / (table.cwd.expanduser() if table.cwd else "")
        env = {"PATH": os.environ.get("PATH", os.defpath)} | {k: _resolve(k, v) for k, v in table.env.items()}
        return StdioServerParameters(command=command, args=args, env=env, cwd=cwd)

    def _headers(self) -> dict[str, str]:
        return {name: _resolve(name, value) for name, value in self.table.headers.items()}

    # -- publishing ---------------------------------------------------------------------

    async def _publish(self, client: Client) -> None:
        capabilities = client.server_capabilities
        tools = await _all_pages(client.list_tools, "tools") if capabilities.tools else []
        resources, templates, prompts = [], [], []
        if capabilities.resources:
            resources = await _all_pages(client.list_resources, "resources")
            templates = await _all_pages(client.list_resource_templates, "resource_templates")
        if capabilities.prompts:
            prompts = await _all_pages(client.list_prompts, "prompts")
        problems: list[str] = []
        tools = self._named_well(tools, "tool", lambda t: self._public(t.name), "_", problems)
        prompts = self._named_well(prompts, "prompt", lambda p: self._public(p.name), "_", problems)
        resources = self._named_well(resources, "resource", lambda r: self._public_uri(r.uri), "+", problems)
        templates = self._named_well(templates, "resource", lambda t: self._public_uri(t.uri_template), "+", problems)
        self._read_only = {t.name for t in tools if self.reads(t.name) and _cacheable(t)}
        self._cache.clear()
        self.counts = {"tools": len(tools), "resources": len(resources) + len(templates), "prompts": len(prompts)}
        self._tools = [self._live_tool(tool) for tool in tools]
        self._uris = {r.uri for r in resources}
        self._templates = [template for t in templates if (template := _parsed(t.uri_template))]
        self.problems = problems + await self.ctx.publish(
            self.name,
            tools=self._tools,
            resources=[self._live_resource(r) for r in [*resources, *templates]],
            prompts=[self._live_prompt(prompt) for prompt in prompts],
        )
        for problem in self.problems:  # e.g. prefix = "" and a name or URI that Nexus itself serves: refused
            self.ctx.log.warning("upstream server '%s': %s", self.name, problem)

    def _named_well(
        self, items: list[ItemT], kind: str, public: Callable[[ItemT], str], joint: str, problems: list[str]
    ) -> list[ItemT]:
        """The items whose public name is theirs to take: a tool's is a valid MCP tool name (one that is not
        would make a client refuse the whole list), and none falls in the namespace of another server whose
        prefix starts like this one's (prefix "a" and a tool "b_x" would otherwise take server "a_b"'s "a_b_x",
        whichever connected first)."""
        kept = []
        for item in items:
            name = public(item)
            owner = next((p for p in self._longer_prefixes if name.startswith(p + joint)), None)
            if owner is not None:
                problems.append(f"{kind} '{name[:200]}' is not served: '{owner}{joint}' is another server's prefix")
            elif kind == "tool" and not TOOL_NAME.fullmatch(name):
                problems.append(f"tool '{name[:200]}' is not served: a tool name is 1 to 128 letters, digits, _ - or .")
            elif kind == "tool" and (size := _schema_bytes(item)) > MAX_SCHEMA_BYTES:
                problems.append(f"tool '{name}' is not served: its schemas are {size} bytes, over {MAX_SCHEMA_BYTES}")
            else:
                kept.append(item)
        return kept

    def _public(self, name: str) -> str:
        return prefixed(self.prefix, name)

    def _live_tool(self, tool: types.Tool) -> LiveTool:
        update: dict[str, Any] = {"name": self._public(tool.name)}
        if tool.description and len(tool.description) > MAX_DESCRIPTION:  # it would sit in every model's context
            update["description"] = tool.description[: MAX_DESCRIPTION - 1] + "…"
        return LiveTool(
            tool.model_copy(update=update),
            functools.partial(self.call_tool, tool.name),
            "read" if self.reads(tool.name) else "write",
            self.refusal(tool.name),
        )

    def reads(self, tool: str) -> bool:
        """Whether the config says this upstream tool only looks. Never the server's own readOnlyHint: the server
        is someone else's code, and a hint it sets would move its tool under a grant meant for reading."""
        return self.table.trusted or any(fnmatch.fnmatchcase(tool, p) for p in self.table.read_tools)

    def _live_resource(self, resource: types.Resource | types.ResourceTemplate) -> LiveResource:
        if isinstance(resource, types.ResourceTemplate):
            definition = resource.model_copy(update={"uri_template": self._public_uri(resource.uri_template)})
        else:
            definition = resource.model_copy(update={"uri": self._public_uri(resource.uri)})
        return LiveResource(definition, self.read_resource, "read")

    def _public_uri(self, uri: str) -> str:
        """A resource's URI (or template) as clients see it: ``PREFIX+URI``, so two servers' URIs never clash."""
        return f"{self.prefix}+{uri}" if self.prefix else uri

    def _own_uri(self, uri: str) -> str:
        return uri.removeprefix(f"{self.prefix}+") if self.prefix else uri

    def _relinked(self, block: ContentT) -> ContentT:
        """A resource link or embedded resource in the server's answer, with the URI clients read it by."""
        if isinstance(block, types.ResourceLink) and self._serves(block.uri):
            return block.model_copy(update={"uri": self._public_uri(block.uri)})
        if isinstance(block, types.EmbeddedResource) and self._serves(block.resource.uri):
            resource = block.resource.model_copy(update={"uri": self._public_uri(block.resource.uri)})
            return block.model_copy(update={"resource": resource})
        return block

    def _serves(self, uri: str) -> bool:
        return bool(self.prefix) and (uri in self._uris or any(t.match(uri) is not None for t in self._templates))

    def _live_prompt(self, prompt: types.Prompt) -> LivePrompt:
        definition = prompt.model_copy(update={"name": self._public(prompt.name)})
        return LivePrompt(definition, functools.partial(self.get_prompt, prompt.name), "read")

    def refusal(self, tool: str) -> str | None:
        """Why the server's ``allow``/``deny`` patterns exclude one of its tools, or None."""
        where = f"[plugins.bridge.servers.{self.name}]"
        if self.table.allow and not any(fnmatch.fnmatchcase(tool, p) for p in self.table.allow):
            return f"permission denied: tool '{self._public(tool)}' matches no allow pattern of {where}"
        if pattern := next((p for p in self.table.deny if fnmatch.fnmatchcase(tool, p)), None):
            return f"permission denied: tool '{self._public(tool)}' matches deny pattern '{pattern}' of {where}"
        return None

    # -- forwarding -----------------------------------------------------------------------

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        # Down with its retry due within connect_timeout (a connection that died young): the call waits for it.
        due = self.state == "down" and (self.retry_at or 0) - time.monotonic() < self.table.connect_timeout
        client = await self._reconnected(None) if self.state == "connecting" or due else self._connected(ToolError)
        client = client or self._connected(ToolError)
        key = (tool, json.dumps(arguments, sort_keys=True, default=str)) if tool in self._read_only else None
        if key and (cached := self._cache.get(key)):
            return cached
        forward = _progress_forwarder()
        try:
            result = await client.call_tool(tool, arguments, progress_callback=forward)
        except Exception as exc:
            if not _connection_failed(exc):
                raise ToolError(self._failed(client, exc, f"tool '{tool}'")) from None
            # A server that died since the last call (say a stdio process that crashed) is noticed only
            # now: reconnect and send the call once more, rather than fail the first call after a crash.
            self.lost(client)
            again = await self._reconnected(client)
            if again is None:
                raise ToolError(self._failed(client, exc, f"tool '{tool}'")) from None
            try:
                result = await again.call_tool(tool, arguments, progress_callback=forward)
            except Exception as exc:
                raise ToolError(self._failed(again, exc, f"tool '{tool}'")) from None
        result = _own_meta(result)
        result = result.model_copy(update={"content": [self._relinked(block) for block in result.content]})
        if key and not result.is_error:
            self._cache.put(key, result)
        return result

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read ``uri`` (as clients know it) from the server, by the server's own URI."""
        own = self._own_uri(uri)
        return await self._request(f"resource '{own}'", lambda client: client.read_resource(own))

    async def get_prompt(self, prompt: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        result = await self._request(f"prompt '{prompt}'", lambda client: client.get_prompt(prompt, arguments))
        messages = [m.model_copy(update={"content": self._relinked(m.content)}) for m in result.messages]
        return result.model_copy(update={"messages": messages})

    async def _request(self, what: str, send: Callable[[Client], Awaitable[ResultT]]) -> ResultT:
        """A resource or prompt request: the server's own errors (e.g. "not found") pass through as they are."""
        client = self._connected(_internal_error)
        try:
            return _own_meta(await send(client))
        except Exception as exc:
            if isinstance(exc, MCPError) and not _connection_failed(exc):
                raise
            raise _internal_error(self._failed(client, exc, what)) from None

    async def _reconnected(self, old: Client | None) -> Client | None:
        """A connection other than ``old``, waited for up to connect_timeout while the bridge is (re)connecting
        or waiting to retry; None when none came (it gave up, or the wait ran out)."""
        with anyio.move_on_after(self.table.connect_timeout):
            while self.state in ("connecting", "down") or (self.state == "connected" and self._client is old):
                await anyio.sleep(0.02)
        return self._client if self.state == "connected" and self._client is not old else None

    def _connected(self, error: Any) -> Client:
        if self._client is None or self.state != "connected":
            raise error(f"upstream server '{self.name}' is {self.describe_state()}")
        return self._client

    def _failed(self, client: Client, exc: Exception, what: str) -> str:
        """The message for a forwarded request that failed; a dropped connection also starts a reconnect."""
        if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
            return f"upstream server '{self.name}' did not answer {what} within timeout = {self.table.timeout:g} s"
        if not _connection_failed(exc):  # the server answered, badly: e.g. a result its own schema refuses
            return f"upstream server '{self.name}' answered {what} with an error: {describe(exc)}"
        self.lost(client)
        return f"upstream server '{self.name}' failed during {what} ({describe(exc)}); reconnecting"

    # -- reporting --------------------------------------------------------------------------

    def describe_state(self) -> str:
        if self.state == "down":
            wait = max(0.0, (self.retry_at or 0) - time.monotonic())
            # Counted as `retries` is: failed attempts, the last of which gives up (never "retry 5 of 5").
            return (
                f"down: {self.reason} ({self.failures} of {self.table.retries} failed attempts; retry in {wait:.0f} s)"
            )
        if self.state == "gave up":
            return f"unavailable: gave up after {self.failures} failed attempts: {self.reason}"
        return self.state

    def _summary(self) -> str:
        return ", ".join(_count(n, kind) for kind, n in self.counts.items() if n or kind == "tools")

    def status_line(self) -> str:
        where = self.table.url.split("?")[0] if self.table.url else self.table.package or self.table.command or ""
        line = f"{self.name} ({self.table.type} {where}): {self.describe_state()}"
        if self.state == "connected":
            refused = sum(1 for tool in self._tools if tool.refusal)
            excluded = f" ({_count(refused, 'tools')} excluded by allow/deny)" if refused else ""
            line += f"; {self._summary()}{excluded}"
        return "; ".join([line, *self.problems])


class Unfixable(Exception):
    """A problem that retrying cannot fix (the bridge gives up at once), e.g. an unset environment variable."""


class _Watched:
    """A transport's read stream that reports when it ends: the server exited or hung up."""

    def __init__(self, inner: Any, on_end: Any) -> None:
        self._inner, self._on_end = inner, on_end

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._on_end()
            raise

    async def __aenter__(self) -> _Watched:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._on_end()
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _BoundedWrites:
    """A transport's write stream whose sends give up after ``timeout``: a server that stopped reading its input
    (its pipe is full) is gone, as one that stopped answering pings is, rather than a wait without end."""

    def __init__(self, inner: Any, timeout: float, on_stuck: Callable[[], None]) -> None:
        self._inner, self._timeout, self._on_stuck = inner, timeout, on_stuck

    async def send(self, item: Any) -> None:
        with anyio.move_on_after(self._timeout) as scope:
            await self._inner.send(item)
        if scope.cancelled_caught:
            self._on_stuck()
            raise anyio.BrokenResourceError(f"the server has not read its input for {self._timeout:g} s")

    async def __aenter__(self) -> _BoundedWrites:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ResultCache:
    """Results of read-only, idempotent tools, reused for ``ttl`` seconds (at most ``size`` of them)."""

    def __init__(self, ttl: float, size: int = 256) -> None:
        self.ttl, self.size = ttl, size
        self._entries: OrderedDict[Any, tuple[float, types.CallToolResult]] = OrderedDict()

    def get(self, key: Any) -> types.CallToolResult | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, key: Any, result: types.CallToolResult) -> None:
        if self.ttl <= 0:
            return
        self._entries[key] = (time.monotonic() + self.ttl, result)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


async def _on_message(signals: anyio.abc.ObjectSendStream[str], message: Any) -> None:
    """The client's message handler: the server's list_changed notifications trigger a republish."""
    if isinstance(
        message,
        types.ToolListChangedNotification | types.ResourceListChangedNotification | types.PromptListChangedNotification,
    ):
        _notify(signals, "changed")


def _drain(signals: anyio.abc.ObjectReceiveStream[str]) -> list[str]:
    """The signals already queued, so that a burst of changes costs one relist."""
    queued = []
    with contextlib.suppress(anyio.WouldBlock):
        while True:
            queued.append(signals.receive_nowait())
    return queued


def _notify(signals: anyio.abc.ObjectSendStream[str], signal: str) -> None:
    with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        signals.send_nowait(signal)


async def _all_pages(method: Any, field: str) -> list[Any]:
    items, cursor = [], None
    while True:
        page = await method(cursor=cursor)
        items += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            return items


def _progress_forwarder() -> Callable[[float, float | None, str | None], Awaitable[None]]:
    """A progress callback that passes the server's progress on to the client calling through Nexus.

    The official client runs it in its own task: it reports in the calling task's context, copied here,
    where the host keeps the call's progress (and drops it when the caller asked for none).
    """
    context = contextvars.copy_context()

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        context.run(report_progress, progress, total, message)

    return forward


def _connection_failed(exc: BaseException) -> bool:
    """Whether a failed request means the connection is gone (rather than a bad answer, or a slow one)."""
    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED or exc.error.message in LOST_SESSION
    if isinstance(exc, TimeoutError):  # slow is not gone
        return False
    return isinstance(exc, OSError | httpx2.TransportError | anyio.ClosedResourceError | anyio.BrokenResourceError)


def _parsed(template: str) -> UriTemplate | None:
    try:
        return UriTemplate.parse(template)
    except ValueError:  # listed as the server gives it, never matched
        return None


def _count(n: int, things: str) -> str:
    return f"{n} {things if n != 1 else things[:-1]}"


def _announces_changes(capabilities: types.ServerCapabilities) -> bool:
    kinds = (capabilities.tools, capabilities.resources, capabilities.prompts)
    return any(kind is not None and kind.list_changed for kind in kinds)


def _schema_bytes(tool: Any) -> int:
    return len(json.dumps([tool.input_schema, tool.output_schema], separators=(",", ":"), default=str))


def _cacheable(tool: types.Tool) -> bool:
    hints = tool.annotations
    return bool(hints and hints.read_only_hint and hints.idempotent_hint)


def _own_meta(result: ResultT) -> ResultT:
    """The result without the protocol's own ``_meta`` stamps, which describe the upstream connection, not ours."""
    meta = {k: v for k, v in (result.meta or {}).items() if not k.startswith(PROTOCOL_META)}
    return result.model_copy(update={"meta": meta or None}) if meta != (result.meta or {}) else result


def _resolve(name: str, value: str | EnvRef) -> str:
    if isinstance(value, str):
        return value
    resolved = value.resolve()
    if resolved is None:
        raise Unfixable(f"{name}: environment variable {value.env} is not set")
    return resolved


def _internal_error(message: str) -> MCPError:
    return MCPError(code=INTERNAL_ERROR, message=message)


def describe(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    lines = [line.strip() for line in str(exc).splitlines() if not line.strip().startswith("For further information")]
    text = "; ".join(filter(None, lines)) or type(exc).__name__  # one line: a pydantic error spans many
    return text if isinstance(exc, TimeoutError | Unfixable) else f"{type(exc).__name__}: {text}"
