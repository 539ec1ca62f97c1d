"""Helpers for the nexus-graph tests: call tools through the client, read and write graph files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def fail(client: Client, tool: str, **args: Any) -> str:
    """Call a tool that must fail; its error text."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have failed: {result.structured_content}"
    return result.content[0].text


async def add(client: Client, id: str, name: str, category: str = "concepts", **extra: Any) -> dict[str, Any]:
    kind, desc = extra.pop("type", "concept"), extra.pop("desc", "")
    return await call(client, "add_entity", category=category, id=id, type=kind, name=name, desc=desc, **extra)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_lines(path: Path, records: list[dict[str, Any] | str]) -> None:
    """Append records (or raw text) to a graph file, as another tool or a person would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for record in records:
            f.write(record if isinstance(record, str) else json.dumps(record) + "\n")
