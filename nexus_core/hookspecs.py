"""The hooks a Nexus plugin may implement.

Every hook is optional and called once per plugin, so the host always knows
which plugin contributed what. Implementations may accept fewer arguments than
the spec (pluggy passes only the ones they name). ``docs/plugin_hooks.md`` has
one section per hook; a test keeps it complete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from pydantic import BaseModel

    from nexus_core.access.grants import Category
    from nexus_core.console.pages import PageRegistrar
    from nexus_core.host.registrars import PluginContext, PromptRegistrar, ResourceRegistrar, ToolRegistrar

PROJECT = "nexus"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a plugin function as the implementation of the hook with the same name."""


# ---------------------------------------------------------------------------
# Declarations: read before anything is registered
# ---------------------------------------------------------------------------


@hookspec
def nexus_permission_categories() -> list[Category]:
    """Declare the permission categories the plugin's tools belong to.

    Each ``Category`` has a ``name``, a ``description`` and ``default``
    (granted when the TOML does not list the plugin's ``categories``). Keep
    categories that write or execute off by default.

    :returns: the plugin's categories. A plugin that implements no such hook
        has one category, ``default``, granted by default.
    """


@hookspec
def nexus_config_model() -> type[BaseModel]:
    """Declare the pydantic model of the plugin's own keys in ``[plugins.NAME]``.

    The host validates the table against it (subclass ``nexus_core.PluginConfig``
    so unknown keys are refused) and hands the instance to the plugin as
    ``ctx.config``. Keys the host reads itself (``enabled``, ``categories``,
    ``allow_tools``, ``deny_tools``, ``roots``, ``deny_paths``, ``prefix``,
    ``data_dir``, ``required``, ``module``) never reach the model.

    :returns: a pydantic model class.
    """


# ---------------------------------------------------------------------------
# Registration: what the plugin serves
# ---------------------------------------------------------------------------


@hookspec
def nexus_register_tools(register: ToolRegistrar, ctx: PluginContext) -> None:
    """Register the plugin's MCP tools.

    Call ``register(fn, category=..., title=..., read_only=..., ...)`` once per
    tool. The input schema comes from ``fn``'s typed parameters and the output
    schema from its return annotation (return a pydantic model for structured
    output). The host applies the TOML's permissions, the name ``prefix`` and
    the audit log; the tool body only does its work and raises ``ToolError``
    (or ``PermissionDenied``) with a clear message when it cannot.

    :param register: the registrar bound to this plugin.
    :param ctx: the plugin's context: config, path policy, data dir, logger.
    """


@hookspec
def nexus_register_resources(register: ResourceRegistrar, ctx: PluginContext) -> None:
    """Register the plugin's MCP resources and resource templates.

    Call ``register(fn, uri, ...)``; a URI with ``{variables}`` registers a
    template whose variables are passed to ``fn``.

    :param register: the registrar bound to this plugin.
    :param ctx: the plugin's context.
    """


@hookspec
def nexus_register_prompts(register: PromptRegistrar, ctx: PluginContext) -> None:
    """Register the plugin's MCP prompts with ``register(fn, name=..., title=...)``.

    :param register: the registrar bound to this plugin.
    :param ctx: the plugin's context.
    """


# ---------------------------------------------------------------------------
# Lifecycle: around serving
# ---------------------------------------------------------------------------


@hookspec
def nexus_prepare(ctx: PluginContext) -> None:
    """Called while a server that will serve the plugin is still starting, right after the plugin's tools are
    registered: before the other plugins' are, and before it listens. Start loading, in a background thread, what
    the first calls will need (a model, a store), so that it overlaps the server's own start, and return at once.
    Not called for a host that only lists or inspects plugins. If it raises, the plugin is reported as failed.

    :param ctx: the plugin's context.
    """


@hookspec
def nexus_startup(ctx: PluginContext) -> Awaitable[None] | None:
    """Called once when the server starts serving (or before ``nexus call``).

    May be ``async``. Keep it fast: open databases and load models lazily on
    first use instead, so the server answers ``initialize`` at once. A plugin
    whose startup raises is reported on stderr and its tools answer with an error.

    :param ctx: the plugin's context.
    """


@hookspec
def nexus_shutdown(ctx: PluginContext) -> Awaitable[None] | None:
    """Called once when the server stops; may be ``async``. Close what startup or
    first use opened. Runs even when another plugin's shutdown failed.

    :param ctx: the plugin's context.
    """


@hookspec
def nexus_status(ctx: PluginContext) -> Awaitable[list[str]] | list[str] | None:
    """Describe the plugin's run-time state in a few lines, for ``nexus plugins``.

    Called while the plugin runs (after ``nexus_startup``); may be ``async``
    and may wait briefly for what startup began, such as a connection, to
    settle. The bridge reports each upstream server: connected, connecting,
    down (and why) or given up.

    :param ctx: the plugin's context.
    :returns: one line per thing worth knowing; nothing when all is plain.
    """


# ---------------------------------------------------------------------------
# The console: the local web page of `nexus console`
# ---------------------------------------------------------------------------


@hookspec
def nexus_console_pages(register: PageRegistrar, ctx: PluginContext) -> None:
    """Add the plugin's pages to the console (``nexus console``).

    Call ``register(id, title=..., script=Path, data=..., views=...)`` once per
    page. ``script`` is a JavaScript file shipped in the plugin's package; it
    calls ``Nexus.page(...)`` and reaches the plugin only through its MCP tools
    (``nx.call(tool, args)``), which run through the gate as the "console"
    client: the plugin's grants apply and every call is audited. ``views``
    maps a tool to one of the page's views: clients that support MCP Apps
    render that tool's result with it, inline.

    :param register: the registrar bound to this plugin.
    :param ctx: the plugin's context.
    """
