"""The pages plugins add to the console (hook ``nexus_console_pages``), and the console's own."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_core.errors import PluginError

PAGE_ID = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Page:
    """One page: a script that renders it in the browser from the plugin's tools."""

    plugin: str
    id: str
    title: str
    scripts: tuple[Path, ...]  # loaded in order; the last calls Nexus.page(key, ...)
    data: dict[str, Any] = field(default_factory=dict)  # handed to the script as nx.data
    views: dict[str, str] = field(default_factory=dict)  # tool name -> view (MCP Apps)
    order: int = 100

    @property
    def key(self) -> str:
        return f"{self.plugin}/{self.id}"

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "plugin": self.plugin, "id": self.id, "title": self.title, "data": self.data}


@dataclass
class PageRegistrar:
    """``register(id, title=..., script=...)``: records one console page of a plugin."""

    plugin: str
    pages: list[Page] = field(default_factory=list)

    def __call__(
        self,
        id: str,
        *,
        title: str,
        script: Path | str | Sequence[Path | str],
        data: dict[str, Any] | None = None,
        views: dict[str, str] | None = None,
        order: int = 100,
    ) -> None:
        """Register a page.

        :param id: the page's id within the plugin (lowercase letters, digits, hyphens); its address is
            ``#/<plugin>/<id>``.
        :param title: its name in the console's menu.
        :param script: the JavaScript file that renders it (it calls ``Nexus.page("<plugin>/<id>", {...})``),
            or several, loaded in order (a module of helpers first); pages may share files.
        :param data: JSON the script receives as ``nx.data`` (e.g. names from the plugin's config).
        :param views: tool name -> the name of one of the script's ``views``: MCP Apps clients show that
            tool's result with it.
        :param order: position in the menu (lower first).
        """
        if not PAGE_ID.match(id):
            raise PluginError(self.plugin, f"console page id '{id}' must be lowercase letters, digits and hyphens")
        scripts = tuple(Path(s) for s in ([script] if isinstance(script, str | Path) else script))
        for file in scripts:
            if file.suffix != ".js" or not file.is_file():
                raise PluginError(self.plugin, f"console page '{id}': script {file} is not a .js file")
        if any(p.id == id for p in self.pages):
            raise PluginError(self.plugin, f"console page '{id}' is registered twice")
        try:
            json.dumps(data or {})
        except TypeError as exc:
            raise PluginError(self.plugin, f"console page '{id}': data is not JSON: {exc}") from None
        self.pages.append(Page(self.plugin, id, title, scripts, dict(data or {}), dict(views or {}), order))


def core_pages() -> list[Page]:
    """The console's own pages: what Nexus did (the audit log), and the plugins with their grants."""
    return [Page("core", "activity", "Activity", (STATIC / "activity.js",), order=900)]
