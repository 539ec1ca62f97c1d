"""Console views inside the assistant: the MCP Apps extension (``io.modelcontextprotocol/ui``).

A page may name views for tools (``views={"recall_memories": "search"}``).
Each becomes a ``ui://nexus/<plugin>/<view>.html`` resource: one HTML document
with the console's core, the page's scripts and its stylesheet inlined (a view
loads nothing), which renders the tool's result and calls further tools through
the client. The resource passes the gate as the tool it shows (``requires``):
refused, and not listed, wherever that tool is.

Only a client that negotiated the extension sees ``_meta.ui.resourceUri`` on
those tools (``tools/list``); every other client gets the tools, and their
results, exactly as before.
"""

from __future__ import annotations

import functools
import html
import json
import logging
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, client_supports_apps

from nexus_core.console import console_for
from nexus_core.console.app import CORE_SCRIPTS
from nexus_core.console.pages import STATIC, Page
from nexus_core.host import sdk

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from nexus_core.host.build import Host

log = logging.getLogger("nexus.console")


def install(host: Host) -> None:
    """Serve the views of every page's tools (gated), and show them to the clients that render views."""
    bound: dict[str, str] = {}  # public tool name -> view URI
    for page in console_for(host).pages:
        state = host.plugins.get(page.plugin)
        if state is None or state.error is not None:
            continue
        for tool, view in page.views.items():
            public = host.config.table(page.plugin).public_name(tool)
            if public not in host.tools:
                log.warning("plugin '%s': console view '%s' names no tool of it: '%s'", page.plugin, view, tool)
                continue
            uri = f"ui://nexus/{page.plugin}/{view}.html"
            item = host._item(state, "resource", uri, uri, tool, None)  # refused wherever the tool is
            read = host.gate.guard_resource(item, _reader(page, view))
            title = f"{page.title}: {view}"
            host.server.resource(uri, name=f"{page.plugin}-{view}", title=title, mime_type=APP_MIME_TYPE)(read)
            bound[public] = uri
    if bound:
        sdk.declare_extension(host.server, EXTENSION_ID)
        host.server.middleware.append(functools.partial(_show_views, bound))


async def _show_views(bound: dict[str, str], ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """``tools/list`` for a client that renders views: each viewed tool carries its view's URI."""
    result = await call_next(ctx)
    if ctx.method != "tools/list" or not client_supports_apps(ctx):
        return result
    if isinstance(result, types.ListToolsResult):
        result = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(result, dict):
        return result
    tools = [
        {**tool, "_meta": {**(tool.get("_meta") or {}), "ui": {"resourceUri": bound[tool["name"]]}}}
        if tool.get("name") in bound
        else tool
        for tool in result.get("tools", [])
    ]
    return {**result, "tools": tools}


def _reader(page: Page, view: str) -> Any:
    def view_html() -> str:
        return _view_html(page, view)

    return view_html


def _view_html(page: Page, view: str) -> str:
    """The view as one self-contained document (what an MCP Apps client renders in its sandbox)."""
    scripts = [STATIC / name for name in CORE_SCRIPTS] + list(page.scripts)
    code = "\n".join(_inline(path.read_text(encoding="utf-8")) for path in scripts)
    boot = f"Nexus.bootView({_json(page.key)}, {_json(view)}, {_json(page.data)});"
    css = (STATIC / "console.css").read_text(encoding="utf-8").replace("</", "<\\/")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(page.title)}</title><style>{css}</style></head>\n"
        '<body class="view"><main id="main"><p class="muted">Waiting for the result…</p></main>\n'
        f"<script>\n{code}\n{boot}\n</script></body></html>\n"
    )


def _inline(code: str) -> str:
    """Script text that cannot close its ``<script>`` element early."""
    return code.replace("</", "<\\/")


def _json(value: Any) -> str:
    return _inline(json.dumps(value, ensure_ascii=False))
