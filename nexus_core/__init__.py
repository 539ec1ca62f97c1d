"""Nexus: a minimal host for MCP plugins.

A plugin is a module with ``@hookimpl`` functions, published under the entry
point group ``nexus``::

    [project.entry-points.nexus]
    hello = "nexus_hello"

See ``docs/plugin_hooks.md`` for every hook.
"""

from mcp.server.mcpserver.exceptions import ToolError

from nexus_core.atomic import atomic_write, write_at
from nexus_core.errors import ConfigError, NexusError, PermissionDenied, PluginError
from nexus_core.hookspecs import hookimpl
from nexus_core.live import LivePrompt, LiveResource, LiveTool
from nexus_core.locks import lock_path, locked
from nexus_core.permissions import Category, PathPolicy
from nexus_core.registry import PluginConfig, PluginContext, PromptRegistrar, ResourceRegistrar, ToolRegistrar
from nexus_core.safe_open import OpenedFile, Raced

__all__ = [
    "Category",
    "ConfigError",
    "LivePrompt",
    "LiveResource",
    "LiveTool",
    "NexusError",
    "OpenedFile",
    "PathPolicy",
    "PermissionDenied",
    "PluginConfig",
    "PluginContext",
    "PluginError",
    "PromptRegistrar",
    "Raced",
    "ResourceRegistrar",
    "ToolError",
    "ToolRegistrar",
    "atomic_write",
    "hookimpl",
    "lock_path",
    "locked",
    "write_at",
]
