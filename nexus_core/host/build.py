"""The host: turns discovered plugins and the config into one MCP server.

Building happens in four steps, each reporting a broken plugin without
stopping the others: configure every plugin (categories, config model,
grants, path policy), collect what it registers, check names across
plugins, then register what the grants allow on the SDK's ``MCPServer``.
Every tool call then passes ``NexusServer.call_tool``: permission check,
argument validation and the call (in the SDK), then one audit record. Tools,
resources and prompts that plugins publish while serving (``live.py``) are
merged into the same lists and pass the same gate.
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import functools
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ToolAnnotations
from pydantic import ValidationError

from nexus_core import __version__
from nexus_core.access.audit import AuditLog
from nexus_core.access.enable import Enabled, parse_enable
from nexus_core.access.gate import Gate, Item, Sessions, refusal
from nexus_core.access.grants import Category, Grants, with_included
from nexus_core.access.sessions import Session, current, like_process
from nexus_core.config.model import NexusConfig, PluginTable, validation_error
from nexus_core.errors import ConfigError, NexusError, PluginError
from nexus_core.fs.atomic import sweep
from nexus_core.fs.paths import PathPolicy
from nexus_core.host import progress, sdk, tracing
from nexus_core.host.argument_errors import argument_error, unknown_keys
from nexus_core.host.discovery import NexusPluginManager, PluginRecord
from nexus_core.host.live_items import Kind, LiveCatalog, LivePrompt, LiveResource, LiveTool, Published
from nexus_core.host.registrars import (
    PluginConfig,
    PluginContext,
    PromptRegistrar,
    PromptSpec,
    ResourceRegistrar,
    ResourceSpec,
    ToolRegistrar,
    ToolSpec,
)
from nexus_core.host.schemas import compact

PLUGIN_THREADS = int(os.environ.get("NEXUS_PLUGIN_THREADS") or 8)  # one plugin's calls at once, of anyio's 40
log = logging.getLogger("nexus")

SEARCH_PLUGIN = "tool_search"  # the built-in plugin of find_tools and call_tool (builtin/tool_search.py)

DEFAULT_CATEGORY = Category(
    name="default", description="Every tool of a plugin that declares no categories.", default=True
)


@dataclass
class PluginState:
    """One plugin after configuration: its declarations, grants and status."""

    record: PluginRecord
    categories: dict[str, Category] = field(default_factory=dict)
    grants: Grants | None = None
    ctx: PluginContext | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def status(self) -> str:
        if not self.record.enabled:
            return "disabled"
        return f"failed: {self.error}" if self.error else "ok"

    def fail(self, reason: str) -> None:
        self.error = reason
        log.error("plugin '%s' not loaded: %s", self.name, reason)


@dataclass(frozen=True)
class ToolEntry:
    """A tool as the host knows it, granted or not."""

    name: str
    spec: ToolSpec
    refusal: str | None
    sdk: Tool | None = None  # the SDK's tool (schemas included) once granted (by the config, or an --enable)
    fixed: str | None = None  # the refusal no --enable lifts (see access.enable)

    @property
    def plugin(self) -> str:
        return self.spec.plugin

    @functools.cached_property
    def item(self) -> Item:
        names = frozenset({self.spec.name, self.name})
        return Item("tool", self.plugin, self.name, names, self.spec.category, self.refusal, self.fixed)


@dataclass
class Registrations:
    tools: list[ToolSpec] = field(default_factory=list)
    resources: list[ResourceSpec] = field(default_factory=list)
    prompts: list[PromptSpec] = field(default_factory=list)


class NexusServer(MCPServer[Any]):
    """The SDK server with one gate in front of every tool call."""

    def __init__(self, host: Host, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        send = progress.sender(context)  # the client gave a progress token: what the tool reports reaches it
        if send is None:
            return await self._call(name, arguments, context)
        return await progress.reported(send, functools.partial(self._call, name, arguments, context))

    async def _call(self, name: str, arguments: dict[str, Any], context: Any) -> Any:
        native = self.host.tools.get(name)
        if native is not None:
            call = functools.partial(self._call_native, native.plugin, name, arguments, context)
            return await self.host.gate.run(native.item, arguments, call)
        live = await self._live("tool", name)
        if live is not None:
            call = functools.partial(self._call_live, live, arguments)
            return await self.host.gate.run(live.gate_item, arguments, call)
        self.host.gate.record_unknown(name, arguments)  # a call that reached no tool is still one to audit
        return await super().call_tool(name, arguments, context)  # the SDK's "Unknown tool"

    async def _call_native(self, plugin: str, name: str, arguments: dict[str, Any], context: Any) -> Any:
        if reason := self.host.unavailable(plugin):
            raise ToolError(reason)
        limiter = self._limiter(plugin)  # a plugin's calls queue here, not in the threads all plugins share
        try:
            limiter.acquire_nowait()  # a free place is taken at once: the awaited acquire costs a turn of the loop
        except anyio.WouldBlock:
            await limiter.acquire()
        schema = sdk_tool.parameters if (sdk_tool := self.host.tools[name].sdk) else None
        try:
            if sdk_tool and unknown_keys(arguments, schema):  # a misspelt optional key would silently be dropped
                raise ToolError(_unknown_arguments(name, sdk_tool, arguments))
            return await MCPServer.call_tool(self, name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):  # the SDK's dump of the arguments model, in one line
                raise ToolError(argument_error(name, exc.__cause__, arguments, schema)) from None
            if isinstance(exc, UnexpectedToolError) and exc.__cause__ is not None:  # the SDK says nothing of why
                raise ToolError(f"{exc}: {crash_reason(exc.__cause__)}") from exc.__cause__
            if not str(exc).strip() or str(exc).rstrip().endswith(":"):  # a ToolError("") or one of an empty str()
                raise ToolError(f"{name} failed: {crash_reason(exc.__cause__ or exc)}") from exc
            raise
        finally:
            limiter.release()

    def _limiter(self, plugin: str) -> anyio.CapacityLimiter:
        """The calls of one plugin that may run at once (``PLUGIN_THREADS``): fewer than anyio's default worker
        threads, so a plugin whose calls block (a lock another user holds, a slow disk) cannot starve the others."""
        limiters: dict[str, anyio.CapacityLimiter] = self.__dict__.setdefault("limiters", {})
        if plugin not in limiters:
            limiters[plugin] = anyio.CapacityLimiter(PLUGIN_THREADS)
        return limiters[plugin]

    async def _call_live(self, live: Published, arguments: dict[str, Any]) -> Any:
        if reason := self.host.unavailable(live.plugin):
            raise ToolError(reason)
        return await live.item.call(arguments)  # type: ignore[union-attr]

    async def _live(self, kind: Kind, name: str) -> Published | None:
        """The live entry of that name, once what plugins are about to publish has arrived."""
        entry = self.host.live.entries[kind].get(name)
        if entry is None:
            await self.host.settle()
            entry = self.host.live.entries[kind].get(name)
        return entry

    async def list_tools(self) -> list[types.Tool]:
        return self.host.search_view(await self.callable_tools())

    async def callable_tools(self) -> list[types.Tool]:
        """Every tool the current session may call, native and live, whatever tool search shows of them."""
        await self.host.settle()
        listed = await super().list_tools() + self.host.live.listed("tool")
        return self.host.visible("tool", listed, lambda t: t.name)

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        schema = super()._tool_input_schema(name)
        live = self.host.live.entries["tool"].get(name)
        return live.definition.input_schema if schema is None and live else schema  # type: ignore[union-attr]

    async def list_resources(self) -> list[types.Resource]:
        await self.host.settle()
        listed = await super().list_resources() + self.host.live.listed("resource", templates=False)
        return self.host.visible("resource", listed, lambda r: str(r.uri))

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        await self.host.settle()
        listed = await super().list_resource_templates() + self.host.live.listed("resource", templates=True)
        return self.host.visible("resource", listed, lambda r: r.uri_template)

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        """A live resource at exactly ``uri``, else a native one, else a live template that matches."""
        live = self.host.live.resource_for(str(uri))
        if live is None:
            try:
                return await super().read_resource(uri, context)
            except ResourceNotFoundError:
                await self.host.settle()
                live = self.host.live.resource_for(str(uri)) or self.host.live.template_for(str(uri))
                if live is None:
                    raise
        return await self.host.gate.run(
            live.gate_item, {"uri": str(uri)}, functools.partial(self._read_live, live, uri)
        )

    async def _read_live(self, live: Published, uri: Any) -> list[ReadResourceContents]:
        if reason := self.host.unavailable(live.plugin):
            raise ResourceError(reason)
        result = await live.item.read(str(uri))  # type: ignore[union-attr]
        return [_contents(c) for c in result.contents]

    async def list_prompts(self) -> list[types.Prompt]:
        await self.host.settle()
        listed = await super().list_prompts() + self.host.live.listed("prompt")
        return self.host.visible("prompt", listed, lambda p: p.name)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        live = None if self.host.serves_natively("prompt", name) else await self._live("prompt", name)
        if live is not None:
            if reason := self.host.unavailable(live.plugin) or refusal(live.gate_item):
                raise MCPError(code=INVALID_PARAMS, message=reason)
            return await self.host.gate.run(live.gate_item, arguments, functools.partial(live.item.get, arguments))  # type: ignore[union-attr]
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            message = _anticipated(exc)
            if message is None:
                raise  # a crash: the SDK logs it and answers with a generic error
            raise MCPError(code=INVALID_PARAMS, message=message) from exc


class Host:
    """Plugins, their permissions and the server built from them."""

    def __init__(self, config: NexusConfig, pm: NexusPluginManager, records: list[PluginRecord]) -> None:
        self.config = config
        self.pm = pm
        self.plugins = {r.name: PluginState(r) for r in records}
        self.tools: dict[str, ToolEntry] = {}
        self._owners: dict[str, str] = {}  # "tool 'name'" -> plugin, across all plugins
        self.live = LiveCatalog(self._owners)
        self._background: TaskGroup | None = None
        self._pending: list[tuple[anyio.Event, float]] = []  # (what plugins are about to publish, deadline)
        self.audit = AuditLog(
            config.resolve_path(config.server.data_dir) / "audit.jsonl" if config.server.audit.enabled else None,
            include_arguments=config.server.audit.include_arguments,
        )
        self.gate = Gate(self.audit)
        self.sessions = Sessions(like_process, lambda method: sdk.handles(self.server, method))
        self.items: dict[tuple[str, str], Item] = {}  # (kind, public name or URI) -> its gate item
        self._started: list[str] = []  # in start order
        self._stopped: anyio.Event | None = None  # set once running() has stopped every plugin
        self.server: NexusServer  # set by build()

    # -- building -----------------------------------------------------------------

    def build(self, *, serving: bool = False) -> Host:
        """Configure every plugin and register what it offers; ``serving``: the host will serve, so each plugin is
        asked to start loading what its first calls need (``nexus_prepare``) while the rest is built."""
        self._check_tables()
        collected: dict[str, Registrations] = {}
        for state in self.active():
            try:
                self._configure(state)
                collected[state.name] = self._collect(state)
                if serving:
                    self.pm.call_one(state.name, "nexus_prepare", ctx=state.ctx)
            except (NexusError, ValidationError) as exc:
                self._plugin_failed(state, _reason(exc))
            except Exception as exc:  # a plugin bug: report it and go on with the others
                log.debug("plugin %s raised", state.name, exc_info=True)
                self._plugin_failed(state, f"{type(exc).__name__}: {exc}")
        collected = {name: regs for name, regs in collected.items() if self.plugins[name].error is None}
        self._register(collected)
        return self

    def active(self) -> list[PluginState]:
        return [s for s in self.plugins.values() if s.record.enabled and s.error is None]

    def _check_tables(self) -> None:
        for state in self.plugins.values():
            if state.record.error:
                self._plugin_failed(state, state.record.error)
        for name, table in self.config.plugins.items():
            if name not in self.plugins and table.enabled:
                close = difflib.get_close_matches(name, list(self.plugins), n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                reason = f"no installed plugin is named '{name}'{hint}"
                if table.required:
                    raise ConfigError(self.config.source, f"plugins.{name}", reason)
                log.warning("%s: plugins.%s: %s", self.config.source, name, reason)

    def _plugin_failed(self, state: PluginState, reason: str) -> None:
        state.fail(reason)
        if self.config.table(state.name).required:
            raise PluginError(state.name, f"{reason} (it is marked required)")

    def _configure(self, state: PluginState) -> None:
        name, table = state.name, self.config.table(state.name)
        declared = _first(self.pm.call_one(name, "nexus_permission_categories")) or [DEFAULT_CATEGORY]
        state.categories = {c.name: c for c in declared}
        model = _first(self.pm.call_one(name, "nexus_config_model")) or PluginConfig
        problems: list[tuple[str, str]] = []  # every error in the table, not just the first
        try:
            config = model.model_validate(table.plugin_keys)
        except ValidationError as exc:
            problems += validation_error(self.config.source, exc, prefix=f"plugins.{name}", model=model).problems
        try:
            granted = self._granted(state, table)
        except ConfigError as exc:
            problems += exc.problems
        if problems:
            raise ConfigError(self.config.source, *problems[0], more=problems[1:])
        state.grants = Grants(
            name,
            granted,
            frozenset(table.allow_tools),
            frozenset(table.deny_tools),
        )
        paths = PathPolicy(
            self.config.roots_for(name),
            self.config.deny_paths_for(name),
            [*self.config.protected_paths(), *self._installed_code()],
            deny_secrets=self.config.server.deny_secrets,
            plugin=name,
        )
        state.ctx = PluginContext(
            name, config, paths, self.config.data_dir_for(name), logging.getLogger(f"nexus.{name}"), runtime=self,
            data_dir_configured=table.data_dir is not None,
        )  # fmt: skip

    def _granted(self, state: PluginState, table: PluginTable) -> frozenset[str]:
        if table.categories is None:
            return with_included((c.name for c in state.categories.values() if c.default), state.categories)
        unknown = [c for c in table.categories if c not in state.categories]
        if unknown:
            key = f"plugins.{state.name}.categories"
            problems = [(key, _unknown_category(c, state)) for c in unknown]
            raise ConfigError(self.config.source, *problems[0], more=problems[1:])
        return with_included(table.categories, state.categories)

    def _collect(self, state: PluginState) -> Registrations:
        ctx, categories = state.ctx, frozenset(state.categories)
        tools, resources, prompts = (
            ToolRegistrar(state.name, categories),
            ResourceRegistrar(state.name, categories),
            PromptRegistrar(state.name, categories),
        )
        self.pm.call_one(state.name, "nexus_register_tools", register=tools, ctx=ctx)
        self.pm.call_one(state.name, "nexus_register_resources", register=resources, ctx=ctx)
        self.pm.call_one(state.name, "nexus_register_prompts", register=prompts, ctx=ctx)
        return Registrations(tools.specs, resources.specs, prompts.specs)

    def _register(self, collected: dict[str, Registrations]) -> None:
        owners = self._owners
        sdk_tools: list[Tool] = []
        for plugin, regs in collected.items():
            state, table = self.plugins[plugin], self.config.table(plugin)
            assert state.grants is not None
            try:
                entries = [_entry(spec, table.public_name(spec.name), state.grants) for spec in regs.tools]
            except Exception as exc:  # e.g. a parameter type pydantic cannot describe
                self._plugin_failed(state, f"cannot register its tools: {exc}")
                continue
            for entry in entries:
                _claim(owners, f"tool '{entry.name}'", plugin, prefix_hint=True)
                self.tools[entry.name] = entry
            sdk_tools += [e.sdk for e in entries if e.sdk is not None]
            self._warn_unknown_tool_names(state, {s.name for s in regs.tools})
        self.server = self._new_server(sdk_tools)
        for plugin, regs in collected.items():
            state = self.plugins[plugin]
            try:
                self._register_resources(state, regs.resources, owners)
                self._register_prompts(state, regs.prompts, owners)
            except NexusError:
                raise
            except Exception as exc:
                self._plugin_failed(state, f"cannot register its resources or prompts: {exc}")

    def _new_server(self, tools: list[Tool]) -> NexusServer:
        server = NexusServer(
            self,
            name=self.config.server.name,
            version=__version__,
            instructions="Nexus: tools, resources and prompts from installed plugins, under per-plugin permissions.",
            log_level=self.config.server.log_level,
            lifespan=lambda _server: self.running(),
            tools=tools,
            subscriptions=self.live.events,
            middleware=[self.sessions, self.live.track_connections],
        )
        tracing.skip_idle_tracing(server.middleware)
        # Live entries come and go while serving: tell handshake-era clients the lists may change.
        sdk.announce_list_changes(server)
        return server

    def _register_resources(self, state: PluginState, specs: list[ResourceSpec], owners: dict[str, str]) -> None:
        for spec in specs:
            if state.error is None:
                _claim(owners, f"resource '{spec.uri}'", state.name)
                item = self._item(state, "resource", spec.uri, spec.uri, spec.requires, spec.category)
                self.server.resource(spec.uri, **spec.options)(self.gate.guard_resource(item, spec.fn))

    def _register_prompts(self, state: PluginState, specs: list[PromptSpec], owners: dict[str, str]) -> None:
        table = self.config.table(state.name)
        for spec in specs:
            name = table.public_name(spec.name)
            if state.error is None:
                _claim(owners, f"prompt '{name}'", state.name, prefix_hint=True)
                item = self._item(state, "prompt", spec.name, name, spec.requires, spec.category)
                self.server.prompt(name=name, **spec.options)(self.gate.guard_prompt(item, spec.fn))

    def _item(
        self, state: PluginState, kind: str, own: str, public: str, requires: str | None, category: str | None
    ) -> Item:
        """A resource's or prompt's gate item: it is refused whenever ``requires`` (a tool) would be."""
        table = self.config.table(state.name)
        names = {own, public, *([requires, table.public_name(requires)] if requires else [])}
        assert state.grants is not None
        refused, fixed = state.grants.refusal(names, category), state.grants.refusal(names, None)
        item = Item(kind, state.name, public, frozenset(names), category, refused, fixed)
        self.items[(kind, public)] = item
        return item

    def visible(self, kind: str, listed: list[Any], key: Callable[[Any], str]) -> list[Any]:
        """What the current session may see of a list: refused items are not listed."""
        session = current()
        hidden = []
        for entry in listed:
            item = self.items.get((kind, key(entry)))
            if item is None and kind == "tool" and (native := self.tools.get(key(entry))) is not None:
                item = native.item
            if item is None and (live := self.live.entries[kind].get(key(entry))) is not None:  # type: ignore[index]
                item = live.gate_item
            if item is not None and refusal(item, session):
                hidden.append(entry)
        return [entry for entry in listed if entry not in hidden] if hidden else listed

    def enabled(self, spec: str) -> Enabled:
        """A session's ``--enable`` read against what each plugin declares (``ValueError`` for an unknown name).

        Tool search keeps its grants, as in every profile: it reaches only what the session may use anyway."""
        declared = {s.name: s.categories for s in self.plugins.values() if s.name != SEARCH_PLUGIN}
        search = self.plugins.get(SEARCH_PLUGIN)
        unchanged = {SEARCH_PLUGIN: search.grants.categories} if search and search.grants else {}
        enabled = parse_enable(spec, declared, unchanged)
        self._serve_granted(enabled)
        return enabled

    def _serve_granted(self, enabled: Enabled) -> None:
        """The SDK serves the tools ``enabled`` grants beyond the config from now on; the gate keeps hiding them
        from every other session. (Built on demand: schemas cost start-up time for tools few sessions get.)"""
        for name, entry in list(self.tools.items()):
            granted = enabled.plugins.get(entry.plugin, frozenset())
            if entry.sdk is None and entry.fixed is None and entry.spec.category in granted:
                tool = _sdk_tool(name, entry.spec)
                self.tools[name] = dataclasses.replace(entry, sdk=tool)
                sdk.add_tool(self.server, tool)

    def searching(self, session: Session) -> bool:
        """Whether ``session`` is served in tool search mode: its profile says so, else ``[server]``."""
        own = session.profile.tool_search if session.profile is not None else None
        return self.config.server.tool_search if own is None else own

    def search_view(self, tools: list[types.Tool]) -> list[types.Tool]:
        """What tools/list shows the current session: all it may call, or in tool search mode only
        the pinned tools and those find_tools has shown it. The search tools show only in that mode."""
        session = current()
        if not self.searching(session):
            return [t for t in tools if (entry := self.tools.get(t.name)) is None or entry.plugin != SEARCH_PLUGIN]
        pinned = session.profile.tool_search_pinned if session.profile is not None else None
        shown = {*(self.config.server.tool_search_pinned if pinned is None else pinned), *session.found_tools}
        return [t for t in tools if t.name in shown]

    def _installed_code(self) -> list[Path]:
        """The folders of Nexus's own code and every plugin's: no tool may rewrite what runs here."""
        folders = [Path(__file__).parent.parent]  # nexus_core itself, not only this subpackage
        for _name, module in self.pm.list_name_plugin():
            file = getattr(module, "__file__", None)
            if file:
                path = Path(file)
                folders.append(path.parent if path.name == "__init__.py" else path)
        return folders

    def _warn_unknown_tool_names(self, state: PluginState, names: set[str]) -> None:
        if not names:  # a plugin with no registered tools publishes its tools at run time (the bridge)
            return
        table = self.config.table(state.name)
        known = names | {table.public_name(n) for n in names}
        for key, listed in (("allow_tools", table.allow_tools), ("deny_tools", table.deny_tools)):
            for tool in listed:
                if tool not in known:
                    log.warning("%s: plugins.%s.%s: plugin has no tool '%s'", self.config.source, state.name, key, tool)

    # -- serving ------------------------------------------------------------------

    def unavailable(self, plugin: str) -> str | None:
        """Why a plugin's tools cannot run now (it failed to start), or None."""
        error = self.plugins[plugin].error
        return f"plugin '{plugin}' is unavailable: {error}" if error else None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Host]:
        """Start every plugin, serve (with the plugins' background tasks), then stop them in reverse order.

        Re-entrant: a transport that enters it while the host already runs (the shared server's HTTP
        beside its socket) shares the running plugins.
        """
        if self._stopped is not None and not self._stopped.is_set():
            yield self
            return
        stopped = self._stopped = anyio.Event()
        try:
            async with anyio.create_task_group() as background:
                self._background = background
                await self._start_plugins()
                try:
                    yield self
                finally:
                    self._background = None
                    background.cancel_scope.cancel()
        finally:
            await self._stop_plugins()
            self.audit.close()
            stopped.set()

    async def _start_plugins(self) -> None:
        data = self.config.resolve_path(self.config.server.data_dir)
        if data.is_dir() and (swept := await anyio.to_thread.run_sync(lambda: sweep(data, recursive=True))):
            log.info("removed %d temporary file(s) left by interrupted writes in %s", swept, data)
        for state in self.active():
            try:
                await _awaited(self.pm.call_one(state.name, "nexus_startup", ctx=state.ctx))
                self._started.append(state.name)
            except Exception as exc:
                log.debug("startup of %s raised", state.name, exc_info=True)
                state.fail(f"startup failed: {type(exc).__name__}: {exc}")

    async def stop(self, grace: float = 10.0) -> None:
        """Stop serving from outside the serving task (on SIGTERM), and wait (up to ``grace`` s)
        until ``running()`` has ended the background work and stopped every plugin."""
        if self._background is not None and self._stopped is not None:
            self._background.cancel_scope.cancel()  # this scope also holds the serving itself
            with anyio.move_on_after(grace):
                await self._stopped.wait()

    async def _stop_plugins(self) -> None:
        while self._started:  # popped one by one: each plugin is stopped once, last started first
            name = self._started.pop()
            try:
                await _awaited(self.pm.call_one(name, "nexus_shutdown", ctx=self.plugins[name].ctx))
            except Exception:
                log.exception("shutdown of plugin '%s' failed", name)

    async def status(self) -> dict[str, list[str]]:
        """Each running plugin's own account of its state (``nexus_status``), e.g. its connections."""
        report = {}
        for state in self.active():
            try:
                lines = _first(await _awaited(self.pm.call_one(state.name, "nexus_status", ctx=state.ctx)))
            except Exception as exc:
                lines = [f"status failed: {type(exc).__name__}: {exc}"]
            report[state.name] = list(lines or [])
        return report

    # -- the runtime plugins see through their context -----------------------------

    def start_background(self, plugin: str, fn: Callable[[], Awaitable[None]], name: str) -> None:
        if self._background is None:
            raise PluginError(plugin, f"cannot start '{name}': the server is not running")

        async def run() -> None:
            try:
                await fn()
            except Exception:
                log.exception("background task '%s' of plugin '%s' failed", name, plugin)

        self._background.start_soon(run, name=f"{plugin}:{name}")

    def category_refusal(self, plugin: str, category: str, tool: str) -> str | None:
        """Why the current session may not use ``plugin``'s ``category`` in its tool ``tool``: the refusal the gate
        gives a tool of that category (``PluginContext.category_refusal``); None when it may."""
        state, table = self.plugins[plugin], self.config.table(plugin)
        if category not in state.categories:
            raise PluginError(plugin, f"'{category}' is not one of its categories ({', '.join(state.categories)})")
        assert state.grants is not None
        names = frozenset({tool, table.public_name(tool)})
        refused, fixed = state.grants.refusal(names, category), state.grants.refusal(names, None)
        return refusal(Item("tool", plugin, table.public_name(tool), names, category, refused, fixed))

    def serves_natively(self, kind: Kind, name: str) -> bool:
        return f"{kind} '{name}'" in self._owners

    def delay_listing(self, plugin: str, event: anyio.Event, at_most: float) -> None:
        self._pending.append((event, anyio.current_time() + at_most))

    async def settle(self) -> None:
        """Wait for what plugins are about to publish (``delay_listing``), each up to its deadline."""
        if not self._pending:
            return
        for event, deadline in list(self._pending):
            with anyio.move_on_after(deadline - anyio.current_time()):
                await event.wait()
        now = anyio.current_time()
        self._pending = [(e, d) for e, d in self._pending if not e.is_set() and d > now]

    async def publish(
        self,
        plugin: str,
        group: str,
        tools: Sequence[LiveTool],
        resources: Sequence[LiveResource],
        prompts: Sequence[LivePrompt],
    ) -> list[str]:
        state, table = self.plugins[plugin], self.config.table(plugin)
        assert state.grants is not None
        published = [self._published_tool(state, group, tool) for tool in tools]
        grants = state.grants
        for resource in resources:
            key = getattr(resource.definition, "uri_template", None) or str(resource.definition.uri)  # type: ignore[union-attr]
            refused, fixed = grants.refusal({key}, resource.category), grants.refusal({key}, None)
            published.append(
                Published(plugin, group, "resource", key, resource.definition, resource, refused, fixed=fixed)
            )
        for prompt in prompts:
            own, name = prompt.definition.name, table.public_name(prompt.definition.name)
            definition = prompt.definition.model_copy(update={"name": name})
            refused, fixed = grants.refusal({own, name}, prompt.category), grants.refusal({own, name}, None)
            published.append(
                Published(plugin, group, "prompt", name, definition, prompt, refused, frozenset({own}), fixed)
            )
        problems, changed = self.live.replace(plugin, group, published)
        for problem in problems:
            log.error("plugin '%s' (%s): %s", plugin, group, problem)
        await self.live.notify(changed)
        return problems

    def _published_tool(self, state: PluginState, group: str, tool: LiveTool) -> Published:
        own = tool.definition.name
        name = self.config.table(state.name).public_name(own)
        assert state.grants is not None
        if tool.category not in state.categories:
            refusal = fixed = tool.refusal or f"tool '{name}' has undeclared category '{tool.category}'"
        else:
            refusal = tool.refusal or state.grants.refusal({own, name}, tool.category)
            fixed = tool.refusal or state.grants.refusal({own, name}, None)
        meta = {**(tool.definition.meta or {}), "nexus/plugin": state.name, "nexus/category": tool.category}
        definition = tool.definition.model_copy(update={"name": name, "meta": meta})
        return Published(state.name, group, "tool", name, definition, tool, refusal, frozenset({own}), fixed)


