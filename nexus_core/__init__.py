"""Nexus: a minimal host for MCP plugins.

A plugin is a module with ``@hookimpl`` functions, published under the entry
point group ``nexus``::

    [project.entry-points.nexus]
    hello = "nexus_hello"

See ``docs/plugin_hooks.md`` for every hook.
"""

from mcp.server.mcpserver.exceptions import ToolError

from nexus_core.atomic import atomic_write
from nexus_core.config import load_config
from nexus_core.errors import ConfigError, NexusError, PermissionDenied, PluginError
from nexus_core.hookspecs import hookimpl
from nexus_core.live import LivePrompt, LiveResource, LiveTool
from nexus_core.permissions import Category, PathPolicy
from nexus_core.registry import PluginConfig, PluginContext, PromptRegistrar, ResourceRegistrar, ToolRegistrar

__all__ = [
    "Category",
    "ConfigError",
    "LivePrompt",
    "LiveResource",
    "LiveTool",
    "NexusError",
    "PathPolicy",
    "PermissionDenied",
    "PluginConfig",
    "PluginContext",
    "PluginError",
    "PromptRegistrar",
    "ResourceRegistrar",
    "ToolError",
    "ToolRegistrar",
    "atomic_write",
    "hookimpl",
    "load_config",
]
