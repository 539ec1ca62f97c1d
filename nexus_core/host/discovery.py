"""Finding plugins: the built-in tool folder, installed entry points, dotted modules and folders of ``.py`` files.

A plugin that fails to import is recorded with its reason and the rest load;
the host decides whether that is fatal (``required = true`` in its table).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import importlib_metadata
import pluggy

from nexus_core import hookspecs
from nexus_core.config.model import NexusConfig
from nexus_core.fs.trust import refusal

log = logging.getLogger("nexus_core.plugins")  # the name it logged under before the layout moved it

ENTRY_POINT_GROUP = hookspecs.PROJECT


@dataclass
class PluginRecord:
    """One plugin as found: where it came from, and whether it loaded."""

    name: str
    source: str
    version: str = ""
    error: str | None = None
    enabled: bool = True


class NexusPluginManager(pluggy.PluginManager):
    """A pluggy manager that only treats ``nexus_``-prefixed functions as hooks."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith("nexus_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def call_one(self, plugin: str, hook: str, **kwargs: Any) -> list[Any]:
        """Call ``hook`` on one plugin only, so results are attributed to it."""
        others = [p for name, p in self.list_name_plugin() if name != plugin]
        return self.subset_hook_caller(hook, remove_plugins=others)(**kwargs)


def get_plugin_manager() -> NexusPluginManager:
    """A fresh manager with the Nexus hook specs and nothing registered."""
    return NexusPluginManager()


def discover(
    pm: NexusPluginManager,
    config: NexusConfig,
    tool_folder: Callable[[], Any],
    tool_search: Callable[[], Any] | None = None,
) -> list[PluginRecord]:
    """Register every plugin the environment and the config name. Returns one record each.

    ``tool_folder`` makes the built-in plugin ``tools`` (``builtin.tool_folder``; called only when it is
    enabled), ``tool_search`` the built-in ``tool_search`` (``builtin.tool_search``): the composition
    root hands them in, so finding plugins does not depend on any one of them.
    """
    records = [_load(pm, config, "tools", "built-in (the tool folder)", tool_folder)]
    if tool_search is not None:
        records.append(_load(pm, config, "tool_search", "built-in (tool search)", tool_search))
    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        source = f"entry point {ep.value}" + (f" ({dist.name})" if dist else "")
        records.append(_load(pm, config, ep.name, source, ep.load, dist.version if dist else ""))
    for name, table in config.plugins.items():
        if table.module and pm.get_plugin(name) is None:
            records.append(_load(pm, config, name, f"module {table.module}", _importer(table.module)))
    for folder in config.server.plugin_dirs:
        path = config.resolve_path(folder)
        if reason := refusal(path):  # another user could put code there: none of it runs (fs.trust)
            log.error("plugin folder %s refused, no plugin there is loaded: %s", path, reason)
            records.append(PluginRecord(str(folder), f"folder {path}", error=f"refused: {reason}"))
            continue
        for file in sorted(path.glob("*.py")):
            if file.name.startswith("_"):
                continue
            if reason := refusal(file):
                log.error("plugin file %s refused, not loaded: %s", file, reason)
                records.append(PluginRecord(file.stem, f"file {file}", error=f"refused: {reason}"))
                continue
            records.append(_load(pm, config, file.stem, f"file {file}", _file_importer(file)))
    pm.check_pending()
    return records


def _load(
    pm: NexusPluginManager, config: NexusConfig, name: str, source: str, load: Any, version: str = ""
) -> PluginRecord:
    record = PluginRecord(name, source, version)
    if not config.table(name).enabled:
        record.enabled = False  # never imported: a disabled plugin costs nothing
        return record
    if pm.has_plugin(name) or pm.is_blocked(name):
        record.error = "another plugin already has this name"
        return record
    try:
        module = load()
        pm.register(module, name=name)
    except Exception as exc:  # a broken plugin must not take the others down
        record.error = f"failed to load: {type(exc).__name__}: {exc}"
        log.debug("plugin %s failed to load", name, exc_info=True)
        return record
    record.version = record.version or str(getattr(module, "__version__", ""))
    return record


def _importer(dotted: str) -> Any:
    return lambda: importlib.import_module(dotted)


def _file_importer(file: Path) -> Any:
    def load() -> ModuleType:
        module_name = f"nexus_local_plugins.{file.stem}"
        spec = importlib.util.spec_from_file_location(module_name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        return module

    return load
