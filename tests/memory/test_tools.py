"""Every memory tool through the MCP client, with the real model and an embedded Chroma."""

from __future__ import annotations

import importlib.metadata
import json
import uuid

import pytest
from mcp import Client

import nexus_core
from tests.memory.helpers import PG_FAILURE, PG_FIX, call, fails, store

pytestmark = pytest.mark.anyio


async def test_store_and_recall_by_meaning(client: Client) -> None:
    pg = await store(client, PG_FAILURE, "billing", ["postgres", "docker"], "failure")
    await store(
        client,
        "React 18 StrictMode runs useEffect twice in development; make effects idempotent.",
        "dashboard",
        ["react"],
    )
    await store(
        client,
        "Use integer cents for money; floats gave 0.30000000000000004 on invoices.",
        "billing",
        ["money"],
        "decision",
    )
    out = await call(client, "recall_memories", query="the app cannot reach its database container", limit=2)
    assert out["memories"][0]["id"] == pg and out["total_found"] == 2
    top = out["memories"][0]
    assert top["context"] == "billing" and top["tags"] == ["postgres", "docker"] and top["type"] == "failure"
    assert top["content"] == PG_FAILURE and top["summary"] == PG_FAILURE
    assert 0 < top["similarity"] <= 1 and len(out["memories"]) == 2
    assert out["memories"][0]["score"] >= out["memories"][1]["score"]


async def test_exact_terms_lift_memories_that_contain_them(client: Client) -> None:
    generic = await store(
        client,
        "Mongo unique index violations on signup: the handler retried and inserted the same user twice.",
        "users",
        ["mongodb"],
    )
    coded = await store(
        client, "Saw E11000 in the logs of the nightly import job; the dedupe step was skipped.", "etl", ["mongodb"]
    )
    out = await call(client, "recall_memories", query="duplicate key E11000 when a user registers")
    assert out["exact_terms"] == ["E11000"]
    by_id = {r["id"]: r for r in out["memories"]}
    assert by_id[coded]["matched_terms"] == ["E11000"] and by_id[generic]["matched_terms"] == []
    assert by_id[coded]["score"] == pytest.approx(by_id[coded]["similarity"] + 0.15, abs=1e-3)
    assert out["memories"][0]["id"] == coded


async def test_recall_filters(client: Client) -> None:
    a = await store(client, PG_FAILURE, "billing", ["postgres"], "failure")
    b = await store(
        client,
        "Postgres refused connections until the pg_hba.conf allowed the docker subnet.",
        "gateway",
        ["postgres", "network"],
        "success",
    )
    q = "database connection refused"

    async def recalled(**filters: object) -> list[str]:
        return [m["id"] for m in (await call(client, "recall_memories", query=q, **filters))["memories"]]

    assert await recalled(context_filter="gateway") == [b]
    assert await recalled(type_filter="failure") == [a]
    assert await recalled(tag_filter=["network", "nothing"]) == [b]
    assert await recalled(context_filter="nowhere") == []


async def test_list_paging_and_filters(client: Client) -> None:
    ids = [
        await store(
            client,
            f"Note number {n} about the build cache of service {n}.",
            "ci" if n % 2 else "api",
            [f"t{n}"],
            "note",
        )
        for n in range(5)
    ]
    page = await call(client, "list_memories", limit=2, offset=0)
    assert page["total_count"] == 5 and page["has_more"] is True
    assert [m["id"] for m in page["memories"]] == [ids[4], ids[3]]  # newest first
    last = await call(client, "list_memories", limit=2, offset=4)
    assert [m["id"] for m in last["memories"]] == [ids[0]] and last["has_more"] is False
    assert set(page) == {"memories", "total_count", "has_more"}
    ci = await call(client, "list_memories", context_filter="ci")
    assert ci["total_count"] == 2 and {m["id"] for m in ci["memories"]} == {ids[1], ids[3]}
    assert (await call(client, "list_memories", tag_filter=["t2"]))["memories"][0]["id"] == ids[2]
    assert (await call(client, "list_memories", type_filter="success"))["total_count"] == 0


