"""A ``nexus.toml`` found in the launch folder, read as a narrowing of the user's config, never a widening.

Opening a repository should not hand it the machine: a hostile repository can
ship its own ``nexus.toml``. Unless the user trusts that folder (``nexus trust
PATH``), its file may only take things away, for the session launched there:
disable a plugin, grant fewer categories, allow or deny tools, add
``deny_paths``, and name roots inside its own folder. Everything else in it
(new plugins, plugin folders, modules, plugin settings, other roots, execute)
is ignored, and the log says which keys and how to trust the folder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_core.config.model import read_toml
from nexus_core.errors import ConfigError

log = logging.getLogger("nexus")

_PLUGIN_KEYS = {"enabled", "categories", "allow_tools", "deny_tools", "deny_paths", "roots"}
_SERVER_KEYS = {"deny_paths", "roots"}


@dataclass(frozen=True)
class PluginNarrowing:
    enabled: bool = True
    categories: frozenset[str] | None = None
    allow_tools: frozenset[str] = frozenset()
    deny_tools: frozenset[str] = frozenset()
    deny_paths: tuple[str, ...] = ()
    roots: tuple[Path, ...] | None = None


@dataclass(frozen=True)
class Narrowing:
    """What an untrusted ``nexus.toml`` takes away, per plugin (``server`` applies to all)."""

    source: Path
    server: PluginNarrowing = PluginNarrowing()
    plugins: Mapping[str, PluginNarrowing] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()

    def of(self, plugin: str) -> PluginNarrowing:
        return self.plugins.get(plugin, PluginNarrowing())

    def refusal(self, plugin: str, names: Iterable[str], category: str | None) -> str | None:
        """Why this session may not use a tool, resource or prompt that the config itself grants; None if it may."""
        names = list(names)
        table, where = self.of(plugin), f"{self.source} (an untrusted folder's config)"
        if not table.enabled:
            return f"permission denied: plugin '{plugin}' is disabled by {where}"
        if category is not None and table.categories is not None and category not in table.categories:
            return f"permission denied: '{names[-1]}' needs the '{category}' category, which {where} does not grant"
        if table.allow_tools and table.allow_tools.isdisjoint(names):
            return f"permission denied: '{names[-1]}' is not in allow_tools of {where}"
        if not table.deny_tools.isdisjoint(names):
            return f"permission denied: '{names[-1]}' is listed in deny_tools of {where}"
        return None

    def roots_within(self, plugin: str, roots: tuple[Path, ...]) -> tuple[Path, ...]:
        """The session's roots for ``plugin``: the file's own roots that lie inside ``roots``, else ``roots``."""
        own = self.of(plugin).roots or self.server.roots
        if own is None:
            return roots
        return tuple(r for r in own if any(r == base or r.is_relative_to(base) for base in roots))

    def deny_paths(self, plugin: str) -> tuple[str, ...]:
        return (*self.server.deny_paths, *self.of(plugin).deny_paths)


def read_narrowing(path: Path) -> Narrowing:
    """Read ``path`` keeping only what narrows; what it would widen is logged and ignored."""
    data = read_toml(path)
    folder = Path(os.path.realpath(path.parent))
    ignored: list[str] = []
    server = _table(data.get("server"), "server", _SERVER_KEYS, folder, ignored, path)
    ignored += [key for key in data if key not in ("server", "plugins")]
    plugins = {
        name: _table(table, f"plugins.{name}", _PLUGIN_KEYS, folder, ignored, path)
        for name, table in (data.get("plugins") or {}).items()
        if isinstance(table, Mapping)
    }
    if ignored:
        log.warning(
            "%s is in a folder you have not trusted, so it may only narrow your config; ignored: %s "
            "(run `nexus trust %s` if you wrote it)",
            path,
            ", ".join(ignored),
            folder,
        )
    return Narrowing(path, server, plugins, tuple(ignored))


def _table(table: Any, where: str, allowed: set[str], folder: Path, ignored: list[str], path: Path) -> PluginNarrowing:
    if not isinstance(table, Mapping):
        return PluginNarrowing()
    for key in table:
        if key not in allowed or (key == "enabled" and table[key] is not False):
            ignored.append(f"{where}.{key}")
    roots = None
    if "roots" in table:
        resolved = [Path(os.path.realpath(folder / Path(str(r)).expanduser())) for r in _strings(table["roots"], path)]
        roots = tuple(r for r in resolved if r == folder or r.is_relative_to(folder)) or None
        ignored += [f"{where}.roots entry {r} (outside {folder})" for r in resolved if r not in (roots or ())]
    categories = table.get("categories")
    return PluginNarrowing(
        enabled=table.get("enabled", True) is not False,
        categories=frozenset(_strings(categories, path)) if categories is not None else None,
        allow_tools=frozenset(_strings(table.get("allow_tools", []), path)),
        deny_tools=frozenset(_strings(table.get("deny_tools", []), path)),
        deny_paths=tuple(_strings(table.get("deny_paths", []), path)),
        roots=roots,
    )


def _strings(value: Any, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(str(path), "", f"expected a list of strings, got {value!r}")
    return value
