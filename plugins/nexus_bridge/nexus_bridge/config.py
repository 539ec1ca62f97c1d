"""The ``[plugins.bridge]`` table: one ``[plugins.bridge.servers.NAME]`` per upstream server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from nexus_core import EnvRef, PluginConfig

NAME = r"^[A-Za-z][A-Za-z0-9_-]*$"
# Header names whose values are credentials: only { env = "NAME" }, never the secret itself in the file.
SECRET_HEADER = re.compile(r"authorization|cookie|token|secret|key|password", re.IGNORECASE)

NEEDS: dict[str, tuple[str, ...]] = {"stdio": ("command",), "npm": ("package",), "http": ("url",), "sse": ("url",)}
PROCESS_KEYS = ("command", "args", "env", "cwd", "package")
HTTP_KEYS = ("url", "headers")


class ServerTable(BaseModel):
    """One upstream MCP server and how Nexus mounts it."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio", "npm", "http", "sse"]
    command: str | None = Field(None, description="stdio: the program to run.")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments; npm: arguments after the package.")
    env: dict[str, str | EnvRef] = Field(default_factory=dict, description="stdio/npm: added to a minimal environment.")
    cwd: Path | None = Field(None, description="stdio: working folder (default: the first root); npm: the data dir.")
    package: str | None = Field(None, description="npm: the package, run as `npx -y PACKAGE ARGS`.")
    url: str | None = Field(None, pattern=r"^https?://", description="http/sse: the endpoint.")
    headers: dict[str, str | EnvRef] = Field(default_factory=dict, description="http/sse: request headers.")
    prefix: str | None = Field(None, pattern=r"^([A-Za-z][A-Za-z0-9_-]*)?$", description="Default: the server's name.")
    allow: list[str] = Field(default_factory=list, description="Globs over upstream tool names; empty = all.")
    read_tools: list[str] = Field(
        default_factory=list,
        description="Globs over upstream tool names that only look (category read); every other tool is write, "
        "whatever the server's readOnlyHint says.",
    )
    trusted: bool = Field(False, description="Every tool of this server is read (you vouch that none changes a thing).")
    deny: list[str] = Field(default_factory=list, description="Globs over upstream tool names.")
    enabled: bool = True
    protocol: Literal["auto", "legacy"] = Field(
        "auto", description="auto: probe for 2026-07-28, else the initialize handshake; legacy: the handshake only."
    )
    retries: int = Field(5, ge=0, description="Failed connection attempts in a row before giving up.")
    backoff: float = Field(1.0, gt=0, description="Seconds before the first retry; doubles each time, up to 60.")
    connect_timeout: float = Field(30.0, gt=0)
    timeout: float = Field(60.0, gt=0, description="Seconds to wait for one answer from the server.")
    ping_interval: float = Field(30.0, ge=0, description="Seconds between liveness pings; 0 = none.")
    cache_ttl: float = Field(0.0, ge=0, description="Seconds to reuse results of read-only, idempotent tools; 0 = off.")

    @model_validator(mode="after")
    def _fits_type(self) -> ServerTable:
        missing = [key for key in NEEDS[self.type] if not getattr(self, key)]
        if missing:
            raise ValueError(f"type = '{self.type}' needs {missing[0]}")
        foreign = HTTP_KEYS if self.type in ("stdio", "npm") else PROCESS_KEYS
        given = [key for key in foreign if key in self.model_fields_set]
        if self.type == "stdio" and "package" in self.model_fields_set:
            given.append("package")
        if self.type == "npm" and "command" in self.model_fields_set:
            given.append("command")
        if given:
            raise ValueError(f"{given[0]} does not apply to type = '{self.type}'")
        return self

    @field_validator("headers")
    @classmethod
    def _no_inline_secrets(cls, headers: dict[str, str | EnvRef]) -> dict[str, str | EnvRef]:
        for name, value in headers.items():
            if isinstance(value, str) and SECRET_HEADER.search(name):
                raise ValueError(f'header {name} carries a credential: write {name} = {{ env = "VARIABLE" }}')
        return headers


class BridgeConfig(PluginConfig):
    SAMPLE: ClassVar[str] = """
startup_wait = 5                # seconds the first tools/list waits for servers still connecting
[plugins.bridge.servers.memory]   # its tools appear as memory_<name>; see nexus-bridge's README
type = "npm"                      # stdio | npm | http | sse
package = "@modelcontextprotocol/server-memory"
deny = ["delete_*"]               # globs over the server's own tool names
[plugins.bridge.servers.search]
type = "http"
url = "https://mcp.example.com/mcp"
headers = { Authorization = { env = "SEARCH_TOKEN" } }
"""
    servers: dict[str, ServerTable] = Field(default_factory=dict)
    startup_wait: float = Field(
        5.0, ge=0, description="Seconds the first tools/list (or call) waits for servers still connecting."
    )

    @field_validator("servers")
    @classmethod
    def _distinct_prefixes(cls, servers: dict[str, ServerTable]) -> dict[str, ServerTable]:
        seen: dict[str, str] = {}
        for name, table in servers.items():
            if not re.match(NAME, name):
                raise ValueError(f"server name '{name}' must start with a letter (letters, digits, _ and - after)")
            prefix = prefix_of(name, table)
            if not table.enabled:
                continue
            if prefix in seen:
                raise ValueError(
                    f"servers '{seen[prefix]}' and '{name}' have the same prefix '{prefix}': "
                    "their tools' names would collide; give one a different prefix"
                )
            seen[prefix] = name
        return servers


def prefix_of(name: str, table: ServerTable) -> str:
    return name if table.prefix is None else table.prefix
