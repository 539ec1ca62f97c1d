"""Which failed requests mean the upstream connection is gone (reconnect) and which are only a bad answer."""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

from nexus_bridge.upstream import _connection_failed


@pytest.mark.parametrize(
    ("exc", "gone"),
    [
        (MCPError(code=CONNECTION_CLOSED, message="Connection closed"), True),
        (MCPError(code=INVALID_REQUEST, message="Session terminated"), True),  # a restarted HTTP server
        (BrokenPipeError(), True),
        (httpx2.ConnectError("refused"), True),
        (MCPError(code=INVALID_PARAMS, message="Unknown tool: x"), False),
        (MCPError(code=INTERNAL_ERROR, message="Server returned an error response"), False),
        (RuntimeError("structured content does not match the output schema"), False),
        (TimeoutError(), False),
    ],
)
def test_only_transport_failures_drop_the_connection(exc: BaseException, gone: bool) -> None:
    assert _connection_failed(exc) is gone
