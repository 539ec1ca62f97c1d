"""The structured outputs of the memory tools."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MemoryType = Literal["insight", "success", "failure", "decision", "note"]
RelationType = Literal["related", "supersedes", "contradicts", "extends", "depends_on"]
MEMORY_TYPES: tuple[str, ...] = ("insight", "success", "failure", "decision", "note")
RELATION_TYPES: tuple[str, ...] = ("related", "supersedes", "contradicts", "extends", "depends_on")


class MemorySummary(BaseModel):
    id: str
    summary: str = Field(description="The content's first ~200 characters.")
    memory_type: MemoryType
    context: str = Field(description="Its project.")
    tags: list[str]
    created_at: str
    updated_at: str


class Memory(MemorySummary):
    content: str = Field(description="The full Markdown content.")


class SuggestedLink(BaseModel):
    memory_id: str
    summary: str
    similarity: float
    relation_type: RelationType
    reason: str


class Insight(BaseModel):
    kind: Literal["potential_duplicate", "potential_contradiction", "success_after_failure"]
    memory_id: str = Field(description="The existing memory this insight is about.")
    similarity: float
    message: str


class StoredMemory(BaseModel):
    id: str
    summary: str
    suggested_links: list[SuggestedLink]
    insights: list[Insight]


class RecalledMemory(MemorySummary):
    similarity: float = Field(description="Cosine similarity of meaning between query and memory (-1..1).")
    score: float = Field(description="The ranking score: similarity plus the exact-term boost.")
    matched_terms: list[str] = Field(description="Exact terms of the query (codes, identifiers) found in the memory.")


class RecallResult(BaseModel):
    query: str
    results: list[RecalledMemory]
    exact_terms: list[str] = Field(description="The query's terms that were also matched literally.")


class MemoryList(BaseModel):
    memories: list[MemorySummary]
    total_count: int
    offset: int
    limit: int
    has_more: bool


class UpdatedMemory(BaseModel):
    memory: Memory
    changed: list[str] = Field(description="The fields that changed: content, tags, memory_type.")
    re_embedded: bool


class DeletedMemory(BaseModel):
    id: str
    deleted: bool
    links_removed: int


class CountItem(BaseModel):
    name: str
    count: int


class Stats(BaseModel):
    total_memories: int
    total_links: int
    by_type: dict[str, int]
    contexts: list[CountItem]
    tags: list[CountItem]
    top_tags: list[CountItem]
    embedder: str
    backend: str = Field(description="'embedded' (a folder) or the Chroma server URL.")


class Link(BaseModel):
    source_id: str
    target_id: str
    relation_type: RelationType
    reason: str
    created_at: str


class LinkResult(BaseModel):
    link: Link
    created: bool = Field(description="False when the same link already existed (its reason is updated).")


class UnlinkResult(BaseModel):
    source_id: str
    target_id: str
    removed: int


class MemoryLinks(BaseModel):
    memory_id: str
    outgoing: list[Link]
    incoming: list[Link]


class LinkedMemory(BaseModel):
    memory: MemorySummary
    relation_type: RelationType
    direction: Literal["outgoing", "incoming"]
    reason: str


class TagSibling(BaseModel):
    memory: MemorySummary
    shared_tags: list[str]


class Exploration(BaseModel):
    memory: MemorySummary
    linked: list[LinkedMemory]
    by_tag: list[TagSibling]
    by_context: list[MemorySummary]


class Issue(BaseModel):
    kind: Literal["orphan_memories", "low_connectivity", "stale_memories", "similar_tags"]
    severity: Literal["low", "medium", "high"]
    description: str
    affected_ids: list[str]
    details: list[str] = Field(default_factory=list, description="e.g. the groups of similar tags.")
    suggested_action: str


class KnowledgeReport(BaseModel):
    health_score: int = Field(description="0 (neglected) to 100 (tagged, linked, fresh, consistent).")
    total_memories: int
    issues: list[Issue]


class MergeResult(BaseModel):
    memory: Memory
    merged_ids: list[str] = Field(description="The memories folded into it and deleted.")
    links_moved: int