async def test_get_update_and_summary(client: Client) -> None:
    long = "word " * 100 + "END"
    mid = await store(client, long, "api", ["a"])
    got = await call(client, "get_memory", memory_id=mid)
    assert got["summary"] == got["content"][:200]  # 002: the first 200 characters of the content

    same = await call(client, "update_memory", memory_id=mid, tags=["a"])
    assert same == {"success": True, "memory_id": mid, "changes": [], "updated_at": got["updated_at"]}

    upd = await call(
        client,
        "update_memory",
        memory_id=mid,
        content="Kafka consumers rebalance when max.poll.interval.ms is exceeded.",
        tags=["kafka"],
        memory_type="insight",
    )
    assert upd["changes"] == ["content", "tags"] and upd["updated_at"] > got["created_at"]
    found = await call(client, "recall_memories", query="message consumers keep leaving the group", limit=1)
    assert found["memories"][0]["id"] == mid and found["memories"][0]["tags"] == ["kafka"]  # re-embedded
    typ = await call(client, "update_memory", memory_id=mid, memory_type="decision")
    assert typ["changes"] == ["memory_type"]
    after = await call(client, "get_memory", memory_id=mid)
    assert (
        after["type"] == "decision"
        and after["updated_at"] == typ["updated_at"]
        and after["content"].startswith("Kafka")
    )


async def test_bad_input_is_refused_and_changes_nothing(client: Client) -> None:
    mid = await store(client, PG_FAILURE, "billing", ["postgres"], "failure")
    before = await call(client, "get_memory", memory_id=mid)
    unknown = str(uuid.uuid4())
    assert "no memory with id" in await fails(client, "get_memory", memory_id=unknown)
    assert "not a memory id" in await fails(client, "get_memory", memory_id="../etc/passwd")
    assert "content is empty" in await fails(client, "store_memory", content="   ", context_name="x", tags=[])
    assert "memory_type" in await fails(
        client, "store_memory", content="x", context_name="x", tags=[], memory_type="idea"
    )
    assert "limit" in await fails(client, "recall_memories", query="x", limit=21)
    assert "limit" in await fails(client, "recall_memories", query="x", limit=0)
    assert "limit" in await fails(client, "list_memories", limit=101)
    assert "empty strings" in await fails(client, "store_memory", content="x", context_name="x", tags=["ok", " "])
    assert "content is empty" in await fails(client, "update_memory", memory_id=mid, content="", tags=["new"])
    assert "nothing to update" in await fails(client, "update_memory", memory_id=mid)
    assert "no memory with id" in await fails(client, "update_memory", memory_id=unknown, tags=["x"])
    assert "no memory with id" in await fails(client, "delete_memory", memory_id=unknown)
    assert "no memory with id" in await fails(
        client, "link_memories", source_id=mid, target_id=unknown, relation_type="related"
    )
    assert "itself" in await fails(client, "link_memories", source_id=mid, target_id=mid, relation_type="related")
    assert "relation_type" in await fails(client, "link_memories", source_id=mid, target_id=mid, relation_type="x")
    assert "relation_type" in await fails(client, "link_memories", source_id=mid, target_id=unknown)
    assert "tags" in await fails(client, "store_memory", content="x", context_name="x")
    assert "no link" in await fails(client, "unlink_memories", source_id=mid, target_id=unknown)
    assert "itself" in await fails(client, "merge_memories", target_id=mid, source_ids=[mid])
    assert await call(client, "get_memory", memory_id=mid) == before
    stats = await call(client, "get_stats")
    assert stats["total_memories"] == 1 and stats["total_links"] == 0


