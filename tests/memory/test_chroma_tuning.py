"""Chroma's index settings that the store relies on: new collections are made with them, and collections made
before them get them at open."""

from __future__ import annotations

from pathlib import Path

from nexus_memory.embed import create
from nexus_memory.store import SENTENCES_RECIPE, SYNC_THRESHOLD, ChromaStore, collection_metadata


def _sync_thresholds(st: ChromaStore) -> tuple[int, int]:
    return st.memories.configuration_json["hnsw"]["sync_threshold"], st.parts.collection.configuration_json["hnsw"][
        "sync_threshold"
    ]


def test_collections_made_with_chromas_default_sync_threshold_get_the_stores_at_open(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    embedder = create("minilm")
    old = ChromaStore(tmp_path / "old", "nexus_memories", embedder, recipe=SENTENCES_RECIPE)
    client = chromadb.PersistentClient(path=str(old.path), settings=Settings(anonymized_telemetry=False))
    metadata = collection_metadata(embedder, SENTENCES_RECIPE)
    client.create_collection("nexus_memories", embedding_function=None, metadata=metadata)
    client.create_collection("nexus_memories_parts", embedding_function=None, metadata={"nexus_kind": "parts"})
    assert client.get_collection("nexus_memories").configuration_json["hnsw"]["sync_threshold"] == 1000
    try:
        assert _sync_thresholds(old) == (SYNC_THRESHOLD, SYNC_THRESHOLD) != (1000, 1000)
        old.close()
        old.open()  # kept: read again from Chroma
        assert _sync_thresholds(old) == (SYNC_THRESHOLD, SYNC_THRESHOLD)
        new = ChromaStore(tmp_path / "new", "nexus_memories", embedder, recipe=SENTENCES_RECIPE)
        assert _sync_thresholds(new) == (SYNC_THRESHOLD, SYNC_THRESHOLD)
        new.close()
    finally:
        old.close()
