"""The composition root: where the host is built from the config and the console is installed on it.

Every process that serves or inspects plugins (the command line, the shared server, the tests) builds its
host here, so the host itself knows nothing of the console, and the console nothing of who builds it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nexus_core.config.model import NexusConfig
from nexus_core.console.apps import install as install_console_views
from nexus_core.host.build import Host
from nexus_core.host.discovery import NexusPluginManager, PluginRecord, discover, get_plugin_manager
from nexus_core.host.gc_hold import hold_gc
from nexus_core.serve.stdio import stdout_to_stderr

log = logging.getLogger("nexus")


def build_host(config: NexusConfig, pm: NexusPluginManager | None = None, *, serving: bool = False) -> Host:
    """Discover plugins (unless a manager with plugins already registered is given) and build the host,
    with the console's views for clients that render MCP Apps. ``serving``: it will serve (``Host.build``).

    Raises ``NexusError`` for what must stop the server: a duplicate name, or a
    required plugin that failed.
    """
    if pm is None:
        pm = get_plugin_manager()
        records = discover(pm, config, lambda: _tool_folder(config), lambda: _tool_search(config))
    else:
        records = [
            PluginRecord(name, "registered", enabled=config.table(name).enabled) for name, _ in pm.list_name_plugin()
        ]
    host = Host(config, pm, records).build(serving=serving)
    search = pm.get_plugin("tool_search")
    if search is not None and hasattr(search, "attach"):
        search.attach(host)  # find_tools and call_tool reach the tools through the host built here
    install_console_views(host)
    return host


def _tool_folder(config: NexusConfig) -> Any:
    """The built-in plugin ``tools``, imported only when it is enabled (a disabled plugin costs nothing)."""
    from nexus_core.builtin.tool_folder import ToolFolderPlugin

    folders = [config.resolve_path(folder) for folder in config.server.tool_dirs]
    return ToolFolderPlugin(folders, config.table("tools").categories)


def _tool_search(config: NexusConfig) -> Any:
    """The built-in plugin ``tool_search``: its tools are registered only when some session can search."""
    from nexus_core.builtin.tool_search import ToolSearchPlugin

    enabled = config.server.tool_search or any(p.tool_search for p in config.profiles.values())
    return ToolSearchPlugin(enabled)


def build_for_serving(config: NexusConfig) -> Host:
    """Build the host for serving: stray prints go to stderr, and what is built is exempt from the cyclic GC."""
    with stdout_to_stderr(), long_lived_startup():  # import-time prints must not reach the protocol
        return build_host(config, serving=True)


@contextmanager
def long_lived_startup() -> Iterator[None]:
    """Build without cyclic garbage collection, then exempt what was built from it (``host.gc_hold``: once the
    plugins' start-up work has ended too).

    Building tool schemas allocates ~100k objects that live as long as the server;
    each full collection over them costs ~100 ms of start-up, and finds nothing.
    """
    release = hold_gc()
    try:
        yield
    finally:
        release()


def report(host: Host) -> None:
    """Log what is served: the granted tools and the plugins they come from."""
    granted = sum(1 for t in host.tools.values() if t.refusal is None)
    active = [s.name for s in host.active()]
    log.info("serving %d tools from %d plugin(s): %s", granted, len(active), ", ".join(active) or "none")
