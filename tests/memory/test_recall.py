"""Recall beyond the semantic candidates: when the full-text lookup is needed, and when it provably is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from nexus_memory import retrieval
from nexus_memory.retrieval import BOOST, CANDIDATES, Candidate, outsider_may_rank
from tests.memory.helpers import call, store

QUERY = "the nightly build keeps failing with ZX9921"
# Near-identical fillers: their similarities to QUERY lie within a few hundredths of each other, so the top 5 do
# not outscore the 50th candidate by BOOST and a memory outside the candidates could still rank.
FILLERS = [f"Nightly build failure report {i}: the build failed again overnight." for i in range(CANDIDATES + 10)]
# Less similar to QUERY than any filler (outside the 50 nearest), but it contains the exact term.
CODED = "ZX9921 came from the artifact upload step of CI."


@pytest.mark.anyio
async def test_an_exact_term_reaches_a_memory_beyond_the_semantic_candidates(memory_host, tmp_path: Path) -> None:
    async with Client(memory_host().server) as client:
        for text in FILLERS:
            await store(client, text, "ci", [])  # untagged: the tag "build" would lift every filler
        coded = await store(client, CODED, "ci", [])
        from nexus_memory import _RUNTIMES

        (rt,) = [r for r in _RUNTIMES.values() if r.ctx.data_dir_path.is_relative_to(tmp_path)]
        st = rt.service().store
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
    return retrieval.rank(pool, n_terms)


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
