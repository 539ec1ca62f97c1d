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
        Field(
            description="How source relates to target: related, supersedes (replaces or fixes it), "
            "contradicts, extends, depends_on."
        ),
    ],
    reason: Annotated[str, Field(max_length=1000, description="Why they are linked.")] = "",
) -> LinkResult:
    """Link two memories (source --relation--> target); linking again refreshes the reason."""
    return await rt.run(lambda s: s.link(source_id, target_id, relation_type, reason))


async def unlink_memories(
    rt: Runtime,
    source_id: MemoryId,
    target_id: MemoryId,
    relation_type: Annotated[RelationType | None, Field(description="Only this relation (default: all).")] = None,
) -> UnlinkResult:
    """Remove the links from source to target."""
    return await rt.run(lambda s: s.unlink(source_id, target_id, relation_type))


async def get_memory_links(rt: Runtime, memory_id: MemoryId) -> MemoryLinks:
    """A memory's outgoing links (`links`), and the links to it (`incoming`)."""
    return await rt.run(lambda s: s.links(memory_id))


async def explore_related(
    rt: Runtime,
    memory_id: MemoryId,
    include_tag_siblings: Annotated[bool, Field(description="Also memories sharing tags.")] = True,
    include_context_siblings: Annotated[bool, Field(description="Also memories of the same project.")] = True,
) -> Exploration:
    """What surrounds a memory: its links, memories sharing its tags, and its project's other memories."""
    return await rt.run(lambda s: s.explore(memory_id, include_tag_siblings, include_context_siblings))


RO: dict[str, Any] = {"read_only": True, "idempotent": True}
TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (link_memories, {"category": "write", "title": "Link memories", "destructive": False, "idempotent": True}),
    (unlink_memories, {"category": "write", "title": "Unlink memories", "destructive": True, "idempotent": False}),
    (get_memory_links, {"category": "read", "title": "Memory links", **RO}),
    (explore_related, {"category": "read", "title": "Explore related memories", **RO}),
]
