"""``nexus install`` and ``nexus uninstall``: Nexus's entry in each client's own MCP config file.

One ``Client`` per client says where its file is, which table maps server names
to launch entries, what an entry holds besides ``command`` and ``args``, and
whether the file is JSON, JSON with comments or TOML (each from the client's
documentation). The file is edited as text (``textedit``), so everything else
in it stays byte for byte.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nexus_core.clients import text_edit
from nexus_core.errors import NexusError


@dataclass(frozen=True)
class Client:
    title: str
    file: Callable[[], Path]  # where the client reads its MCP servers (the user's, unless said otherwise)
    table: str  # the object (TOML: table) that maps server names to launch entries
    before: dict[str, Any] = field(default_factory=dict)  # keys an entry has before command and args
    after: dict[str, Any] = field(default_factory=dict)  # and after them
    format: Literal["json", "jsonc", "toml"] = "json"
    workspace: str | None = None  # the file, relative to a project folder, for `--workspace`
    next_step: str = ""  # what the user still does in the client after the file is written

    def entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.before, "command": command, "args": args, **self.after}


def _home(*parts: str) -> Callable[[], Path]:
    return lambda: Path.home().joinpath(*parts)


def _app_config(*parts: str) -> Path:
    """The per-user application folder: ~/Library/Application Support, %APPDATA%, or $XDG_CONFIG_HOME."""
    if sys.platform == "darwin":
        return Path.home().joinpath("Library/Application Support", *parts)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData/Roaming")).joinpath(*parts)
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")).joinpath(*parts)


def _zed() -> Path:
    if sys.platform == "win32":
        return _app_config("Zed", "settings.json")
    base = os.environ.get("XDG_CONFIG_HOME") if sys.platform != "darwin" else None
    return Path(base or Path.home() / ".config") / "zed/settings.json"


def _cline_cli() -> Path:
    return Path(
        os.environ.get("CLINE_MCP_SETTINGS_PATH") or Path.home() / ".cline/data/settings/cline_mcp_settings.json"
    )


def _codex() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


CLIENTS: dict[str, Client] = {
    # claude_desktop_config.json, "mcpServers" (modelcontextprotocol.io quickstart for users)
    "claude": Client("Claude Desktop", lambda: _app_config("Claude", "claude_desktop_config.json"), "mcpServers"),
    # ~/.claude.json, top-level "mcpServers" = user scope, as `claude mcp add --scope user` writes it
    "claude-code": Client(
        "Claude Code", _home(".claude.json"), "mcpServers", before={"type": "stdio"}, after={"env": {}}
    ),
    # ~/.cursor/mcp.json, "mcpServers"; a project's .cursor/mcp.json (cursor.com/docs/mcp)
    "cursor": Client("Cursor", _home(".cursor", "mcp.json"), "mcpServers", workspace=".cursor/mcp.json"),
    # the user profile's mcp.json (Code/User), "servers" with "type": "stdio"; a workspace's .vscode/mcp.json;
    # comments allowed (VS Code docs: MCP servers)
    "vscode": Client(
        "VS Code",
        lambda: _app_config("Code", "User", "mcp.json"),
        "servers",
        before={"type": "stdio"},
        format="jsonc",
        workspace=".vscode/mcp.json",
        next_step="In VS Code, open the Extensions view's MCP SERVERS section (or run `MCP: List Servers`) "
        "and start 'nexus'; trust it when asked.",
    ),
    # ~/.codeium/windsurf/mcp_config.json, "mcpServers" (docs.windsurf.com, Cascade MCP)
    "windsurf": Client("Windsurf", _home(".codeium", "windsurf", "mcp_config.json"), "mcpServers"),
    # $CODEX_HOME/config.toml (~/.codex), one [mcp_servers.NAME] table per server (Codex MCP docs)
    "codex": Client("Codex CLI", _codex, "mcp_servers", format="toml"),
    # ~/.gemini/settings.json, "mcpServers"; comments allowed (Gemini CLI docs: tools/mcp-server.md)
    "gemini": Client(
        "Gemini CLI",
        _home(".gemini", "settings.json"),
        "mcpServers",
        format="jsonc",
        workspace=".gemini/settings.json",
        next_step="With folder trust on, Gemini CLI shows Nexus as Disabled until you trust the folder you start "
        'it in: choose "Trust folder" when it asks (`nexus doctor` checks).',
    ),
    # Zed's settings.json, "context_servers" with "source": "custom" (zed docs: ai/mcp.md); JSONC
    "zed": Client("Zed", _zed, "context_servers", before={"source": "custom"}, after={"env": {}}, format="jsonc"),
    # cline_mcp_settings.json in VS Code's global storage for the extension (docs.cline.bot, MCP servers)
    "cline": Client(
        "Cline",
        lambda: _app_config("Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
        "mcpServers",
        after={"disabled": False, "autoApprove": []},
        next_step="For the Cline CLI (its own file): `nexus install cline-cli`.",
    ),
    # the Cline CLI: ~/.cline/data/settings/cline_mcp_settings.json, or $CLINE_MCP_SETTINGS_PATH (`cline mcp`)
    "cline-cli": Client(
        "the Cline CLI",
        _cline_cli,
        "mcpServers",
        after={"disabled": False, "autoApprove": []},
        next_step="For the Cline extension in VS Code: `nexus install cline`.",
    ),
}


def client(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise NexusError(f"unknown client '{name}' (known: {', '.join(CLIENTS)})") from None


def snippet(client: Client, server_name: str, entry: dict[str, Any]) -> str:
    """The entry as it would appear in the client's file (for ``--print``)."""
    if client.format == "toml":
        return text_edit.toml_set("", client.table, server_name, entry)
    return json.dumps({client.table: {server_name: entry}}, indent=2) + "\n"


def with_entry(client: Client, text: str, server_name: str, entry: dict[str, Any], path: Path) -> str:
    """``text`` (the client's file) with the entry added or replaced."""
    try:
        if client.format == "toml":
            return text_edit.toml_set(text, client.table, server_name, entry)
        return text_edit.json_set(text, client.table, server_name, entry, jsonc=client.format == "jsonc")
    except ValueError as exc:
        raise NexusError(f"{path}: {exc}; nothing was written") from None


def without_entry(client: Client, text: str, server_name: str, path: Path) -> str | None:
    """``text`` without the entry, or None when the file has none by that name."""
    try:
        if client.format == "toml":
            return text_edit.toml_remove(text, client.table, server_name)
        return text_edit.json_remove(text, client.table, server_name, jsonc=client.format == "jsonc")
    except ValueError as exc:
        raise NexusError(f"{path}: {exc}; nothing was written") from None


def diff(path: Path, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"{path} (before)", f"{path} (after)"
    )
    return "".join(lines)
