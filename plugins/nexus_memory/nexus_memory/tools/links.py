"""The tools over the links between memories: link, unlink, list them, and explore what surrounds a memory."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from nexus_memory.models import Exploration, LinkResult, MemoryLinks, RelationType, UnlinkResult
from nexus_memory.runtime import Runtime
from nexus_memory.tools.params import MemoryId


async def link_memories(
    rt: Runtime,
    source_id: MemoryId,
    target_id: MemoryId,
    relation_type: Annotated[
        RelationType,
        Field(description="source supersedes target: replaces or fixes it."),
    ],
    reason: Annotated[str, Field(max_length=1000)] = "",
) -> LinkResult:
    """Link two memories (source --relation--> target)."""
    return await rt.run(lambda s: s.link(source_id, target_id, relation_type, reason))


async def unlink_memories(
    rt: Runtime,
    source_id: MemoryId,
    target_id: MemoryId,
    relation_type: RelationType | None = None,
) -> UnlinkResult:
    """Unlink two memories."""
    return await rt.run(lambda s: s.unlink(source_id, target_id, relation_type))


async def get_memory_links(rt: Runtime, memory_id: MemoryId) -> MemoryLinks:
    """A memory's links, both ways."""
    return await rt.run(lambda s: s.links(memory_id))


async def explore_related(
    rt: Runtime,
    memory_id: MemoryId,
    include_tag_siblings: bool = True,
    include_context_siblings: bool = True,
) -> Exploration:
    """Memories around one: linked, same tags, same project."""
    return await rt.run(lambda s: s.explore(memory_id, include_tag_siblings, include_context_siblings))


RO: dict[str, Any] = {"read_only": True, "idempotent": True}
TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (
        link_memories,
        {"category": "write", "title": "Link memories", "destructive": False, "idempotent": True}
        | {"keywords": "relate, connect two notes, replaces, contradicts, depends on"},
    ),
    (
        unlink_memories,
        {"category": "write", "title": "Unlink memories", "destructive": True, "idempotent": False}
        | {"keywords": "disconnect, remove a link between notes"},
    ),
    (
        get_memory_links,
        {"category": "read", "title": "Memory links", **RO, "keywords": "what links or points to a note, backlinks"},
    ),
    (
        explore_related,
        {"category": "read", "title": "Explore related memories", **RO}
        | {"keywords": "neighbours, similar notes, context around a note"},
    ),
]
