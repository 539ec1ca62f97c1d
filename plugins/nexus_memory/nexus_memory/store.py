"""Chroma, and nothing else, holds the memories and their links.

Two collections: ``<collection>`` (one record per memory: content as the
document, the embedding, type/context/tags/times as metadata) and
``<collection>_links`` (one record per link, with a constant 1-d vector since
Chroma requires one). A collection made with the sentences recipe has a third,
``<collection>_parts``: one vector per sentence of each memory of two or more
sentences (id ``<memory id>#<n>``), which recall reads for its candidates.
All are opened with ``embedding_function=None``: every
vector is computed by the plugin's embedder and passed in, so Chroma never
tries to download its default model. The embedder's name and dimension, and
the recipe of the embedded text, are written in the collection's metadata. A
collection keeps the embedder and recipe it was made with: at open, the store
adopts them (and says so when the configuration names others) until
``nexus memory reindex`` re-embeds it.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from nexus_core import make_private, private_folder
from nexus_memory import lock
from nexus_memory.embedders import Embedder, EmbedderError, create, embed_query, query_scale
from nexus_memory.mirror import MIRROR_MAX, PARTS_MIRROR_MAX, Mirror, Unsupported, best_per_memory
from nexus_memory.retrieval import TagIndex

log = logging.getLogger("nexus.memory")

LOCK_FILE = "chroma.lock"
LINK_VECTOR = [1.0]
PAGE = 1000  # records per Chroma get when reading a whole collection (more at once raised the peak memory)
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
# What is embedded for a memory. Tags first, so MiniLM's 256-token truncation cannot drop them (tags added 0.05
# recall@5 on the labeled set's dev half); the project's name in the text cost recall. Collections made before
# the recipe was recorded embedded the content alone. The sentences recipe also embeds each sentence (tags first)
# of a memory of two or more sentences as extra vectors: a question often matches one sentence of a longer memory
# (bench/recall_ideas.py; retrieval.PART_WEIGHT).
SENTENCES_RECIPE = "tags+content+sentences"
TAGS_RECIPE = "tags+content"
LEGACY_RECIPE = "content"
RECIPES = (SENTENCES_RECIPE, TAGS_RECIPE, LEGACY_RECIPE)
PENDING = "parts_pending"  # metadata flag: written with a memory whose sentence vectors are written later
# Vectors per memory besides the whole text's; the pieces after the 15th share the 16th. MiniLM reads only the first
# 256 tokens of the whole text, so a long memory is found by its later pieces: on memories of five labeled notes
# joined (bench/recall_long.py, dev queries) 8 gave recall@5 0.810, 16 and 32 0.833 (one vector: 0.762).
MAX_PARTS = 16
MIN_SENTENCE = 12  # characters: a shorter piece ("Fixed.", "v2.") joins no vector of its own
# A piece ends after . ! ? ; : (also inside os.replace: the pieces shorter than MIN_SENTENCE are dropped) or a CJK
# full stop, at a line break, at a spaced dash, and before a clause led by "because" or, after a comma, by "so",
# "but", "which", "when", ... Sentences alone: dev recall@5 0.920, MRR 0.807; these clauses: 0.930, 0.816, and on
# the independent set with distractors 0.889 -> 0.903 (bench/recall_ideas.py, "clause clauses"); ending only at
# ". " (white space after) lost a dev query.
_PIECE_END = re.compile(
    r"(?<=[.!?。！？；;:])\s*|\n+|,\s+(?=(?:because|so|but|and then|which|since|when|after|before|while)\b)"
    r"|\s+(?=because\b)|\s+—\s+|\s+-\s+"
)


def sentences(content: str) -> list[str]:
    """The content's sentences, a long one cut at its clauses, of ``MIN_SENTENCE`` characters or more (the shorter
    ones are dropped), at most ``MAX_PARTS`` (the rest joined into the last); none when there are fewer than two:
    the whole text is one."""
    found = [s.strip() for s in _PIECE_END.split(content) if s and len(s.strip()) >= MIN_SENTENCE]
    if len(found) > MAX_PARTS:
        found = [*found[: MAX_PARTS - 1], " ".join(found[MAX_PARTS - 1 :])]
    return found if len(found) >= 2 else []


def _nearest(got: dict[str, Any]) -> list[tuple[Record, float]]:
    """The records of a Chroma query (one query vector) with their cosine similarity."""
    return [
        (Record.from_chroma(i, d, m), 1.0 - float(dist))
        for i, d, m, dist in zip(
            got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True
        )
    ]


PartHits = tuple[list[tuple[str, float]], float]  # (memory id, dot product) of the nearest sentences; a bound


class StoreError(Exception):
    """Chroma cannot be reached, opened or written; the message says why, in one line."""


def one_line(exc: BaseException) -> str:
    """An exception as ``Type: message`` on one line (Chroma's messages may span several)."""
    text = " ".join(str(exc).split()) or "no details"
    return f"{type(exc).__name__}: {text}"


@dataclass
class Record:
    """A memory as stored."""

    id: str
    content: str
    memory_type: str
    context: str
    tags: list[str]
    created_at: str
    updated_at: str
    archived: bool = False
    last_recalled_at: str = ""
    parts_pending: bool = False  # its sentence vectors are yet to be written (by the background writer)

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "type": self.memory_type,
            "context": self.context,
            "tag_count": len(self.tags),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "archived": self.archived,
        }
        if self.tags:  # Chroma refuses empty lists
            meta["tags"] = list(self.tags)
        if self.last_recalled_at:
            meta["last_recalled_at"] = self.last_recalled_at
        meta[PENDING] = self.parts_pending  # always: Chroma's upsert merges metadata, so False must be written
        return meta

    def text(self, recipe: str = SENTENCES_RECIPE) -> str:
        """What the embedder reads for this memory under ``recipe``."""
        if recipe in (SENTENCES_RECIPE, TAGS_RECIPE) and self.tags:
            return ", ".join(self.tags) + "\n" + self.content
        return self.content

    def parts(self, recipe: str = SENTENCES_RECIPE) -> list[str]:
        """The extra texts embedded for this memory under ``recipe``: each sentence, tags first (see ``text``)."""
        if recipe != SENTENCES_RECIPE:
            return []
        prefix = ", ".join(self.tags) + "\n" if self.tags else ""
        return [prefix + s for s in sentences(self.content)]

    @classmethod
    def from_chroma(cls, id: str, document: str | None, meta: dict[str, Any] | None) -> Record:
        meta = meta or {}
        return cls(
            id=id,
            content=document or "",
            memory_type=str(meta.get("type", "note")),
            context=str(meta.get("context", "")),
            tags=list(meta.get("tags") or []),
            created_at=str(meta.get("created_at", "")),
            updated_at=str(meta.get("updated_at", "")),
            archived=meta.get("archived") is True,
            last_recalled_at=str(meta.get("last_recalled_at") or ""),
            parts_pending=meta.get(PENDING) is True,
        )


