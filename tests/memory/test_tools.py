"""Every memory tool through the MCP client, with the real model and an embedded Chroma."""

from __future__ import annotations

import json
import uuid

import pytest
from mcp import Client

from tests.memory.helpers import call, fails, store

pytestmark = pytest.mark.anyio

PG_FAILURE = (
    "Postgres connections failed with ECONNREFUSED 127.0.0.1:5432 because docker-compose published the "
    "database on port 5433. Changed the port mapping to 5432:5432."
)


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
    assert out["results"][0]["id"] == pg
    top = out["results"][0]
    assert top["context"] == "billing" and top["tags"] == ["postgres", "docker"] and top["memory_type"] == "failure"
    assert 0 < top["similarity"] <= 1 and len(out["results"]) == 2
    assert out["results"][0]["score"] >= out["results"][1]["score"]


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
    by_id = {r["id"]: r for r in out["results"]}
    assert by_id[coded]["matched_terms"] == ["E11000"] and by_id[generic]["matched_terms"] == []
    assert by_id[coded]["score"] == pytest.approx(by_id[coded]["similarity"] + 0.15, abs=1e-3)
    assert out["results"][0]["id"] == coded


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
    assert [r["id"] for r in (await call(client, "recall_memories", query=q, context_filter="gateway"))["results"]] == [
        b
    ]
    assert [r["id"] for r in (await call(client, "recall_memories", query=q, type_filter="failure"))["results"]] == [a]
    tagged = await call(client, "recall_memories", query=q, tag_filter=["network", "nothing"])
    assert [r["id"] for r in tagged["results"]] == [b]
    assert (await call(client, "recall_memories", query=q, context_filter="nowhere"))["results"] == []


async def test_store_analysis_duplicate_and_success_after_failure(client: Client) -> None:
    failure = await store(client, PG_FAILURE, "billing", ["postgres"], "failure")
    dup = await call(
        client,
        "store_memory",
        content=PG_FAILURE + " Documented in the README.",
        context_name="other",
        tags=["postgres"],
        memory_type="failure",
    )
    kinds = {i["kind"]: i for i in dup["insights"]}
    assert kinds["potential_duplicate"]["memory_id"] == failure
    assert "update_memory" in kinds["potential_duplicate"]["message"]
    assert dup["suggested_links"][0]["memory_id"] == failure and dup["suggested_links"][0]["similarity"] > 0.9

    fixed = await call(
        client,
        "store_memory",
        content="Fixed the Postgres connection refused error in docker: "
        "the compose file now maps 5432:5432 and the API connects.",
        context_name="billing",
        tags=["postgres"],
        memory_type="success",
    )
    saf = [i for i in fixed["insights"] if i["kind"] == "success_after_failure"]
    assert [i["memory_id"] for i in saf] == [failure]
    assert {s["memory_id"]: s["relation_type"] for s in fixed["suggested_links"]}[failure] == "supersedes"


async def test_store_analysis_contradiction(client: Client) -> None:
    old = await store(
        client, "Decision: we use Redis for the session cache of the user service.", "users", ["redis"], "decision"
    )
    new = await call(
        client,
        "store_memory",
        content="Decision: we do not use Redis for the session cache of the user service anymore.",
        context_name="users",
        tags=["redis"],
        memory_type="decision",
    )
    assert any(i["kind"] == "potential_contradiction" and i["memory_id"] == old for i in new["insights"])


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
    ci = await call(client, "list_memories", context_filter="ci")
    assert ci["total_count"] == 2 and {m["id"] for m in ci["memories"]} == {ids[1], ids[3]}
    assert (await call(client, "list_memories", tag_filter=["t2"]))["memories"][0]["id"] == ids[2]
    assert (await call(client, "list_memories", type_filter="success"))["total_count"] == 0


async def test_get_update_and_summary(client: Client) -> None:
    long = "word " * 100 + "END"
    mid = await store(client, long, "api", ["a"])
    got = await call(client, "get_memory", memory_id=mid)
    assert got["content"] == long.strip() and got["summary"].endswith("…") and len(got["summary"]) <= 201
    assert not got["summary"][:-1].endswith(" wor")  # cut at a word

    same = await call(client, "update_memory", memory_id=mid, tags=["a"])
    assert same["changed"] == [] and same["re_embedded"] is False

    upd = await call(
        client,
        "update_memory",
        memory_id=mid,
        content="Kafka consumers rebalance when max.poll.interval.ms is exceeded.",
        tags=["kafka"],
        memory_type="insight",
    )
    assert upd["changed"] == ["content", "tags"] and upd["re_embedded"] is True
    assert upd["memory"]["updated_at"] > upd["memory"]["created_at"]
    found = await call(client, "recall_memories", query="message consumers keep leaving the group", limit=1)
    assert found["results"][0]["id"] == mid and found["results"][0]["tags"] == ["kafka"]
    typ = await call(client, "update_memory", memory_id=mid, memory_type="decision")
    assert typ["changed"] == ["memory_type"] and typ["memory"]["memory_type"] == "decision"


