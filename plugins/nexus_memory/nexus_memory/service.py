"""The memory operations, synchronous: the tools run them in a worker thread.

Every check happens before anything is written, so a refused call changes nothing. Recall is its own pipeline
(``recall.pipeline``); the rest reads and writes through the store.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from nexus_core import ToolError
from nexus_memory.analysis import NewMemory, knowledge_report, link_suggestion_message, store_analysis, summarize
from nexus_memory.fields import NotFound, clean_content, clean_id, clean_tags, full, list_item, now
from nexus_memory.images.files import ImageFiles
from nexus_memory.images.given import GivenImage, with_text
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
    MergedMemory,
    OutgoingLink,
    RecallResult,
    Stats,
    StoredMemory,
    TagSibling,
    UnlinkResult,
    UpdatedMemory,
)
from nexus_memory.recall import pipeline
from nexus_memory.released import Releaser
from nexus_memory.store import PENDING, ChromaStore, LinkRecord, Record, where_clause
from nexus_memory.store.writer import PartsWriter
from nexus_memory.threads import RECALL, Workers
from nexus_memory.touches import Touches

log = logging.getLogger("nexus.memory")
T = TypeVar("T")

NEIGHBOURS = 5  # memories compared with a new one by store_memory's analysis
FAILURES = 3  # failures (of any project) compared with a new success: it may be their fix
EXPLORE_LIMIT = 10
TOP_TAGS = 10
# Tag suggestions: the tags of the NEIGHBOURS nearest memories, each voted by its similarity; at most 3 with a vote
# of 1.0 or more. Precision was 0.27-0.43 on the labeled set: suggestions for the client, never applied.
SUGGESTED_TAGS = 3
TAG_VOTE = 1.0

__all__ = ["MemoryService", "NotFound", "now"]


def suggest_tags(tags: list[str], neighbours: list[tuple[Record, float]]) -> list[str]:
    """Tags the nearest memories share, weighted by their similarity, that ``tags`` lacks."""
    votes: dict[str, float] = defaultdict(float)
    for record, similarity in neighbours:
        for tag in record.tags:
            votes[tag] += max(similarity, 0.0)
    ranked = sorted((t for t, v in votes.items() if v >= TAG_VOTE and t not in tags), key=lambda t: -votes[t])
    return ranked[:SUGGESTED_TAGS]


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
    Embedding, the slow part, happens before the lock is taken.

    ``touch``: record when memories are recalled (``last_recalled_at``, which the age penalty reads); off, every
    recall sees the same store (the benchmarks). ``workers``: where its background threads start (``threads``).
    """

    def __init__(
        self, store: ChromaStore, stale_days: int = 180, touch: bool = True, workers: Workers | None = None
    ) -> None:
        self.store = store
        self.stale_days = stale_days
        self.workers = workers or Workers()
        self.touches = Touches(store, self.workers) if touch else None
        self.released = Releaser(self.workers)  # what the calls and the writer's batches freed, handed back after
        self.parts = PartsWriter(store, self.workers, self.released.after_call)  # sentence vectors, in the background
        self.images = ImageFiles(store.data_dir)  # memories' images, beside the store
        # Where recall asks for the sentence vectors nearest a query beside its candidates' query (None: after).
        self.beside = self.workers.pool(RECALL, 2)
        store.parts_later = self.parts.put

    @property
    def touch_delay(self) -> float:
        """Seconds between the batched writes of ``last_recalled_at``."""
        return self.touches.delay if self.touches is not None else 0.0

    @touch_delay.setter
    def touch_delay(self, seconds: float) -> None:
        if self.touches is not None:
            self.touches.delay = seconds

    def flush_touches(self) -> None:
        """Write the queued ``last_recalled_at`` stamps now."""
        if self.touches is not None:
            self.touches.flush()

    def close(self) -> None:
        """Stop the background threads: what is queued is written (stamps) or stays marked for later (sentence
        vectors)."""
        self.workers.stop()

    def _one(self, memory_id: str, what: str = "memory_id") -> Record:
        mid = clean_id(memory_id, what)
        found = self.store.get([mid]).get(mid)
        if found is None:
            raise NotFound(f"no memory with id '{mid}' ({what}); find ids with recall_memories or list_memories")
        return found

    def _summaries(self, ids: list[str]) -> dict[str, str]:
        return {i: summarize(r.content) for i, r in self.store.get(ids).items()}

    @served
    def store_memory(
        self,
        content: str,
        context_name: str,
        tags: list[str],
        memory_type: str,
        memory_id: str | None = None,
        image: GivenImage | None = None,
    ) -> StoredMemory:
        """``image``: kept beside the memory, its text (read already) added to the content (``given.with_text``)."""
        content, tags, context = clean_content(with_text(content, image)), clean_tags(tags), context_name.strip()
        if not context:
            raise ToolError("context_name is empty: name the project this memory belongs to")
        stamp = now()
        record = Record(memory_id or str(uuid.uuid4()), content, memory_type, context, tags, stamp, stamp)
        record.image = image.mime_type if image is not None else ""
        made_by = self._made_by()
        vector = self.store.embed_records([record])[0]
        with self.store.write_lock:
            if self._switched(made_by):
                vector = self.store.embed_records([record])[0]
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
                if image is not None:
                    self.images.put(record.id, image.data, image.mime_type)
                    self.store.will_undo(lambda: self.images.remove(record.id, record.image))
                self.store.add([record], [vector])
        return stored

    def forget(self, memory_id: str) -> None:
        """Remove a memory just stored by a call that was then cancelled (its client will store it again)."""
        with self.store.write_lock, self.store.atomic():
            gone = self.store.get([memory_id])
            self.store.delete(list(gone))
        self._drop_images(gone.values())

    def _drop_images(self, records: Iterable[Record]) -> None:
        """Remove the image files of memories just deleted (after the delete: a failed one keeps them)."""
        for r in records:
            if r.image:
                self.images.remove(r.id, r.image)

    def image(self, memory_id: str) -> tuple[str, bytes] | None:
        """A memory's image: its mime type and bytes; None when it has none (or its file is gone)."""
        record = self._one(memory_id)
        data = self.images.read(record.id, record.image) if record.image else None
        return (record.image, data) if data is not None else None

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
        filters = (context, tags, memory_type, include_archived)
        made_by = self._made_by()
        try:
            found = pipeline.recall(self.store, self.parts, self.beside, query, limit, filters)
        except Exception:
            if not self._switched(made_by):
                raise
            found = None
        if found is None or self._switched(made_by):  # a reindex switched the collection: the query was the old one's
            found = pipeline.recall(self.store, self.parts, self.beside, query, limit, filters)
        result, top = found
        if self.touches is not None:
            self.touches.queue(top)
        return result

    def list_memories(
        self,
        limit: int,
        offset: int,
        context: str | None,
        tags: list[str] | None,
        memory_type: str | None,
        include_archived: bool = False,
    ) -> MemoryList:
        contexts, tag_forms = self.store.variants(context, clean_tags(tags))  # filters match regardless of case
        metas = self.store.all_metadata(where_clause(contexts, memory_type, tag_forms, include_archived))
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
            total_links=self.store.links.count(),
            embedder=self.store.embedder.name,
            backend=self.store.backend,
            embedded_text=self.store.recipe,
            archived_memories=sum(1 for m in metas if m.get("archived") is True),
            parts_pending=sum(1 for m in metas if m.get(PENDING) is True),
        )

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
        vector, text, made_by = None, None, self._made_by()
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
                if {"content", "tags"} & set(changes) and (
                    record.text(self.store.recipe) != text or self._switched(made_by)
                ):
                    vector = self.store.embed_records([record])[0]  # changed by another call meanwhile
                with self.store.atomic():
                    self.store.replace(record, vector if {"content", "tags"} & set(changes) else None)
        return UpdatedMemory(success=True, memory_id=record.id, changes=changes, updated_at=record.updated_at)

    def _made_by(self) -> tuple[object, str]:
        """The collection's embedder and recipe, which a write's vector, made before it takes the lock, is made by."""
        self.store.open()
        return self.store.embedder, self.store.recipe

    def _switched(self, made_by: tuple[object, str]) -> bool:
        """Whether a reindex has switched the collection to another embedder or recipe since ``made_by`` (ask
        holding the write lock): the vector made before is then made again."""
        return self.store.embedder is not made_by[0] or self.store.recipe != made_by[1]

    def _embedded(self, record: Record, content: str | None, tags: list[str] | None) -> tuple[list[float], str]:
        """The vector of ``record`` with its new content and tags, and the text it embeds."""
        tags = record.tags if tags is None else tags
        after = dataclasses.replace(record, content=content or record.content, tags=tags)
        return self.store.embed_records([after])[0], after.text(self.store.recipe)

    def delete(self, memory_id: str) -> DeletedMemory:
        with self.store.write_lock:
            record = self._one(memory_id)
            with self.store.atomic():
                removed = self.store.links.remove(self.store.links.of(record.id))
                self.store.delete([record.id])
        self._drop_images([record])
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
                taken = self._take_image(target, sources)
                self.store.replace(target, vector)
                moved = self._repoint_links(gone, target.id)
                self.store.delete(list(gone))
        self._drop_images(s for s in sources if s is not taken)
        return MergedMemory(
            success=True,
            memory_id=target.id,
            summary=summarize(target.content),
            merged_ids=[s.id for s in sources],
            links_moved=moved,
        )

    def _take_image(self, target: Record, sources: list[Record]) -> Record | None:
        """A target without an image takes the first source's (the others go with their memories)."""
        if target.image:
            return None
        source = next((s for s in sources if s.image and self.images.path(s.id, s.image).exists()), None)
        if source is not None:
            self.images.move(source.id, target.id, source.image)
            self.store.will_undo(lambda: self.images.move(target.id, source.id, source.image))
            target.image = source.image
        return source

    def _repoint_links(self, gone: set[str], target: str) -> int:
        old = {lk.id: lk for g in gone for lk in self.store.links.of(g)}
        moved = 0
        for lk in old.values():
            src = target if lk.source_id in gone else lk.source_id
            dst = target if lk.target_id in gone else lk.target_id
            if src != dst:
                moved += self.store.links.put(LinkRecord(src, dst, lk.relation_type, lk.reason, lk.created_at))
        self.store.links.remove(old.values())
        return moved

    def link(self, source_id: str, target_id: str, relation_type: str, reason: str) -> LinkResult:
        with self.store.write_lock:
            source, target = self._one(source_id, "source_id"), self._one(target_id, "target_id")
            if source.id == target.id:
                raise ToolError("source_id and target_id are the same memory: a memory cannot link to itself")
            with self.store.atomic():
                created = self.store.links.put(LinkRecord(source.id, target.id, relation_type, reason.strip(), now()))
        return LinkResult(
            success=True, source_id=source.id, target_id=target.id, relation_type=relation_type, created=created
        )

    def unlink(self, source_id: str, target_id: str, relation_type: str | None) -> UnlinkResult:
        src, dst = clean_id(source_id, "source_id"), clean_id(target_id, "target_id")
        with self.store.write_lock:
            found = [
                lk
                for lk in self.store.links.of(src)
                if lk.source_id == src and lk.target_id == dst and relation_type in (None, lk.relation_type)
            ]
            if not found:
                kind = f" of type '{relation_type}'" if relation_type else ""
                raise ToolError(f"no link{kind} from {src} to {dst}; see get_memory_links({src})")
            with self.store.atomic():
                removed = self.store.links.remove(found)
        return UnlinkResult(success=True, removed=removed)

    def links(self, memory_id: str) -> MemoryLinks:
        record = self._one(memory_id)
        links = self.store.links.of(record.id)
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
        links = self.store.links.of(record.id)
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
        return knowledge_report(records, self.store.links.all(), self.stale_days)
