"""The answer to a client's ``initialize``, which the relay gives while the shared server it started is loading.

Standard library only: the relay imports it at every launch. A cold start (no shared server running) takes the
server a second or more: the SDK and every plugin load before it listens. A client waits for nothing but the
answer to ``initialize``, which depends on nothing the server loads: the protocol version (the client's when it is
one of the handshake era's, else the latest), the server's name and version, and capabilities that are the same
for every Nexus. So the relay answers it at once and hands the line over to the server as the session's handshake
to replay (``client_pipes``), whose own answer is compared with this one and dropped. A request the relay cannot
vouch for (not well-formed, a config it cannot read) is left to the server. ``tests/core/test_greeting.py`` checks
the answer against the SDK's for every version it speaks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The SDK's (mcp_types.version): the era of the initialize handshake, and its latest version.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"
INSTRUCTIONS = "Nexus: tools, resources and prompts from installed plugins, under per-plugin permissions."
# What the host's server declares (it serves every list, and its lists change while serving: ``sdk``).
CAPABILITIES = {
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": False},
    "tools": {"listChanged": True},
}


def result(protocol_version: str, name: str, version: str) -> dict[str, Any]:
    """The ``initialize`` result for a client asking for ``protocol_version``."""
    negotiated = protocol_version if protocol_version in HANDSHAKE_VERSIONS else LATEST
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": negotiated,
        "serverInfo": {"name": name, "version": version},
    }


def answer(line: bytes, name: str, version: str) -> tuple[bytes, dict[str, Any]] | None:
    """The answer line to ``line`` when it is a well-formed ``initialize`` request, and its result; else None."""
    try:
        request = json.loads(line)
    except ValueError:
        return None
    if not _is_initialize(request):
        return None
    found = result(request["params"]["protocolVersion"], name, version)
    reply = {"jsonrpc": "2.0", "id": request["id"], "result": found}
    return json.dumps(reply, separators=(",", ":")).encode() + b"\n", found


def _is_initialize(request: Any) -> bool:
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or request.get("method") != "initialize":
        return False
    request_id, params = request.get("id"), request.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not isinstance(params, dict):
        return False
    client, capabilities = params.get("clientInfo"), params.get("capabilities")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(client, dict)
        and all(isinstance(client.get(key), str) for key in ("name", "version"))
        and isinstance(capabilities, dict)
        and all(isinstance(value, dict) for value in capabilities.values())
    )


def server_name(config: Path | None, overrides: Sequence[str], name: str | None) -> str | None:
    """The server's name as the shared server will read it: ``--name``, else the last ``--set server.name=``, else
    ``[server] name`` in the config file, else ``nexus``; None when it cannot be told here (the server says why)."""
    if name:
        return name
    for item in reversed(overrides):
        key, sep, value = item.partition("=")
        if sep and key.strip() == "server.name":
            found = (_toml(f"value = {value}") or {}).get("value")
            return found if isinstance(found, str) else None
    if config is None:
        return "nexus"
    try:
        data = _toml(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    server = data.get("server", {}) if data is not None else None
    found = server.get("name", "nexus") if isinstance(server, dict) else None
    return found if isinstance(found, str) and found else None


def _toml(text: str) -> dict[str, Any] | None:
    """``text`` parsed; None when it is not TOML (the server will say why)."""
    import tomllib  # here: a relay launched with no config file parses no TOML

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
