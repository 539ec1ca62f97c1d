"""The structured outputs of the memory tools.

The field names, their nesting and their types are those of the original
Exocortex design, which are public API: fields may be added, never renamed,
re-nested or dropped. The descriptions say which fields Nexus added.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MemoryType = Literal["insight", "success", "failure", "decision", "note"]
RelationType = Literal["related", "supersedes", "contradicts", "extends", "depends_on"]
InsightType = Literal["potential_duplicate", "potential_contradiction", "success_after_failure"]
IssueType = Literal["orphan_memories", "low_connectivity", "stale_memories", "similar_tags", "archive_candidates"]
MEMORY_TYPES: tuple[str, ...] = ("insight", "success", "failure", "decision", "note")
RELATION_TYPES: tuple[str, ...] = ("related", "supersedes", "contradicts", "extends", "depends_on")


class Pong(BaseModel):
    status: Literal["ok"]
    version: str = Field(description="The nexus-memory version.")
    store: str = Field(description="Added: 'ready', 'warming up', 'not loaded' or why the store is unavailable.")


# -- store_memory ------------------------------------------------------------------


class SuggestedLink(BaseModel):
    target_id: str
    target_summary: str
    similarity: float
    suggested_relation: RelationType
    reason: str


class Insight(BaseModel):
    type: InsightType
    message: str
    related_memory_id: str = Field(description="The existing memory this insight is about.")
    confidence: float = Field(description="How likely the insight holds (0-1): the similarity of the two memories.")
    suggested_action: str


class StoredMemory(BaseModel):
    success: bool
    memory_id: str
    summary: str
    suggested_links: list[SuggestedLink]
    insights: list[Insight]
    link_suggestion_message: str
    suggested_tags: list[str] = Field(
        default_factory=list,
        description="Added: tags that the most similar memories use and this one lacks (suggestions only: "
        "update_memory applies them).",
    )


# -- reading -----------------------------------------------------------------------


class MemoryListItem(BaseModel):
    id: str
    summary: str = Field(description="The first 200 characters of the content.")
    type: MemoryType
    context: str = Field(description="The project the memory belongs to.")
    tags: list[str]
    created_at: str
    updated_at: str = Field(description="Added: when the memory last changed.")
    archived: bool = Field(False, description="Added: archived memories are left out unless include_archived.")
    image: str = Field(
        "", description="Added: the URI of its image (memory://<id>/image.<ext>, a resource), '' when it has none."
    )


class RecalledMemory(MemoryListItem):
    content: str
    similarity: float = Field(description="Cosine similarity of meaning between query and memory (-1..1).")
    score: float = Field(
        description="Added: the ranking score: similarity, plus a quarter of how much nearer its nearest sentence "
        "is (sentence vectors), the exact-term boost and, with a pair embedder (the default), 0.04 when the query "
        "names one of its tags; minus 0.05 when another memory supersedes it and up to 0.02 for age (updated or "
        "recalled long ago)."
    )
    matched_terms: list[str] = Field(description="Added: exact terms of the query (codes, names) found in it.")
    superseded_by: list[str] = Field(
        default_factory=list, description="Added: the memories linked as superseding this one."
    )


class RecallResult(BaseModel):
    memories: list[RecalledMemory]
    total_found: int = Field(description="How many memories were returned.")
    exact_terms: list[str] = Field(description="Added: the query's terms that were also matched literally.")


class MemoryList(BaseModel):
    memories: list[MemoryListItem]
    total_count: int = Field(description="How many memories match the filters in all.")
    has_more: bool


class Memory(BaseModel):
    id: str
    content: str
    summary: str
    type: MemoryType
    context: str
    tags: list[str]
    created_at: str
    updated_at: str
    archived: bool = Field(False, description="Added.")
    last_recalled_at: str = Field("", description="Added: when recall last returned it (at most daily); '' never.")
    image: str = Field(
        "",
        description="Added: the URI of its image (memory://<id>/image.<ext>, also returned as image content), "
        "'' when it has none.",
    )


class CountItem(BaseModel):
    name: str
    count: int


class Stats(BaseModel):
    total_memories: int
    memories_by_type: dict[str, int]
    total_contexts: int
    total_tags: int
    top_tags: list[CountItem] = Field(description="The 10 most used tags.")
    contexts: list[CountItem] = Field(description="Added: every context (project) with its memory count.")
    tags: list[CountItem] = Field(description="Added: every tag with its count, to reuse existing spellings.")
    total_links: int = Field(description="Added.")
    embedder: str = Field(description="Added: the embedder's name.")
    backend: str = Field(description="Added: 'embedded' (a folder) or the Chroma server URL.")
    embedded_text: str = Field("tags+content", description="Added: what is embedded: 'tags+content' or 'content'.")
    archived_memories: int = Field(0, description="Added: how many memories are archived (counted in the total).")
    parts_pending: int = Field(
        0, description="Added: memories whose sentence vectors are still being written in the background."
    )


# -- changing ----------------------------------------------------------------------


class UpdatedMemory(BaseModel):
    success: bool
    memory_id: str
    changes: list[Literal["content", "tags", "memory_type", "archived"]] = Field(
        description="What changed; empty if nothing."
    )
    updated_at: str = Field(description="Added.")


class DeletedMemory(BaseModel):
    success: bool
    deleted_id: str
    links_removed: int = Field(description="Added: the links to or from it that were removed too.")


class MergedMemory(BaseModel):
    success: bool
    memory_id: str = Field(description="The memory that remains (target_id).")
    summary: str
    merged_ids: list[str] = Field(description="The memories folded into it and deleted.")
    links_moved: int


# -- links -------------------------------------------------------------------------


class LinkResult(BaseModel):
    success: bool
    source_id: str
    target_id: str
    relation_type: RelationType
    created: bool = Field(description="Added: false when the same link already existed (its reason is updated).")


class UnlinkResult(BaseModel):
    success: bool
    removed: int = Field(description="Added: how many links were removed.")


class OutgoingLink(BaseModel):
    target_id: str
    target_summary: str
    relation_type: RelationType
    reason: str
    created_at: str


class IncomingLink(BaseModel):
    source_id: str
    source_summary: str
    relation_type: RelationType
    reason: str
    created_at: str


class MemoryLinks(BaseModel):
    memory_id: str
    links: list[OutgoingLink] = Field(description="The links from this memory.")
    incoming: list[IncomingLink] = Field(description="Added: the links to this memory.")


class LinkedMemory(BaseModel):
    id: str
    summary: str
    relation_type: RelationType
    reason: str
    direction: Literal["outgoing", "incoming"] = Field(description="Added: whether the link starts here.")


class TagSibling(BaseModel):
    id: str
    summary: str
    shared_tags: list[str]


class ContextSibling(BaseModel):
    id: str
    summary: str
    context: str


class Exploration(BaseModel):
    memory_id: str
    linked: list[LinkedMemory]
    by_tag: list[TagSibling]
    by_context: list[ContextSibling]


# -- analyze_knowledge -------------------------------------------------------------


class Issue(BaseModel):
    type: IssueType
    severity: Literal["low", "medium", "high"]
    message: str
    affected_memory_ids: list[str]
    suggested_action: str
    details: list[str] = Field(default_factory=list, description="Added: e.g. the groups of similar tags.")


class KnowledgeStats(BaseModel):
    unlinked_memories: int
    memories_per_context: dict[str, int]


class KnowledgeReport(BaseModel):
    total_memories: int
    health_score: float = Field(description="0 (neglected) to 100 (tagged, linked, fresh, consistent).")
    issues: list[Issue]
    suggestions: list[str]
    stats: KnowledgeStats


class ExportPage(BaseModel):
    lines: list[str] = Field(description="JSON Lines: a header, the memories (with their vectors), then the links.")
    offset: int = Field(description="The index of the first line of this page.")
    next_offset: int | None = Field(description="Pass it back as offset for the next page; null after the last.")
    total_lines: int
    path: str | None = Field(None, description="Added: the file written, with path (then lines is empty).")
    memories: int | None = Field(None, description="Added, with path: the memories written.")
    links: int | None = Field(None, description="Added, with path: the links written.")
    bytes_written: int | None = Field(None, description="Added, with path: the file's size.")


class ImportCounts(BaseModel):
    memories: int = Field(description="Memories added.")
    re_embedded: int = Field(description="Of those, embedded again (exported with another embedder or recipe).")
    skipped: int = Field(description="Memories whose id was already present (never overwritten).")
    links: int = Field(description="Links added.")


class Reindexed(BaseModel):
    memories: int = Field(description="Memories in the collection now.")
    re_embedded: int = Field(description="Memories embedded (0: the collection used them already; force redoes it).")
    seconds: float
    embedder: str = Field(description="The collection's embedder now.")
    embedded_text: str = Field(description="What is embedded now: 'tags+content+sentences', 'tags+content'.")
    previous_embedder: str = Field(description="The collection's embedder before.")
