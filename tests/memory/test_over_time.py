"""Issue 16 beyond recall quality, through the MCP client: supersedes links demote the old memory, the archive
state, freshness (old memories lose a little rank, a recall makes them fresh) and tag suggestions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from mcp import Client

from nexus_memory.recall.scoring import FRESHNESS_PENALTY, SUPERSEDED_PENALTY, TAG_BOOST, age_penalty
from nexus_memory.store.tags import TagIndex
from tests.memory.conftest import service_in
from tests.memory.helpers import call, fails, store

pytestmark = pytest.mark.anyio

OLD = "Deploys use the blue-green script on the two web hosts; traffic switches in the nginx upstream."
NEW = "Deploys use the blue-green pipeline on the two web hosts; traffic switches in the nginx upstream."
QUERY = "how do we deploy the web hosts with the blue-green script"


async def _recalled_at(client: Client, memory_id: str) -> str:
    for _ in range(100):
        stamp = (await call(client, "get_memory", memory_id=memory_id))["last_recalled_at"]
        if stamp:
            return stamp
        await anyio.sleep(0.05)
    raise AssertionError("last_recalled_at was never written")


def _by_id(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in out["memories"]}


async def test_a_superseded_memory_ranks_below_its_successor(memory_host) -> None:
    async with Client(memory_host().server) as client:
        old, new = await store(client, OLD, "ops", ["runbook"]), await store(client, NEW, "ops", ["runbook"])
        before = await call(client, "recall_memories", query=QUERY, limit=2)
        assert [m["id"] for m in before["memories"]] == [old, new]  # the old text is closer to the query
        gap = before["memories"][0]["score"] - before["memories"][1]["score"]
        assert 0 < gap < SUPERSEDED_PENALTY
        await call(client, "link_memories", source_id=new, target_id=old, relation_type="supersedes")
        after = await call(client, "recall_memories", query=QUERY, limit=2)
        assert [m["id"] for m in after["memories"]] == [new, old]
        demoted = _by_id(after)[old]
        assert demoted["superseded_by"] == [new] and _by_id(after)[new]["superseded_by"] == []
        assert demoted["score"] == pytest.approx(_by_id(before)[old]["score"] - SUPERSEDED_PENALTY, abs=2e-4)
        # Another relation does not demote, and unlinking restores the order at once.
        await call(client, "unlink_memories", source_id=new, target_id=old)
        await call(client, "link_memories", source_id=new, target_id=old, relation_type="related")
        again = await call(client, "recall_memories", query=QUERY, limit=2)
        assert [m["id"] for m in again["memories"]] == [old, new]
        assert _by_id(again)[old]["superseded_by"] == []


@pytest.mark.parametrize("dropped", [200, 0], ids=["dropped-by-recall", "filtered-by-chroma"])
async def test_archived_memories_are_skipped_unless_asked(
    memory_host, monkeypatch: pytest.MonkeyPatch, dropped: int
) -> None:
    monkeypatch.setattr("nexus_memory.recall.pipeline.ARCHIVED_DROPPED", dropped)  # both ways of leaving them out
    host = memory_host()
    async with Client(host.server) as client:
        kept = await store(client, NEW, "ops", ["runbook"])
        gone = await store(client, OLD, "ops", ["runbook"])
        out = await call(client, "update_memory", memory_id=gone, archived=True)
        assert out["changes"] == ["archived"]
        assert (await call(client, "get_memory", memory_id=gone))["archived"] is True
        recalled = await call(client, "recall_memories", query=QUERY, limit=5)
        assert [m["id"] for m in recalled["memories"]] == [kept]
        listed = await call(client, "list_memories")
        assert [m["id"] for m in listed["memories"]] == [kept] and listed["total_count"] == 1
        everything = await call(client, "recall_memories", query=QUERY, limit=5, include_archived=True)
        assert _by_id(everything)[gone]["archived"] is True and len(everything["memories"]) == 2
        assert (await call(client, "list_memories", include_archived=True))["total_count"] == 2
        assert (await call(client, "get_stats"))["archived_memories"] == 1
        # A record written before `archived` existed (no such key) is not archived.
        st = service_in(host).store
        meta = st.memories.get(ids=[kept], include=["metadatas"])["metadatas"][0]
        st.memories.update(ids=[kept], metadatas=[{**meta, "archived": None}])
        assert "archived" not in st.memories.get(ids=[kept], include=["metadatas"])["metadatas"][0]
        assert [m["id"] for m in (await call(client, "list_memories"))["memories"]] == [kept]
        # Restoring brings it back; a bad value is refused and changes nothing.
        assert "archived" in await fails(client, "update_memory", memory_id=gone, archived="maybe")
        assert (await call(client, "update_memory", memory_id=gone, archived=False))["changes"] == ["archived"]
        assert len((await call(client, "recall_memories", query=QUERY, limit=5))["memories"]) == 2


def test_age_penalty_halves_in_a_year_and_counts_from_the_later_stamp() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    year, day = (now - timedelta(days=365)).isoformat(), (now - timedelta(days=1)).isoformat()
    assert age_penalty(year, "", now) == pytest.approx(FRESHNESS_PENALTY / 2)
    assert age_penalty(year, day, now) == pytest.approx(FRESHNESS_PENALTY * (1 - 0.5 ** (1 / 365)))
    assert age_penalty(now.isoformat(), "", now) == 0.0 and age_penalty("", "", now) == 0.0
    assert age_penalty((now - timedelta(days=3650)).isoformat(), "", now) < FRESHNESS_PENALTY


async def test_an_old_memory_loses_a_little_rank_until_it_is_recalled(memory_host) -> None:
    host = memory_host()
    async with Client(host.server) as client:
        mid = await store(client, OLD, "ops", ["runbook"])
        service_in(host).touch_delay = 0  # the stamps are written in batches, 30 s apart by default
        st = service_in(host).store
        two_years = (datetime.now(UTC) - timedelta(days=730)).isoformat()
        st.memories.update(ids=[mid], metadatas=[{"updated_at": two_years}])
        st.close()  # written behind the store: reopened, as a later start finds it (the mirror is read again)
        first = (await call(client, "recall_memories", query=QUERY, limit=1))["memories"][0]
        recalled_at = await _recalled_at(client, mid)  # written by a worker thread, after the answer
        assert recalled_at[:10] == datetime.now(UTC).isoformat()[:10]
        second = (await call(client, "recall_memories", query=QUERY, limit=1))["memories"][0]
        assert second["similarity"] == first["similarity"]  # the score also holds OLD's best-sentence lift
        assert second["score"] - first["score"] == pytest.approx(FRESHNESS_PENALTY * 0.75, abs=2e-4)
        assert (await call(client, "get_memory", memory_id=mid))["last_recalled_at"] == recalled_at  # once a day


async def test_store_suggests_the_tags_similar_memories_use(memory_host) -> None:
    async with Client(memory_host().server) as client:
        for i in range(3):
            await store(
                client, f"Postgres in docker refused connections on port 543{i}.", "api", ["postgres", "docker"]
            )
        await store(client, "The CSS grid collapsed in Safari.", "web", ["css"])
        out = await call(
            client,
            "store_memory",
            content="Postgres in the docker compose stack refused connections.",
            context_name="billing",
            tags=["docker", "incident"],
            memory_type="failure",
        )
        assert out["suggested_tags"] == ["postgres"]  # not docker (it has it), not css (not similar)
        lone = await call(client, "store_memory", content="Bought a new keyboard.", context_name="life", tags=[])
        assert lone["suggested_tags"] == []


def test_a_query_names_tags_as_whole_words() -> None:
    index = TagIndex({"jwt", "key-rotation", "go", "c++", "android", "性能"})
    assert index.named_in("JWT 签名密钥轮换后一半服务拒绝令牌") == ["jwt"]
    assert index.named_in("after the key rotation on Android 13, c++ builds fail") == ["android", "c++", "key-rotation"]
    assert index.named_in("google golang: going nowhere") == []  # no tag inside another word
    assert index.named_in("数据库性能下降") == ["性能"]


async def test_a_memory_whose_tag_the_query_names_gains_the_tag_boost(memory_host) -> None:
    async with Client(memory_host(embedder="minilm+e5").server) as client:
        tagged = await store(client, "Push messages stopped arriving after the OS upgrade.", "mobile", ["android"])
        plain = await store(client, "Push messages stopped arriving after the OS upgrade on phones.", "mobile", [])
        await call(client, "update_memory", memory_id=plain, tags=["ios"])
        out = _by_id(await call(client, "recall_memories", query="Android 13 收不到通知", limit=5))
        assert out[tagged]["score"] == pytest.approx(out[tagged]["similarity"] + TAG_BOOST, abs=2e-4)
        assert out[plain]["score"] == pytest.approx(out[plain]["similarity"], abs=2e-4)
        # A tag added later is known at once.
        await call(client, "update_memory", memory_id=plain, tags=["ios", "push-notifications"])
        out = _by_id(await call(client, "recall_memories", query="push notifications never arrive", limit=5))
        assert out[plain]["score"] == pytest.approx(out[plain]["similarity"] + TAG_BOOST, abs=2e-4)
        assert out[tagged]["score"] == pytest.approx(out[tagged]["similarity"], abs=2e-4)
    async with Client(memory_host(embedder="minilm", collection="light").server) as client:  # none in light mode
        tagged = await store(client, "Push messages stopped arriving after the OS upgrade.", "mobile", ["android"])
        out = _by_id(await call(client, "recall_memories", query="Android 13 收不到通知", limit=5))
        assert out[tagged]["score"] == pytest.approx(out[tagged]["similarity"], abs=2e-4)


async def test_analysis_lists_archive_candidates_until_they_are_archived(memory_host) -> None:
    host = memory_host()
    async with Client(host.server) as client:
        old, new = await store(client, OLD, "ops", ["runbook"]), await store(client, NEW, "ops", ["runbook"])
        unused = await store(client, "The office printer needs the blue cable.", "office", ["printer"])
        assert "archive_candidates" not in {i["type"] for i in (await call(client, "analyze_knowledge"))["issues"]}
        three_years = (datetime.now(UTC) - timedelta(days=3 * 365)).isoformat()
        service_in(host).store.memories.update(ids=[unused], metadatas=[{"updated_at": three_years}])
        await call(client, "link_memories", source_id=new, target_id=old, relation_type="supersedes")
        issues = {i["type"]: i for i in (await call(client, "analyze_knowledge"))["issues"]}
        assert set(issues["archive_candidates"]["affected_memory_ids"]) == {old, unused}
        assert "archived=true" in issues["archive_candidates"]["suggested_action"]
        for mid in (old, unused):
            await call(client, "update_memory", memory_id=mid, archived=True)
        assert "archive_candidates" not in {i["type"] for i in (await call(client, "analyze_knowledge"))["issues"]}
