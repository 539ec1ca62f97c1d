"""Nexus: a minimal host for MCP plugins.

A plugin is a module with ``@hookimpl`` functions, published under the entry
point group ``nexus``::

    [project.entry-points.nexus]
    hello = "nexus_hello"

See ``docs/plugin_hooks.md`` for every hook. The names below are the whole API
a plugin may import; they load on first use, so the relay that desktop clients
launch (``nexus serve``) starts without importing the SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ToolError": "mcp.server.mcpserver.exceptions",
    "atomic_write": "nexus_core.atomic",
    "EnvRef": "nexus_core.config",
    "load_config": "nexus_core.config",
    "prefixed": "nexus_core.config",
    "write_at": "nexus_core.atomic",
    "ConfigError": "nexus_core.errors",
    "NexusError": "nexus_core.errors",
    "PermissionDenied": "nexus_core.errors",
    "PluginError": "nexus_core.errors",
    "hookimpl": "nexus_core.hookspecs",
    "LivePrompt": "nexus_core.live",
    "LiveResource": "nexus_core.live",
    "LiveTool": "nexus_core.live",
    "locked": "nexus_core.locks",
    "make_undumpable": "nexus_core.hardening",
    "lock_path": "nexus_core.locks",
    "Category": "nexus_core.permissions",
    "ToolContext": "nexus_core.tool_files",
    "PathPolicy": "nexus_core.permissions",
    "PluginConfig": "nexus_core.registry",
    "PluginContext": "nexus_core.registry",
    "PromptRegistrar": "nexus_core.registry",
    "ResourceRegistrar": "nexus_core.registry",
    "ToolRegistrar": "nexus_core.registry",
    "Blocking": "nexus_core.localfs",
    "on_loop": "nexus_core.localfs",
    "on_local_fs": "nexus_core.localfs",
    "run_nonblocking": "nexus_core.localfs",
    "OpenedFile": "nexus_core.safe_open",
    "Raced": "nexus_core.safe_open",
}

__version__ = "0.1.0"  # of every first-party distribution: each pyproject.toml reads it here

__all__ = [
    "Blocking",
    "Category",
    "ConfigError",
    "EnvRef",
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
    "ToolContext",
    "ToolError",
    "ToolRegistrar",
    "atomic_write",
    "hookimpl",
    "load_config",
    "lock_path",
    "locked",
    "make_undumpable",
    "on_local_fs",
    "on_loop",
    "prefixed",
    "run_nonblocking",
    "write_at",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nexus_core' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from mcp.server.mcpserver.exceptions import ToolError

    from nexus_core.atomic import atomic_write, write_at
    from nexus_core.config import EnvRef, load_config, prefixed
    from nexus_core.errors import ConfigError, NexusError, PermissionDenied, PluginError
    from nexus_core.hardening import make_undumpable
    from nexus_core.hookspecs import hookimpl
    from nexus_core.live import LivePrompt, LiveResource, LiveTool
    from nexus_core.localfs import Blocking, on_local_fs, on_loop, run_nonblocking
    from nexus_core.locks import lock_path, locked
    from nexus_core.permissions import Category, PathPolicy
    from nexus_core.registry import PluginConfig, PluginContext, PromptRegistrar, ResourceRegistrar, ToolRegistrar
    from nexus_core.safe_open import OpenedFile, Raced
    from nexus_core.tool_files import ToolContext
