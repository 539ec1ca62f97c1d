"""``nexus install``: add Nexus to a desktop client's MCP config without touching its other entries."""

from __future__ import annotations

import difflib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexus_core.errors import NexusError


@dataclass(frozen=True)
class ClientTarget:
    name: str
    path: Path
    key: str  # the object in the file that maps server names to launch entries
    typed: bool = False  # VS Code wants "type": "stdio" in each entry


def claude_config_path() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library/Application Support/Claude/claude_desktop_config.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData/Roaming")) / "Claude/claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "Claude/claude_desktop_config.json"


def target(client: str, path: Path | None = None) -> ClientTarget:
    """Where each client keeps its MCP servers (VS Code: the workspace's ``.vscode/mcp.json``)."""
    match client:
        case "claude":
            return ClientTarget("Claude Desktop", path or claude_config_path(), "mcpServers")
        case "cursor":
            return ClientTarget("Cursor", path or Path.home() / ".cursor/mcp.json", "mcpServers")
        case "vscode":
            return ClientTarget("VS Code", path or Path.cwd() / ".vscode/mcp.json", "servers", typed=True)
    raise NexusError(f"unknown client '{client}' (known: claude, cursor, vscode)")


def launch_entry(client: ClientTarget, command: str, args: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    return entry | {"command": command, "args": args}


def plan(client: ClientTarget, server_name: str, entry: dict[str, Any]) -> tuple[str, str]:
    """The file's text before and after adding ``entry``; every other key is kept as it was."""
    before = client.path.read_text(encoding="utf-8") if client.path.exists() else ""
    try:
        data = json.loads(before) if before.strip() else {}
    except json.JSONDecodeError as exc:
        raise NexusError(f"{client.path} is not valid JSON ({exc}); fix it first, nothing was written") from None
    if not isinstance(data, dict) or not isinstance(data.get(client.key, {}), dict):
        raise NexusError(f"{client.path}: expected an object with a '{client.key}' object; nothing was written")
    data.setdefault(client.key, {})[server_name] = entry
    return before, json.dumps(data, indent=2) + "\n"


def diff(path: Path, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"{path} (before)", f"{path} (after)"
    )
    return "".join(lines)
