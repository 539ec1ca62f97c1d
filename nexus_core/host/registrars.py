"""What a plugin is handed: its context, and registrars that record what it serves."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict

from nexus_core.access.sessions import current
from nexus_core.errors import PluginError
from nexus_core.fs.modes import private_folder
from nexus_core.fs.paths import PathPolicy

if TYPE_CHECKING:
    from nexus_core.host.live_items import LivePrompt, LiveResource, LiveTool


class Runtime(Protocol):
    """What the host does for a plugin while serving (see ``PluginContext.publish``)."""

    async def publish(
        self,
        plugin: str,
        group: str,
        tools: Sequence[LiveTool],
        resources: Sequence[LiveResource],
        prompts: Sequence[LivePrompt],
    ) -> list[str]: ...

    def start_background(self, plugin: str, fn: Callable[[], Awaitable[None]], name: str) -> None: ...

    def delay_listing(self, plugin: str, event: anyio.Event, at_most: float) -> None: ...

    def category_refusal(self, plugin: str, category: str, tool: str) -> str | None: ...


class PluginConfig(BaseModel):
    """Base for a plugin's config model: unknown keys in its TOML table are refused."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class PluginContext:
    """Everything the host gives one plugin.

    ``config`` is the plugin's validated config model; ``paths`` is the policy
    every path the plugin touches must pass through; ``data_dir`` (created on
    first use) is where it keeps its files; ``log`` writes to stderr; ``state``
    holds what the plugin opens at run time (a database handle, an index) so
    its hooks can share it; ``session_state()`` holds what belongs to one client's session.

    While serving, a plugin may also run background tasks and publish tools,
    resources and prompts it learns only then (``publish``).
    """

    name: str
    config: Any
    paths: PathPolicy
    data_dir_path: Path
    log: logging.Logger
    state: dict[str, Any] = field(default_factory=dict)
    runtime: Runtime | None = field(default=None, repr=False)
    data_dir_configured: bool = False  # the config names this plugin's data_dir: it wins over a plugin's own default

    @cached_property
    def data_dir(self) -> Path:
        return private_folder(self.data_dir_path)

    async def publish(
        self,
        group: str,
        *,
        tools: Sequence[LiveTool] = (),
        resources: Sequence[LiveResource] = (),
        prompts: Sequence[LivePrompt] = (),
    ) -> list[str]:
        """Serve these as the plugin's ``group`` from now on, replacing what the group served (nothing: withdraw it).

        The host applies the plugin's grants and prefix, as for its registered
        tools, and sends clients ``list_changed`` notifications. Returns the
        problems: items not served because another plugin already serves the name.
        """
        return await self._runtime().publish(self.name, group, tools, resources, prompts)

    def start_background(self, fn: Callable[[], Awaitable[None]], *, name: str) -> None:
        """Run ``fn()`` while the server serves (from ``nexus_startup`` on); it is cancelled at shutdown.

        An exception it raises is logged, and the server goes on.
        """
        self._runtime().start_background(self.name, fn, name)

    def delay_listing(self, event: anyio.Event, *, at_most: float) -> None:
        """Until ``event`` is set (for at most ``at_most`` seconds), requests that list or look up
        tools, resources and prompts wait: what the plugin is about to publish then makes the first answer.

        ``initialize`` never waits. The bridge uses it so a client that lists tools (or calls one)
        right after starting the server finds the tools of upstream servers that connect quickly.
        """
        self._runtime().delay_listing(self.name, event, at_most)

    def session_state(self) -> dict[str, Any]:
        """This plugin's state in the calling client's session: private to that session, gone when it ends.

        Raises ``ToolError`` (the message says why) for a request that has no session to keep it in: a
        2026-07-28 request over Streamable HTTP stands alone, each one its own session.
        """
        session = current()
        if not session.lasting:
            raise ToolError(
                "this request has no session to keep anything in: a 2026-07-28 request over HTTP stands alone; "
                "connect over stdio, or over HTTP with the initialize handshake"
            )
        return session.state.setdefault(self.name, {})

    def category_refusal(self, category: str, *, tool: str) -> str | None:
        """Why the calling session may not use this plugin's ``category`` (one line that names the grant), or None.

        For a tool that does more with some arguments than its own category grants: the memory plugin's
        ``export_memories`` is ``read``, and writing a file with ``path`` also needs ``export``. Ask before doing
        it, and refuse with ``PermissionDenied(reason)``. The session's ``--enable``, profile and folder narrow it
        as they narrow tools.
        """
        return self._runtime().category_refusal(self.name, category, tool)

    def _runtime(self) -> Runtime:
        if self.runtime is None:
            raise PluginError(self.name, "publish and start_background need a running server (use nexus_startup)")
        return self.runtime