def _claim(owners: dict[str, str], what: str, plugin: str, *, prefix_hint: bool = False) -> None:
    """Record that ``plugin`` serves ``what``; two owners of one name stop the server."""
    other = owners.get(what)
    if other is None:
        owners[what] = plugin
        return
    if other == plugin:
        raise NexusError(f"{what} is registered twice by plugin '{plugin}'")
    hint = f'; set prefix = "{plugin}" in [plugins.{plugin}] to resolve it' if prefix_hint else ""
    raise NexusError(f"{what} is registered by both plugin '{other}' and plugin '{plugin}'{hint}")


def _entry(spec: ToolSpec, name: str, grants: Grants) -> ToolEntry:
    refusal, fixed = grants.refusal({spec.name, name}, spec.category), grants.refusal({spec.name, name}, None)
    return ToolEntry(name, spec, refusal, None if refusal else _sdk_tool(name, spec), fixed)


def _unknown_arguments(name: str, tool: Tool, arguments: dict[str, Any]) -> str:
    """The error of a call that gives keys ``tool`` does not take, with whatever else is wrong with it."""
    try:
        tool.fn_metadata.arg_model.model_validate(arguments)
    except ValidationError as exc:
        return argument_error(name, exc, arguments, tool.parameters)
    return f"invalid arguments for {name}: " + "; ".join(unknown_keys(arguments, tool.parameters))


