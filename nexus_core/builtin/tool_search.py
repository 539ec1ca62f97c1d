"""Tool search: the built-in plugin ``tool_search``, serving ``find_tools`` and ``call_tool``.

With ``[server] tool_search = true`` (or a profile's ``tool_search = true``), a session's
tools/list shows only the pinned tools (``tool_search_pinned``); ``find_tools`` ranks every
tool the session may call (native, tool files, bridged: ``NexusServer.callable_tools``, so never
one the gate refuses it), a native tool's ``keywords`` included, and adds the ones it returns to
the session's list, with ``notifications/tools/list_changed`` so a client that refreshes calls
them directly.
``call_tool`` calls any of them for clients that do not refresh: it goes through
``NexusServer.call_tool``, so the same gate and one more audit record.

The plugin registers nothing unless tool search is enabled somewhere in the config, so the
default tools/list carries no trace of it. See docs/tool_search.md.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from nexus_core.access.grants import Category
from nexus_core.access.sessions import current
from nexus_core.builtin.tool_ranking import Ranker, embedder
from nexus_core.hookspecs import hookimpl
from nexus_core.host.build import SEARCH_PLUGIN

if TYPE_CHECKING:
    from nexus_core.host.build import Host
    from nexus_core.host.registrars import ToolRegistrar

CATEGORY = "search"
MAX_LIMIT = 20


class ToolSearchPlugin:
    """Serves find_tools and call_tool for the host it is attached to (``assembly`` attaches it)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.host: Host | None = None
        self._ranker: Ranker | None = None
        self._loading = anyio.Lock()

    def attach(self, host: Host) -> None:
        self.host = host

    @hookimpl
    def nexus_permission_categories(self) -> list[Category]:
        return [Category(name=CATEGORY, description="find_tools and call_tool (tool search mode).", default=True)]

    @hookimpl
    def nexus_register_tools(self, register: ToolRegistrar) -> None:
        if not self.enabled:
            return
        register(self.find_tools, category=CATEGORY, name="find_tools", read_only=True, idempotent=True)
        register(self.call_tool, category=CATEGORY, name="call_tool", open_world=True)

    @hookimpl
    def nexus_startup(self) -> None:
        """Import numpy now, on the loop, before any plugin's worker thread does: two threads importing it
        at once can leave one with a half-initialised module (the memory store then fails to open)."""
        if self.enabled and importlib.util.find_spec("nexus_memory") is not None:
            importlib.import_module("numpy")  # the memory plugin's dependency, present where it is

    async def find_tools(
        self,
        query: Annotated[str, Field(description="What you want to do, in plain words.")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 5,
    ) -> dict[str, Any]:
        """Find the tools for a task among all you may call; they are then listed to you. Best first."""
        host = self._host()
        tools = [t for t in await host.server.callable_tools() if not self._own(t.name)]
        ranker = await self._ranker_loaded()
        definitions = [_definition(t) for t in tools]
        keywords = {name: entry.spec.keywords for name, entry in host.tools.items() if entry.spec.keywords}
        rank = functools.partial(ranker.rank, query, definitions, keywords)
        best = (await anyio.to_thread.run_sync(rank))[:limit]
        session = current()
        new = {t["name"] for t in best} - session.found_tools
        session.found_tools |= new
        if new and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await _tell_list_changed(ctx)  # a 2026-era request stands alone: its client uses call_tool
        return {"tools": best}

    async def call_tool(
        self,
        name: Annotated[str, Field(description="A tool's name, as find_tools gave it.")],
        ctx: Context,
        arguments: Annotated[dict[str, Any] | None, Field(description="The tool's arguments.")] = None,
    ) -> types.CallToolResult:
        """Call a tool find_tools found, with its arguments."""
        if self._own(name):
            raise ToolError(f"call_tool cannot call '{name}': call it directly")
        return await self._host().server.call_tool(name, arguments or {}, ctx)  # gate and audit there

    def _own(self, name: str) -> bool:
        entry = self._host().tools.get(name)
        return entry is not None and entry.plugin == SEARCH_PLUGIN

    def _host(self) -> Host:
        if self.host is None:
            raise ToolError("tool search is not attached to a server")
        return self.host

    async def _ranker_loaded(self) -> Ranker:
        """The ranker, made on first use: loading the embedder takes a second or two, off the event loop."""
        async with self._loading:
            if self._ranker is None:
                self._ranker = Ranker(await anyio.to_thread.run_sync(embedder))
        return self._ranker


def _definition(tool: types.Tool) -> dict[str, Any]:
    return tool.model_dump(by_alias=True, exclude_none=True, include={"name", "title", "description", "input_schema"})


async def _tell_list_changed(ctx: Context) -> None:
    """``notifications/tools/list_changed`` to this client only: the other sessions' lists did not change."""
    try:
        with anyio.fail_after(2):
            await ctx.session.send_tool_list_changed()
    except Exception:  # a client gone or slow: find_tools still answers
        pass