@dataclass(frozen=True)
class ToolSpec:
    plugin: str
    name: str
    fn: Callable[..., Any]
    category: str
    title: str | None
    description: str | None
    hints: dict[str, bool]
    keywords: str = ""  # read by tool search only, never listed


@dataclass(frozen=True)
class ResourceSpec:
    plugin: str
    uri: str
    fn: Callable[..., Any]
    category: str | None
    options: dict[str, Any]
    requires: str | None = None


@dataclass(frozen=True)
class PromptSpec:
    plugin: str
    name: str
    fn: Callable[..., Any]
    category: str | None
    options: dict[str, Any]
    requires: str | None = None


@dataclass
class _Registrar:
    plugin: str
    categories: frozenset[str]

    def _check_category(self, category: str | None, what: str) -> None:
        if category is not None and category not in self.categories:
            known = ", ".join(sorted(self.categories))
            raise PluginError(self.plugin, f"{what} uses undeclared category '{category}' (declared: {known})")


@dataclass
class ToolRegistrar(_Registrar):
    """``register(fn, category=..., ...)``: records one tool of the plugin."""

    specs: list[ToolSpec] = field(default_factory=list)

    def __call__(
        self,
        fn: Callable[..., Any],
        *,
        category: str,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        destructive: bool = True,
        idempotent: bool = False,
        open_world: bool = False,
        keywords: str = "",
    ) -> None:
        """Register ``fn`` as a tool.

        :param category: the permission category that gates it.
        :param name: the tool's name (default: the function's name), before any prefix.
        :param title: a human-readable title.
        :param description: default: the function's docstring.
        :param read_only: it changes nothing (``readOnlyHint``).
        :param destructive: it may delete or overwrite (``destructiveHint``; moot when read-only).
        :param idempotent: calling it twice with the same arguments does no more (``idempotentHint``).
        :param open_world: it reaches beyond the machine, e.g. the network (``openWorldHint``).
        :param keywords: other words for what it does (``"duplicate, cp"`` for a copy), which tool search
            (``find_tools``) matches besides the name, title, description and parameters. No client sees
            them: they cost nothing in the list a model reads on every turn.
        """
        tool_name = name or fn.__name__
        self._check_category(category, f"tool '{tool_name}'")
        hints = {"readOnlyHint": read_only, "idempotentHint": idempotent, "openWorldHint": open_world}
        if not read_only:
            hints["destructiveHint"] = destructive
        self.specs.append(ToolSpec(self.plugin, tool_name, fn, category, title, description, hints, keywords))


@dataclass
class ResourceRegistrar(_Registrar):
    """``register(fn, uri, ...)``: records one resource or resource template."""

    specs: list[ResourceSpec] = field(default_factory=list)

    def __call__(
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        category: str | None = None,
        requires: str | None = None,
    ) -> None:
        """Register ``fn`` as the resource at ``uri`` (a template when it has ``{variables}``).

        :param category: when given, the resource is served only while that category is granted.
        :param requires: the tool whose grant it needs (its content is that tool's): refused
            whenever that tool is, e.g. by ``deny_tools``.
        """
        self._check_category(category, f"resource '{uri}'")
        options = {"name": name, "title": title, "description": description, "mime_type": mime_type}
        self.specs.append(ResourceSpec(self.plugin, uri, fn, category, options, requires))


@dataclass
class PromptRegistrar(_Registrar):
    """``register(fn, name=..., ...)``: records one prompt."""

    specs: list[PromptSpec] = field(default_factory=list)

    def __call__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        category: str | None = None,
        requires: str | None = None,
    ) -> None:
        """Register ``fn`` as a prompt; its parameters are the prompt's arguments.

        :param category: when given, the prompt is served only while that category is granted.
        :param requires: the tool whose grant it needs (it reads what that tool reads).
        """
        prompt_name = name or fn.__name__
        self._check_category(category, f"prompt '{prompt_name}'")
        options = {"title": title, "description": description}
        self.specs.append(PromptSpec(self.plugin, prompt_name, fn, category, options, requires))
