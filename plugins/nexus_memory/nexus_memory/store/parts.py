"""The sentence vectors of the sentences recipe: ``<collection>_parts``, one vector per sentence of each memory of
two or more sentences (id ``<memory id>#<n>``), which recall reads for its candidates.

A store writes them with the memory, or (in a server) marks the memory ``PENDING`` and leaves them to the writer
(``store.writer``). ``epoch`` counts every change of them, so a recall that asked for them beside its other query
knows whether the answer still holds.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from nexus_memory.embed import Embedder
from nexus_memory.store.mirror import Mirror, best_per_memory
from nexus_memory.store.records import PENDING, SENTENCES_RECIPE, PartHits, Record, StoreError, one_line, part_ids

log = logging.getLogger("nexus.memory")

# Computed for writes that never happened (refused, failed) beyond this many texts: dropped.
KEPT_VECTORS = 4096


class Owner(Protocol):
    """What the sentence vectors need of the store that owns them (``ChromaStore``)."""

    collection_name: str
    recipe: str
    embedder: Embedder

    @property
    def client(self) -> Any: ...

    @property
    def memories(self) -> Any: ...

    @property
    def held_mirror(self) -> Mirror | None: ...

    def open(self) -> None: ...

    def get(self, ids: list[str]) -> dict[str, Record]: ...

    def parts_mirror(self) -> Mirror | None: ...

    def parts_collection(self) -> Any: ...

    def will_undo(self, inverse: Callable[[], None]) -> None: ...


class Parts:
    """A store's sentence vectors; every write is undone with the store's ``atomic()`` block it runs in."""

    def __init__(self, store: Owner) -> None:
        self.store = store
        self._collection: Any = None  # opened on first use
        # Sentence vectors computed by embed_records, by text, until a write stores them (embedding happens before
        # the write lock is taken; a write that finds none here embeds them itself).
        self._vectors: dict[str, list[float]] = {}
        # Counted up before and after every write of sentence vectors (odd while one is under way): a recall that
        # asked for them beside its other query uses that answer only if no write began or ended meanwhile.
        self.epoch = 0
        self._changes = 0  # changes of sentence vectors under way
        self._epoch_lock = threading.Lock()

    @property
    def kept(self) -> bool:
        """Whether the collection keeps sentence vectors (made with the sentences recipe)."""
        self.store.open()
        return self.store.recipe == SENTENCES_RECIPE

    @property
    def _on(self) -> bool:
        return self.store.recipe == SENTENCES_RECIPE

    @property
    def collection(self) -> Any:
        if self._collection is None:
            self._collection = self.store.parts_collection()
        return self._collection

    def forget(self) -> None:
        self._collection = None

    def exists(self) -> bool:
        """Whether sentence vectors may exist (a read must not create their collection)."""
        if not self._on:
            return False
        name = f"{self.store.collection_name}_parts"
        return self._collection is not None or name in {c.name for c in self.store.client.list_collections()}

    # -- reading ------------------------------------------------------------------------

    def nearest(
        self, vector: Sequence[float], n: int, ids: Sequence[str], found: PartHits | None = None
    ) -> tuple[dict[str, float], float]:
        """For each of ``ids`` with a sentence vector among the ``n`` nearest ``vector``, its best dot product with
        ``vector``; and a bound on every other sentence vector's (-inf: there is none). In process (the mirror),
        every one of ``ids`` exactly. ``found``: what ``nearest_dots(vector, n)`` returned, asked for earlier.

        Asking Chroma for the nearest sentence vectors (distances only) costs less than reading the candidates'
        (10k memories: 1.2 against 1.8 ms for 15 candidates, 1.6 against 4.8 for 50)."""
        if not ids or not self.kept:
            return {}, -math.inf
        best = self._mirrored(vector, ids)
        if best is not None:
            return best, -math.inf
        hits, floor = found if found is not None else self.nearest_dots(vector, n)
        wanted, best = set(ids), {}
        for mid, dot in hits:
            if mid in wanted and dot > best.get(mid, -math.inf):
                best[mid] = dot
        return best, floor

    def nearest_dots(self, vector: Sequence[float], n: int) -> PartHits:
        """The memories of the ``n`` sentence vectors nearest ``vector`` with each one's dot product, and a bound on
        every other sentence vector's (-inf: there is none)."""
        got = self.collection.query(query_embeddings=[list(vector)], n_results=n, include=["distances"])
        # The collection's space is l2 and sentence vectors have norm 1: a squared distance d is |q|^2 + 1 - 2 dot.
        norm2 = float(sum(x * x for x in vector))
        dots = [(norm2 + 1.0 - float(d)) / 2.0 for d in got["distances"][0]]
        hits = [(pid.rpartition("#")[0], dot) for pid, dot in zip(got["ids"][0], dots, strict=True)]
        return hits, (dots[-1] if len(dots) == n else -math.inf)

    def best(self, vector: Sequence[float], records: Sequence[Record]) -> dict[str, float]:
        """For each of these memories that has sentence vectors, the best dot product of one with ``vector``."""
        if not records or not self.kept:
            return {}
        best = self._mirrored(vector, [r.id for r in records])
        if best is not None:
            return best
        # Only the ids that exist: a memory's sentences say how many vectors it has (none for one sentence, none
        # yet while pending).
        wanted = [f"{r.id}#{n}" for r in records if not r.parts_pending for n in range(len(r.parts(self.store.recipe)))]
        if not wanted:
            return {}
        got = self.collection.get(ids=wanted, include=["embeddings"])
        if not got["ids"]:
            return {}
        return best_per_memory([pid.rpartition("#")[0] for pid in got["ids"]], got["embeddings"], vector)

    def _mirrored(self, vector: Sequence[float], ids: Sequence[str]) -> dict[str, float] | None:
        """``best`` from the mirror; None when it holds no sentence vectors (or can no longer read their file)."""
        mirror = self.store.parts_mirror()
        if mirror is None:
            return None
        try:
            return mirror.best_parts(vector, ids)
        except OSError as exc:
            log.warning("memory mirror: sentence vectors no longer mirrored: %s", exc)
            mirror.forget_parts()
            return None

    def pending(self) -> list[str]:
        """The memories whose sentence vectors are yet to be written (marked by a process that stopped first)."""
        self.store.open()  # first: the collection's recipe is known once it is open
        if not self._on:
            return []
        return list(self.store.memories.get(where={PENDING: True}, include=[])["ids"])

    def of(self, ids: list[str]) -> dict[str, Any]:
        """These memories' stored sentence vectors, as Chroma's get() gives them (to undo a change)."""
        if not self._on:
            return {"ids": [], "embeddings": []}
        return self.collection.get(ids=part_ids(ids), include=["embeddings"])

    # -- writing ------------------------------------------------------------------------

    def embedded(self, records: list[Record], embed: Any, texts: list[str]) -> list[list[float]]:
        """``texts``' vectors (the records' whole texts), their sentences embedded in the same call and kept for
        the write that follows."""
        recipe = self.store.recipe
        parts = list(dict.fromkeys(p for r in records for p in r.parts(recipe) if p not in self._vectors))
        vectors = embed(texts + parts)
        if len(self._vectors) > KEPT_VECTORS:
            self._vectors.clear()
        self._vectors.update(zip(parts, vectors[len(texts) :], strict=True))
        return vectors[: len(texts)]

    def add(self, records: list[Record]) -> None:
        """Store the sentence vectors of these records (sentences recipe; the memories are written already)."""
        if not self._on:
            return
        ids, texts = [], []
        for r in records:
            for n, text in enumerate(r.parts(self.store.recipe)):
                ids.append(f"{r.id}#{n}")
                texts.append(text)
        if not ids:
            return
        vectors: dict[str, list[float]] = {}
        for text in dict.fromkeys(texts):
            vector = self._vectors.pop(text, None)
            if vector is not None:
                vectors[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, self.store.embedder.embed(missing), strict=True))
        self.put({"ids": ids, "embeddings": [vectors[t] for t in texts]})

    def put(self, got: dict[str, Any]) -> None:
        if len(got["ids"]):
            vectors = [list(map(float, v)) for v in got["embeddings"]]
            with self.changing():
                self.collection.add(ids=list(got["ids"]), embeddings=vectors)
                if self.store.held_mirror is not None:
                    self.store.held_mirror.put_parts(list(got["ids"]), vectors)

    def delete(self, ids: list[str]) -> None:
        if self._on and ids:
            with self.changing():
                self.collection.delete(ids=part_ids(ids))
                if self.store.held_mirror is not None:
                    self.store.held_mirror.drop_parts(ids)

    def restore(self, ids: list[str], got: dict[str, Any]) -> None:
        self.delete(ids)
        self.put(got)

    def write(self, embedded: dict[str, tuple[list[str], list[list[float]]]]) -> list[str]:
        """Store pending memories' sentence vectors (memory id -> the texts embedded and their vectors) and clear
        their mark; skip a memory deleted, no longer pending, or whose sentences changed meanwhile. Call it holding
        ``write_lock``, in ``atomic()``. The ids written."""
        store = self.store
        found = store.get(list(embedded))
        ready = [i for i, r in found.items() if r.parts_pending and r.parts(store.recipe) == embedded[i][0]]
        if not ready:
            return []
        ids = [f"{i}#{n}" for i in ready for n in range(len(embedded[i][0]))]
        vectors = [list(map(float, v)) for i in ready for v in embedded[i][1]]
        store.will_undo(lambda: self.delete(ready))
        with self.changing():
            # upsert: a process killed between these two writes left the same vectors (stale ones go when it changes)
            self.collection.upsert(ids=ids, embeddings=vectors)
            if store.held_mirror is not None:
                store.held_mirror.put_parts(ids, vectors)
            store.memories.update(ids=ready, metadatas=[{PENDING: False} for _ in ready])
            if store.held_mirror is not None:
                store.held_mirror.merge_meta(ready, {PENDING: False})
        return ready

    @contextmanager
    def changing(self) -> Iterator[None]:
        """Bracket a change of sentence vectors: the epoch is odd from the first one begun to the last one ended
        (they nest, and an undo may run in another thread than the writer's)."""
        with self._epoch_lock:
            self._changes += 1
            if self._changes == 1:
                self.epoch += 1
        try:
            yield
        finally:
            with self._epoch_lock:
                self._changes -= 1
                if not self._changes:
                    self.epoch += 1


def open_collection(client: Any, name: str, where: str, sync_threshold: int) -> Any:
    """``<name>_parts``, made on first use."""
    try:
        return client.get_or_create_collection(
            f"{name}_parts",
            embedding_function=None,
            configuration={"hnsw": {"sync_threshold": sync_threshold}},
            metadata={"nexus_kind": "parts"},
        )
    except Exception as exc:
        raise StoreError(f"cannot open {where}: {one_line(exc)}") from exc
