"""Helpers for calling the memory tools through the MCP client."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured output."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content


async def fails(client: Client, tool: str, **args: Any) -> str:
    """Call a tool that must fail; its error text."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return result.content[0].text


async def store(
    client: Client, content: str, context: str = "api", tags: list[str] | None = None, memory_type: str = "insight"
) -> str:
    out = await call(
        client, "store_memory", content=content, context_name=context, tags=tags or [], memory_type=memory_type
    )
    return out["id"]
