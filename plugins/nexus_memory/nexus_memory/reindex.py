"""Re-embedding every memory with the configured embedder and recipe: ``nexus memory reindex`` and the
``reindex_memories`` tool.

The new vectors go to new collections (the dimension may change), which take the old ones' names once they are
complete; until then nothing the store reads changes, and a failure or a cancellation deletes the new ones. Ids,
content, times, archive state and links (a collection of their own) are kept.

``nexus memory reindex`` runs on a store no server uses. ``reindex_memories`` runs in the server: recall reads the old
collection meanwhile, and writes go on. The memories written, changed or deleted while the new collection filled are
then caught up, once holding nothing and once more holding the write lock for the switch, so writes wait only for
the last few. A write that embedded its memory before the switch embeds it again after (``MemoryService``).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from nexus_core import make_private
from nexus_memory.embed import Embedder, tag_boost
from nexus_memory.progress import STEP, Progress
from nexus_memory.store import HNSW, MAX_PARTS, ChromaStore, Record, StoreError, collection_metadata
from nexus_memory.store.leftovers import Names, recover
from nexus_memory.store.opening import new_client
from nexus_memory.store.paging import REORDERED
from nexus_memory.threads import in_background

log = logging.getLogger("nexus.memory")

PAGE = 1000  # records per Chroma get when reading a whole collection
SECOND = 1.0  # a batch is sized to take about this long: progress moves every STEP memories or every second


class Cancelled(StoreError):
    """The caller stopped the reindex (a tool call its client cancelled): the old collection is unchanged."""


def already(store: ChromaStore, target: Embedder, recipe: str) -> bool:
    """Whether the collection is made with ``target`` on ``recipe`` already (open the store first)."""
    return store.embedder.name == target.name and store.recipe == recipe


def reindex(store: ChromaStore, target: Embedder, recipe: str, progress: bool = False, force: bool = False) -> int:
    """Re-embed every memory with ``target`` and ``recipe``; how many (0: already so, nothing done).

    Run it while no server uses the store (``nexus memory reindex``): ``reindex_in_server`` is the server's.
    """
    store.open()
    if not force and already(store, target, recipe):
        return 0
    fresh = Fresh(store, target, recipe)
    try:
        with Progress("reindex", store.count(), "memories", None if progress else io.StringIO()) as bar:
            fresh.fill(bar)
        fresh.switch()
    except BaseException:
        fresh.drop()
        raise
    fresh.drop_old()
    store.close()
    store.embedder, store.recipe = target, recipe
    return fresh.embedded


def reindex_in_server(
    store: ChromaStore, target: Embedder, recipe: str, force: bool, stop: threading.Event
) -> tuple[int, int]:
    """``reindex`` in a server that goes on serving: how many memories the collection holds, and how many were
    embedded (0: already so). ``stop`` set: it stops at its next batch (``Cancelled``), the old collection intact."""
    store.open()
    if not force and already(store, target, recipe):
        return store.count(), 0
    fresh = Fresh(store, target, recipe, stop)
    try:
        with Progress("reindex", store.count(), "memories", io.StringIO()) as bar, in_background():
            fresh.fill(bar)
            fresh.catch_up(bar)  # what the calls wrote meanwhile, holding nothing
            with store.write_lock:
                fresh.catch_up(bar)  # the last of it: writes wait from here until the switch
                fresh.switch()
                fresh.reopen()
    except BaseException:
        if not fresh.switched:
            fresh.drop()
        raise
    ready(store)
    fresh.drop_old()
    return store.count(), fresh.embedded


def ready(store: ChromaStore) -> None:
    """Read what recall keeps in this process (the copy of the memories, the archived ids, the tag index) from the
    new collection now, not at the next recall."""
    store.archived_ids()
    store.mirror()
    if tag_boost(store.embedder):
        store.tag_index()


class Fresh:
    """The new collections of one reindex of ``store`` with ``target`` on ``recipe``."""

    def __init__(self, store: ChromaStore, target: Embedder, recipe: str, stop: threading.Event | None = None) -> None:
        self.store, self.target, self.recipe, self.stop = store, target, recipe, stop
        self.names = Names(store.collection_name)
        self.embedded, self.switched, self.replaced_parts = 0, False, False
        store.open()
        client = store.client
        if not store.chroma_url:  # what a failed run could not delete (a full disk): this process holds the store
            recover(client, store.collection_name)
        existing = {c.name for c in client.list_collections()}
        for leftover in (*self.names.fresh, *self.names.old):  # another process's run, maybe still going
            if leftover in existing:
                raise StoreError(f"collection '{leftover}' exists (an interrupted reindex?): check it, then delete it")
        fresh, fresh_parts = self.names.fresh
        metadata = collection_metadata(target, recipe)
        self.memories = client.create_collection(
            fresh, embedding_function=None, configuration={"hnsw": HNSW}, metadata=metadata
        )
        self.parts = client.create_collection(fresh_parts, embedding_function=None, metadata={"nexus_kind": "parts"})

    def _check(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Cancelled("the reindex was cancelled: the collection is unchanged")

    def fill(self, bar: Progress) -> None:
        """Embed every memory of the store into the new collections, in batches of about a second (STEP at most)."""
        size = STEP
        for got in self.store.page(include=("documents", "metadatas")):
            rows = list(zip(got["ids"], got["documents"], got["metadatas"], strict=True))
            while rows:
                self._check()
                began = time.monotonic()
                batch, rows = rows[:size], rows[size:]
                self.put([Record.from_chroma(*row) for row in batch])
                bar.update(len(batch))
                size = next_size(len(batch), time.monotonic() - began)

    def put(self, records: list[Record]) -> None:
        """Embed ``records`` with the target on the recipe into the new collections."""
        texts, pieces = [r.text(self.recipe) for r in records], {r.id: r.parts(self.recipe) for r in records}
        part_ids = [f"{mid}#{n}" for mid, texts_of in pieces.items() for n in range(len(texts_of))]
        vectors = self.target.embed(texts + [p for texts_of in pieces.values() for p in texts_of])
        for r in records:
            r.parts_pending = False  # a server's pending sentence vectors: written here
        self.memories.upsert(  # upsert: a memory a server moved while it was read may come twice
            ids=[r.id for r in records],
            documents=[r.content for r in records],
            metadatas=[r.metadata() for r in records],
            embeddings=vectors[: len(texts)],
        )
        if part_ids:
            self.parts.upsert(ids=part_ids, embeddings=vectors[len(texts) :])
        self.embedded += len(records)

    def catch_up(self, bar: Progress) -> None:
        """Bring the new collections level with the store: the memories a server's calls wrote, changed or deleted
        since they were copied. A memory whose embedded text changed is embedded again; one whose other fields
        changed (archived, recalled) is copied with its new vector."""
        copied = dict(self._marks(self.memories))
        changed: list[Record] = []
        relabeled: list[Record] = []
        for r in self._records(self.store.memories):
            text, whole = marks(r, self.recipe)
            was = copied.pop(r.id, None)
            if was is None or was[0] != text:
                changed.append(r)
            elif was[1] != whole:
                relabeled.append(r)
        self._remove([*copied, *(r.id for r in changed)])  # what is left in copied was deleted meanwhile
        if relabeled:
            vectors = self.memories.get(ids=[r.id for r in relabeled], include=["embeddings"])
            by_id = dict(zip(vectors["ids"], vectors["embeddings"], strict=True))
            self.memories.upsert(
                ids=[r.id for r in relabeled],
                documents=[r.content for r in relabeled],
                metadatas=[r.metadata() for r in relabeled],
                embeddings=[list(map(float, by_id[r.id])) for r in relabeled],
            )
        for start in range(0, len(changed), STEP):
            self._check()
            self.put(changed[start : start + STEP])
            bar.update(len(changed[start : start + STEP]))

    def _records(self, collection: Any) -> Iterator[Record]:
        """Every memory of ``collection``, as it would be copied (its sentence vectors written)."""
        for got in pages(collection):
            for row in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                record = Record.from_chroma(*row)
                record.parts_pending = False
                yield record

    def _marks(self, collection: Any) -> Iterator[tuple[str, tuple[bytes, bytes]]]:
        for record in self._records(collection):
            yield record.id, marks(record, self.recipe)

    def _remove(self, ids: list[str]) -> None:
        if ids:
            self.memories.delete(ids=ids)
            self.parts.delete(ids=[f"{i}#{n}" for i in ids for n in range(MAX_PARTS)])

    def switch(self) -> None:
        """The new collections take the live names, the old ones ``<name>_pre_reindex``; a failure midway renames
        back what had moved. Hold the write lock in a server, and ``reopen`` before letting it go."""
        self._check()
        client, names = self.store.client, self.names
        old_parts = names.parts in {c.name for c in client.list_collections()}
        moves = [(self.store.memories, names.old[0], names.memories), (self.memories, names.memories, names.fresh[0])]
        if old_parts:
            parts = client.get_collection(names.parts, embedding_function=None)
            moves.append((parts, names.old[1], names.parts))
        moves.append((self.parts, names.parts, names.fresh[1]))
        moved: list[tuple[Any, str]] = []
        try:
            for collection, to, back in moves:
                collection.modify(name=to)
                moved.append((collection, back))
        except BaseException:
            for collection, back in reversed(moved):
                try:
                    collection.modify(name=back)
                except Exception as exc:
                    log.error("memory: reindex could not rename %s back to %s: %s", collection.name, back, exc)
            raise
        self.switched, self.replaced_parts = True, old_parts

    def reopen(self) -> None:
        """The store, on the new collections: their handles dropped, its embedder and recipe the new ones. An
        embedded Chroma stays running meanwhile (a client is held across), so the calls that hold the old handles
        end as they began and the indexes are not read again."""
        held = None if self.store.chroma_url else new_client(None, self.store.path)
        try:
            self.store.close()
            self.store.deleted += REORDERED  # what catch_up moved: an export's pages start over
            self.store.embedder, self.store.recipe = self.target, self.recipe
            self.store.open()
            if not self.store.chroma_url:
                make_private(self.store.path)  # the files of the new collections: 0600
        finally:
            if held is not None:
                held.close()

    def drop(self) -> None:
        """Delete the new collections (a failed or cancelled reindex): the old ones are untouched."""
        for collection in (self.memories, self.parts):
            try:
                self.store.client.delete_collection(collection.name)
            except Exception as exc:  # left for the next reindex to name
                log.warning("memory: reindex could not delete %s: %s", collection.name, exc)

    def drop_old(self) -> None:
        """Delete the old collections once the new ones serve (a failure is logged: the next reindex names them)."""
        self.store.open()
        for name in self.names.old if self.replaced_parts else self.names.old[:1]:
            try:
                self.store.client.delete_collection(name)
            except Exception as exc:
                log.warning("memory: reindex could not delete the old collection %s: %s", name, exc)


def pages(collection: Any) -> Iterator[dict[str, Any]]:
    """Every record of ``collection`` (documents and metadata), a page of ``PAGE`` at a time."""
    offset = 0
    while True:
        got = collection.get(limit=PAGE, offset=offset, include=["documents", "metadatas"])
        if not got["ids"]:
            return
        yield got
        offset += len(got["ids"])


def marks(record: Record, recipe: str) -> tuple[bytes, bytes]:
    """Digests of what a memory's vectors are made of, and of everything it stores."""
    text = json.dumps([record.text(recipe), record.parts(recipe)], ensure_ascii=False)
    whole = json.dumps([record.content, record.metadata()], ensure_ascii=False, sort_keys=True, default=str)
    return _digest(text), _digest(whole)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def next_size(batch: int, seconds: float) -> int:
    """The next batch's size: as many memories as the last batch's rate embeds in ``SECOND`` (1 to ``STEP``)."""
    if seconds <= 0:
        return STEP
    return max(1, min(STEP, int(batch * SECOND / seconds)))
