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
    "atomic_write": "nexus_core.fs.atomic",
    "EnvRef": "nexus_core.config.model",
    "load_config": "nexus_core.config.model",
    "prefixed": "nexus_core.config.model",
    "write_at": "nexus_core.fs.atomic",
    "private_folder": "nexus_core.fs.modes",
    "make_private": "nexus_core.fs.modes",
    "ChangedMeanwhile": "nexus_core.errors",
    "ConfigError": "nexus_core.errors",
    "NexusError": "nexus_core.errors",
    "PermissionDenied": "nexus_core.access.denied",
    "PluginError": "nexus_core.errors",
    "hookimpl": "nexus_core.hookspecs",
    "LivePrompt": "nexus_core.host.live_items",
    "LiveResource": "nexus_core.host.live_items",
    "LiveTool": "nexus_core.host.live_items",
    "report_progress": "nexus_core.host.progress",
    "locked": "nexus_core.fs.locks",
    "make_undumpable": "nexus_core.host.hardening",
    "release_freed": "nexus_core.host.heap",
    "hold_gc": "nexus_core.host.gc_hold",
    "lock_path": "nexus_core.fs.locks",
    "flock_within": "nexus_core.fs.locks",
    "Category": "nexus_core.access.grants",
    "ToolContext": "nexus_core.builtin.tool_files",
    "PathPolicy": "nexus_core.fs.paths",
    "PluginConfig": "nexus_core.host.registrars",
    "PluginContext": "nexus_core.host.registrars",
    "PromptRegistrar": "nexus_core.host.registrars",
    "ResourceRegistrar": "nexus_core.host.registrars",
    "ToolRegistrar": "nexus_core.host.registrars",
    "Blocking": "nexus_core.fs.nonblocking",
    "on_loop": "nexus_core.fs.nonblocking",
    "on_local_fs": "nexus_core.fs.nonblocking",
    "run_nonblocking": "nexus_core.fs.nonblocking",
    "OpenedFile": "nexus_core.fs.safe_open",
    "Raced": "nexus_core.fs.safe_open",
    "MAX_MESSAGE": "nexus_core.serve.limits",
    "shared_session": "nexus_core.serve.client",
    "stop_shared_server": "nexus_core.serve.client",
}

__version__ = "0.1.0"  # of every first-party distribution: each pyproject.toml reads it here

__all__ = [
    "MAX_MESSAGE",
    "Blocking",
    "Category",
    "ChangedMeanwhile",
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
    "flock_within",
    "hold_gc",
    "hookimpl",
    "load_config",
    "lock_path",
    "locked",
    "make_private",
    "make_undumpable",
    "on_local_fs",
    "on_loop",
    "prefixed",
    "private_folder",
    "release_freed",
    "report_progress",
    "run_nonblocking",
    "shared_session",
    "stop_shared_server",
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

    from nexus_core.access.denied import PermissionDenied
    from nexus_core.access.grants import Category
    from nexus_core.builtin.tool_files import ToolContext
    from nexus_core.config.model import EnvRef, load_config, prefixed
    from nexus_core.errors import ChangedMeanwhile, ConfigError, NexusError, PluginError
    from nexus_core.fs.atomic import atomic_write, write_at
    from nexus_core.fs.locks import flock_within, lock_path, locked
    from nexus_core.fs.modes import make_private, private_folder
    from nexus_core.fs.nonblocking import Blocking, on_local_fs, on_loop, run_nonblocking
    from nexus_core.fs.paths import PathPolicy
    from nexus_core.fs.safe_open import OpenedFile, Raced
    from nexus_core.hookspecs import hookimpl
    from nexus_core.host.gc_hold import hold_gc
    from nexus_core.host.hardening import make_undumpable
    from nexus_core.host.heap import release_freed
    from nexus_core.host.live_items import LivePrompt, LiveResource, LiveTool
    from nexus_core.host.progress import report_progress
    from nexus_core.host.registrars import (
        PluginConfig,
        PluginContext,
        PromptRegistrar,
        ResourceRegistrar,
        ToolRegistrar,
    )
    from nexus_core.serve.limits import MAX_MESSAGE
