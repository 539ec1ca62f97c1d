"""The refusal a tool may let escape: a ``ToolError`` the model reads, and a ``NexusError``."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError

from nexus_core.errors import NexusError


class PermissionDenied(ToolError, NexusError):
    """A call or a path was refused by the permission policy; the message says why.

    It is a ``ToolError``, so a tool that lets it escape returns an ``isError``
    result the model can read, and the server keeps serving.
    """
