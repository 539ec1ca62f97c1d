"""An embedded collection is searched in process (the mirror): the same results as Chroma's, kept up to date by
every write, dropped by a failed one, and never used for a Chroma server or past its size."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from nexus_memory.embed import create
from nexus_memory.recall import scoring
from nexus_memory.store import ChromaStore, where_clause, with_any_tag
from nexus_memory.store import chroma as store_module
from nexus_memory.store import rows as rows_module
from nexus_memory.store.mirror import Mirror, Unsupported, allowed, best_per_memory
from nexus_memory.store.rows import RowFile
from tests.memory.conftest import service_in
from tests.memory.helpers import call, fails, store

LABELED = Path(__file__).parent / "memory_recall_set.json"


def _no_chroma_reads(st: ChromaStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every query or get that reaches Chroma's memories or sentence vectors collection (" beside": asked
    from recall's side thread)."""
    asked: list[str] = []
    for collection, prefix in ((st.memories, ""), (st.parts.collection, "parts.")):
        for name in ("query", "get"):
            real = getattr(collection, name)

            def spy(*args: Any, _real: Any = real, _name: str = prefix + name, **kwargs: Any) -> Any:
                beside = threading.current_thread().name.startswith("nexus-memory-recall")
                asked.append(_name + (" beside" if beside else ""))
                return _real(*args, **kwargs)

            monkeypatch.setattr(collection, name, spy)
    return asked


async def _recalled(client: Client, st: ChromaStore, query: str, by_chroma: bool, **args: Any) -> list[Any]:
    st._mirror_off = by_chroma
    try:
        out = await call(client, "recall_memories", query=query, limit=5, **args)
    finally:
        st._mirror_off = False
    # Scores are rounded to 4 places: the mirror's float32 cosines agree with Chroma's to ~4e-7, which can round
    # either way, so they are compared to the 4th place, the rest exactly.
    return [
        (m["id"], _near(m["similarity"]), _near(m["score"]), m["matched_terms"], m["tags"]) for m in out["memories"]
    ]


def _near(score: float) -> Any:
    return pytest.approx(score, abs=1.1e-4)


