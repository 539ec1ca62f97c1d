"""Recall beyond the semantic candidates: when the full-text lookup is needed, and when it provably is not."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import nexus_memory
from nexus_memory.fields import now
from nexus_memory.recall import pipeline, scoring
from nexus_memory.recall.scoring import BOOST, CANDIDATES, TAG_BOOST, Candidate, outsider_may_rank, tag_width
from nexus_memory.store import Record
from nexus_memory.store.tags import TagIndex
from tests.memory.conftest import service_in
from tests.memory.helpers import call, store

QUERY = "the nightly build keeps failing with ZX9921"
# Near-identical fillers: their similarities to QUERY lie within a few hundredths of each other, so the top 5 do
# not outscore the 50th candidate by BOOST and a memory outside the candidates could still rank.
FILLERS = [f"Nightly build failure report {i}: the build failed again overnight." for i in range(CANDIDATES + 10)]
# Less similar to QUERY than any filler (outside the 50 nearest), but it contains the exact term.
CODED = "ZX9921 came from the artifact upload step of CI."


@pytest.mark.anyio
async def test_an_exact_term_reaches_a_memory_beyond_the_semantic_candidates(memory_host, tmp_path: Path) -> None:
    host = memory_host()
    async with Client(host.server) as client:
        for text in FILLERS:
            await store(client, text, "ci", [])  # untagged: the tag "build" would lift every filler
        coded = await store(client, CODED, "ci", [])
        st = nexus_memory.service_of(host.plugins["memory"].ctx).store
        nearest = st.query(st.embed([QUERY])[0], CANDIDATES)
        assert coded not in {r.id for r, _ in nearest}  # only the full-text lookup can find it

        out = await call(client, "recall_memories", query=QUERY, limit=5)
        top = out["memories"][0]
        assert top["id"] == coded and top["matched_terms"] == ["ZX9921"]
        assert top["score"] == pytest.approx(top["similarity"] + BOOST, abs=1e-3)
        assert top["similarity"] < min(s for _, s in nearest)
        # Without the term the same memory is not recalled: the fillers are closer in meaning.
        plain = await call(client, "recall_memories", query="the nightly build keeps failing", limit=5)
        assert coded not in [r["id"] for r in plain["memories"]]


def _ranked(sims: list[float], matched: list[int], n_terms: int) -> list[Candidate]:
    pool = [Candidate(str(i), s, ["t"] * m) for i, (s, m) in enumerate(zip(sims, matched, strict=True))]
    return scoring.rank(pool, n_terms)


def test_the_bound_skips_the_lookup_only_when_no_outsider_can_rank() -> None:
    sims = [0.9, 0.88, 0.85, 0.8, 0.78, 0.7, 0.6]
    # The 5th scores 0.78; an outsider is at most 0.6 + 0.15 = 0.75: it cannot enter the top 5.
    assert not outsider_may_rank(_ranked(sims, [0] * 7, 1), floor=0.6, limit=5, n_terms=1)
    # The 5th scores 0.78 < 0.7 + 0.15: an outsider with the term could beat it.
    assert outsider_may_rank(_ranked(sims, [0] * 7, 1), floor=0.7, limit=5, n_terms=1)
    # Boosted candidates raise the 5th score (0.7 + 0.15 = 0.85 >= 0.7 + 0.15), so the lookup is not needed.
    assert not outsider_may_rank(_ranked(sims, [1] * 7, 1), floor=0.7, limit=5, n_terms=1)
    # With two terms, candidates matching one gain half the boost while an outsider matching both gains all of it.
    lower = [0.9, 0.88, 0.85, 0.8, 0.76, 0.7]
    assert not outsider_may_rank(_ranked(lower, [1] * 6, 1), floor=0.7, limit=5, n_terms=1)  # 0.91 >= 0.85
    assert outsider_may_rank(_ranked(lower, [1] * 6, 2), floor=0.7, limit=5, n_terms=2)  # 0.835 < 0.85
    # Fewer candidates than the limit: anything outside could rank. No exact terms: nothing to look up.
    assert outsider_may_rank(_ranked(sims[:3], [0] * 3, 1), floor=0.85, limit=5, n_terms=1)
    assert not outsider_may_rank(_ranked(sims, [0] * 7, 0), floor=0.7, limit=5, n_terms=0)
    # A tag the query names: an outsider with it gains the tag boost, terms or not (0.7 + 0.1 > 0.78).
    assert outsider_may_rank(_ranked(sims, [0] * 7, 0), floor=0.7, limit=5, n_terms=0, gain=0.1)
    assert not outsider_may_rank(_ranked(sims, [0] * 7, 0), floor=0.6, limit=5, n_terms=0, gain=0.1)


def test_the_width_holds_the_tagged_memories_wanted_or_leaves_them_to_a_filtered_query() -> None:
    assert tag_width(15, 0.5, 50_000) == 45  # 1.5 times the 30 nearest that hold 15 of them, expectedly
    assert tag_width(15, 0.1, 50_000) == 0 and tag_width(15, 0.0, 50_000) == 0  # 225 or more: a filtered query
    assert tag_width(15, 0.5, 19_999) == 0  # a small collection: the filtered query is cheaper
    index = TagIndex()
    for n, tags in enumerate((["go"], ["go", "db"], [], ["db"])):
        index.hold(str(n), tags)
    assert index.share(["go"]) == 0.5 and index.share(["go", "db"]) == 0.75 and index.share(["rust"]) == 0.0
    index.hold("0", ["db"])  # rewritten with another tag; "1" deleted
    index.drop(["1"])
    assert index.holding(["go"]) == set() and index.holding(["db"]) == {"0", "3"} and index.share(["db"]) == 2 / 3
    assert index.named_in("a go question") == ["go"]


@pytest.mark.anyio
async def test_tagged_memories_are_found_among_the_nearest_as_a_filtered_query_finds_them(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = memory_host(embedder="minilm+e5", sentences=False)  # scores without a sentence's lift
    async with Client(host.server) as client:
        await store(client, "The office printer needs the blue cable.", "office", ["printer"])
        st = service_in(host).store
        st.tag_index()
        stamp = now()
        # Tagged memories that rank among the untagged fillers: 13 of the 15 nearest, 15 of the 18 nearest.
        texts = [*FILLERS, *(f"Release step {i}: the nightly build was published after the checks." for i in range(60))]
        records = [
            Record(str(uuid.uuid4()), text, "insight", "ci", ["jenkins"] if i >= len(FILLERS) else [], stamp, stamp)
            for i, text in enumerate(texts)
        ]
        st.add(records, st.embed_records(records))
        filtered: list[int] = []  # how many memories each search among the memories with a named tag weighed
        mirror = st.mirror()
        plain_nearest = mirror.nearest

        def nearest(vector: list[float], n: int, where: dict[str, Any] | None, among: Any = None) -> Any:
            if among is not None:
                filtered.append(len(among))
            return plain_nearest(vector, n, where, among)

        monkeypatch.setattr(mirror, "nearest", nearest)
        monkeypatch.setattr(scoring, "WIDEN_FROM", 0)  # widened as in a large collection
        wide = await call(client, "recall_memories", query="the nightly build keeps failing on jenkins", limit=5)
        assert not filtered  # half the memories have the tag: the nearest 46 hold the 15 wanted
        monkeypatch.setattr(scoring, "MAX_TAG_WIDTH", 0)
        bounded = await call(client, "recall_memories", query="the nightly build keeps failing on jenkins", limit=5)
        # The 15 nearest hold 13 with the tag, not 15, but one further, even with the tag's gain, cannot outscore
        # the 5th: the memories with the tag are not searched.
        assert not filtered
        monkeypatch.setattr(pipeline, "outsider_may_rank", lambda *args, **kwargs: True)
        asked = await call(client, "recall_memories", query="the nightly build keeps failing on jenkins", limit=5)
        assert filtered == [60]  # searched all the same, among the 60 memories the tag index holds: the same top
        # Without the mirror, Chroma is asked among the memories the tag index holds for the tag (an id list: a
        # filtered query scans every record's metadata).
        st._mirror_off, among = True, []
        plain_chroma = st.memories.query
        monkeypatch.setattr(st.memories, "query", lambda **kw: among.append(kw.get("ids")) or plain_chroma(**kw))
        by_ids = await call(client, "recall_memories", query="the nightly build keeps failing on jenkins", limit=5)
        st._mirror_off = False
        assert filtered == [60]  # as before: the mirror was not asked again
        assert among[-1] is not None and len(among[-1]) == 60  # the 60 memories with the tag
        tops = [[(m["id"], m["score"]) for m in out["memories"]] for out in (wide, bounded, asked, by_ids)]
        assert tops[0] == tops[1] == tops[2] == [(i, pytest.approx(score, abs=2e-4)) for i, score in tops[3]]
        monkeypatch.undo()
        boosted = [m for m in wide["memories"] if m["tags"] == ["jenkins"]]
        assert boosted and all(m["score"] == pytest.approx(m["similarity"] + TAG_BOOST, abs=2e-4) for m in boosted)
        # The tag named by a question its memories are far from: none of them could reach the top, so they are
        # not searched.
        monkeypatch.setattr(mirror, "nearest", nearest)
        filtered.clear()
        far = await call(client, "recall_memories", query="which printer cable does the office use, jenkins", limit=5)
    assert not filtered and far["memories"][0]["tags"] == ["printer"]


@pytest.mark.anyio
async def test_the_light_mode_never_builds_the_tag_index(memory_host) -> None:
    """Only an embedder with a tag boost reads tags at recall: building the index scans every record."""
    host = memory_host()  # minilm: no tag boost
    async with Client(host.server) as client:
        await store(client, "The office printer needs the blue cable.", "office", ["printer"])
        found = await call(client, "recall_memories", query="which cable does the printer take")
        assert found["memories"] and service_in(host).store._tags is None