async def test_bad_input_is_refused_and_changes_nothing(client: Client) -> None:
    mid = await store(client, PG_FAILURE, "billing", ["postgres"], "failure")
    before = await call(client, "get_memory", memory_id=mid)
    unknown = str(uuid.uuid4())
    assert "no memory with id" in await fails(client, "get_memory", memory_id=unknown)
    assert "not a memory id" in await fails(client, "get_memory", memory_id="../etc/passwd")
    assert "content is empty" in await fails(client, "store_memory", content="   ", context_name="x", tags=[])
    assert "memory_type" in await fails(client, "store_memory", content="x", context_name="x", memory_type="idea")
    assert "limit" in await fails(client, "recall_memories", query="x", limit=21)
    assert "limit" in await fails(client, "recall_memories", query="x", limit=0)
    assert "limit" in await fails(client, "list_memories", limit=101)
    assert "empty strings" in await fails(client, "store_memory", content="x", context_name="x", tags=["ok", " "])
    assert "content is empty" in await fails(client, "update_memory", memory_id=mid, content="", tags=["new"])
    assert "nothing to update" in await fails(client, "update_memory", memory_id=mid)
    assert "no memory with id" in await fails(client, "update_memory", memory_id=unknown, tags=["x"])
    assert "no memory with id" in await fails(client, "delete_memory", memory_id=unknown)
    assert "no memory with id" in await fails(client, "link_memories", source_id=mid, target_id=unknown)
    assert "itself" in await fails(client, "link_memories", source_id=mid, target_id=mid)
    assert "relation_type" in await fails(client, "link_memories", source_id=mid, target_id=mid, relation_type="x")
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
    assert made["created"] is True and made["link"]["relation_type"] == "supersedes"
    again = await call(client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="x")
    assert again["created"] is False
    await call(client, "link_memories", source_id=a, target_id=c, relation_type="related", reason="docker networking")
    links = await call(client, "get_memory_links", memory_id=a)
    assert [lk["source_id"] for lk in links["incoming"]] == [b] and links["incoming"][0]["reason"] == "x"
    assert [lk["target_id"] for lk in links["outgoing"]] == [c]

    ex = await call(client, "explore_related", memory_id=a)
    assert {(x["memory"]["id"], x["direction"]) for x in ex["linked"]} == {(b, "incoming"), (c, "outgoing")}
    assert {t["memory"]["id"]: t["shared_tags"] for t in ex["by_tag"]} == {b: ["postgres"], c: ["docker"]}
    assert {m["id"] for m in ex["by_context"]} == {b, d}
    bare = await call(
        client, "explore_related", memory_id=a, include_tag_siblings=False, include_context_siblings=False
    )
    assert bare["by_tag"] == [] and bare["by_context"] == [] and len(bare["linked"]) == 2

    un = await call(client, "unlink_memories", source_id=a, target_id=c)
    assert un["removed"] == 1
    assert (await call(client, "get_memory_links", memory_id=c))["incoming"] == []

    gone = await call(client, "delete_memory", memory_id=a)
    assert gone == {"id": a, "deleted": True, "links_removed": 1}
    assert (await call(client, "get_memory_links", memory_id=b))["outgoing"] == []
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
    assert merged["merged_ids"] == [b] and merged["memory"]["id"] == a
    assert merged["memory"]["tags"] == ["celery", "queues"]
    assert "task_acks_late" in merged["memory"]["content"] and "mid-task" in merged["memory"]["content"]
    assert merged["links_moved"] == 1  # c -> b became c -> a; a -> b became a self-link and was dropped
    links = await call(client, "get_memory_links", memory_id=a)
    assert [(lk["source_id"], lk["relation_type"]) for lk in links["incoming"]] == [(c, "depends_on")]
    assert links["outgoing"] == []
    assert "no memory" in await fails(client, "get_memory", memory_id=b)
    hit = await call(client, "recall_memories", query="acks late redelivery of tasks", limit=1)
    assert hit["results"][0]["id"] == a


async def test_stats_and_analysis(client: Client) -> None:
    a = await store(client, "Use WAL mode for sqlite under concurrent writers.", "sync", ["sqlite", "Python"])
    b = await store(client, "Pin numpy<2 in constraints to keep pip fast.", "ml", ["python", "pip"], "success")
    c = await store(client, "Ran the nightly report by hand.", "ops", [], "note")
    stats = await call(client, "get_stats")
    assert stats["total_memories"] == 3 and stats["by_type"]["insight"] == 1 and stats["by_type"]["note"] == 1
    assert {x["name"] for x in stats["contexts"]} == {"sync", "ml", "ops"}
    assert {x["name"]: x["count"] for x in stats["tags"]} == {"sqlite": 1, "Python": 1, "python": 1, "pip": 1}
    assert stats["embedder"] == "minilm" and stats["backend"] == "embedded"

    report = await call(client, "analyze_knowledge")
    issues = {i["kind"]: i for i in report["issues"]}
    assert issues["orphan_memories"]["affected_ids"] == [c]
    assert set(issues["low_connectivity"]["affected_ids"]) == {a, b, c}
    assert set(issues["similar_tags"]["affected_ids"]) == {a, b}
    assert issues["similar_tags"]["details"] in (["Python, python"], ["python, Python"])
    assert "stale_memories" not in issues
    assert 0 <= report["health_score"] < 100
    await call(client, "update_memory", memory_id=c, tags=["ops"])
    await call(client, "link_memories", source_id=a, target_id=b)
    better = await call(client, "analyze_knowledge")
    assert better["health_score"] > report["health_score"]
    assert "orphan_memories" not in {i["kind"] for i in better["issues"]}


async def test_resources_and_prompt(client: Client) -> None:
    mid = await store(client, PG_FAILURE, "billing", ["postgres"], "failure")
    text = (await client.read_resource(f"memory://{mid}")).contents[0].text
    assert PG_FAILURE in text and "billing" in text and "postgres" in text
    stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)
    assert stats["total_memories"] == 1
    with pytest.raises(Exception, match="no memory"):
        await client.read_resource(f"memory://{uuid.uuid4()}")
    prompt = await client.get_prompt("record_fix", {"problem": "flaky login test", "project": "web"})
    body = prompt.messages[0].content.text
    assert "flaky login test" in body and "Cause" in body and "Solution" in body and "store_memory" in body
