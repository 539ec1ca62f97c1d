"""Which failed requests mean the upstream connection is gone (reconnect) and which are only a bad answer."""

from __future__ import annotations

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from pydantic import ValidationError

from nexus_bridge.upstream import _connection_failed, describe


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


def test_a_failure_is_described_in_one_line() -> None:
    """A server's tool list that the protocol refuses fails the connection with pydantic's many lines: the
    reason `nexus plugins`, the log and a call show stays one line."""
    with pytest.raises(ValidationError) as refused:
        types.Tool.model_validate({"name": "x", "inputSchema": 5})
    reason = describe(refused.value)
    assert "\n" not in reason and reason.startswith("ValidationError: 1 validation error for Tool; inputSchema")