@dataclass
class LinkRecord:
    source_id: str
    target_id: str
    relation_type: str
    reason: str
    created_at: str

    @property
    def id(self) -> str:
        return link_id(self.source_id, self.relation_type, self.target_id)

    def metadata(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "target_id": self.target_id,
            "relation_type": self.relation_type,
            "reason": self.reason,
            "created_at": self.created_at,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> LinkRecord:
        return cls(
            **{k: str(meta.get(k, "")) for k in ("source_id", "target_id", "relation_type", "reason")},
            created_at=str(meta.get("created_at", "")),
        )


def with_any_tag(where: dict[str, Any] | None, tags: list[str]) -> dict[str, Any]:
    """``where``, narrowed to the memories with any of ``tags``."""
    parts = [{"tags": {"$contains": t}} for t in tags]
    tagged = parts[0] if len(parts) == 1 else {"$or": parts}
    return tagged if where is None else {"$and": [where, tagged]}


def recipe_for(sentences: bool) -> str:
    """The recipe ``[plugins.memory] sentences`` asks for new collections (and reindex)."""
    return SENTENCES_RECIPE if sentences else TAGS_RECIPE


def collection_metadata(embedder: Embedder, recipe: str) -> dict[str, Any]:
    return {"nexus_embedder": embedder.name, "nexus_dimension": int(embedder.dimension), "nexus_text": recipe}


def part_ids(ids: Iterable[str]) -> list[str]:
    """Every id a sentence vector of these memories may have."""
    return [f"{i}#{n}" for i in ids for n in range(MAX_PARTS)]


def link_id(source: str, relation: str, target: str) -> str:
    return f"{source}|{relation}|{target}"


def where_clause(
    context: str | None = None,
    memory_type: str | None = None,
    tags: Iterable[str] | None = None,
    include_archived: bool = True,
) -> dict[str, Any] | None:
    """A Chroma ``where`` for the filters given (tags: any of them), or None."""
    parts: list[dict[str, Any]] = []
    if not include_archived:  # $ne also matches the records written before `archived` existed
        parts.append({"archived": {"$ne": True}})
    if context:
        parts.append({"context": context})
    if memory_type:
        parts.append({"type": memory_type})
    tag_parts = [{"tags": {"$contains": t}} for t in (tags or [])]
    if len(tag_parts) == 1:
        parts.append(tag_parts[0])
    elif tag_parts:
        parts.append({"$or": tag_parts})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


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
    _parts: Any = None  # the sentence vectors (the sentences recipe only), opened on first use
    # Sentence vectors computed by embed_records, by text, until a write stores them (embedding happens before
    # the write lock is taken; a write that finds none here embeds them itself).
    _part_vectors: dict[str, list[float]] = field(default_factory=dict)
    # Set by a server: writes mark the memories whose sentence vectors changed and hand their ids to it, and the
    # sentence vectors are embedded and written later (``write_parts``), so a store waits for one embedding.
    parts_later: Callable[[list[str]], None] | None = None
    _journal: list[Callable[[], None]] | None = None  # the inverses of the writes of the current atomic() block
    _pending_undo: list[Callable[[], None]] = field(default_factory=list)  # inverses that could not run yet
    _superseded: dict[str, set[str]] | None = None  # target -> the memories that supersede it (from the links)
    _tags: TagIndex | None = None  # every tag in use (a removed tag may linger: it then matches nothing)
    # The archived ids, so recall can drop them from its candidates: a `where` on `archived` made Chroma filter
    # every record's metadata (recall p50 at 10k: 7.5 ms without it, 25 ms with it; ~180 ms at 100k).
    _archived: set[str] | None = None
    # An embedded collection, in this process (see the mirror module); off for a larger one until reopened.
    _mirror: Mirror | None = None
    _mirror_off: bool = False
    # Counted up before and after every write of sentence vectors (odd while one is under way): a recall that asked
    # for them beside its other query uses that answer only if no write began or ended meanwhile.
    parts_epoch: int = 0
    _changes: int = 0  # changes of sentence vectors under way
    _epoch_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def backend(self) -> str:
        return self.chroma_url or "embedded"

    @property
    def is_open(self) -> bool:
        return self._memories is not None

    # -- opening ----------------------------------------------------------------

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
            self._hold_directory()
        try:
            client = self._new_client()
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
        """Give a collection made before ``SYNC_THRESHOLD`` that threshold; embedded only, before its first read or
        write (its index, once loaded, keeps the old one until the process ends)."""
        if self.chroma_url:
            return
        hnsw = (collection.configuration_json or {}).get("hnsw") or {}
        if hnsw.get("sync_threshold", SYNC_THRESHOLD) != SYNC_THRESHOLD:
            try:
                collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
            except Exception as exc:  # slower adds, nothing worse
                log.warning("memory: could not tune %s: %s", collection.name, one_line(exc))

    def _hold_directory(self) -> None:
        private_folder(self.data_dir)
        try:
            lock.hold(self.data_dir / LOCK_FILE)
        except lock.Held as held:
            raise StoreError(
                f"the embedded memory store {self.path} is in use by {_holder(held.pid)}: embedded Chroma serves "
                "one process only. Reach it through the Nexus that holds it, stop that one (`nexus server stop` "
                "with its --config), give this one another [server] data_dir, or share one store between processes "
                "and machines through a Chroma server (`chroma run`, then [plugins.memory] chroma_url)"
            ) from None
        except OSError as exc:
            raise StoreError(f"cannot lock {self.data_dir / LOCK_FILE}: {one_line(exc)}") from None

    def _new_client(self) -> Any:
        os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if self.chroma_url:
            url = urlparse(self.chroma_url)
            port = url.port or (443 if url.scheme == "https" else 8000)
            return chromadb.HttpClient(
                host=url.hostname or "127.0.0.1", port=port, ssl=url.scheme == "https", settings=settings
            )
        # Chroma makes its files with the process's umask (0644); the umask is process-wide, so it is not changed
        # here: the store folder is made 0700 before Chroma opens it (so nothing in it can be reached whatever
        # the files' modes), and the files Chroma made are made 0600 once it has opened them and after each write.
        private_folder(self.path)
        client = chromadb.PersistentClient(path=str(self.path), settings=settings)
        make_private(self.path)
        return client

    def _check_embedder(self, meta: dict[str, Any]) -> None:
        """Adopt the collection's embedder and recipe: its vectors only compare with that embedder's."""
        stored, dim = str(meta.get("nexus_embedder")), meta.get("nexus_dimension")
        recipe = str(meta.get("nexus_text") or LEGACY_RECIPE)
        if stored == self.embedder.name and recipe == self.recipe:
            return
        if stored != self.embedder.name:
            try:
                embedder = create(stored)
            except EmbedderError as exc:
                raise EmbedderError(
                    f"collection '{self.collection_name}' holds vectors of embedder '{stored}' ({dim}-d), which "
                    f"cannot be loaded ({exc}); [plugins.memory] embedder is '{self.embedder.name}' "
                    f"({self.embedder.dimension}-d): install '{stored}', or move the collection to "
                    f"'{self.embedder.name}' with `nexus memory reindex`"
                ) from None
            if dim is not None and int(dim) != int(embedder.dimension):
                raise EmbedderError(
                    f"collection '{self.collection_name}' says {dim}-d, embedder '{stored}' gives "
                    f"{embedder.dimension}-d: run `nexus memory reindex`"
                )
            self.embedder = embedder
        log.warning(
            "collection '%s' was made with embedder '%s' on %s; [plugins.memory] asks for another: recall keeps "
            "using the collection's until `nexus memory reindex` re-embeds it",
            self.collection_name,
            stored,
            recipe,
        )
        self.recipe = recipe

    @property
    def memories(self) -> Any:
        if self._memories is None:
            self.open()
        return self._memories

    @property
    def links(self) -> Any:
        if self._links is None:
            self.open()
        return self._links

    def close(self) -> None:
        """Release the client (the lock on an embedded folder stays with the process)."""
        client, self._client, self._memories, self._links = self._client, None, None, None
        self._parts = None
        self._superseded = None  # a failed write may have undone link changes: reread them
        self._tags = None
        self._archived = None
        self._mirror, self._mirror_off = None, False
        if client is not None:
            with suppress(Exception):
                client.close()

    # -- all or nothing -----------------------------------------------------------

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

    def _will_undo(self, inverse: Callable[[], None]) -> None:
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

    # -- memories ---------------------------------------------------------------

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
        parts = list(dict.fromkeys(p for r in records for p in r.parts(self.recipe) if p not in self._part_vectors))
        vectors = self.embedder.embed(texts + parts)
        if len(self._part_vectors) > 4096:  # computed for writes that never happened (refused, failed)
            self._part_vectors.clear()
        self._part_vectors.update(zip(parts, vectors[len(texts) :], strict=True))
        return vectors[: len(texts)]

    @property
    def has_parts(self) -> bool:
        """Whether the collection keeps sentence vectors (made with the sentences recipe)."""
        self.open()
        return self.recipe == SENTENCES_RECIPE

    @property
    def parts(self) -> Any:
        if self._parts is None:
            if self._client is None:  # not open() alone: an undo run by open() (holding its lock) comes here too
                self.open()
            try:
                parts = self._client.get_or_create_collection(
                    f"{self.collection_name}_parts",
                    embedding_function=None,
                    configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}},
                    metadata={"nexus_kind": "parts"},
                )
            except Exception as exc:
                raise StoreError(f"cannot open {self._where}: {one_line(exc)}") from exc
            self._tune(parts)
            self._parts = parts
        return self._parts

    def _has_parts_collection(self) -> bool:
        """Whether sentence vectors may exist (a read must not create their collection)."""
        if self.recipe != SENTENCES_RECIPE:
            return False
        name = f"{self.collection_name}_parts"
        return self._parts is not None or name in {c.name for c in self._client.list_collections()}

    def nearest_parts(
        self, vector: Sequence[float], n: int, ids: Sequence[str], found: PartHits | None = None
    ) -> tuple[dict[str, float], float]:
        """For each of ``ids`` with a sentence vector among the ``n`` nearest ``vector``, its best dot product with
        ``vector``; and a bound on every other sentence vector's (-inf: there is none). In process (the mirror),
        every one of ``ids`` exactly. ``found``: what ``nearest_part_dots(vector, n)`` returned, asked for earlier.

        Asking Chroma for the nearest sentence vectors (distances only) costs less than reading the candidates'
        (10k memories: 1.2 against 1.8 ms for 15 candidates, 1.6 against 4.8 for 50)."""
        if not ids or not self.has_parts:
            return {}, -math.inf
        mirror = self.parts_mirror()
        if mirror is not None:
            return mirror.best_parts(vector, ids), -math.inf
        hits, floor = found if found is not None else self.nearest_part_dots(vector, n)
        wanted, best = set(ids), {}
        for mid, dot in hits:
            if mid in wanted and dot > best.get(mid, -math.inf):
                best[mid] = dot
        return best, floor

    def nearest_part_dots(self, vector: Sequence[float], n: int) -> PartHits:
        """The memories of the ``n`` sentence vectors nearest ``vector`` with each one's dot product, and a bound on
        every other sentence vector's (-inf: there is none)."""
        got = self.parts.query(query_embeddings=[list(vector)], n_results=n, include=["distances"])
        # The collection's space is l2 and sentence vectors have norm 1: a squared distance d is |q|^2 + 1 - 2 dot.
        norm2 = float(sum(x * x for x in vector))
        dots = [(norm2 + 1.0 - float(d)) / 2.0 for d in got["distances"][0]]
        hits = [(pid.rpartition("#")[0], dot) for pid, dot in zip(got["ids"][0], dots, strict=True)]
        return hits, (dots[-1] if len(dots) == n else -math.inf)

    def best_parts(self, vector: Sequence[float], records: Sequence[Record]) -> dict[str, float]:
        """For each of these memories that has sentence vectors, the best dot product of one with ``vector``."""
        if not records or not self.has_parts:
            return {}
        mirror = self.parts_mirror()
        if mirror is not None:
            return mirror.best_parts(vector, [r.id for r in records])
        # Only the ids that exist: a memory's sentences say how many vectors it has (none for one sentence, none
        # yet while pending).
        wanted = [f"{r.id}#{n}" for r in records if not r.parts_pending for n in range(len(r.parts(self.recipe)))]
        if not wanted:
            return {}
        got = self.parts.get(ids=wanted, include=["embeddings"])
        if not got["ids"]:
            return {}
        return best_per_memory([pid.rpartition("#")[0] for pid in got["ids"]], got["embeddings"], vector)

    def _add_parts(self, records: list[Record]) -> None:
        """Store the sentence vectors of these records (sentences recipe; the memories are written already)."""
        if self.recipe != SENTENCES_RECIPE:
            return
        ids, texts = [], []
        for r in records:
            for n, text in enumerate(r.parts(self.recipe)):
                ids.append(f"{r.id}#{n}")
                texts.append(text)
        if not ids:
            return
        vectors: dict[str, list[float]] = {}
        for text in dict.fromkeys(texts):
            vector = self._part_vectors.pop(text, None)
            if vector is not None:
                vectors[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, self.embedder.embed(missing), strict=True))
        self._put_parts({"ids": ids, "embeddings": [vectors[t] for t in texts]})

    def _put_parts(self, got: dict[str, Any]) -> None:
        if len(got["ids"]):
            vectors = [list(map(float, v)) for v in got["embeddings"]]
            with self._changing_parts():
                self.parts.add(ids=list(got["ids"]), embeddings=vectors)
                if self._mirror is not None:
                    self._mirror.put_parts(list(got["ids"]), vectors)

    def _parts_of(self, ids: list[str]) -> dict[str, Any]:
        """These memories' stored sentence vectors, as Chroma's get() gives them (to undo a change)."""
        if self.recipe != SENTENCES_RECIPE:
            return {"ids": [], "embeddings": []}
        return self.parts.get(ids=part_ids(ids), include=["embeddings"])

    def _delete_parts(self, ids: list[str]) -> None:
        if self.recipe == SENTENCES_RECIPE and ids:
            with self._changing_parts():
                self.parts.delete(ids=part_ids(ids))
                if self._mirror is not None:
                    self._mirror.drop_parts(ids)

    def _restore_parts(self, ids: list[str], got: dict[str, Any]) -> None:
        self._delete_parts(ids)
        self._put_parts(got)

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

    def add(self, records: list[Record], vectors: list[list[float]]) -> None:
        if not records:
            return
        ids = [r.id for r in records]
        self.open()  # first: if the store cannot be opened, nothing was written and nothing needs undoing
        self._will_undo(lambda: self._unadd(ids))
        self._will_undo(lambda: self._delete_parts(ids))
        self._add(records, vectors)

    def _unadd(self, ids: list[str]) -> None:
        self.memories.delete(ids=ids)
        if self._mirror is not None:
            self._mirror.drop(ids)

    def tag_index(self) -> TagIndex:
        if self._tags is None:
            index = TagIndex()
            for memory_id, meta in self.all_metadata():
                index.hold(memory_id, list(meta.get("tags") or []))
            self._tags = index
        return self._tags

    def archived_ids(self) -> set[str]:
        if self._archived is None:
            self._archived = set(self.memories.get(where={"archived": True}, include=[])["ids"])
        return self._archived

    def _note_tags(self, records: Iterable[Record]) -> None:
        """Keep the tag index and the archived ids up to date with records being written."""
        if self._tags is not None:
            for r in records:
                self._tags.hold(r.id, r.tags)
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
            self._add_parts([r for r in records if not r.parts_pending])
        self._later([r.id for r in records if r.parts_pending])  # also a memory put back by an undo

    def replace(self, record: Record, vector: list[float] | None) -> None:
        """Overwrite one memory (its metadata wholesale, so removed tags disappear)."""
        old, old_vector = self.get([record.id])[record.id], self.vectors([record.id])[record.id]
        changed = old.parts(self.recipe) != record.parts(self.recipe)
        if changed:
            record.parts_pending = self._deferred(record)
        with self._changing_parts() if changed else nullcontext():
            if changed:  # the old sentences go first: no reader sees the new content lifted by them
                old_parts = self._parts_of([record.id])
                self._will_undo(lambda: self._restore_parts([record.id], old_parts))
                self._delete_parts([record.id])
            self._will_undo(lambda: self._upsert(old, old_vector))
            self._upsert(record, vector if vector is not None else old_vector)
            if changed:
                if record.parts_pending:
                    self._later([record.id])
                else:
                    self._add_parts([record])

    def _deferred(self, record: Record) -> bool:
        """Whether this record's sentence vectors are to be written later (then its metadata says so)."""
        return self.parts_later is not None and bool(record.parts(self.recipe))

    def _later(self, ids: list[str]) -> None:
        # Handed over before the write is final: the writer takes the write lock, then finds the memory pending
        # or, when the write was undone, not (and skips it).
        if ids and self.parts_later is not None:
            self.parts_later(ids)

    def pending_parts(self) -> list[str]:
        """The memories whose sentence vectors are yet to be written (marked by a process that stopped first)."""
        self.open()  # first: the collection's recipe is known once it is open
        if self.recipe != SENTENCES_RECIPE:
            return []
        return list(self.memories.get(where={PENDING: True}, include=[])["ids"])

    def write_parts(self, embedded: dict[str, tuple[list[str], list[list[float]]]]) -> list[str]:
        """Store pending memories' sentence vectors (memory id -> the texts embedded and their vectors) and clear
        their mark; skip a memory deleted, no longer pending, or whose sentences changed meanwhile. Call it holding
        ``write_lock``, in ``atomic()``. The ids written."""
        found = self.get(list(embedded))
        ready = [i for i, r in found.items() if r.parts_pending and r.parts(self.recipe) == embedded[i][0]]
        if not ready:
            return []
        ids = [f"{i}#{n}" for i in ready for n in range(len(embedded[i][0]))]
        vectors = [list(map(float, v)) for i in ready for v in embedded[i][1]]
        self._will_undo(lambda: self._delete_parts(ready))
        with self._changing_parts():
            # upsert: a process killed between these two writes left the same vectors (stale ones go when it changes)
            self.parts.upsert(ids=ids, embeddings=vectors)
            if self._mirror is not None:
                self._mirror.put_parts(ids, vectors)
            self.memories.update(ids=ready, metadatas=[{PENDING: False} for _ in ready])
            if self._mirror is not None:
                self._mirror.merge_meta(ready, {PENDING: False})
        return ready

    @contextmanager
    def _changing_parts(self) -> Iterator[None]:
        """Bracket a change of sentence vectors: the epoch is odd from the first one begun to the last one ended
        (they nest, and an undo may run in another thread than the writer's)."""
        with self._epoch_lock:
            self._changes += 1
            if self._changes == 1:
                self.parts_epoch += 1
        try:
            yield
        finally:
            with self._epoch_lock:
                self._changes -= 1
                if not self._changes:
                    self.parts_epoch += 1

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

    def _read_mirror(self) -> Mirror | None:
        count = self.memories.count()
        if count > MIRROR_MAX:
            self._mirror_off = True
            return None
        # the sentence vectors too, for a small collection: best_parts then reads nothing from Chroma
        copy = Mirror(int(self.embedder.dimension), parts=count <= PARTS_MIRROR_MAX)
        for got in self.page(include=("documents", "metadatas", "embeddings")):
            documents, metas = [d or "" for d in got["documents"]], [m or {} for m in got["metadatas"]]
            copy.put(got["ids"], documents, metas, got["embeddings"])
        if copy.holds_parts and self._has_parts_collection():
            for page in self._pages(self.parts, ("embeddings",)):
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
        records, vectors, parts = self.get(ids), self.vectors(ids), self._parts_of(ids)
        self._will_undo(lambda: self._add(list(records.values()), [vectors[i] for i in records], with_parts=False))
        self._will_undo(lambda: self._put_parts(parts))
        self._unadd(list(ids))
        self._delete_parts(list(ids))
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

    # -- links ------------------------------------------------------------------

    def superseded_by(self, ids: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``ids`` that another memory supersedes, those memories."""
        if self._superseded is None:
            found: dict[str, set[str]] = {}
            for lk in self.all_links():
                if lk.relation_type == "supersedes":
                    found.setdefault(lk.target_id, set()).add(lk.source_id)
            self._superseded = found
        return {i: sorted(self._superseded[i]) for i in ids if self._superseded.get(i)}

    def _note_links(self, links: Iterable[LinkRecord], present: bool) -> None:
        if self._superseded is None:
            return
        for lk in links:
            if lk.relation_type == "supersedes":
                sources = self._superseded.setdefault(lk.target_id, set())
                (sources.add if present else sources.discard)(lk.source_id)

    def put_link(self, link: LinkRecord) -> bool:
        """Add or refresh a link; True when it is new."""
        old = self.links.get(ids=[link.id], include=["metadatas"])["metadatas"]
        if old:
            before = LinkRecord.from_meta(old[0])
            self._will_undo(lambda: self._upsert_links([before]))
        else:
            self._will_undo(lambda: self.links.delete(ids=[link.id]))
        self._upsert_links([link])
        self._note_links([link], present=True)
        return not old

    def _upsert_links(self, links: list[LinkRecord]) -> None:
        self.links.upsert(
            ids=[lk.id for lk in links],
            embeddings=[LINK_VECTOR] * len(links),
            metadatas=[lk.metadata() for lk in links],
            documents=[""] * len(links),
        )

    def links_of(self, memory_id: str) -> list[LinkRecord]:
        where = {"$or": [{"source_id": memory_id}, {"target_id": memory_id}]}
        got = self.links.get(where=where, include=["metadatas"])
        return sorted((LinkRecord.from_meta(m) for m in got["metadatas"]), key=lambda lk: lk.created_at)

    def remove_links(self, links: Iterable[LinkRecord]) -> int:
        gone, collection = list(links), self.links
        if gone:
            self._will_undo(lambda: self._upsert_links(gone))
            collection.delete(ids=[lk.id for lk in gone])
            self._note_links(gone, present=False)
        return len(gone)

    def all_links(self) -> list[LinkRecord]:
        out: list[LinkRecord] = []
        offset = 0
        while True:
            got = self.links.get(limit=PAGE, offset=offset, include=["metadatas"])
            out += [LinkRecord.from_meta(m) for m in got["metadatas"]]
            if len(got["ids"]) < PAGE:
                return out
            offset += PAGE

    def link_count(self) -> int:
        return int(self.links.count())


def _holder(pid: int | None) -> str:
    """Who holds the store, as a user can find it: the process and its command line."""
    if not pid:
        return "another process"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return f"process {pid}"
    command = " ".join(a.decode(errors="replace") for a in argv)
    if "server run --key" in command:
        return f"another shared Nexus server (pid {pid}, another config or install: {command[:300]})"
    return f"process {pid} ({command[:300]})"
