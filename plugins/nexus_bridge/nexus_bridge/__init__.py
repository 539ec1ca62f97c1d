"""nexus-bridge: other MCP servers, mounted behind Nexus under its permissions and audit.

Each ``[plugins.bridge.servers.NAME]`` becomes an ``Upstream`` (``upstream.py``)
that connects in the background once the server starts, so a slow or absent
server never delays ``initialize``: its tools appear when it connects.
"""

from __future__ import annotations

import logging

import anyio
from pydantic import BaseModel

from nexus_core import Category, PluginContext, hookimpl

SETTLE_LIMIT = 30.0  # seconds nexus_status waits for first connections


@hookimpl
def nexus_permission_categories() -> list[Category]:
    return [
        Category(
            name="read",
            description="Upstream tools the config names in read_tools (or a trusted server's), and upstream "
            "resources and prompts.",
            default=True,
        ),
        Category(
            name="write",
            description="Every other upstream tool (mounting a server is the opt-in; omit to mount it read-only).",
            default=True,
        ),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    from nexus_bridge.config import BridgeConfig

    return BridgeConfig


@hookimpl
async def nexus_startup(ctx: PluginContext) -> None:
    from nexus_bridge.upstream import Upstream

    for noisy in ("httpx", "httpx2"):  # one INFO line per request, with the full URL
        logging.getLogger(noisy).setLevel(logging.WARNING)
    upstreams = [Upstream(name, table, ctx) for name, table in ctx.config.servers.items() if table.enabled]
    ctx.state["upstreams"] = upstreams
    for upstream in upstreams:
        ctx.start_background(upstream.run, name=upstream.name)
        ctx.delay_listing(upstream.settled, at_most=ctx.config.startup_wait)


@hookimpl
async def nexus_status(ctx: PluginContext) -> list[str]:
    upstreams = ctx.state.get("upstreams", [])
    limit = min(SETTLE_LIMIT, max((u.table.connect_timeout for u in upstreams), default=0))
    with anyio.move_on_after(limit):
        for upstream in upstreams:
            await upstream.settled.wait()
    return [upstream.status_line() for upstream in upstreams] or ["no servers: add [plugins.bridge.servers.NAME]"]
