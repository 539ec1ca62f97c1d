"""Sentence vectors (the sentences recipe, bench/recall_ideas.py): each sentence of a memory of two or more is
embedded too, in ``<collection>_parts``, and recall lifts a candidate by ``PART_WEIGHT`` x how much nearer its best
sentence is than its whole text. Through the MCP client, real models and the embedded Chroma."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mcp import Client

from nexus_memory.embed import MiniLMEmbedder
from nexus_memory.recall.scoring import PART_WEIGHT
from nexus_memory.store import ChromaStore, sentences
from nexus_memory.store.parts import Parts
from tests.memory.conftest import service_in
from tests.memory.helpers import call, fails, store

pytestmark = pytest.mark.anyio

# Four memories of the labeled set (bench/recall/recall_set.json) and one of its queries, for which the answer's
# whole text ranks third and its sentence "product IDs above 2^53 lost precision." first.
QUERY = "chat-backend: IDs above 2^53 arrive wrong in the browser"
ANSWER = (
    "Go's encoding/json decodes numbers into float64 in map[string]interface{}; product IDs above 2^53 lost "
    "precision. Use json.Decoder.UseNumber() or typed structs."
)
NEAR = [
    (
        "nginx returned 502 Bad Gateway with 'upstream sent too big header while reading response header from "
        "upstream' after we put groups into the ID token cookie. Raised proxy_buffer_size to 16k and moved groups "
        "out of the cookie.",
        ["nginx", "cookies"],
    ),
    (
        "Socket.IO clients fell back to long polling and never upgraded: without sticky sessions on the load "
        "balancer the polling requests hit different instances (400 'Session ID unknown').",
        ["socket.io", "load-balancer"],
    ),
    (ANSWER, ["go", "json"]),
    (
        "The pentest found session fixation: the session id was not regenerated after login. A new session id is "
        "issued on every privilege change.",
        ["security", "sessions"],
    ),
]
THREE = "Build took 40 minutes. The Docker layer cache was never reused in CI. We now mount a cache volume."


def _store(host: Any) -> ChromaStore:
    return service_in(host).store


def _drained(host: Any) -> ChromaStore:
    """The store, once the sentence vectors queued so far are written (in the background)."""
    assert service_in(host).parts.drain(timeout=120)
    return _store(host)


def _cos(a: Any, b: Any) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_a_memory_whose_one_sentence_answers_ranks_first(memory_host) -> None:
    host = memory_host(embedder="minilm+use", sentences=True)
    async with Client(host.server) as client:
        ids = [await store(client, content, tags=tags) for content, tags in NEAR]
        answer = ids[2]
        _drained(host)
        out = await call(client, "recall_memories", query=QUERY, limit=4)
        ranked = {m["id"]: m for m in out["memories"]}
        assert out["memories"][0]["id"] == answer
        # By its whole text alone it is third: the sentence lifted it past the two memories above it.
        by_whole = sorted(ranked, key=lambda i: ranked[i]["similarity"], reverse=True)
        assert by_whole.index(answer) == 2
        assert ranked[answer]["score"] > ranked[answer]["similarity"] + 0.01


async def test_the_lift_is_a_share_of_how_much_nearer_the_best_sentence_is(memory_host) -> None:
    host = memory_host(sentences=True)  # minilm: the recipe is the same for every embedder
    async with Client(host.server) as client:
        mid = await store(client, THREE, "ci", ["docker", "ci"])
        assert _drained(host).parts.collection.count() == 3
        query = "docker layer cache not reused in CI"
        got = (await call(client, "recall_memories", query=query, limit=1))["memories"][0]
        mini = MiniLMEmbedder()
        (q,) = mini.embed([query])
        whole = _cos(q, mini.embed(["docker, ci\n" + THREE])[0])
        best = max(_cos(q, v) for v in mini.embed(["docker, ci\n" + s for s in sentences(THREE)]))
        assert got["id"] == mid and got["similarity"] == pytest.approx(whole, abs=2e-3)
        assert best > whole + 0.05  # the second sentence alone is much nearer the query
        assert got["score"] == pytest.approx(whole + PART_WEIGHT * (best - whole), abs=2e-3)


async def test_sentence_vectors_follow_the_memory(memory_host) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        mid = await store(client, THREE, "ci", ["docker", "ci"])
        one = await store(client, "Pinned the Postgres image to 16.4.", "db", ["postgres"])  # one sentence: none
        st = _drained(host)
        assert sorted(st.parts.collection.get()["ids"]) == [f"{mid}#0", f"{mid}#1", f"{mid}#2"]
        before = st.parts.collection.get(ids=[f"{mid}#0"], include=["embeddings"])["embeddings"][0]
        await call(client, "update_memory", memory_id=mid, archived=True)  # not the text: the vectors stay
        assert np.allclose(st.parts.collection.get(ids=[f"{mid}#0"], include=["embeddings"])["embeddings"][0], before)
        two = "The build took 40 minutes in CI. We now mount a Docker cache volume."
        await call(client, "update_memory", memory_id=mid, content=two)
        got = _drained(host).parts.collection.get(include=["embeddings"])
        assert sorted(got["ids"]) == [f"{mid}#0", f"{mid}#1"]
        expected = MiniLMEmbedder().embed(["docker, ci\n" + s for s in sentences(two)])
        by_id = dict(zip(got["ids"], got["embeddings"], strict=True))
        assert np.allclose(by_id[f"{mid}#0"], expected[0], atol=1e-5)
        assert np.allclose(by_id[f"{mid}#1"], expected[1], atol=1e-5)
        await call(client, "delete_memory", memory_id=mid)
        await call(client, "delete_memory", memory_id=one)
        assert st.parts.collection.count() == 0


async def test_a_write_whose_sentence_vectors_fail_changes_nothing(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = memory_host(sentences=True)
    async with Client(host.server) as client:
        mid = await store(client, THREE, "ci", ["docker", "ci"])
        st = _drained(host)
        parts = st.parts.collection.get(include=["embeddings"])

        def full_disk(*args: Any, **kwargs: Any) -> None:
            raise OSError("No space left on device")

        monkeypatch.setattr(Parts, "delete", full_disk)  # the update rewrote the memory already
        await fails(client, "update_memory", memory_id=mid, content="The build is slow. It takes forty minutes.")
        monkeypatch.undo()
        assert (await call(client, "get_memory", memory_id=mid))["content"] == THREE
        other = await store(client, "Rotated the keys. Then the old tokens failed.", "a")
        monkeypatch.setattr(
            st.parts.collection, "upsert", full_disk
        )  # the background write fails: the memory stays marked
        _drained(host)
        monkeypatch.undo()
        assert (await call(client, "get_stats"))["parts_pending"] == 1
        listed = await call(client, "list_memories", limit=10)
        assert {m["id"] for m in listed["memories"]} == {mid, other}
        after = st.parts.collection.get(include=["embeddings"])
        assert sorted(after["ids"]) == sorted(parts["ids"])
        assert np.allclose(
            [dict(zip(after["ids"], after["embeddings"], strict=True))[i] for i in parts["ids"]], parts["embeddings"]
        )


def test_a_long_sentence_is_cut_at_its_clauses() -> None:
    # A question often matches one clause: the cause or the fix, not both (bench/recall_ideas.py, "clause").
    assert sentences(
        "Stripe webhook handler returned 500 because we parsed the JSON body before verifying the signature; "
        "construct_event needs the raw bytes."
    ) == [
        "Stripe webhook handler returned 500",
        "because we parsed the JSON body before verifying the signature;",
        "construct_event needs the raw bytes.",
    ]
    assert sentences("Probes that check the database restart every pod, so liveness checks the process alone.") == [
        "Probes that check the database restart every pod",
        "so liveness checks the process alone.",
    ]
    assert sentences("Fixed it. Done.") == []  # pieces under 12 characters: the whole text is the one vector
    # A long memory: up to 16 pieces (MiniLM reads only its first 256 tokens whole), the rest shares the 16th.
    steps = sentences(" ".join(f"Step {n} of the rollout went fine." for n in range(20)))
    assert len(steps) == 16 and steps[14] == "Step 14 of the rollout went fine."
    assert steps[15].startswith("Step 15") and steps[15].endswith("Step 19 of the rollout went fine.")
