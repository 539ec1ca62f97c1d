"""Grants: the categories a plugin declares, and what the TOML grants it.

A tool is callable when, in this order, its plugin is enabled, its category is
granted, it passes ``allow_tools`` (when that list is not empty) and it is not
in ``deny_tools``. Every refusal carries its reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Category:
    """A permission category a plugin declares, e.g. ``read`` or ``write``.

    ``default`` says whether it is granted when the TOML does not list the
    plugin's ``categories``. Keep anything that writes or executes off by default.
    ``includes`` names categories that granting this one grants too (a design's broad
    category over a finer one that stays grantable on its own).
    """

    name: str
    description: str
    default: bool = False
    includes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grants:
    """What the TOML grants one plugin."""

    plugin: str
    categories: frozenset[str]
    allow_tools: frozenset[str] = frozenset()
    deny_tools: frozenset[str] = frozenset()

    def refusal(self, names: Iterable[str], category: str | None) -> str | None:
        """Why a tool, resource or prompt (known by any of ``names``) may not be used, or None when it may."""
        names = sorted(names, key=len)
        table = f"[plugins.{self.plugin}]"
        if category is not None and category not in self.categories:
            return (
                f"permission denied: tool '{names[-1]}' needs the '{category}' category of plugin "
                f"'{self.plugin}', which is not granted; add \"{category}\" to categories in {table}"
            )
        if self.allow_tools and self.allow_tools.isdisjoint(names):
            return f"permission denied: tool '{names[-1]}' is not in allow_tools of {table}"
        if not self.deny_tools.isdisjoint(names):
            return f"permission denied: tool '{names[-1]}' is listed in deny_tools of {table}"
        return None


def with_included(granted: Iterable[str], declared: dict[str, Category]) -> frozenset[str]:
    """``granted`` and every category they include, transitively."""
    result: set[str] = set()
    todo = list(granted)
    while todo:
        name = todo.pop()
        if name not in result:
            result.add(name)
            todo += declared[name].includes if name in declared else ()
    return frozenset(result)
