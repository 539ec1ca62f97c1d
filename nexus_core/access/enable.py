"""``--enable read,search,vcs``: the categories one client's session may use (design 001's flag).

Design 001 enables categories by name on the command line (``--enable
read,search,write``), write and execute included: the flag grants what it
lists and withholds the rest. In Nexus it does so for one session, never for
the shared server's other clients: each listed category is granted in every
plugin that declares it (``PLUGIN.CATEGORY``: in that plugin only), with the
categories it includes (``execute`` gives ``python``), and every other
category is withheld. What the config decides besides categories still holds:
a disabled plugin stays off, ``allow_tools`` and ``deny_tools`` apply, and so
do roots, ``deny_paths``, a profile and an untrusted folder's ``nexus.toml``.
The command line is the user's own, like the config file (``--set`` already
widens it); see docs/configuration.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from nexus_core.access.grants import Category, with_included


@dataclass(frozen=True)
class Enabled:
    """What ``--enable`` grants one session: per plugin, its categories (a plugin not named: none)."""

    spec: str  # as given, for the refusal's message
    plugins: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def refusal(self, plugin: str, name: str, category: str | None) -> str | None:
        """Why this session may not use an item of ``category``, or None when it may."""
        if category is None or category in self.plugins.get(plugin, frozenset()):
            return None
        return (
            f"permission denied: '{name}' needs the '{category}' category of plugin '{plugin}', which this "
            f"client's --enable {self.spec} does not grant"
        )


def parse_enable(
    spec: str, declared: Mapping[str, Mapping[str, Category]], unchanged: Mapping[str, frozenset[str]]
) -> Enabled:
    """``--enable`` read against each plugin's ``declared`` categories; ``unchanged`` plugins keep those given.

    Raises ``ValueError`` (one line) for a name no plugin declares, with a "did you mean".
    """
    items = [part.strip() for part in spec.split(",") if part.strip()]
    if not items:
        raise ValueError(f"--enable names no category (got '{spec}'); e.g. --enable read,search,vcs")
    every = {c for categories in declared.values() for c in categories}
    chosen: dict[str, set[str]] = {plugin: set() for plugin in declared}
    for item in items:
        if item in every:
            for plugin, categories in declared.items():
                chosen[plugin] |= {item} & set(categories)
            continue
        plugin, dot, category = item.rpartition(".")
        if not dot or category not in declared.get(plugin, {}):
            raise ValueError(_unknown(item, every, declared))
        chosen[plugin].add(category)
    plugins = {p: with_included(found, declared[p]) for p, found in chosen.items()}
    return Enabled(",".join(items), {**plugins, **unchanged})


def _unknown(item: str, every: Iterable[str], declared: Mapping[str, Mapping[str, Category]]) -> str:
    known = sorted({*every, *(f"{p}.{c}" for p, categories in declared.items() for c in categories)})
    close = difflib.get_close_matches(item, known, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"--enable: no plugin declares the category '{item}'{hint}; known: {', '.join(sorted(every))}"