@pytest.mark.anyio
async def test_the_labeled_set_recalls_the_same_through_the_mirror_as_through_chroma(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    labeled = json.loads(LABELED.read_text(encoding="utf-8"))
    host = memory_host(
        embedder="minilm+use", sentences=True
    )  # the default: a tag boost, so named tags take a filtered query
    async with Client(host.server) as client:
        for m in labeled["memories"]:
            await store(client, m["content"], m["context"], m["tags"], m["memory_type"])
        assert service_in(host).parts.drain(timeout=120)  # the sentence vectors, written in the background
        st = service_in(host).store
        assert st.mirror() is not None and len(st.mirror()) == len(labeled["memories"])
        everyone = list(st.get(list(st.mirror().ids)).values())
        asked = _no_chroma_reads(st, monkeypatch)
        queries = [q["query"] for q in labeled["queries"]] + ["ECONNREFUSED on 5432", "docker postgres"]
        doubted = 0
        for query in queries:
            asked.clear()
            mirrored = await _recalled(client, st, query, by_chroma=False)
            vector = st.embed_query(query)[0]
            best = st.parts.best(vector, everyone)
            assert asked == []  # answered in process, the sentence vectors too
            assert mirrored == await _recalled(client, st, query, by_chroma=True), query
            # The sentence vectors nearest the query, asked for beside the candidates' query.
            assert "query" in asked and "parts.query beside" in asked
            # With a single nearest sentence vector asked for, the candidates left in doubt are read by id: the
            # same top again.
            monkeypatch.setattr(scoring, "PARTS_PER_CANDIDATE", 0.01)
            asked.clear()
            assert mirrored == await _recalled(client, st, query, by_chroma=True), query
            doubted += "parts.get" in asked
            monkeypatch.setattr(scoring, "PARTS_PER_CANDIDATE", 3)
            st._mirror_off = True
            try:
                assert best == pytest.approx(st.parts.best(vector, everyone), abs=1e-5) and len(best) > 40
            finally:
                st._mirror_off = False
        assert doubted > len(queries) // 2
        filtered = {"context_filter": "billing-api", "type_filter": "failure", "tag_filter": ["postgres"]}
        for query in queries[:10]:
            mirrored = await _recalled(client, st, query, by_chroma=False, **filtered)
            assert mirrored and mirrored == await _recalled(client, st, query, by_chroma=True, **filtered)


@pytest.mark.anyio
async def test_every_write_reaches_the_mirror(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        first = await store(client, "Redis evicted the session keys under memory pressure.", "api", ["redis"])
        st = service_in(host).store
        assert st.mirror() is not None  # read now: the writes below must each update it

        async def same(query: str, **args: Any) -> list[Any]:
            mirrored = await _recalled(client, st, query, by_chroma=False, **args)
            assert mirrored == await _recalled(client, st, query, by_chroma=True, **args)
            return mirrored

        second = await store(client, "Kafka consumers lagged behind after the rebalance.", "jobs", ["kafka"])
        assert {m[0] for m in await same("redis kafka")} == {first, second}
        await call(client, "update_memory", memory_id=first, content="Valkey evicted the cache keys.", tags=["valkey"])
        assert (await same("valkey", tag_filter=["valkey"]))[0][4] == ["valkey"]
        assert await same("redis", tag_filter=["redis"]) == []  # the removed tag matches nothing any more
        await call(client, "update_memory", memory_id=second, archived=True)
        assert await same("kafka lag", context_filter="jobs") == []
        assert [m[0] for m in await same("kafka lag", context_filter="jobs", include_archived=True)] == [second]
        third = await store(client, "Kafka lag came back after the broker upgrade.", "jobs", ["kafka"])
        await call(client, "merge_memories", target_id=third, source_ids=[second])
        assert [m[0] for m in await same("kafka lag", context_filter="jobs", include_archived=True)] == [third]
        await call(client, "delete_memory", memory_id=third)
        assert [m[0] for m in await same("kafka lag")] == [first]
        service = service_in(host)
        service.flush_touches()  # last_recalled_at, written in the background
        (row,) = [i for i, mid in enumerate(st.mirror().ids) if mid == first]
        assert st.mirror().metas[row]["last_recalled_at"] == st.get([first])[first].last_recalled_at != ""


@pytest.mark.anyio
async def test_a_failed_write_leaves_nothing_in_the_mirror(memory_host, monkeypatch: pytest.MonkeyPatch) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        kept = await store(client, "Nginx returned 502 while the upstream restarted.", "edge", ["nginx"])
        other = await store(client, "Nginx 504 came from the slow health check.", "edge", ["nginx"])
        st = service_in(host).store
        assert st.mirror() is not None

        def full_disk(*args: Any, **kwargs: Any) -> None:
            raise OSError(28, "No space left on device")

        # The merge rewrites the target (in Chroma and the mirror), then fails to delete the source: all undone.
        monkeypatch.setattr(st.memories, "delete", full_disk)
        await fails(client, "merge_memories", target_id=kept, source_ids=[other], content="Nginx: merged notes.")
        collection, real_add = st.memories, st.memories.add  # reopened after the failure

        def add_then_fail(**kwargs: Any) -> None:
            real_add(**kwargs)  # Chroma wrote it, then the call failed: the store undoes it
            full_disk()

        monkeypatch.setattr(collection, "add", add_then_fail)
        await fails(client, "store_memory", content="Nginx 502 again during the deploy.", context_name="edge")
        found = await _recalled(client, st, "nginx 502 during the deploy", by_chroma=False)
        assert found == await _recalled(client, st, "nginx 502 during the deploy", by_chroma=True)
        assert {m[0] for m in found} == {kept, other} and len(st.mirror()) == 2
        assert "merged" not in st.mirror().documents[st.mirror().ids.index(kept)]


@pytest.mark.anyio
async def test_no_mirror_past_its_size_or_for_a_chroma_server(memory_host, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(store_module, "MIRROR_MAX", 2)
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        for i in range(2):
            await store(client, f"Deploy {i} of the billing worker failed on a missing secret.", "ops", ["deploy"])
        st = service_in(host).store
        assert st.mirror() is not None
        await store(client, "Deploy 2 of the billing worker failed on a missing secret.", "ops", ["deploy"])
        assert st.mirror() is None and st._mirror_off  # grew past the size: Chroma's index answers
        found = await call(client, "recall_memories", query="billing worker deploy secret", limit=5)
        assert len(found["memories"]) == 3
    server_store = ChromaStore(tmp_path, "nexus_memories", create("minilm"), chroma_url="http://127.0.0.1:9")
    assert server_store.mirror() is None  # other processes may write there: never copied


@pytest.mark.anyio
async def test_past_its_size_for_sentences_the_mirror_keeps_the_memories_and_chroma_finds_their_sentences(
    memory_host, monkeypatch
) -> None:
    """Sentence vectors are ~4 a memory: a large collection's are searched by Chroma's index, not copied."""
    monkeypatch.setattr(store_module, "PARTS_MIRROR_MAX", 2)
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        texts = [f"Deploy {i} of the billing worker failed. The secret store was missing a key." for i in range(3)]
        for text in texts[:2]:
            await store(client, text, "ops", ["deploy"])
        service = service_in(host)
        st = service.store
        service.parts.drain(timeout=30)
        assert st.parts_mirror() is not None
        await store(client, texts[2], "ops", ["deploy"])
        service.parts.drain(timeout=30)
        assert st.mirror() is not None and len(st.mirror()) == 3 and st.parts_mirror() is None
        asked = _no_chroma_reads(st, monkeypatch)
        query = "which key was missing from the secret store"
        mirrored = await _recalled(client, st, query, by_chroma=False)
        assert "parts.query beside" in asked and "query" not in asked  # the memories from the mirror
        assert len(mirrored) == 3 and mirrored == await _recalled(client, st, query, by_chroma=True)
        st.close()  # read again: a mirror of more memories than PARTS_MIRROR_MAX holds no sentence vectors
        assert st.mirror() is not None and len(st.mirror()) == 3 and st.parts_mirror() is None


def test_the_mirror_ranks_ties_in_insertion_order_and_searches_among_ids() -> None:
    copy = Mirror(2)
    rows = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 0.0], "d": [2.0, 0.0], "e": [0.6, 0.8]}
    metas = [{"context": "x" if mid in "abd" else "y"} for mid in rows]
    copy.put(list(rows), list(rows), metas, list(rows.values()))
    ids = [hit[0] for hit in copy.nearest([1.0, 0.0], 2, None)]
    assert ids == ["a", "c"]  # a, c and d tie (cosine 1): the first two written
    assert [hit[0] for hit in copy.nearest([1.0, 0.0], 5, None)] == ["a", "c", "d", "e", "b"]
    assert [hit[0] for hit in copy.nearest([1.0, 0.0], 2, None, among={"d", "e", "b", "z"})] == ["d", "e"]
    assert [hit[0] for hit in copy.nearest([1.0, 0.0], 5, {"context": "x"}, among={"b", "c", "d"})] == ["d", "b"]


def test_where_clauses_are_read_as_chroma_reads_them() -> None:
    metas = [
        {"type": "failure", "context": "api", "tags": ["go", "db"], "archived": False},
        {"type": "insight", "context": "api"},
        {"type": "failure", "context": "web", "tags": ["db"], "archived": True},
    ]
    assert allowed(where_clause("api", "failure", ["db"], False), metas).tolist() == [True, False, False]
    assert allowed(where_clause(None, None, None, False), metas).tolist() == [True, True, False]  # $ne: no key
    assert allowed(with_any_tag({"context": "web"}, ["go", "db"]), metas).tolist() == [False, False, True]
    assert allowed({"type": "failure", "context": "web"}, metas).tolist() == [False, False, True]
    with pytest.raises(Unsupported):
        allowed({"created_at": {"$gt": "2024"}}, metas)


def test_sentence_vectors_are_kept_in_a_file_and_read_back_bit_for_bit(tmp_path: Path) -> None:
    """The mirror's sentence vectors live in an unnamed file in the store's folder, not in the process; read back,
    they give the very dot products the rows held in memory gave."""
    import numpy as np

    rng = np.random.default_rng(7)
    copy = Mirror(896, folder=tmp_path)
    written = {f"m{i}#{n}": rng.standard_normal(896).astype(np.float32).tolist() for i in range(40) for n in range(3)}
    tracemalloc.start()
    copy.put_parts(list(written), list(written.values()))
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < 200_000  # 120 rows of 896 floats are 430 KB as arrays
    assert os.listdir(tmp_path) == []  # nothing left in the folder, whatever ends the process
    rewritten = rng.standard_normal(896).astype(np.float32).tolist()
    copy.put_parts(["m3#1"], [rewritten])  # replaced where it is, as Chroma's upsert does
    written["m3#1"] = rewritten
    copy.drop_parts(["m5"])
    query = rng.standard_normal(896).astype(np.float32).tolist()
    ids = ["m3", "m5", "m0", "m3", "m39", "nobody"]
    owners = [pid for mid in dict.fromkeys(ids) for pid in written if pid.startswith(mid + "#") and mid != "m5"]
    expected = best_per_memory([p.partition("#")[0] for p in owners], np.stack([written[p] for p in owners]), query)
    assert copy.best_parts(query, ids) == expected  # exactly


def test_the_sentence_vectors_file_is_as_large_as_the_most_rows_held_at_once(tmp_path: Path) -> None:
    import numpy as np

    rows = RowFile(4, tmp_path)
    first = rows.put(np.arange(16, dtype=np.float32).reshape(4, 4))
    rows.free(first[:3])
    again = rows.put(np.full((3, 4), 7, dtype=np.float32))
    assert sorted(again) == sorted(first[:3]) and len(rows) == 4  # the freed slots, reused
    assert os.fstat(rows._fd).st_size == 4 * 4 * 4
    assert os.fstat(rows._fd).st_mode & 0o777 == 0o600
    assert rows.read([again[2], first[3]]).tolist() == [[7.0] * 4, [12.0, 13.0, 14.0, 15.0]]


@pytest.mark.anyio
async def test_a_sentence_vectors_file_that_fails_leaves_them_to_chroma(memory_host, monkeypatch) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        for i in range(3):
            await store(client, f"Deploy {i} of the billing worker failed. The secret store lacked a key.", "ops", [])
        service = service_in(host)
        assert service.parts.drain(timeout=30)
        st = service.store
        query = "which key was missing from the secret store"
        assert st.parts_mirror() is not None
        mirrored = await _recalled(client, st, query, by_chroma=False)

        def failing(*args: Any) -> bytes:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(rows_module.os, "pread", failing)
        assert await _recalled(client, st, query, by_chroma=False) == mirrored  # Chroma's sentence vectors
        assert st.parts_mirror() is None and st.mirror() is not None