async def test_links_explore_and_delete(client: Client) -> None:
    a = await store(client, PG_FAILURE, "billing", ["postgres", "docker"], "failure")
    b = await store(
        client, "Compose now maps 5432:5432; the API connects to Postgres.", "billing", ["postgres"], "success"
    )
    c = await store(
        client, "Docker Desktop on macOS needs host.docker.internal to reach the host.", "dashboard", ["docker"]
    )
    d = await store(client, "The billing API reads its settings from environment variables.", "billing", ["config"])
    made = await call(
        client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="the fix for that failure"
    )
    assert made == {"success": True, "source_id": b, "target_id": a, "relation_type": "supersedes", "created": True}
    again = await call(client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="x")
    assert again["created"] is False
    await call(client, "link_memories", source_id=a, target_id=c, relation_type="related", reason="docker networking")
    links = await call(client, "get_memory_links", memory_id=a)
    assert [(lk["target_id"], lk["relation_type"], lk["reason"]) for lk in links["links"]] == [
        (c, "related", "docker networking")
    ]
    assert links["links"][0]["target_summary"].startswith("Docker Desktop on macOS")
    assert [(lk["source_id"], lk["reason"]) for lk in links["incoming"]] == [(b, "x")]
    assert links["incoming"][0]["source_summary"].startswith("Compose now maps")

    ex = await call(client, "explore_related", memory_id=a)
    assert ex["memory_id"] == a
    assert {(x["id"], x["relation_type"], x["direction"]) for x in ex["linked"]} == {
        (b, "supersedes", "incoming"),
        (c, "related", "outgoing"),
    }
    assert {t["id"]: t["shared_tags"] for t in ex["by_tag"]} == {b: ["postgres"], c: ["docker"]}
    assert {(m["id"], m["context"]) for m in ex["by_context"]} == {(b, "billing"), (d, "billing")}
    bare = await call(
        client, "explore_related", memory_id=a, include_tag_siblings=False, include_context_siblings=False
    )
    assert bare["by_tag"] == [] and bare["by_context"] == [] and len(bare["linked"]) == 2

    assert await call(client, "unlink_memories", source_id=a, target_id=c) == {"success": True, "removed": 1}
    assert (await call(client, "get_memory_links", memory_id=c))["incoming"] == []

    gone = await call(client, "delete_memory", memory_id=a)
    assert gone == {"success": True, "deleted_id": a, "links_removed": 1}
    assert (await call(client, "get_memory_links", memory_id=b))["links"] == []
    assert (await call(client, "get_stats"))["total_links"] == 0
    assert "no memory" in await fails(client, "get_memory", memory_id=a)


async def test_merge_moves_links_and_tags(client: Client) -> None:
    a = await store(client, "Celery tasks are lost when a worker dies mid-task.", "billing", ["celery"], "failure")
    b = await store(
        client,
        "Enable task_acks_late so killed workers' tasks are redelivered.",
        "billing",
        ["celery", "queues"],
        "insight",
    )
    c = await store(client, "Background jobs must be idempotent.", "billing", ["queues"], "decision")
    await call(client, "link_memories", source_id=c, target_id=b, relation_type="depends_on", reason="redelivery")
    await call(client, "link_memories", source_id=a, target_id=b, relation_type="related", reason="same issue")
    merged = await call(client, "merge_memories", target_id=a, source_ids=[b])
    assert merged["success"] is True and merged["merged_ids"] == [b] and merged["memory_id"] == a
    assert merged["links_moved"] == 1  # c -> b became c -> a; a -> b became a self-link and was dropped
    kept = await call(client, "get_memory", memory_id=a)
    assert kept["tags"] == ["celery", "queues"] and merged["summary"] == kept["summary"]
    assert "task_acks_late" in kept["content"] and "mid-task" in kept["content"]
    links = await call(client, "get_memory_links", memory_id=a)
    assert [(lk["source_id"], lk["relation_type"]) for lk in links["incoming"]] == [(c, "depends_on")]
    assert links["links"] == []
    assert "no memory" in await fails(client, "get_memory", memory_id=b)
    hit = await call(client, "recall_memories", query="acks late redelivery of tasks", limit=1)
    assert hit["memories"][0]["id"] == a


