"""Sentence vectors are written in the background: a store returns once the memory itself is written, marked
pending; one thread embeds and writes its sentences later, skipping a memory changed or deleted meanwhile, and a
process killed first leaves the mark, which the next start takes up. Real servers, real models, real Chroma."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import Client

from nexus_memory.embed import MiniLMEmbedder, create
from nexus_memory.recall.pipeline import PENDING_WAITED
from nexus_memory.service import MemoryService
from nexus_memory.store import SENTENCES_RECIPE, ChromaStore, sentences
from nexus_memory.store.writer import BATCH
from nexus_memory.transfer import reindex
from tests.memory.conftest import holder_pid, memory_config, served, service_in
from tests.memory.helpers import call, store

pytestmark = pytest.mark.anyio

THREE = "Build took 40 minutes. The Docker layer cache was never reused in CI. We now mount a cache volume."
TWO = "The build took 40 minutes in CI. We now mount a Docker cache volume."


def _vectors(got: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(got["ids"], got["embeddings"], strict=True))


async def test_a_killed_servers_pending_sentence_vectors_are_written_after_its_restart(tmp_path: Path) -> None:
    config, data = (
        memory_config(tmp_path, extra='[plugins.memory]\nembedder = "minilm"\nsentences = true\n'),
        tmp_path / "data",
    )
    note = {"content": THREE, "context_name": "ci", "tags": ["docker", "ci"]}
    async with served(config) as session:
        mid = (await session.call_tool("store_memory", note)).structured_content["memory_id"]
        stats = (await session.call_tool("get_stats", {})).structured_content
        assert stats["parts_pending"] == 1  # returned before its sentence vectors were written
        os.kill(holder_pid(data), signal.SIGKILL)
    async with served(config) as session:
        with anyio.fail_after(120):  # the start queues it again; the writer writes it after its delay
            while (await session.call_tool("get_stats", {})).structured_content["parts_pending"]:
                await anyio.sleep(0.2)
        stats = (await session.call_tool("get_stats", {})).structured_content
        assert stats["total_memories"] == 1 and stats["parts_pending"] == 0
    st = ChromaStore(data / "memory", "nexus_memories", create("minilm"))
    got = _vectors(st.parts.collection.get(include=["embeddings"]))
    expected = MiniLMEmbedder().embed(["docker, ci\n" + s for s in sentences(THREE)])
    assert sorted(got) == [f"{mid}#{n}" for n in range(3)]
    assert all(np.allclose(got[f"{mid}#{n}"], v, atol=1e-5) for n, v in enumerate(expected))
    st.close()


async def test_the_writer_skips_a_memory_changed_or_deleted_while_it_embedded(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        changed = await store(client, THREE, "ci", ["docker", "ci"])
        gone = await store(client, "Rotated the signing keys. Then the old tokens failed.", "auth")
        service = service_in(host)
        st = service.store
        assert (await call(client, "get_stats"))["parts_pending"] == 2 and st.parts.collection.count() == 0
        real, meanwhile = st.embedder.embed, []

        def embed(texts: list[str]) -> list[list[float]]:
            out = real(texts)
            if threading.current_thread().name == "nexus-memory-parts" and not meanwhile:
                meanwhile.append(texts)  # the writer embedded the old sentences; the memories change now
                service.update(changed, TWO, None, None)
                service.delete(gone)
            return out

        monkeypatch.setattr(st.embedder, "embed", embed)
        assert service.parts.drain(timeout=120)
        assert len(meanwhile[0]) == 5  # THREE's three sentences and the other's two
        got = _vectors(st.parts.collection.get(include=["embeddings"]))
        expected = MiniLMEmbedder().embed(["docker, ci\n" + s for s in sentences(TWO)])
        assert sorted(got) == [f"{changed}#0", f"{changed}#1"]  # the old ones skipped, the new ones written
        assert all(np.allclose(got[f"{changed}#{n}"], v, atol=1e-5) for n, v in enumerate(expected))
        assert (await call(client, "get_stats"))["parts_pending"] == 0


async def test_a_stopped_server_leaves_its_pending_memory_marked_and_reindex_writes_it(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        service = service_in(host)
        service.parts.delay = 3600.0  # the server stops first: shutdown must not wait for the queue
        mid = await store(client, THREE, "ci", ["docker", "ci"])
        st = service.store
    assert st.parts.pending() == [mid] and st.parts.collection.count() == 0
    assert reindex(st, MiniLMEmbedder(), SENTENCES_RECIPE, force=True) == 1
    assert st.parts.pending() == [] and sorted(st.parts.collection.get()["ids"]) == [f"{mid}#{n}" for n in range(3)]


async def test_the_writer_waits_for_a_pause_in_the_calls_and_not_for_ever(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        writer = service_in(host).parts
        writer.delay, writer.quiet = 0.0, 0.3

        async def pending() -> int:
            return (await call(client, "get_stats"))["parts_pending"]

        with writer.serving():  # a call being served all along: the writer leaves it the cores
            await store(client, THREE, "ci", ["docker", "ci"])
            await anyio.sleep(1.5)
            assert await pending() == 1
        with anyio.fail_after(60):  # the pause
            while await pending():
                await anyio.sleep(0.05)
        writer.patience = 0.5
        with writer.serving(), anyio.fail_after(60):  # calls without a pause: written after `patience`
            await store(client, TWO, "ci", ["docker"])
            while await pending():
                await anyio.sleep(0.05)


async def test_under_calls_without_a_pause_the_writer_writes_one_batch_each_patience(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        writer = service_in(host).parts
        writer.delay, writer.quiet, writer.patience = 0.0, 0.3, 2.0

        async def pending() -> int:
            return (await call(client, "get_stats"))["parts_pending"]

        with writer.serving():  # a bulk import: calls without a pause
            for i in range(3 * BATCH):
                await store(client, f"{THREE} Seen on runner {i}.", "ci")
            with anyio.fail_after(60):
                while (left := await pending()) == 3 * BATCH:
                    await anyio.sleep(0.05)
            await anyio.sleep(1.0)  # less than `patience`: no second batch beside the calls
            assert 0 < left == await pending()
        with anyio.fail_after(60):  # the pause: the rest
            while await pending():
                await anyio.sleep(0.05)


async def test_a_recall_right_after_a_store_waits_for_its_sentence_vectors(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        service_in(host).parts.delay = 60.0  # left alone, the writer would wait a minute
        mid = await store(client, THREE, "ci", ["docker", "ci"])
        with anyio.fail_after(30):
            out = await call(client, "recall_memories", query="the Docker layer cache was never reused", limit=1)
        top = out["memories"][0]
        assert top["id"] == mid and top["score"] > top["similarity"] + 0.01  # lifted by its sentence already
        assert (await call(client, "get_stats"))["parts_pending"] == 0


async def test_while_the_writer_is_behind_a_recall_ranks_by_whole_texts_without_waiting(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        writer = service_in(host).parts
        written = await store(client, THREE, "ci", ["docker", "ci"])
        assert writer.drain(timeout=60)
        writer.delay = 3600.0  # a bulk import: more candidates pending than a recall waits for
        for i in range(PENDING_WAITED + 1):
            await store(client, f"Build took {20 + i} minutes. The Docker cache missed on runner {i}.", "ci")
        with anyio.fail_after(30):
            out = await call(client, "recall_memories", query="the Docker layer cache was never reused", limit=20)
        assert (await call(client, "get_stats"))["parts_pending"] == PENDING_WAITED + 1  # none was hurried
        assert written in [m["id"] for m in out["memories"]]
        assert all(m["score"] == m["similarity"] for m in out["memories"])  # not even the written one lifted


async def test_a_recall_waits_for_its_candidates_sentence_vectors_not_for_the_whole_queue(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        writer = service_in(host).parts
        writer.delay, writer.quiet, writer.patience = 60.0, 60.0, 3600.0  # unhurried, it would not write now
        for n in range(10):  # a bulk import queued first
            await store(client, f"Release {n} shipped late. The changelog job timed out in the pipeline.", "web")
        mid = await store(client, THREE, "ci", ["docker", "ci"])
        with anyio.fail_after(30):
            out = await call(
                client, "recall_memories", query="the Docker layer cache was never reused", limit=1, context_filter="ci"
            )
        top = out["memories"][0]
        assert top["id"] == mid and top["score"] > top["similarity"] + 0.01  # its own were written first
        assert (await call(client, "get_stats"))["parts_pending"] > 0  # the import's were not all waited for


async def test_a_store_does_not_queue_behind_the_writers_embedding(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = memory_host(sentences=True, embedder="minilm+use")
    real, embedding = MiniLMEmbedder.embed, threading.Event()

    def embed(self: MiniLMEmbedder, texts: list[str]) -> list[list[float]]:
        if len(texts) > 1:  # the writer's batch of sentences (a store embeds one text): a slow one
            embedding.set()
            time.sleep(3)
        return real(self, texts)

    monkeypatch.setattr(MiniLMEmbedder, "embed", embed)
    async with Client(host.server) as client:
        writer = service_in(host).parts
        writer.delay, writer.quiet = 0.0, 0.0
        await store(client, THREE, "ci", ["docker", "ci"])
        with anyio.fail_after(30):
            while not embedding.is_set():
                await anyio.sleep(0.02)
        started = time.perf_counter()
        await store(client, "Pinned the base image digest after an upstream retag broke the build.", "ci")
        assert time.perf_counter() - started < 1.5  # MiniLM's side thread was not holding the writer's batch


async def test_sentence_vectors_written_while_a_recall_asked_for_them_beside_are_asked_for_again(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        service = service_in(host)
        st, writer = service.store, service.parts
        writer.delay, writer.quiet, writer.patience = 60.0, 60.0, 3600.0
        await store(client, "Rotated the signing keys. Then the old tokens failed.", "auth")
        mid = await store(client, THREE, "ci", ["docker", "ci"])  # both pending
        st._mirror_off = True  # Chroma's path, where the sentence vectors are asked for beside the candidates'
        real_dots, real_query, written = st.parts.nearest_dots, st.query, threading.Event()

        def dots_then_write(vector: Any, n: int) -> Any:
            hits = real_dots(vector, n)  # none of theirs yet
            assert writer.drain(timeout=60)  # and now they are written, before the candidates are read
            written.set()
            return hits

        def query_after(*args: Any, **kwargs: Any) -> Any:
            assert written.wait(60)
            return real_query(*args, **kwargs)

        monkeypatch.setattr(st.parts, "nearest_dots", dots_then_write)
        monkeypatch.setattr(st, "query", query_after)
        out = await call(client, "recall_memories", query="the Docker layer cache was never reused", limit=1)
        top = out["memories"][0]
        assert top["id"] == mid and top["score"] > top["similarity"] + 0.01  # lifted: its sentences asked for again


QUERY = "the Docker layer cache was never reused"
BILLING = "Renamed the staging bucket for the billing reports. The old name clashed with production."


@pytest.mark.parametrize("mirrored", [False, True])
async def test_a_recall_during_an_update_never_shows_the_new_content_lifted_by_the_old_sentences(
    memory_host, monkeypatch: pytest.MonkeyPatch, mirrored: bool
) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        service = service_in(host)
        st = service.store
        mid = await store(client, THREE, "ci", ["ci"])
        assert service.parts.drain(timeout=120)
        before = service.recall(QUERY, 1, None, None, None).memories[0]
        assert before.id == mid and before.score > before.similarity + 0.01  # its old sentences lift it
        if not mirrored:
            st._mirror_off, st._mirror = True, None  # Chroma's path, as above MIRROR_MAX memories
        real, seen = st._upsert, []

        def upsert(record: Any, vector: Any) -> None:
            real(record, vector)
            if record.content != THREE:  # the update's write: a recall now, before the update has returned
                seen.extend(m for m in service.recall(QUERY, 5, None, None, None).memories if m.id == mid)

        monkeypatch.setattr(st, "_upsert", upsert)
        service.update(mid, "Renamed the staging bucket for the billing reports.", None, None)
        (during,) = seen
        assert during.content.startswith("Renamed") and during.score == pytest.approx(during.similarity, abs=1e-3)


async def test_sentence_vectors_written_before_a_side_query_ran_do_not_lift_the_content_read_before_them(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        service = service_in(host)
        st = service.store
        mid = await store(client, BILLING, "ops")
        for i in range(5):
            await store(client, f"Payroll export note {i}: the CSV has a header row. It is sent on Fridays.", "hr")
        assert service.parts.drain(timeout=120)
        st._mirror_off, st._mirror = True, None  # Chroma's path, where the side query runs beside the candidates'
        release, read, out = threading.Event(), threading.Event(), {}
        busy = [service.beside.submit(release.wait, 60) for _ in range(2)]  # other recalls' side queries
        real_query = st.query

        def query(*args: Any, **kwargs: Any) -> Any:
            got = real_query(*args, **kwargs)
            read.set()
            return got

        monkeypatch.setattr(st, "query", query)
        racing = threading.Thread(target=lambda: out.setdefault("m", service.recall(QUERY, 6, None, None, None)))
        racing.start()
        assert read.wait(60)  # the candidates are read (the memory as BILLING); its side query has not run
        service.update(mid, THREE, None, None)
        assert service.parts.drain(timeout=120)  # THREE's sentence vectors are written
        release.set()
        racing.join(60)
        assert all(b.result() for b in busy)
        got = next(m for m in out["m"].memories if m.id == mid)
        settled = next(m for m in service.recall(QUERY, 6, None, None, None).memories if m.id == mid)
        assert (got.content, got.score) == (settled.content, settled.score) and got.content == THREE


async def test_a_recall_under_way_when_the_service_closes_still_answers(tmp_path: Path) -> None:
    st = ChromaStore(tmp_path, "mems", create("minilm"), recipe=SENTENCES_RECIPE)
    service = MemoryService(st)
    service.store_memory(THREE, "ci", [], "insight")
    assert service.parts.drain(timeout=60)
    st._mirror_off = True  # Chroma's path: the side query is submitted after the query is embedded
    embedding, go, out = threading.Event(), threading.Event(), {}
    real = st.embed_query

    def slow(query: str) -> Any:
        embedding.set()
        assert go.wait(30)
        return real(query)

    st.embed_query = slow  # type: ignore[method-assign]
    recall = threading.Thread(target=lambda: out.setdefault("r", service.recall("docker cache", 3, None, None, None)))
    recall.start()
    assert embedding.wait(30)
    service.close()  # the server stops while the recall is under way
    go.set()
    recall.join(30)
    assert [m.content for m in out["r"].memories] == [THREE]
    st.close()


async def test_the_writer_hands_back_what_each_batch_freed(memory_host, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's embedding frees ~15-20 MB (12 sentences), which glibc keeps until handed back: after each batch
    (through the service's releaser)."""
    from nexus_memory.store import writer as module

    batches: list[int] = []
    handed: list[int] = []
    real_write = module.PartsWriter._write
    monkeypatch.setattr(
        module.PartsWriter, "_write", lambda self, ids: batches.append(len(ids)) or real_write(self, ids)
    )
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        await store(client, "Deploy 0 failed on a missing secret. The vault token had expired.", "ops")
        writer = service_in(host).parts
        real_freed = writer.freed
        writer.freed = lambda: handed.append(len(batches)) or real_freed()
        for i in range(1, BATCH + 1):
            await store(client, f"Deploy {i} failed on a missing secret. The vault token had expired.", "ops")
        assert writer.drain(timeout=60)
    assert sum(batches) == BATCH + 1 and len(batches) >= 2
    assert handed == list(range(1, len(batches) + 1))  # once after each batch
