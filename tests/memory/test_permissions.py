"""The categories: read and write on by default, delete off."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.memory.helpers import call, fails, store

pytestmark = pytest.mark.anyio


async def test_default_grants(memory_host) -> None:
    async with Client(memory_host(categories=None).server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "store_memory" in tools and "recall_memories" in tools and "link_memories" in tools
        assert "delete_memory" not in tools and "merge_memories" not in tools
        assert tools["recall_memories"].annotations.read_only_hint is True
        assert tools["unlink_memories"].annotations.destructive_hint is True
        assert tools["store_memory"].annotations.destructive_hint is False
        mid = await store(client, "Something worth keeping.", "api", ["x"])
        assert "delete" in await fails(client, "delete_memory", memory_id=mid)
        assert (await call(client, "get_memory", memory_id=mid))["id"] == mid


async def test_read_only(memory_host) -> None:
    async with Client(memory_host(categories=["read"]).server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {
            "ping",
            "recall_memories",
            "list_memories",
            "get_memory",
            "get_stats",
            "get_memory_links",
            "explore_related",
            "analyze_knowledge",
            "export_memories",
        }
        assert "write" in await fails(client, "store_memory", content="x", context_name="y")
        assert (await call(client, "get_stats"))["total_memories"] == 0
