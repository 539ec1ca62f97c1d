"""The legacy HTTP+SSE transport (MCP 2024-11-05), served beside Streamable HTTP on the same listener.

Design 000 names stdio or SSE, and some clients still speak only SSE. It is off
unless asked (``nexus serve --transport sse``), and then served by the same app
as ``/mcp``: the same bearer token (the app's authentication, and
``RequireAuthMiddleware`` on both routes), the same Host and Origin checks, the
same message limit, and one session per connection, as every HTTP client has.
A client opens ``GET /sse``, is told where to post, and posts its messages to
``/messages/?session_id=...`` with the same token.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.sse import SseServerTransport
from starlette.routing import Mount, Route

from nexus_core.host import sdk
from nexus_core.serve.limits import MAX_MESSAGE

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

log = logging.getLogger("nexus")

SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


def add_sse_routes(app: Starlette, server: MCPServer, security: TransportSecuritySettings) -> None:
    """Serve ``server`` over HTTP+SSE from ``app`` too: ``GET /sse`` and ``POST /messages/``, token required."""
    transport = SseServerTransport(MESSAGES_PATH, security_settings=security, max_request_body_size=MAX_MESSAGE)
    low = sdk.lowlevel(server)

    async def connect(scope: Any, receive: Any, send: Any) -> None:
        serving = False
        try:
            async with transport.connect_sse(scope, receive, send) as (read, write):
                serving = True
                await low.run(read, write, low.create_initialization_options())
        except ValueError:
            if serving:
                raise
            log.info("refused an SSE connection: a foreign Host or Origin (answered with its status)")

    app.router.routes[:0] = [
        Route(SSE_PATH, RequireAuthMiddleware(connect, []), methods=["GET"]),
        Mount(MESSAGES_PATH, app=RequireAuthMiddleware(transport.handle_post_message, [])),
    ]
