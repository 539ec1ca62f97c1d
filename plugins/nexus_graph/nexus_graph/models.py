"""What the tools return (structured output), and the plugin's config keys."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from nexus_core import PluginConfig
from nexus_graph.graph import DEFAULT_CATEGORIES
from nexus_graph.records import CATEGORY_RE, Entity, Relation
from nexus_graph.storage import RELATIONS_DIR


class GraphConfig(PluginConfig):
    """The keys of ``[plugins.graph]`` besides those the host reads."""

    graph_dir: Path | None = Field(
        None,
        description="Folder of the JSONL files (absolute or ~). Default: the plugin's data_dir. Operator-chosen, "
        "like data_dir: it is not checked against roots, and no tool takes a path into it.",
    )
    extra_categories: list[str] = Field(
        default_factory=list,
        description=f"Entity categories besides {', '.join(DEFAULT_CATEGORIES)}; each is a folder of the graph.",
    )
    stale_days: int = Field(90, ge=1, le=36500, description="An entity with no new relation for this long is stale.")

    @field_validator("graph_dir")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        value = value.expanduser()
        if not value.is_absolute():
            raise ValueError("graph_dir must be an absolute path (or start with ~)")
        return value

    @field_validator("extra_categories")
    @classmethod
    def _categories(cls, value: list[str]) -> list[str]:
        for name in value:
            if not CATEGORY_RE.match(name) or name == RELATIONS_DIR or len(name) > 40:
                raise ValueError(
                    f"category {name!r} is invalid: lowercase letters, digits and underscores, "
                    f"starting with a letter, not '{RELATIONS_DIR}'"
                )
        return list(dict.fromkeys(c for c in value if c not in DEFAULT_CATEGORIES))

    @property
    def categories_all(self) -> tuple[str, ...]:
        return (*DEFAULT_CATEGORIES, *self.extra_categories)


class EntityOut(BaseModel):
    id: str
    category: str
    type: str
    name: str
    desc: str
    tags: list[str]
    created: str = Field(description="When it was added (UTC, ISO 8601).")
    observations: list[str] = Field(default_factory=list, description="Facts carried over from an import.")

    @classmethod
    def of(cls, e: Entity) -> EntityOut:
        return cls(
            id=e.id,
            category=e.category,
            type=e.type,
            name=e.name,
            desc=e.desc,
            tags=e.tags,
            created=e.created,
            observations=e.observations,
        )


class RelationOut(BaseModel):
    src: str
    rel: str
    dst: str
    context: str
    created: str

    @classmethod
    def of(cls, r: Relation) -> RelationOut:
        return cls(src=r.src, rel=r.rel, dst=r.dst, context=r.context, created=r.created)


class AddEntityResult(BaseModel):
    entity: EntityOut
    file: str = Field(description="The file it was appended to, relative to the graph folder.")


class ConnectResult(BaseModel):
    relation: RelationOut
    added: bool = Field(description="False when this exact relation already existed (nothing was added).")
    message: str


class SearchHit(BaseModel):
    id: str
    name: str
    category: str
    type: str
    score: float = Field(description="0 to 100; higher is closer.")
    matched_field: Literal["name", "id", "tags", "desc"]
    matched_text: str = Field(description="The word or text in that field that matched.")


class SearchResult(BaseModel):
    query: str
    hits: list[SearchHit]
    total_entities: int


class EntityDetail(BaseModel):
    entity: EntityOut
    outgoing: list[RelationOut] = Field(description="Relations where this entity is src.")
    incoming: list[RelationOut] = Field(description="Relations where this entity is dst.")


class NeighborNode(BaseModel):
    id: str
    name: str
    category: str
    type: str
    distance: int


class NeighborsResult(BaseModel):
    id: str
    depth: int
    rel: str | None
    direction: str
    nodes: list[NeighborNode] = Field(description="Entities within reach, nearest first (the start is distance 0).")
    relations: list[RelationOut]
    truncated: bool


class PathStep(BaseModel):
    src: str
    rel: str
    dst: str
    walked: Literal["forward", "backward"] = Field(description="backward: the relation points against the path.")


class PathResult(BaseModel):
    src: str
    dst: str
    found: bool
    hops: int | None
    entities: list[str] = Field(description="The ids along the path, src first.")
    steps: list[PathStep]
    message: str


class ExportResult(BaseModel):
    format: Literal["mermaid", "json"]
    entities: int
    relations: int
    truncated: bool
    content: str


class ImportResult(BaseModel):
    path: str
    entities_added: int
    relations_added: int
    skipped: list[str] = Field(description="What was not imported, and why (existing ids are never overwritten).")
    ids: dict[str, str] = Field(description="Memory-server entity name -> the id it got here.")


class Finding(BaseModel):
    count: int
    ids: list[str] = Field(description="The entities affected (at most 50 listed; count is complete).")
    suggestion: str


class ComponentsFinding(Finding):
    largest: int = Field(description="Entities in the biggest connected group.")
    sizes: list[int] = Field(description="Sizes of the ten biggest groups.")


class Hub(BaseModel):
    id: str
    name: str
    degree: int
    outgoing: int
    incoming: int


class HubsFinding(BaseModel):
    hubs: list[Hub]
    suggestion: str


class DuplicateGroup(BaseModel):
    ids: list[str]
    names: list[str]
    similarity: float


class DuplicatesFinding(BaseModel):
    count: int
    groups: list[DuplicateGroup]
    suggestion: str


class DanglingRelation(BaseModel):
    src: str
    rel: str
    dst: str
    missing: list[str]
    source: str = Field(description="file:line of the relation.")


class DanglingFinding(BaseModel):
    count: int
    relations: list[DanglingRelation]
    suggestion: str


class CorruptLine(BaseModel):
    file: str
    line: int
    error: str


class CorruptFinding(BaseModel):
    count: int
    lines: list[CorruptLine]
    suggestion: str


class EntropyReport(BaseModel):
    entities: int
    relations: int
    density: float = Field(description="Distinct connected ordered pairs / possible pairs.")
    stale_days: int
    orphans: Finding
    stale: Finding
    components: ComponentsFinding
    hubs: HubsFinding
    duplicates: DuplicatesFinding
    dangling: DanglingFinding
    corrupt_lines: CorruptFinding
    summary: str
