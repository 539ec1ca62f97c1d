"""Opening a store: the embedded folder's lock, the Chroma client, the collections' tuning, and the embedder and
recipe a collection was made with, which the store adopts."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from nexus_core import make_private, private_folder
from nexus_memory.embed import Embedder, EmbedderError, create
from nexus_memory.store.lock import Held, hold, holder
from nexus_memory.store.records import LEGACY_RECIPE, StoreError, one_line

log = logging.getLogger("nexus.memory")

LOCK_FILE = "chroma.lock"
# Chroma's defaults (ef 100, 16 neighbours) returned only 93% of the exact top 5 on the bench's MiniLM vectors,
# which cost recall@5; ef 200/32 neighbours returned 97% and ef 400/48 neighbours 99%, at similar query times.
# Chroma writes an index to disk every ``sync_threshold`` records added (default 1,000); until then each add costs
# more than the one before (one add at 10k memories: 12 -> 20 ms p50 over 1,000 adds, flat ~9 ms at 100), and
# writing sentence vectors kept the memories' adds at the dear end. Applied to existing collections at open.
SYNC_THRESHOLD = 100

HNSW = {
    "space": "cosine",
    "ef_search": 400,
    "ef_construction": 300,
    "max_neighbors": 32,
    "sync_threshold": SYNC_THRESHOLD,
}


def collection_metadata(embedder: Embedder, recipe: str) -> dict[str, Any]:
    return {"nexus_embedder": embedder.name, "nexus_dimension": int(embedder.dimension), "nexus_text": recipe}


def tune(collection: Any) -> None:
    """Give a collection made before ``SYNC_THRESHOLD`` that threshold; embedded only, before its first read or
    write (its index, once loaded, keeps the old one until the process ends)."""
    hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    if hnsw.get("sync_threshold", SYNC_THRESHOLD) != SYNC_THRESHOLD:
        try:
            collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
        except Exception as exc:  # slower adds, nothing worse
            log.warning("memory: could not tune %s: %s", collection.name, one_line(exc))


def hold_directory(data_dir: Path, path: Path) -> None:
    """Take the embedded store's lock (``path``: its Chroma folder, for the message)."""
    private_folder(data_dir)
    try:
        hold(data_dir / LOCK_FILE)
    except Held as held:
        raise StoreError(
            f"the embedded memory store {path} is in use by {holder(held.pid)}: embedded Chroma serves "
            "one process only. Reach it through the Nexus that holds it, stop that one (`nexus server stop` "
            "with its --config), give this one another [server] data_dir, or share one store between processes "
            "and machines through a Chroma server (`chroma run`, then [plugins.memory] chroma_url)"
        ) from None
    except OSError as exc:
        raise StoreError(f"cannot lock {data_dir / LOCK_FILE}: {one_line(exc)}") from None


def new_client(chroma_url: str | None, path: Path) -> Any:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if chroma_url:
        url = urlparse(chroma_url)
        port = url.port or (443 if url.scheme == "https" else 8000)
        return chromadb.HttpClient(
            host=url.hostname or "127.0.0.1", port=port, ssl=url.scheme == "https", settings=settings
        )
    # Chroma makes its files with the process's umask (0644); the umask is process-wide, so it is not changed
    # here: the store folder is made 0700 before Chroma opens it (so nothing in it can be reached whatever
    # the files' modes), and the files Chroma made are made 0600 once it has opened them and after each write.
    private_folder(path)
    client = chromadb.PersistentClient(path=str(path), settings=settings)
    make_private(path)
    return client


def adopted(meta: dict[str, Any], name: str, embedder: Embedder, recipe: str) -> tuple[Embedder, str]:
    """The embedder and recipe of collection ``name`` (its metadata ``meta``), given the configured ones: its
    vectors only compare with that embedder's."""
    stored, dim = str(meta.get("nexus_embedder")), meta.get("nexus_dimension")
    made_with = str(meta.get("nexus_text") or LEGACY_RECIPE)
    if stored == embedder.name and made_with == recipe:
        return embedder, recipe
    if stored != embedder.name:
        try:
            theirs = create(stored)
        except EmbedderError as exc:
            raise EmbedderError(
                f"collection '{name}' holds vectors of embedder '{stored}' ({dim}-d), which "
                f"cannot be loaded ({exc}); [plugins.memory] embedder is '{embedder.name}' "
                f"({embedder.dimension}-d): install '{stored}', or move the collection to "
                f"'{embedder.name}' with `nexus memory reindex`"
            ) from None
        if dim is not None and int(dim) != int(theirs.dimension):
            raise EmbedderError(
                f"collection '{name}' says {dim}-d, embedder '{stored}' gives "
                f"{theirs.dimension}-d: run `nexus memory reindex`"
            )
        embedder = theirs
    log.warning(
        "collection '%s' was made with embedder '%s' on %s; [plugins.memory] asks for another: recall keeps "
        "using the collection's until `nexus memory reindex` re-embeds it",
        name,
        stored,
        made_with,
    )
    return embedder, made_with
