"""What a host serves, as rows a person reads: its tools with their grants, its plugins with their state.

``nexus tools`` and ``nexus plugins`` print these, from the shared server (which answers them on its
control socket) or, with ``--standalone``, from a host built in the command's own process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexus_core.host.build import Host


def tool_rows(host: Host) -> list[list[str]]:
    """``[tool, plugin, category, status]`` for every tool, bridged servers' too, sorted by plugin and name."""
    found = [(e.plugin, e.name, e.spec.category, e.refusal) for e in host.tools.values()]
    found += [(e.plugin, e.key, e.item.category, e.refusal) for e in host.live.entries["tool"].values()]  # type: ignore[union-attr]
    rows = []
    for plugin, name, category, refusal in sorted(found):
        status = "granted" if refusal is None else "refused: " + refusal.split(": ", 1)[-1]
        rows.append([name, plugin, category, status])
    return rows


def plugin_rows(host: Host) -> list[list[str]]:
    """``[plugin, version, status, granted, available, source]`` for every plugin, by name."""
    rows = []
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        granted = sorted(state.grants.categories) if state.grants else []
        rows.append(
            [
                state.name,
                state.record.version or "-",
                state.status,
                ",".join(granted) or "-",
                ",".join(state.categories) or "-",
                state.record.source,
            ]
        )
    return rows


async def plugins_answer(host: Host) -> dict[str, Any]:
    """The plugins' rows and what each reports at run time (the host must be running)."""
    return {"plugins": plugin_rows(host), "report": await host.status()}