async def test_stats_and_analysis(client: Client) -> None:
    empty = await call(client, "analyze_knowledge")
    assert empty["total_memories"] == 0 and empty["health_score"] == 100.0 and empty["issues"] == []
    assert empty["stats"] == {"unlinked_memories": 0, "memories_per_context": {}} and empty["suggestions"]
    a = await store(client, "Use WAL mode for sqlite under concurrent writers.", "sync", ["sqlite", "Python"])
    b = await store(client, "Pin numpy<2 in constraints to keep pip fast.", "ml", ["python", "pip"], "success")
    c = await store(client, "Ran the nightly report by hand.", "ops", [], "note")
    stats = await call(client, "get_stats")
    assert stats["total_memories"] == 3 and stats["total_contexts"] == 3 and stats["total_tags"] == 4
    assert stats["memories_by_type"] == {"insight": 1, "success": 1, "failure": 0, "decision": 0, "note": 1}
    assert {x["name"] for x in stats["contexts"]} == {"sync", "ml", "ops"}
    assert {x["name"]: x["count"] for x in stats["top_tags"]} == {"sqlite": 1, "Python": 1, "python": 1, "pip": 1}
    assert stats["embedder"] == "minilm" and stats["backend"] == "embedded"

    report = await call(client, "analyze_knowledge")
    assert report["total_memories"] == 3
    assert report["stats"] == {"unlinked_memories": 3, "memories_per_context": {"sync": 1, "ml": 1, "ops": 1}}
    issues = {i["type"]: i for i in report["issues"]}
    assert issues["orphan_memories"]["affected_memory_ids"] == [c]
    assert "update_memory" in issues["orphan_memories"]["suggested_action"]
    assert set(issues["low_connectivity"]["affected_memory_ids"]) == {a, b, c}
    assert issues["low_connectivity"]["message"].startswith("100% of memories have no explicit links")
    assert set(issues["similar_tags"]["affected_memory_ids"]) == {a, b}
    assert issues["similar_tags"]["details"] in (["Python, python"], ["python, Python"])
    assert "stale_memories" not in issues
    assert report["health_score"] == 60.0  # 100 - 30 * 1/3 (untagged) - 25 * 3/3 (unlinked) - 5 (one tag group)
    assert report["suggestions"][:2] == [
        "Address the issues listed to improve discoverability",
        "Don't forget to record failures too!",
    ]
    await call(client, "update_memory", memory_id=c, tags=["ops"])
    await call(client, "link_memories", source_id=a, target_id=b, relation_type="related")
    better = await call(client, "analyze_knowledge")
    assert better["health_score"] == 95.0 and better["stats"]["unlinked_memories"] == 1  # only the tag group left
    assert "orphan_memories" not in {i["type"] for i in better["issues"]}


async def test_resources_and_prompt(client: Client) -> None:
    mid = await store(client, PG_FAILURE, "billing", ["postgres"], "failure")
    text = (await client.read_resource(f"memory://{mid}")).contents[0].text
    assert text.startswith("# failure: billing") and PG_FAILURE in text
    assert "- context: billing" in text and "- tags: postgres" in text and "- type: failure" in text
    stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)
    assert stats == await call(client, "get_stats")
    with pytest.raises(Exception, match="no memory"):
        await client.read_resource(f"memory://{uuid.uuid4()}")
    prompt = await client.get_prompt("record_fix", {"problem": "flaky login test", "project": "web"})
    body = prompt.messages[0].content.text
    assert "flaky login test" in body and "Cause" in body and "Solution" in body and "store_memory" in body
    for name in ("suggested_links", "suggested_relation", "insights", "success_after_failure", "suggested_action"):
        assert name in body


async def test_ping(client: Client) -> None:
    pong = await call(client, "ping")
    assert pong["status"] == "ok"
    assert pong["version"] == importlib.metadata.version("nexus-stack-memory") == nexus_core.__version__
    await store(client, PG_FIX, "billing", ["postgres"])
    assert (await call(client, "ping"))["store"] == "ready"


async def test_tag_and_context_filters_match_regardless_of_case(client: Client) -> None:
    """002: `["fastapi"]` finds the memories tagged `FastAPI`, in recall and in lists alike."""
    tagged = await store(client, "Use dependency overrides to test FastAPI routes", "WebShop", ["FastAPI"])
    await store(client, "Flask blueprints group routes", "other", ["flask"])
    listed = await call(client, "list_memories", tag_filter=["fastapi"])
    assert [m["id"] for m in listed["memories"]] == [tagged]
    assert [m["id"] for m in (await call(client, "list_memories", context_filter="webshop"))["memories"]] == [tagged]
    found = await call(
        client, "recall_memories", query="testing routes", tag_filter=["FASTAPI"], context_filter="webShop"
    )
    assert [m["id"] for m in found["memories"]] == [tagged]
