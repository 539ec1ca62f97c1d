"""Console pages reach plugins only through their MCP tools, on the host's own call path.

``host.server.call_tool`` inside the browser's gate session is exactly what an
assistant's ``tools/call`` runs: the same grants, argument validation, ranking
and audit record (with the client "console").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from nexus_core.access.denied import PermissionDenied
from nexus_core.access.sessions import Session, bound
from nexus_core.errors import NexusError

if TYPE_CHECKING:
    from nexus_core.host.build import Host

log = logging.getLogger("nexus.console")

MAX_BATCH = 200  # calls in one request (a one-click fix over many memories)


async def call(host: Host, session: Session, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ..., "refused": bool}``."""
    with bound(session):
        try:
            result = await host.server.call_tool(tool, arguments)
        except PermissionDenied as exc:
            return {"ok": False, "refused": True, "error": str(exc)}
        except (ToolError, NexusError, MCPError) as exc:
            return {"ok": False, "refused": False, "error": str(exc)}
        except Exception as exc:  # a plugin bug: the page says so, the server goes on
            log.exception("console call of %s failed", tool)
            return {"ok": False, "refused": False, "error": f"{tool} failed: {type(exc).__name__}"}
    text = "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []) or [])
    if getattr(result, "is_error", False):
        return {"ok": False, "refused": text.startswith("permission denied"), "error": text}
    structured = getattr(result, "structured_content", None)
    return {"ok": True, "result": structured if structured is not None else {"text": text}}


def tools(host: Host, session: Session) -> dict[str, dict[str, Any]]:
    """Every tool the host serves (bridged ones too), with why this session may not call it (None: it may)."""
    from nexus_core.access.gate import refusal

    items = {e.name: (e.plugin, e.spec.category, e.item) for e in host.tools.values()}
    items |= {k: (p.plugin, p.item.category, p.gate_item) for k, p in host.live.entries["tool"].items()}  # type: ignore[union-attr]
    return {
        name: {"plugin": plugin, "category": category, "refusal": refusal(item, session)}
        for name, (plugin, category, item) in sorted(items.items())
    }
