"""Run-time tools, resources and prompts: what a plugin publishes while serving.

Native tools are fixed when the host builds. A plugin such as the bridge learns
its tools only when another server connects, so it publishes them by group
(``await ctx.publish("fs", tools=[...])``), replacing what that group served
before. The host turns each item into a ``Published`` entry (public name,
grants applied); this catalog keeps them, refuses a name someone else already
serves, and tells connected clients which lists changed.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.uri_template import UriTemplate
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from nexus_core.access.gate import Item

log = logging.getLogger("nexus")

Kind = Literal["tool", "resource", "prompt"]
NOTIFY_TIMEOUT = 2.0  # seconds one client may take to accept a list_changed notification


@dataclass(frozen=True)
class LiveTool:
    """A tool known only at run time, described by its MCP definition (name before any prefix)."""

    definition: types.Tool
    call: Callable[[dict[str, Any]], Awaitable[types.CallToolResult]]
    category: str
    refusal: str | None = None  # the plugin's own reason to refuse it, e.g. a configured deny pattern


@dataclass(frozen=True)
class LiveResource:
    """A resource or resource template known only at run time; ``read`` gets the requested URI."""

    definition: types.Resource | types.ResourceTemplate
    read: Callable[[str], Awaitable[types.ReadResourceResult]]
    category: str | None = None


@dataclass(frozen=True)
class LivePrompt:
    definition: types.Prompt
    get: Callable[[dict[str, str] | None], Awaitable[types.GetPromptResult]]
    category: str | None = None


LiveItem = LiveTool | LiveResource | LivePrompt


@dataclass(frozen=True)
class Published:
    """One live item as clients see it: its public definition, owner and (for tools) refusal."""

    plugin: str
    group: str
    kind: Kind
    key: str  # public name, URI or URI template
    definition: types.Tool | types.Resource | types.ResourceTemplate | types.Prompt
    item: LiveItem
    refusal: str | None = None
    names: frozenset[str] = frozenset()  # other names allow_tools/deny_tools may use (a tool's own, unprefixed)
    fixed: str | None = None  # the refusal no --enable lifts (see access.enable)

    @property
    def gate_item(self) -> Item:
        names = self.names | {self.key}
        return Item(self.kind, self.plugin, self.key, names, self.item.category, self.refusal, self.fixed)

    @property
    def listed(self) -> types.Tool | types.Resource | types.ResourceTemplate | types.Prompt | None:
        """Its definition unless no session may use it; the gate hides it from those that may not."""
        return None if self.fixed else self.definition


class LiveCatalog:
    """The live entries of every plugin, and the clients to tell when they change."""

    def __init__(self, native_owners: Mapping[str, str]) -> None:
        self._native = native_owners  # "tool 'x'" -> plugin, from the build
        self.entries: dict[Kind, dict[str, Published]] = {"tool": {}, "resource": {}, "prompt": {}}
        self._templates: dict[str, UriTemplate] = {}
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.events = InMemorySubscriptionBus()  # subscriptions/listen streams (2026-07-28 clients)

    def replace(self, plugin: str, group: str, published: Iterable[Published]) -> tuple[list[str], set[Kind]]:
        """Serve ``published`` as the group's entries from now on.

        Returns the problems (entries refused because another plugin or group
        serves the name) and the kinds of list that changed.
        """
        removed = [
            table.pop(key)
            for table in self.entries.values()
            for key in [k for k, e in table.items() if (e.plugin, e.group) == (plugin, group)]
        ]
        for entry in removed:
            self._templates.pop(entry.key, None)
        problems, added = [], []
        for entry in published:
            if owner := self._owner(entry):
                problems.append(f"{entry.kind} '{entry.key}' is not served: {owner} already serves that name")
                continue
            self.entries[entry.kind][entry.key] = entry
            added.append(entry)
            if isinstance(entry.definition, types.ResourceTemplate):
                with contextlib.suppress(ValueError):  # a template the SDK cannot parse is listed, never matched
                    self._templates[entry.key] = UriTemplate.parse(entry.key)
        before, after = _comparable(removed), _comparable(added)
        changed = {kind for kind in self.entries if before.get(kind) != after.get(kind)}
        return problems, changed

    def _owner(self, entry: Published) -> str | None:
        if plugin := self._native.get(f"{entry.kind} '{entry.key}'"):
            return f"plugin '{plugin}'"
        # A live resource is read before a native template (``NexusServer.read_resource``): one at a URI a
        # native template serves (an upstream's file:///etc/x, mounted with prefix = "") would shadow it.
        if isinstance(entry.definition, types.Resource) and (plugin := self._native_template_owner(entry.key)):
            return f"plugin '{plugin}' (a resource template of its own matches it)"
        if other := self.entries[entry.kind].get(entry.key):
            return f"plugin '{other.plugin}' ({other.group})"
        return None

    def _native_template_owner(self, uri: str) -> str | None:
        for what, plugin in self._native.items():
            if what.startswith("resource '") and "{" in what:
                with contextlib.suppress(ValueError):
                    if UriTemplate.parse(what[len("resource '") : -1]).match(uri) is not None:
                        return plugin
        return None

    # -- what the server asks -----------------------------------------------------

    def listed(self, kind: Kind, *, templates: bool | None = None) -> list[Any]:
        definitions = [e.listed for e in self.entries[kind].values() if e.listed is not None]
        if templates is None:
            return definitions
        return [d for d in definitions if isinstance(d, types.ResourceTemplate) == templates]

    def resource_for(self, uri: str) -> Published | None:
        """The live resource at exactly ``uri``."""
        entry = self.entries["resource"].get(uri)
        return entry if entry is not None and isinstance(entry.definition, types.Resource) else None

    def template_for(self, uri: str) -> Published | None:
        """The first live resource template that matches ``uri``."""
        key = next((key for key, template in self._templates.items() if template.match(uri) is not None), None)
        return None if key is None else self.entries["resource"][key]

    # -- telling clients ------------------------------------------------------------

    async def track_connections(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: remember each handshake-era connection, to send it list_changed notifications.

        ``ctx.session`` lives for one request; the connection behind it (the SDK
        keeps no public handle on it here) lives as long as the client is connected.
        """
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._connections.add(connection)
        return await call_next(ctx)

    async def notify(self, kinds: set[Kind]) -> None:
        for kind in sorted(kinds):
            await self.events.publish(_EVENTS[kind]())
            for connection in list(self._connections):
                try:
                    with anyio.fail_after(NOTIFY_TIMEOUT):  # a stalled client must not hold up the others
                        await getattr(connection, f"send_{kind}_list_changed")()
                except Exception as exc:  # a client that has gone away: forget it
                    log.debug("list_changed not delivered: %s", exc)
                    self._connections.discard(connection)


def _comparable(entries: Iterable[Published]) -> dict[Kind, list[tuple[str, str, str | None]]]:
    """Entries by kind in a form that compares by content, to tell which lists changed."""
    by_kind: dict[Kind, list[tuple[str, str, str | None]]] = {}
    for e in entries:
        by_kind.setdefault(e.kind, []).append((e.key, e.definition.model_dump_json(), e.refusal))
    return {kind: sorted(items) for kind, items in by_kind.items()}


_EVENTS = {"tool": ToolsListChanged, "resource": ResourcesListChanged, "prompt": PromptsListChanged}
