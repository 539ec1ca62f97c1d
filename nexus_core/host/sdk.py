"""The one place Nexus reaches past the MCP SDK's public surface.

``MCPServer`` keeps its protocol-level server in the private ``_lowlevel_server``;
Nexus needs it to serve pipes it owns (the shared server's relays, stdio), to
mount Streamable HTTP on its own listener, to ask which methods have handlers,
to declare an extension and to announce list changes; and the tool manager, to
add a tool built already while serving. When the SDK moves any
of these, this module is what changes.
"""

from __future__ import annotations

import functools
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from mcp.server.lowlevel import NotificationOptions

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool


def lowlevel(server: MCPServer) -> Any:
    """The protocol-level server under ``server``: what serves one stream of messages."""
    return server._lowlevel_server


def lifespan(server: MCPServer) -> AbstractAsyncContextManager[Any]:
    """The server's lifespan (plugins started, stopped at the end); its state goes to every stream served."""
    low = lowlevel(server)
    return low.lifespan(low)  # type: ignore[no-any-return]


def handles(server: MCPServer, method: str) -> bool:
    """Whether ``server`` has a handler for the request ``method``."""
    return lowlevel(server).get_request_handler(method) is not None


def announce_list_changes(server: MCPServer) -> None:
    """Tell handshake-era clients that the tool, resource and prompt lists may change while serving."""
    low = lowlevel(server)
    low.create_initialization_options = functools.partial(
        low.create_initialization_options, NotificationOptions(True, True, True)
    )


def declare_extension(server: MCPServer, extension: str) -> None:
    """Advertise ``extension`` (e.g. MCP Apps) in the server's capabilities."""
    lowlevel(server).extensions[extension] = {}


def add_tool(server: MCPServer, tool: Tool) -> None:
    """Serve ``tool`` (built by the host, schemas compacted) from now on, beside those ``server`` was made with."""
    server._tool_manager._tools[tool.name] = tool


def streamable_http_app(server: MCPServer, **settings: Any) -> Any:
    """The Starlette app serving ``server`` over Streamable HTTP."""
    return lowlevel(server).streamable_http_app(**settings)
