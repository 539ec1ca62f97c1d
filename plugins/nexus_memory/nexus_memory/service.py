"""The memory operations, synchronous: the tools run them in a worker thread.

Every check happens before anything is written, so a refused call changes nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from nexus_core import ToolError
from nexus_memory import retrieval
from nexus_memory.analysis import NewMemory, knowledge_report, link_suggestion_message, store_analysis, summarize
from nexus_memory.embedders import tag_boost
from nexus_memory.models import (
    MEMORY_TYPES,
    ContextSibling,
    CountItem,
    DeletedMemory,
    Exploration,
    IncomingLink,
    KnowledgeReport,
    LinkedMemory,
    LinkResult,
    Memory,
    MemoryLinks,
    MemoryList,
    MemoryListItem,
    MergedMemory,
    OutgoingLink,
    RecalledMemory,
    RecallResult,
    Stats,
    StoredMemory,
    TagSibling,
    UnlinkResult,
    UpdatedMemory,
)
from nexus_memory.parts_writer import PartsWriter
from nexus_memory.store import PENDING, ChromaStore, LinkRecord, PartHits, Record, where_clause

log = logging.getLogger("nexus.memory")
T = TypeVar("T")

MAX_CONTENT = 100_000
MAX_TAG = 64
NEIGHBOURS = 5  # memories compared with a new one by store_memory's analysis
FAILURES = 3  # failures (of any project) compared with a new success: it may be their fix
EXPLORE_LIMIT = 10
TOP_TAGS = 10
# Tag suggestions: the tags of the NEIGHBOURS nearest memories, each voted by its similarity; at most 3 with a vote
# of 1.0 or more. Precision was 0.27-0.43 on the labeled set: suggestions for the client, never applied.
SUGGESTED_TAGS = 3
TAG_VOTE = 1.0
TOUCH_DELAY = 30.0  # seconds between the batched writes of last_recalled_at
PENDING_WAIT = 5.0  # seconds a recall waits for the sentence vectors of candidates just stored
PENDING_WAITED = 8  # candidates at most whose sentence vectors a recall waits for; more: the writer is behind
RECALL_TRIES = 3  # a recall during which sentence vectors were written is made again, up to this many times in all
ARCHIVED_DROPPED = 200  # up to this many archived memories, recall drops them itself instead of asking Chroma


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def list_item(r: Record) -> MemoryListItem:
    return MemoryListItem(
        id=r.id,
        summary=summarize(r.content),
        type=r.memory_type,
        context=r.context,
        tags=r.tags,
        created_at=r.created_at,
        updated_at=r.updated_at,
        archived=r.archived,
    )


def full(r: Record) -> Memory:
    return Memory(
        id=r.id,
        content=r.content,
        summary=summarize(r.content),
        type=r.memory_type,
        context=r.context,
        tags=r.tags,
        created_at=r.created_at,
        updated_at=r.updated_at,
        archived=r.archived,
        last_recalled_at=r.last_recalled_at,
    )


def suggest_tags(tags: list[str], neighbours: list[tuple[Record, float]]) -> list[str]:
    """Tags the nearest memories share, weighted by their similarity, that ``tags`` lacks."""
    votes: dict[str, float] = defaultdict(float)
    for record, similarity in neighbours:
        for tag in record.tags:
            votes[tag] += max(similarity, 0.0)
    ranked = sorted((t for t, v in votes.items() if v >= TAG_VOTE and t not in tags), key=lambda t: -votes[t])
    return ranked[:SUGGESTED_TAGS]


def clean_content(content: str) -> str:
    if not content.strip():
        raise ToolError("content is empty: write what was learned (Markdown)")
    if len(content) > MAX_CONTENT:
        raise ToolError(f"content is {len(content)} characters; the limit is {MAX_CONTENT}: split it")
    return content.strip()


def clean_tags(tags: list[str] | None) -> list[str]:
    out: list[str] = []
    for tag in tags or []:
        tag = tag.strip()
        if not tag:
            raise ToolError("tags must not be empty strings")
        if len(tag) > MAX_TAG:
            raise ToolError(f"tag '{tag[:20]}…' is longer than {MAX_TAG} characters")
        if tag not in out:
            out.append(tag)
    return out


class NotFound(ToolError):
    """No memory has that id (or it is not an id at all)."""


def clean_id(memory_id: str, what: str = "memory_id") -> str:
    try:
        return str(uuid.UUID(memory_id.strip()))
    except ValueError:
        raise NotFound(
            f"{what} '{memory_id}' is not a memory id (a UUID); find ids with recall_memories or list_memories"
        ) from None


def counted(counter: Counter[str]) -> list[CountItem]:
    return [CountItem(name=n, count=c) for n, c in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]


def served(method: Callable[..., T]) -> Callable[..., T]:
    """A call the sentence writer leaves the cores to: it embeds only once such calls pause."""

    @functools.wraps(method)
    def serve(self: MemoryService, *args: Any, **kwargs: Any) -> T:
        with self.parts.serving():
            return method(self, *args, **kwargs)

    return serve


class MemoryService:
    """Every write holds ``store.write_lock`` from its first read to its last write, so concurrent calls on
    the same memories never lose an update, and runs in ``store.atomic()``, so a failed one changes nothing.
    Embedding, the slow part, happens before the lock is taken."""

    def __init__(self, store: ChromaStore, stale_days: int = 180) -> None:
        self.store = store
        self.stale_days = stale_days
        # last_recalled_at is written by a worker thread, in one batch per touch_delay seconds: an embedded Chroma
        # update costs 20-30 ms, which a recall would otherwise wait for (at 3k memories: recall p50 17 -> 48 ms),
        # and one per recall in the background still slowed the recalls beside it. Day resolution is all it needs.
        self.touch_delay = TOUCH_DELAY
        self._touches: dict[str, str] = {}
        self._touch_lock = threading.Lock()
        self._touch_wake = threading.Event()
        self._touch_thread: threading.Thread | None = None
        self._closing = False
        self._stop = threading.Event()
        self.parts = PartsWriter(store)  # sentence vectors, written in the background
        self._beside = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nexus-memory-recall")
        store.parts_later = self.parts.put

    def _one(self, memory_id: str, what: str = "memory_id") -> Record:
        mid = clean_id(memory_id, what)
        found = self.store.get([mid]).get(mid)
        if found is None:
            raise NotFound(f"no memory with id '{mid}' ({what}); find ids with recall_memories or list_memories")
        return found

    def _summaries(self, ids: list[str]) -> dict[str, str]:
        return {i: summarize(r.content) for i, r in self.store.get(ids).items()}

    # -- store / recall -----------------------------------------------------------

    @served
    def store_memory(
        self, content: str, context_name: str, tags: list[str], memory_type: str, memory_id: str | None = None
    ) -> StoredMemory:
        content, tags, context = clean_content(content), clean_tags(tags), context_name.strip()
        if not context:
            raise ToolError("context_name is empty: name the project this memory belongs to")
        stamp = now()
        record = Record(memory_id or str(uuid.uuid4()), content, memory_type, context, tags, stamp, stamp)
        vector = self.store.embed_records([record])[0]
        with self.store.write_lock:
            neighbours = self.store.query(vector, NEIGHBOURS)
            suggested_tags = suggest_tags(tags, neighbours)
            if memory_type == "success":
                neighbours += self.store.query(vector, FAILURES, {"type": "failure"})
            links, insights = store_analysis(NewMemory(record.id, memory_type, context, content), neighbours)
            stored = StoredMemory(
                success=True,
                memory_id=record.id,
                summary=summarize(content),
                suggested_links=links,
                insights=insights,
                link_suggestion_message=link_suggestion_message(links),
                suggested_tags=suggested_tags,
            )
            with self.store.atomic():  # the last step: once it succeeds, nothing else can fail
                self.store.add([record], [vector])
        return stored

    def forget(self, memory_id: str) -> None:
        """Remove a memory just stored by a call that was then cancelled (its client will store it again)."""
        with self.store.write_lock, self.store.atomic():
            self.store.delete(list(self.store.get([memory_id])))

    @served
    def recall(
        self,
        query: str,
        limit: int,
        context: str | None,
        tags: list[str] | None,
        memory_type: str | None,
        include_archived: bool = False,
    ) -> RecallResult:
        if not query.strip():
            raise ToolError("query is empty: describe the problem or name the error")
        vector, scale = self.store.embed_query(query)
        # The candidates and their sentence vectors are read one after the other: when sentence vectors were
        # written in between, a memory may have been shown as it was, lifted by its new sentences. Asked again.
        for _ in range(RECALL_TRIES):
            epoch = self.store.parts_epoch
            result, top = self._recall(query, vector, scale, limit, context, tags, memory_type, include_archived)
            if epoch == self.store.parts_epoch and not epoch % 2:
                break
        self._touch(top)
        return result

    def _recall(
        self,
        query: str,
        vector: list[float],
        scale: float,
        limit: int,
        context: str | None,
        tags: list[str] | None,
        memory_type: str | None,
        include_archived: bool,
    ) -> tuple[RecallResult, list[Record]]:
        """The answer, and the memories in it as read (``vector`` and ``scale``: the query's, see ``embed_query``)."""
        hidden = set() if include_archived else self.store.archived_ids()
        # Few archived memories are dropped from the candidates; many are filtered by Chroma (which costs more).
        by_chroma = len(hidden) > ARCHIVED_DROPPED
        where = where_clause(context, memory_type, clean_tags(tags), include_archived or not by_chroma)
        extra = 0 if by_chroma else len(hidden)
        terms = retrieval.exact_terms(query)
        gain = tag_boost(self.store.embedder)
        index = self.store.tag_index() if gain else None  # built (a scan of every record) only where it is used
        named = index.named_in(query) if index is not None else []
        # Without exact terms the ranking is the semantic order, moved only by the small penalties.
        n = max(retrieval.CANDIDATES, 2 * limit) if terms else limit + retrieval.PENALTY_MARGIN
        wanted = limit + retrieval.PENALTY_MARGIN + extra  # of the memories with a named tag
        width = retrieval.tag_width(wanted, index.share(named), index.memories) if index is not None and named else 0
        fetched = max(n, width)
        early = self._early_parts(vector, n)
        raw = self.store.query(vector, fetched + extra, where)
        complete = len(raw) < n + extra  # every memory the filters allow was returned: none is outside
        semantic = [(r, s / scale) for r, s in raw if r.id not in hidden][:n]
        records = {r.id: r for r, _ in semantic}
        pool = [retrieval.Candidate(r.id, s, retrieval.matched(terms, r.content)) for r, s in semantic]
        if named:  # the nearest memories with a tag the query names, wherever they rank otherwise
            tagged = [(r, s / scale) for r, s in raw if set(named) & set(r.tags) and r.id not in hidden][:wanted]
            self._join(pool, records, tagged, terms)
        ranked = self._ranked(pool, records, len(terms), named, gain)
        # Too few tagged memories among those fetched: Chroma is asked for more (a filtered query, ~9 ms at 10k),
        # unless none of them, no more similar than the last one fetched, could reach the top even with the gain.
        if (
            named
            and len(tagged) < wanted
            and len(raw) == fetched + extra
            and retrieval.outsider_may_rank(ranked, raw[-1][1] / scale, limit, len(terms), gain=gain)
        ):
            more = self.store.tagged(vector, wanted, where, named)
            self._join(pool, records, [(r, s / scale) for r, s in more if r.id not in hidden], terms)
            ranked = self._ranked(pool, records, len(terms), named, gain)
        if not complete and retrieval.outsider_may_rank(ranked, min(s for _, s in semantic), limit, len(terms)):
            import numpy as np

            query_vec = np.asarray(vector, dtype=np.float32)
            found = self.store.containing(terms, where, retrieval.PER_TERM * len(terms) + extra)
            cosines = [
                (r, float(np.dot(query_vec, np.asarray(v, dtype=np.float32))) / scale)
                for r, v in found
                if r.id not in hidden
            ]
            self._join(pool, records, cosines, terms)
            ranked = self._ranked(pool, records, len(terms), named, gain)
        # The sentences recipe: a memory's best sentence may be nearer than its whole text. Unless the writer is
        # behind (a bulk import): then the whole texts alone rank every candidate, rather than wait or favour some.
        pending = [c.id for c in pool if records[c.id].parts_pending]
        if self.store.has_parts and len(pending) <= PENDING_WAITED:
            self._await_parts(pending, records)
            ranked = self._lifted(pool, records, vector, scale, len(terms), limit, None if pending else early)
        top = ranked[:limit]
        superseded = self.store.superseded_by(c.id for c in top)
        memories = [
            RecalledMemory(
                **list_item(records[c.id]).model_dump(),
                content=records[c.id].content,
                similarity=round(c.similarity, 4),
                score=round(c.score(len(terms)), 4),
                matched_terms=c.matched_terms,
                superseded_by=superseded.get(c.id, []),
            )
            for c in top
        ]
        found = RecallResult(memories=memories, total_found=len(memories), exact_terms=terms)
        return found, [records[c.id] for c in top]

    @staticmethod
    def _join(
        pool: list[retrieval.Candidate],
        records: dict[str, Record],
        found: list[tuple[Record, float]],
        terms: list[str],
    ) -> None:
        """Add the memories found another way (tags, exact terms) that are not candidates yet."""
        for record, similarity in found:
            if record.id not in records:
                records[record.id] = record
                pool.append(retrieval.Candidate(record.id, similarity, retrieval.matched(terms, record.content)))

    def _ranked(
        self,
        pool: list[retrieval.Candidate],
        records: dict[str, Record],
        n_terms: int,
        named: list[str],
        gain: float,
    ) -> list[retrieval.Candidate]:
        """The candidates by score, after the tag boost and the penalties for being superseded and for age."""
        superseded = self.store.superseded_by(c.id for c in pool)
        stamp = datetime.now(UTC)
        for c in pool:
            r = records[c.id]
            c.tag_boost = gain if set(named) & set(r.tags) else 0.0
            c.penalty = retrieval.age_penalty(r.updated_at, r.last_recalled_at, stamp)
            c.penalty += retrieval.SUPERSEDED_PENALTY if c.id in superseded else 0.0
        return retrieval.rank(pool, n_terms)

    def _early_parts(self, vector: list[float], n: int) -> tuple[Future[PartHits], int] | None:
        """The sentence vectors nearest the query, asked for beside the candidates' query: both need only the query's
        vector (``n`` candidates are expected; more make more of them read by id); and the store's ``parts_epoch``
        then. None when the mirror holds the sentence vectors, while they are being written, and on a Chroma server: the
        epoch counts this process's writes only, and other processes may write there."""
        epoch, st = self.store.parts_epoch, self.store
        if not st.has_parts or st.chroma_url or st.parts_mirror() is not None or epoch % 2:
            return None
        near = max(1, round(retrieval.PARTS_PER_CANDIDATE * n))
        try:
            return self._beside.submit(self.store.nearest_part_dots, vector, near), epoch
        except RuntimeError:  # the service is closing: asked after the candidates, as on a Chroma server
            return None

    def _await_parts(self, pending: list[str], records: dict[str, Record]) -> None:
        """A candidate stored moments ago may still wait for its sentence vectors: the writer is hurried to write
        those first and waited for (``PENDING_WAIT`` at most), so a recall right after a store ranks it as later
        ones will."""
        if pending and self.parts.drain(pending, timeout=PENDING_WAIT):
            records.update(self.store.get(pending))

    def _lifted(
        self,
        pool: list[retrieval.Candidate],
        records: dict[str, Record],
        vector: list[float],
        scale: float,
        n_terms: int,
        limit: int,
        early: tuple[Future[PartHits], int] | None = None,
    ) -> list[retrieval.Candidate]:
        """The candidates ranked after each is lifted by its best sentence. Chroma is asked for the sentences
        nearest the query, then by id only for the candidates those leave in doubt: one without a sentence among
        them whose lift, at most what the farthest of them allows, could still take it into the top ``limit``. The
        top is the same as with every candidate's sentences read (a test compares them)."""
        near = max(1, round(retrieval.PARTS_PER_CANDIDATE * len(pool)))
        # What was asked for beside the candidates' query, unless sentence vectors were written since: compared
        # once it is answered (it may have run only now, after a write).
        found = early[0].result() if early is not None else None
        if early is not None and early[1] != self.store.parts_epoch:
            found = None
        best, floor = self.store.nearest_parts(vector, near, [c.id for c in pool], found)

        def lift(c: retrieval.Candidate, dot: float) -> float:
            return retrieval.PART_WEIGHT * max(0.0, dot / scale - c.similarity)

        unknown = [c for c in pool if c.id not in best]
        for c in pool:
            c.part_lift = lift(c, best[c.id]) if c.id in best else 0.0
        ranked = retrieval.rank(pool, n_terms)
        bar = ranked[min(limit, len(ranked)) - 1].score(n_terms) if ranked else 0.0
        doubt = [c for c in unknown if lift(c, floor) > 0 and c.score(n_terms) + lift(c, floor) >= bar]
        if not doubt:
            return ranked
        exact = self.store.best_parts(vector, [records[c.id] for c in doubt])
        for c in doubt:
            c.part_lift = lift(c, exact.get(c.id, -math.inf))
        return retrieval.rank(pool, n_terms)

    def _touch(self, records: list[Record]) -> None:
        """Queue ``last_recalled_at`` for the recalled memories, at most once a day each (recall stays read-mostly)."""
        stamp = now()
        stale = [r.id for r in records if r.last_recalled_at[:10] != stamp[:10]]
        if not stale or self._closing:
            return
        with self._touch_lock:
            self._touches.update(dict.fromkeys(stale, stamp))
            if self._touch_thread is None:
                self._touch_thread = threading.Thread(target=self._touch_loop, name="nexus-memory-touch", daemon=True)
                self._touch_thread.start()
        self._touch_wake.set()

    def _touch_loop(self) -> None:
        while True:
            self._touch_wake.wait()
            self._stop.wait(self.touch_delay)  # gather the recalls of the next seconds into one write
            self._touch_wake.clear()
            self.flush_touches()
            if self._closing:
                return

    def flush_touches(self) -> None:
        """Write the queued ``last_recalled_at`` stamps (a memory deleted meanwhile is skipped, never recreated)."""
        with self._touch_lock:
            pending, self._touches = self._touches, {}
        by_stamp: dict[str, list[str]] = defaultdict(list)
        for mid, stamp in pending.items():
            by_stamp[stamp].append(mid)
        try:
            with self.store.write_lock:
                for stamp, ids in by_stamp.items():
                    self.store.touch(list(self.store.get(ids)), stamp)
        except Exception as exc:  # a freshness stamp is not worth failing anything for
            log.warning("could not record when memories were recalled: %s", exc)

    def close(self) -> None:
        """Write what is queued and stop the worker threads (queued sentence vectors stay marked for later)."""
        self.parts.close()
        self._beside.shutdown(wait=True)
        self._closing = True
        self._stop.set()
        self._touch_wake.set()
        if self._touch_thread is not None:
            self._touch_thread.join(timeout=10)

    # -- reading ------------------------------------------------------------------

    def list_memories(
        self,
        limit: int,
        offset: int,
        context: str | None,
        tags: list[str] | None,
        memory_type: str | None,
        include_archived: bool = False,
    ) -> MemoryList:
        metas = self.store.all_metadata(where_clause(context, memory_type, clean_tags(tags), include_archived))
        metas.sort(key=lambda im: str(im[1].get("created_at", "")), reverse=True)
        page_ids = [i for i, _ in metas[offset : offset + limit]]
        got = self.store.get(page_ids)
        return MemoryList(
            memories=[list_item(got[i]) for i in page_ids if i in got],
            total_count=len(metas),
            has_more=offset + limit < len(metas),
        )

    def get_memory(self, memory_id: str) -> Memory:
        return full(self._one(memory_id))

    def stats(self) -> Stats:
        metas = [m for _, m in self.store.all_metadata()]
        types = Counter(str(m.get("type")) for m in metas)
        contexts = Counter(str(m.get("context")) for m in metas)
        tags = counted(Counter(t for m in metas for t in (m.get("tags") or [])))
        return Stats(
            total_memories=len(metas),
            memories_by_type={t: types.get(t, 0) for t in MEMORY_TYPES},
            total_contexts=len(contexts),
            total_tags=len(tags),
            top_tags=tags[:TOP_TAGS],
            contexts=counted(contexts),
            tags=tags,
            total_links=self.store.link_count(),
            embedder=self.store.embedder.name,
            backend=self.store.backend,
            embedded_text=self.store.recipe,
            archived_memories=sum(1 for m in metas if m.get("archived") is True),
            parts_pending=sum(1 for m in metas if m.get(PENDING) is True),
        )

    # -- changing -----------------------------------------------------------------

    def update(
        self,
        memory_id: str,
        content: str | None,
        tags: list[str] | None,
        memory_type: str | None,
        archived: bool | None = None,
    ) -> UpdatedMemory:
        if content is None and tags is None and memory_type is None and archived is None:
            raise ToolError("nothing to update: give content, tags, memory_type or archived")
        new_content = clean_content(content) if content is not None else None
        new_tags = clean_tags(tags) if tags is not None else None
        vector, text = None, None
        if new_content is not None or new_tags is not None:  # the slow part, before the lock
            before = self._one(memory_id)
            vector, text = self._embedded(before, new_content, new_tags)
        with self.store.write_lock:
            record = self._one(memory_id)
            changes: list[str] = []
            if new_content is not None and new_content != record.content:
                record.content = new_content
                changes.append("content")
            if new_tags is not None and new_tags != record.tags:
                record.tags = new_tags
                changes.append("tags")
            if memory_type is not None and memory_type != record.memory_type:
                record.memory_type = memory_type
                changes.append("memory_type")
            if archived is not None and archived != record.archived:
                record.archived = archived
                changes.append("archived")
            if changes:
                record.updated_at = now()
                if {"content", "tags"} & set(changes) and record.text(self.store.recipe) != text:
                    vector = self.store.embed_records([record])[0]  # changed by another call meanwhile
                with self.store.atomic():
                    self.store.replace(record, vector if {"content", "tags"} & set(changes) else None)
        return UpdatedMemory(success=True, memory_id=record.id, changes=changes, updated_at=record.updated_at)

    def _embedded(self, record: Record, content: str | None, tags: list[str] | None) -> tuple[list[float], str]:
        """The vector of ``record`` with its new content and tags, and the text it embeds."""
        tags = record.tags if tags is None else tags
        after = dataclasses.replace(record, content=content or record.content, tags=tags)
        return self.store.embed_records([after])[0], after.text(self.store.recipe)

    def delete(self, memory_id: str) -> DeletedMemory:
        with self.store.write_lock:
            record = self._one(memory_id)
            with self.store.atomic():
                removed = self.store.remove_links(self.store.links_of(record.id))
                self.store.delete([record.id])
        return DeletedMemory(success=True, deleted_id=record.id, links_removed=removed)

    def merge(self, target_id: str, source_ids: list[str], content: str | None) -> MergedMemory:
        new_content = clean_content(content) if content is not None else None
        with self.store.write_lock:
            target = self._one(target_id, "target_id")
            sources = [self._one(s, "source_ids") for s in dict.fromkeys(source_ids)]
            if not sources:
                raise ToolError("source_ids is empty: name the memories to fold into target_id")
            if any(s.id == target.id for s in sources):
                raise ToolError("target_id is also in source_ids: a memory cannot be merged into itself")
            gone = {s.id for s in sources}
            target.content = new_content or "\n\n---\n\n".join([target.content, *(s.content for s in sources)])
            target.tags = clean_tags([*target.tags, *(t for s in sources for t in s.tags)])
            target.updated_at = now()
            vector = self.store.embed_records([target])[0]
            with self.store.atomic():
                self.store.replace(target, vector)
                moved = self._repoint_links(gone, target.id)
                self.store.delete(list(gone))
        return MergedMemory(
            success=True,
            memory_id=target.id,
            summary=summarize(target.content),
            merged_ids=[s.id for s in sources],
            links_moved=moved,
        )

    def _repoint_links(self, gone: set[str], target: str) -> int:
        old = {lk.id: lk for g in gone for lk in self.store.links_of(g)}
        moved = 0
        for lk in old.values():
            src = target if lk.source_id in gone else lk.source_id
            dst = target if lk.target_id in gone else lk.target_id
            if src != dst:
                moved += self.store.put_link(LinkRecord(src, dst, lk.relation_type, lk.reason, lk.created_at))
        self.store.remove_links(old.values())
        return moved

    # -- links --------------------------------------------------------------------

    def link(self, source_id: str, target_id: str, relation_type: str, reason: str) -> LinkResult:
        with self.store.write_lock:
            source, target = self._one(source_id, "source_id"), self._one(target_id, "target_id")
            if source.id == target.id:
                raise ToolError("source_id and target_id are the same memory: a memory cannot link to itself")
            with self.store.atomic():
                created = self.store.put_link(LinkRecord(source.id, target.id, relation_type, reason.strip(), now()))
        return LinkResult(
            success=True, source_id=source.id, target_id=target.id, relation_type=relation_type, created=created
        )

    def unlink(self, source_id: str, target_id: str, relation_type: str | None) -> UnlinkResult:
        src, dst = clean_id(source_id, "source_id"), clean_id(target_id, "target_id")
        with self.store.write_lock:
            found = [
                lk
                for lk in self.store.links_of(src)
                if lk.source_id == src and lk.target_id == dst and relation_type in (None, lk.relation_type)
            ]
            if not found:
                kind = f" of type '{relation_type}'" if relation_type else ""
                raise ToolError(f"no link{kind} from {src} to {dst}; see get_memory_links({src})")
            with self.store.atomic():
                removed = self.store.remove_links(found)
        return UnlinkResult(success=True, removed=removed)

    def links(self, memory_id: str) -> MemoryLinks:
        record = self._one(memory_id)
        links = self.store.links_of(record.id)
        summaries = self._summaries([x for lk in links for x in (lk.source_id, lk.target_id) if x != record.id])
        return MemoryLinks(
            memory_id=record.id,
            links=[
                OutgoingLink(
                    target_id=lk.target_id,
                    target_summary=summaries.get(lk.target_id, ""),
                    relation_type=lk.relation_type,
                    reason=lk.reason,
                    created_at=lk.created_at,
                )
                for lk in links
                if lk.source_id == record.id
            ],
            incoming=[
                IncomingLink(
                    source_id=lk.source_id,
                    source_summary=summaries.get(lk.source_id, ""),
                    relation_type=lk.relation_type,
                    reason=lk.reason,
                    created_at=lk.created_at,
                )
                for lk in links
                if lk.target_id == record.id
            ],
        )

    def explore(self, memory_id: str, include_tag_siblings: bool, include_context_siblings: bool) -> Exploration:
        record = self._one(memory_id)
        links = self.store.links_of(record.id)
        summaries = self._summaries([x for lk in links for x in (lk.source_id, lk.target_id) if x != record.id])
        linked = [
            LinkedMemory(
                id=other,
                summary=summaries[other],
                relation_type=lk.relation_type,
                reason=lk.reason,
                direction="outgoing" if lk.source_id == record.id else "incoming",
            )
            for lk in links
            if (other := lk.target_id if lk.source_id == record.id else lk.source_id) in summaries
        ]
        by_tag: list[TagSibling] = []
        if include_tag_siblings and record.tags:
            got = self.store.memories.get(
                where=where_clause(tags=record.tags), limit=200, include=["documents", "metadatas"]
            )
            siblings = [
                Record.from_chroma(i, d, m)
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
                if i != record.id
            ]
            siblings.sort(key=lambda r: (-len(set(r.tags) & set(record.tags)), r.created_at))
            by_tag = [
                TagSibling(id=r.id, summary=summarize(r.content), shared_tags=[t for t in record.tags if t in r.tags])
                for r in siblings[:EXPLORE_LIMIT]
            ]
        by_context: list[ContextSibling] = []
        if include_context_siblings:
            metas = [(i, m) for i, m in self.store.all_metadata({"context": record.context}) if i != record.id]
            metas.sort(key=lambda im: str(im[1].get("updated_at", "")), reverse=True)
            ids = [i for i, _ in metas[:EXPLORE_LIMIT]]
            found = self.store.get(ids)
            by_context = [
                ContextSibling(id=i, summary=summarize(found[i].content), context=found[i].context)
                for i in ids
                if i in found
            ]
        return Exploration(memory_id=record.id, linked=linked, by_tag=by_tag, by_context=by_context)

    def analyze(self) -> KnowledgeReport:
        records = [Record.from_chroma(i, "", m) for i, m in self.store.all_metadata()]
        return knowledge_report(records, self.store.all_links(), self.stale_days)
