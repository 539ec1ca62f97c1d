"""Fixtures for the manual plugin: real library folders in tmp_path, served through the MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import nexus_manual


class Tools:
    """Calls tools through an MCP client: ``ok`` expects success, ``err`` expects an isError result."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, result.content[0].text
        return result.structured_content

    async def err(self, tool: str, **args: Any) -> str:
        result = await self.client.call_tool(tool, args)
        assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
        return result.content[0].text


@pytest.fixture
def root(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    (notes / "work").mkdir(parents=True)
    (notes / "personal").mkdir()
    return notes


@pytest.fixture
def manual(make_host, root: Path) -> Callable[..., Any]:
    """``async with manual(**table) as tools``: a host with the plugin, both categories granted by default."""

    @asynccontextmanager
    async def open_(**table: Any) -> AsyncIterator[Tools]:
        config = {
            "roots": [str(root)],
            "categories": ["read", "write"],
            "libraries": {"work": str(root / "work"), "personal": str(root / "personal")},
        } | table
        host = make_host({"manual": nexus_manual}, {"plugins": {"manual": config}})
        async with Client(host.server) as client:
            yield Tools(client)

    return open_


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def entity(name: str, body: str = "", *, relations: list[tuple[str, str]] = (), extra: str = "") -> str:
    """The text of an entity file as a person would write it."""
    rels = "".join(f"- type: {t}\n  to: {to}\n" for t, to in relations)
    return f"---\nentity_type: note\n{extra}relations:\n{rels or '[]'}\n---\n{body}".replace(
        "relations:\n[]", "relations: []"
    )
