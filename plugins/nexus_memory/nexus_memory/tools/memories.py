"""The tools that store, recall, list, read, change and delete memories."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import anyio
import anyio.lowlevel
from pydantic import Field

from nexus_memory.images.given import given
from nexus_memory.models import (
    DeletedMemory,
    Memory,
    MemoryList,
    MemoryType,
    MergedMemory,
    RecallResult,
    StoredMemory,
    UpdatedMemory,
)
from nexus_memory.runtime import Runtime
from nexus_memory.tools.images import image_content, image_links, with_blocks
from nexus_memory.tools.params import ContextFilter, IncludeArchived, MemoryId, TagFilter, TypeFilter


async def store_memory(
    rt: Runtime,
    *,
    content: Annotated[str, Field(description="Markdown; optional with an image.")] = "",
    context_name: Annotated[str, Field(min_length=1, max_length=200, description="The project.")],
    tags: list[str],
    memory_type: MemoryType = "insight",
    image_path: Annotated[str | None, Field(description="PNG, JPEG, WebP or GIF, in the roots.")] = None,
    image_data: Annotated[str | None, Field(description="Base64 or a data: URL.")] = None,
    image_mime_type: str | None = None,
) -> StoredMemory:
    """Remember a lesson, fix or decision for a project (an image's text is read and kept)."""
    image = None
    if image_path is not None or image_data is not None or image_mime_type is not None:
        image = await rt.run(lambda s: given(rt.ctx.paths, image_path, image_data, image_mime_type))
    memory_id = str(uuid.uuid4())
    try:
        stored = await rt.run(lambda s: s.store_memory(content, context_name, tags, memory_type, memory_id, image))
        await anyio.lowlevel.checkpoint()  # raises if the client cancelled while the worker thread stored
        return stored
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):  # the client gave up and may retry: leave no copy behind
            await rt.run(lambda s: s.forget(memory_id))
        raise


async def recall_memories(
    rt: Runtime,
    query: Annotated[str, Field(min_length=1)],
    limit: Annotated[int, Field(ge=1, le=20, description="At most 20.")] = 5,  # the design states it
    context_filter: ContextFilter = None,
    tag_filter: TagFilter = None,
    type_filter: TypeFilter = None,
    include_archived: IncludeArchived = False,
) -> RecallResult:
    """Search memories by meaning and exact terms."""
    found = await rt.run(lambda s: s.recall(query, limit, context_filter, tag_filter, type_filter, include_archived))
    return with_blocks(found, image_links(found))


async def list_memories(
    rt: Runtime,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    offset: Annotated[int, Field(ge=0)] = 0,
    context_filter: ContextFilter = None,
    tag_filter: TagFilter = None,
    type_filter: TypeFilter = None,
    include_archived: IncludeArchived = False,
) -> MemoryList:
    """List memories, newest first, paged."""
    return await rt.run(
        lambda s: s.list_memories(limit, offset, context_filter, tag_filter, type_filter, include_archived)
    )


async def get_memory(rt: Runtime, memory_id: MemoryId) -> Memory:
    """One memory in full, with its image if any."""
    memory = await rt.run(lambda s: s.get_memory(memory_id))
    image = await rt.run(lambda s: s.image(memory.id)) if memory.image else None
    return with_blocks(memory, image_content(image))


async def update_memory(
    rt: Runtime,
    memory_id: MemoryId,
    content: str | None = None,
    tags: list[str] | None = None,
    memory_type: MemoryType | None = None,
    archived: Annotated[bool | None, Field(description="true hides it from recall and list.")] = None,
) -> UpdatedMemory:
    """Change a memory's content, tags or type, or archive it."""
    return await rt.run(lambda s: s.update(memory_id, content, tags, memory_type, archived))


async def delete_memory(rt: Runtime, memory_id: MemoryId) -> DeletedMemory:
    """Delete a memory and every link to or from it. Irreversible."""
    return await rt.run(lambda s: s.delete(memory_id))


async def merge_memories(
    rt: Runtime,
    target_id: Annotated[str, Field(min_length=1, description="The memory that remains (keeps its id).")],
    source_ids: Annotated[list[str], Field(min_length=1, description="Memories folded into it, then deleted.")],
    content: Annotated[str | None, Field(description="The merged content (default: all joined).")] = None,
) -> MergedMemory:
    """Fold similar memories into one: content joined (or given), tags united, links moved; sources deleted."""
    return await rt.run(lambda s: s.merge(target_id, source_ids, content))


RO: dict[str, Any] = {"read_only": True, "idempotent": True}
# (tool, how it is registered), in the order the server lists them; keywords: what tool search also matches
TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (
        store_memory,
        {"category": "write", "title": "Store a memory", "destructive": False}
        | {"keywords": "save, remember, keep a note, jot down, write down a lesson or fix for later"},
    ),
    (
        recall_memories,
        {"category": "read", "title": "Recall memories", **RO}
        | {"keywords": "what do we know about, have we seen this before, did we note, past lessons, earlier fixes"},
    ),
    (
        list_memories,
        {"category": "read", "title": "List memories", **RO, "keywords": "browse, recent notes, page through"},
    ),
    (get_memory, {"category": "read", "title": "Get a memory", **RO, "keywords": "open one note by id"}),
    (
        update_memory,
        {"category": "write", "title": "Update a memory", "destructive": True, "idempotent": True}
        | {"keywords": "edit, retag, archive, change a note"},
    ),
    (
        delete_memory,
        {"category": "delete", "title": "Delete a memory", "destructive": True, "idempotent": False}
        | {"keywords": "forget, remove a note"},
    ),
]
MERGE: tuple[Any, dict[str, Any]] = (
    merge_memories,
    {"category": "delete", "title": "Merge memories", "destructive": True, "idempotent": False}
    | {"keywords": "combine, deduplicate, fold notes into one"},
)
