"""Chroma, and nothing else, holds the memories and their links.

Two collections: ``<collection>`` (one record per memory: content as the
document, the embedding, type/context/tags/times as metadata) and
``<collection>_links`` (``links``). A collection made with the sentences
recipe has a third, ``<collection>_parts`` (``parts``). All are opened with
``embedding_function=None``: every vector is computed by the plugin's embedder
and passed in, so Chroma never tries to download its default model. The
embedder's name and dimension, and the recipe of the embedded text, are written
in the collection's metadata. A collection keeps the embedder and recipe it was
made with: at open, the store adopts them (and says so when the configuration
names others) until ``nexus memory reindex`` re-embeds it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_core import make_private
from nexus_memory.embed import Embedder, embed_query, query_scale
from nexus_memory.store.leftovers import recover
from nexus_memory.store.links import Links
from nexus_memory.store.mirror import MIRROR_MAX, PARTS_MIRROR_MAX, Mirror, Unsupported
from nexus_memory.store.opening import (
    HNSW,
    SYNC_THRESHOLD,
    adopted,
    collection_metadata,
    hold_directory,
    new_client,
    tune,
)
from nexus_memory.store.paging import Deletions, PageEnds
from nexus_memory.store.parts import Parts, open_collection
from nexus_memory.store.records import (
    SENTENCES_RECIPE,
    Record,
    StoreError,
    one_line,
    with_any_tag,
)
from nexus_memory.store.tags import TagIndex

log = logging.getLogger("nexus.memory")

PAGE = 1000  # records per Chroma get when reading a whole collection (more at once raised the peak memory)


def _nearest(got: dict[str, Any]) -> list[tuple[Record, float]]:
    """The records of a Chroma query (one query vector) with their cosine similarity."""
    return [
        (Record.from_chroma(i, d, m), 1.0 - float(dist))
        for i, d, m, dist in zip(
            got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True
        )
    ]


@dataclass
class ChromaStore:
    """Lazily opened Chroma collections for one configured backend.

    Writes go through ``atomic()``: when one fails, what the block already
    wrote is undone, so a failed call leaves nothing behind. Embedded Chroma
    can hang after a failed write (a Chroma 1.5 bug seen on a full disk), so a
    failure also drops the client: the next use opens a fresh one, and first
    finishes any undo that could not run yet.
    """

    data_dir: Path
    collection_name: str
    embedder: Embedder  # the configured one; replaced at open by the one the collection was made with
    chroma_url: str | None = None
    recipe: str = SENTENCES_RECIPE  # likewise (TAGS_RECIPE with `sentences = false`)
    write_lock: threading.RLock = field(default_factory=threading.RLock)
    _open_lock: threading.Lock = field(default_factory=threading.Lock)
    _client: Any = None
    _memories: Any = None
    _links: Any = None
    # Set by a server: writes mark the memories whose sentence vectors changed and hand their ids to it, and the
    # sentence vectors are embedded and written later (``write_parts``), so a store waits for one embedding.
    parts_later: Callable[[list[str]], None] | None = None
    _journal: list[Callable[[], None]] | None = None  # the inverses of the writes of the current atomic() block
    _pending_undo: list[Callable[[], None]] = field(default_factory=list)  # inverses that could not run yet
    _tags: TagIndex | None = None  # every tag in use (a removed tag may linger: it then matches nothing)
    _contexts: set[str] | None = None  # every context in use (likewise)
    # The archived ids, so recall can drop them from its candidates: a `where` on `archived` made Chroma filter
    # every record's metadata (recall p50 at 10k: 7.5 ms without it, 25 ms with it; ~180 ms at 100k).
    _archived: set[str] | None = None
    # An embedded collection, in this process (see the mirror module); off for a larger one until reopened.
    _mirror: Mirror | None = None
    _mirror_off: bool = False
    deleted: int = 0  # memories deleted by this process: an export's next page steps back over them (``paging``)
    page_ends: PageEnds = field(default_factory=PageEnds)
    parts: Parts = field(init=False, repr=False)  # the sentence vectors (the sentences recipe only)
    links: Links = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.parts, self.links = Parts(self), Links(self)

    @property
    def backend(self) -> str:
        return self.chroma_url or "embedded"

    @property
    def is_open(self) -> bool:
        return self._memories is not None

    def open(self) -> None:
        with self._open_lock:
            if self._memories is None:
                started = time.perf_counter()
                self._client, self._memories, self._links = self._connect()
                log.debug("opened %s in %.2f s", self._where, time.perf_counter() - started)
            if self._pending_undo:
                self._finish_undo()

    @property
    def _where(self) -> str:
        return f"the Chroma server at {self.chroma_url}" if self.chroma_url else f"the embedded Chroma in {self.path}"

    @property
    def path(self) -> Path:
        return self.data_dir / "chroma"

    def _connect(self) -> tuple[Any, Any, Any]:
        if not self.chroma_url:
            hold_directory(self.data_dir, self.path)
        try:
            client = new_client(self.chroma_url, self.path)
            if not self.chroma_url:  # this process holds the store: no reindex runs beside it
                recover(client, self.collection_name, delete=False)
            memories = client.get_or_create_collection(
                self.collection_name,
                embedding_function=None,
                configuration={"hnsw": HNSW},
                metadata=collection_metadata(self.embedder, self.recipe),
            )
            links = client.get_or_create_collection(
                f"{self.collection_name}_links", embedding_function=None, metadata={"nexus_kind": "links"}
            )
        except Exception as exc:
            raise StoreError(f"cannot open {self._where}: {one_line(exc)}") from exc
        self._check_embedder(memories.metadata or {})
        self._tune(memories)
        return client, memories, links

    def _tune(self, collection: Any) -> None:
        if not self.chroma_url:  # a server's collections are tuned by whoever runs it
            tune(collection)

    def _check_embedder(self, meta: dict[str, Any]) -> None:
        """Adopt the collection's embedder and recipe: its vectors only compare with that embedder's."""
        self.embedder, self.recipe = adopted(meta, self.collection_name, self.embedder, self.recipe)

    @property
    def memories(self) -> Any:
        if self._memories is None:
            self.open()
        return self._memories

    @property
    def links_collection(self) -> Any:
        if self._links is None:
            self.open()
        return self._links

    @property
    def client(self) -> Any:
        return self._client

    def parts_collection(self) -> Any:
        """``<collection>_parts``, opened (made) on first use by ``parts``."""
        if self._client is None:  # not open() alone: an undo run by open() (holding its lock) comes here too
            self.open()
        parts = open_collection(self._client, self.collection_name, self._where, SYNC_THRESHOLD)
        self._tune(parts)
        return parts

    def close(self) -> None:
        """Release the client (the lock on an embedded folder stays with the process)."""
        client, self._client, self._memories, self._links = self._client, None, None, None
        self.parts.forget()
        self.links.forget()  # a failed write may have undone link changes: reread them
        self._tags = self._contexts = None
        self._archived = None
        self._mirror, self._mirror_off = None, False
        if client is not None:
            with suppress(Exception):
                client.close()

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes in the block all happen, or none: if it raises, their inverses run, newest first.

        Call it holding ``write_lock``. An inverse that cannot run now (the disk is still full) runs when the
        store is next used, before anything else; until then every call reports why.
        """
        journal = self._journal = []
        try:
            yield
            if not self.chroma_url:
                make_private(self.path)  # the files Chroma made for these writes (segments, indexes): 0600
        except Exception:
            self._journal = None
            self._pending_undo += reversed(journal)
            self.close()
            with suppress(Exception):
                self.open()  # undoes now if Chroma lets us
            raise
        finally:
            self._journal = None

    def will_undo(self, inverse: Callable[[], None]) -> None:
        if self._journal is not None:
            self._journal.append(inverse)

    def _finish_undo(self) -> None:
        try:
            while self._pending_undo:
                self._pending_undo[0]()
                self._pending_undo.pop(0)
        except Exception as exc:
            self.close()
            raise StoreError(
                f"the memory store could not undo a failed write yet ({one_line(exc)}); it stays unusable until "
                "that works (free disk space, fix permissions)"
            ) from exc

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Memory texts' vectors, by the collection's embedder (so the store is opened first)."""
        self.open()
        return self.embedder.embed(texts)

    def embed_records(self, records: list[Record]) -> list[list[float]]:
        """The records' vectors; their sentence vectors (sentences recipe) are kept for the write that follows."""
        self.open()
        texts = [r.text(self.recipe) for r in records]
        if self.parts_later is not None:  # embedded later, by the background writer
            return self.embedder.embed(texts)
        return self.parts.embedded(records, self.embedder.embed, texts)

    def embed_query(self, query: str) -> tuple[list[float], float]:
        """The query's vector, and what its similarities are divided by to stay cosines."""
        self.open()
        return embed_query(self.embedder, [query])[0], query_scale(self.embedder, query)

    def touch(self, ids: list[str], stamp: str) -> None:
        """Record that these memories were recalled (a metadata merge: nothing else changes)."""
        if ids:
            self.memories.update(ids=ids, metadatas=[{"last_recalled_at": stamp} for _ in ids])
            if self._mirror is not None:
                self._mirror.merge_meta(ids, {"last_recalled_at": stamp})

    def count(self) -> int:
        return int(self.memories.count())

    def deletions(self) -> Deletions:
        return Deletions(self.count(), self.deleted, self.links.deleted)

    def add(self, records: list[Record], vectors: list[list[float]]) -> None:
        if not records:
            return
        ids = [r.id for r in records]
        self.open()  # first: if the store cannot be opened, nothing was written and nothing needs undoing
        self.will_undo(lambda: self._unadd(ids))
        self.will_undo(lambda: self.parts.delete(ids))
        self._add(records, vectors)

    def _unadd(self, ids: list[str]) -> None:
        self.memories.delete(ids=ids)
        self.deleted += len(ids)
        if self._mirror is not None:
            self._mirror.drop(ids)

    def tag_index(self) -> TagIndex:
        if self._tags is None:
            index = TagIndex()
            for memory_id, meta in self.all_metadata():
                index.hold(memory_id, list(meta.get("tags") or []))
            self._tags = index
        return self._tags

    def variants(self, context: str | None, tags: list[str]) -> tuple[list[str] | None, list[str]]:
        """The stored spellings of a context and of tags, matched regardless of case (002: `["fastapi"]` finds
        `FastAPI`); a value nothing matches stays as given, and then matches nothing."""
        folded_tags = {t.casefold() for t in tags}
        holders = self.tag_index().holders if tags else {}  # the index scans every record: only when filtering
        found = sorted(t for t, held in holders.items() if held and t.casefold() in folded_tags)
        tag_forms = list(dict.fromkeys([*tags, *found]))
        if context is None:
            return None, tag_forms
        if self._contexts is None:
            self._contexts = {str(m["context"]) for _, m in self.all_metadata() if m.get("context") is not None}
        key = context.casefold()
        return list(dict.fromkeys([context, *sorted(c for c in self._contexts if c.casefold() == key)])), tag_forms

    def archived_ids(self) -> set[str]:
        if self._archived is None:
            self._archived = set(self.memories.get(where={"archived": True}, include=[])["ids"])
        return self._archived

    def _note_tags(self, records: Iterable[Record]) -> None:
        """Keep the tag index and the archived ids up to date with records being written."""
        if self._tags is not None:
            for r in records:
                self._tags.hold(r.id, r.tags)
        if self._contexts is not None:
            self._contexts.update(r.context for r in records)
        if self._archived is not None:
            for r in records:
                (self._archived.add if r.archived else self._archived.discard)(r.id)

    def _add(self, records: list[Record], vectors: list[list[float]], with_parts: bool = True) -> None:
        if with_parts:
            for r in records:
                r.parts_pending = self._deferred(r)
        self._note_tags(records)
        ids, documents, metas = [r.id for r in records], [r.content for r in records], [r.metadata() for r in records]
        self.memories.add(ids=ids, documents=documents, metadatas=metas, embeddings=vectors)
        self._mirrored(ids, documents, metas, vectors)
        if with_parts:
            self.parts.add([r for r in records if not r.parts_pending])
        self._later([r.id for r in records if r.parts_pending])  # also a memory put back by an undo

    def replace(self, record: Record, vector: list[float] | None) -> None:
        """Overwrite one memory (its metadata wholesale, so removed tags disappear)."""
        old, old_vector = self.get([record.id])[record.id], self.vectors([record.id])[record.id]
        changed = old.parts(self.recipe) != record.parts(self.recipe)
        if changed:
            record.parts_pending = self._deferred(record)
        with self.parts.changing() if changed else nullcontext():
            if changed:  # the old sentences go first: no reader sees the new content lifted by them
                old_parts = self.parts.of([record.id])
                self.will_undo(lambda: self.parts.restore([record.id], old_parts))
                self.parts.delete([record.id])
            self.will_undo(lambda: self._upsert(old, old_vector))
            self._upsert(record, vector if vector is not None else old_vector)
            if changed:
                if record.parts_pending:
                    self._later([record.id])
                else:
                    self.parts.add([record])

    def _deferred(self, record: Record) -> bool:
        """Whether this record's sentence vectors are to be written later (then its metadata says so)."""
        return self.parts_later is not None and bool(record.parts(self.recipe))

    def _later(self, ids: list[str]) -> None:
        # Handed over before the write is final: the writer takes the write lock, then finds the memory pending
        # or, when the write was undone, not (and skips it).
        if ids and self.parts_later is not None:
            self.parts_later(ids)

    def _upsert(self, record: Record, vector: list[float]) -> None:
        self._note_tags([record])
        meta = record.metadata()
        self.memories.upsert(ids=[record.id], documents=[record.content], metadatas=[meta], embeddings=[vector])
        self._mirrored([record.id], [record.content], [meta], [vector])

    def _mirrored(self, ids: list[str], documents: list[str], metas: list[dict[str, Any]], vectors: Any) -> None:
        """Copy records Chroma has just written into the mirror; one that grows past ``MIRROR_MAX`` is dropped, and
        past ``PARTS_MIRROR_MAX`` it stops holding sentence vectors."""
        if self._mirror is None:
            return
        try:
            self._mirror.put(ids, documents, metas, vectors)
        except Exception as exc:  # Chroma holds the write: a copy that missed it is dropped, and read again
            log.warning("memory mirror dropped: %s", one_line(exc))
            self._mirror = None
            return
        if len(self._mirror) > MIRROR_MAX:
            self._mirror, self._mirror_off = None, True
        elif len(self._mirror) > PARTS_MIRROR_MAX:
            self._mirror.forget_parts()

    def mirror(self) -> Mirror | None:
        """Every memory of an embedded collection, in this process, read on first use; None for a Chroma server
        (other processes may write to it) or a collection of more than ``MIRROR_MAX`` memories."""
        if self.chroma_url or self._mirror_off:
            return None
        if self._mirror is None:
            with self.write_lock:  # no write between reading the collection and keeping the copy
                if self._mirror is None and not self._mirror_off:
                    self._mirror = self._read_mirror()
        return self._mirror

    def parts_mirror(self) -> Mirror | None:
        """The mirror, if it holds the sentence vectors too (up to ``PARTS_MIRROR_MAX`` memories)."""
        mirror = self.mirror()
        return mirror if mirror is not None and mirror.holds_parts else None

    @property
    def held_mirror(self) -> Mirror | None:
        """The mirror if it is read already (writes keep it up to date; they never read it)."""
        return self._mirror

    def _read_mirror(self) -> Mirror | None:
        count = self.memories.count()
        if count > MIRROR_MAX:
            self._mirror_off = True
            return None
        # the sentence vectors too, for a small collection: best_parts then reads nothing from Chroma
        copy = Mirror(int(self.embedder.dimension), parts=count <= PARTS_MIRROR_MAX, folder=self.data_dir)
        for got in self.page(include=("documents", "metadatas", "embeddings")):
            documents, metas = [d or "" for d in got["documents"]], [m or {} for m in got["metadatas"]]
            copy.put(got["ids"], documents, metas, got["embeddings"])
        if copy.holds_parts and self.parts.exists():
            for page in self._pages(self.parts.collection, ("embeddings",)):
                copy.put_parts(page["ids"], page["embeddings"])
        return copy

    def get(self, ids: list[str]) -> dict[str, Record]:
        if not ids:
            return {}
        got = self.memories.get(ids=list(dict.fromkeys(ids)), include=["documents", "metadatas"])
        return {
            i: Record.from_chroma(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }

    def vectors(self, ids: list[str]) -> dict[str, list[float]]:
        if not ids:
            return {}
        got = self.memories.get(ids=list(ids), include=["embeddings"])
        return {i: list(map(float, v)) for i, v in zip(got["ids"], got["embeddings"], strict=True)}

    def delete(self, ids: list[str]) -> None:
        if not ids:
            return
        records, vectors, parts = self.get(ids), self.vectors(ids), self.parts.of(ids)
        self.will_undo(lambda: self._add(list(records.values()), [vectors[i] for i in records], with_parts=False))
        self.will_undo(lambda: self.parts.put(parts))
        self._unadd(list(ids))
        self.parts.delete(list(ids))
        if self._tags is not None:
            self._tags.drop(ids)
        if self._archived is not None:
            self._archived.difference_update(ids)

    def tagged(
        self, vector: list[float], n: int, where: dict[str, Any] | None, tags: list[str]
    ) -> list[tuple[Record, float]]:
        """The ``n`` memories nearest ``vector`` with any of ``tags`` (and ``where``), among the memories the tag
        index says hold them. Chroma, asked without the mirror, takes 8 ms at 10k memories against 9 for a filtered
        query; with ``where`` as well it took 400 ms, so it gets the filter then."""
        holding = self.tag_index().holding(tags)
        mirror = self.mirror()
        if mirror is not None:
            with suppress(Unsupported):
                return [(Record.from_chroma(i, d, m), s) for i, d, m, s in mirror.nearest(vector, n, where, holding)]
        if where is not None:
            return self.query(vector, n, with_any_tag(where, tags))
        if not holding:
            return []
        got = self.memories.query(
            query_embeddings=[vector], n_results=n, ids=sorted(holding), include=["documents", "metadatas", "distances"]
        )
        return _nearest(got)

    def query(self, vector: list[float], n: int, where: dict[str, Any] | None = None) -> list[tuple[Record, float]]:
        """The ``n`` nearest memories with their cosine similarity, best first."""
        if n <= 0:
            return []
        mirror = self.mirror()
        if mirror is not None:
            with suppress(Unsupported):
                return [(Record.from_chroma(i, d, m), s) for i, d, m, s in mirror.nearest(vector, n, where)]
        got = self.memories.query(
            query_embeddings=[vector], n_results=n, where=where, include=["documents", "metadatas", "distances"]
        )
        return _nearest(got)

    def containing(
        self, terms: list[str], where: dict[str, Any] | None, limit: int
    ) -> list[tuple[Record, Sequence[float]]]:
        """Memories whose content contains any of ``terms`` literally (Chroma's full-text index), with their vectors.

        One round trip for all the terms, records and vectors together: each call to Chroma costs more than the
        match itself.
        """
        if not terms:
            return []
        mirror = self.mirror()
        if mirror is not None:
            with suppress(Unsupported):
                return [(Record.from_chroma(i, d, m), v) for i, d, m, v in mirror.containing(terms, where, limit)]
        clause = {"$contains": terms[0]} if len(terms) == 1 else {"$or": [{"$contains": t} for t in terms]}
        got = self.memories.get(
            where=where, where_document=clause, limit=limit, include=["documents", "metadatas", "embeddings"]
        )
        return [
            (Record.from_chroma(i, d, m), v)
            for i, d, m, v in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True)
        ]

    def page(
        self, where: dict[str, Any] | None = None, include: tuple[str, ...] = ("metadatas",)
    ) -> Iterable[dict[str, Any]]:
        """Every record (matching ``where``) in pages, as Chroma's get() dicts."""
        return self._pages(self.memories, include, where)

    @staticmethod
    def _pages(
        collection: Any, include: tuple[str, ...], where: dict[str, Any] | None = None
    ) -> Iterable[dict[str, Any]]:
        offset = 0
        while True:
            got = collection.get(where=where, limit=PAGE, offset=offset, include=list(include))
            if not got["ids"]:
                return
            yield got
            if len(got["ids"]) < PAGE:
                return
            offset += PAGE

    def all_metadata(self, where: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
        return [(i, m or {}) for got in self.page(where) for i, m in zip(got["ids"], got["metadatas"], strict=True)]