def _sdk_tool(name: str, spec: ToolSpec) -> Tool:
    tool = Tool.from_function(
        spec.fn,
        name=name,
        title=spec.title,
        description=inspect.cleandoc(spec.description or spec.fn.__doc__ or ""),  # no docstring indentation
        annotations=ToolAnnotations(title=spec.title, **spec.hints),
        meta={"nexus/plugin": spec.plugin, "nexus/category": spec.category},
    )
    tool.parameters = compact(tool.parameters)  # every client reads these before the user says a word
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = compact(tool.fn_metadata.output_schema, output=True)
    return tool


def _first(results: list[Any]) -> Any:
    return next((r for r in results if r is not None), None)


async def _awaited(results: Iterable[Any]) -> list[Any]:
    """Hook results, each awaited when a hook was async."""
    return [await r if inspect.isawaitable(r) else r for r in results]


def _contents(contents: types.TextResourceContents | types.BlobResourceContents) -> ReadResourceContents:
    """One item of another server's resource, as the SDK's read_resource returns it."""
    if isinstance(contents, types.BlobResourceContents):
        return ReadResourceContents(base64.b64decode(contents.blob), contents.mime_type, contents.meta)
    return ReadResourceContents(contents.text, contents.mime_type, contents.meta)


def _anticipated(exc: BaseException) -> str | None:
    """The message of a deliberate prompt failure inside the SDK's wrappers, or None for a crash.

    Deliberate: a ToolError or ResourceError (PermissionDenied included) from the prompt,
    or the SDK's own "Unknown prompt" / "Missing required arguments" (one wrapper deep).
    """
    chain: list[BaseException] = []
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__  # type: ignore[assignment]
    deliberate = next((e for e in chain if isinstance(e, ToolError | ResourceError)), None)
    if deliberate is not None:
        return str(deliberate)
    return str(chain[-1]) if len(chain) == 2 and isinstance(chain[-1], ValueError) else None


def _result_text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in getattr(result, "content", []) or [])


def crash_reason(exc: BaseException) -> str:
    """What a crash may tell the client, never empty: the system's reason for an OSError (a full disk), a
    database's own fixed message, else only its type (its text may hold data the caller may not see)."""
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    if type(exc).__module__ == "sqlite3" and str(exc).strip():
        return f"the database says: {exc}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"an unexpected {type(exc).__name__} (the server's log has the details)"


def _unknown_category(category: str, state: PluginState) -> str:
    close = difflib.get_close_matches(category, list(state.categories), n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"unknown category '{category}' ({hint}plugin '{state.name}' declares: {', '.join(state.categories)})"


def _reason(exc: Exception) -> str:
    if isinstance(exc, PluginError):
        return exc.reason
    if isinstance(exc, ValidationError):
        return str(validation_error("", exc)).lstrip(": ")
    return str(exc)
