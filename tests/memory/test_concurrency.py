"""Many calls at once through one client session: every read-modify-write is serialised, so nothing is lost
and no link outlives its memory. Each test counts what is in the store afterwards."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from tests.memory.helpers import call, store

pytestmark = pytest.mark.anyio

N = 12


async def test_parallel_updates_of_one_memory_keep_every_change(client: Client) -> None:
    """Content, tags and type of each memory change in three concurrent calls: each keeps all three."""
    ids = [await store(client, f"Draft {i} about the build cache.", "ci", [f"old{i}"], "note") for i in range(N)]
    async with anyio.create_task_group() as tg:
        for i, mid in enumerate(ids):
            tg.start_soon(lambda m=mid, i=i: call(client, "update_memory", memory_id=m, content=f"Final text {i}."))
            tg.start_soon(lambda m=mid, i=i: call(client, "update_memory", memory_id=m, tags=[f"new{i}", "ci"]))
            tg.start_soon(lambda m=mid: call(client, "update_memory", memory_id=m, memory_type="decision"))
    for i, mid in enumerate(ids):
        got = await call(client, "get_memory", memory_id=mid)
        assert (got["content"], got["tags"], got["type"]) == (f"Final text {i}.", [f"new{i}", "ci"], "decision")
    stats = await call(client, "get_stats")
    assert stats["total_memories"] == N and stats["memories_by_type"]["decision"] == N


async def test_parallel_links_and_deletes_leave_no_dangling_link(client: Client) -> None:
    """Linking to a memory while it is deleted: either the link is refused or the delete removes it."""
    targets = [await store(client, f"Target {i}: retry with jitter.", "api", ["t"]) for i in range(N)]
    sources = [await store(client, f"Source {i}: timeouts under load.", "api", ["s"]) for i in range(N)]
    outcomes: list[bool] = []

    async def link(source: str, target: str) -> None:
        args = {"source_id": source, "target_id": target, "relation_type": "related"}
        outcomes.append(not (await client.call_tool("link_memories", args)).is_error)

    async with anyio.create_task_group() as tg:
        for source, target in zip(sources, targets, strict=True):
            tg.start_soon(link, source, target)
            tg.start_soon(lambda t=target: call(client, "delete_memory", memory_id=t))
            tg.start_soon(link, target, source)
    assert len(outcomes) == 2 * N
    stats = await call(client, "get_stats")
    assert stats["total_memories"] == N and stats["total_links"] == 0
    for source in sources:
        links = await call(client, "get_memory_links", memory_id=source)
        assert links["links"] == [] and links["incoming"] == []


async def test_parallel_merges_and_links_keep_every_link_on_a_living_memory(client: Client) -> None:
    """Links made to memories while they are merged away end on the memory that remains."""
    keep = await store(client, "Celery: enable task_acks_late.", "jobs", ["celery"])
    folded = [
        await store(client, f"Celery note {i}: tasks lost on worker death.", "jobs", ["celery"]) for i in range(N)
    ]
    others = [await store(client, f"Queue note {i}: jobs must be idempotent.", "jobs", ["queues"]) for i in range(N)]
    made: list[str] = []

    async def link(source: str, target: str) -> None:
        args = {"source_id": source, "target_id": target, "relation_type": "depends_on"}
        if not (await client.call_tool("link_memories", args)).is_error:
            made.append(source)

    async with anyio.create_task_group() as tg:
        for i in range(0, N, 3):
            tg.start_soon(lambda f=folded[i : i + 3]: call(client, "merge_memories", target_id=keep, source_ids=f))
        for other, gone in zip(others, folded, strict=True):
            tg.start_soon(link, other, gone)
    stats = await call(client, "get_stats")
    assert stats["total_memories"] == 1 + N
    incoming = (await call(client, "get_memory_links", memory_id=keep))["incoming"]
    assert sorted(lk["source_id"] for lk in incoming) == sorted(made) and stats["total_links"] == len(made)
