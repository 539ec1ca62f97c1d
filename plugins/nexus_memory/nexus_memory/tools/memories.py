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
    content: Annotated[
        str, Field(description="What was learned, in Markdown; may be left out when an image with text is given.")
    ] = "",
    context_name: Annotated[str, Field(min_length=1, max_length=200, description="The project's name.")],
    tags: Annotated[list[str], Field(description="Keywords: technology, error family, component ([] for none).")],
    memory_type: Annotated[MemoryType, Field(description="What kind of memory this is.")] = "insight",
    image_path: Annotated[
        str | None,
        Field(description="A screenshot or diagram to keep with it: a PNG, JPEG, WebP or GIF file inside the roots."),
    ] = None,
    image_data: Annotated[
        str | None, Field(description="The image's bytes in base64 (or a data: URL), instead of image_path.")
    ] = None,
    image_mime_type: Annotated[
        str | None, Field(description="image_data's type, e.g. image/png (checked against the bytes).")
    ] = None,
) -> StoredMemory:
    """Remember something learned for a project, with an optional image (a screenshot of an error, a diagram)
    whose text is read and stored with the content. Returns its memory_id, suggested_links to similar memories,
    insights: a likely duplicate (use update_memory), a contradiction, a success that may resolve an
    earlier failure in any project, and suggested_tags that similar memories use.
    """
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
    query: Annotated[str, Field(min_length=1, description="The problem, question or error, in any words.")],
    limit: Annotated[int, Field(ge=1, le=20, description="How many memories (1-20).")] = 5,
    context_filter: ContextFilter = None,
    tag_filter: TagFilter = None,
    type_filter: TypeFilter = None,
    include_archived: IncludeArchived = False,
) -> RecallResult:
    """Recall memories by meaning, in any language, lifting those that contain the query's exact terms (error
    codes, names). Superseded memories rank a little lower; archived ones are left out unless asked. A memory's
    image comes as a resource link."""
    found = await rt.run(lambda s: s.recall(query, limit, context_filter, tag_filter, type_filter, include_archived))
    return with_blocks(found, image_links(found))


async def list_memories(
    rt: Runtime,
    limit: Annotated[int, Field(ge=1, le=100, description="Page size (1-100).")] = 20,
    offset: Annotated[int, Field(ge=0, description="How many to skip.")] = 0,
    context_filter: ContextFilter = None,
    tag_filter: TagFilter = None,
    type_filter: TypeFilter = None,
    include_archived: IncludeArchived = False,
) -> MemoryList:
    """List memories, newest first, with total_count and has_more for paging."""
    return await rt.run(
        lambda s: s.list_memories(limit, offset, context_filter, tag_filter, type_filter, include_archived)
    )


async def get_memory(rt: Runtime, memory_id: MemoryId) -> Memory:
    """One memory in full, and its image, if it has one, as image content."""
    memory = await rt.run(lambda s: s.get_memory(memory_id))
    image = await rt.run(lambda s: s.image(memory.id)) if memory.image else None
    return with_blocks(memory, image_content(image))


async def update_memory(
    rt: Runtime,
    memory_id: MemoryId,
    content: Annotated[str | None, Field(description="New content (re-embedded).")] = None,
    tags: Annotated[list[str] | None, Field(description="The new tags (replace the old ones).")] = None,
    memory_type: Annotated[MemoryType | None, Field(description="The new type.")] = None,
    archived: Annotated[
        bool | None, Field(description="true archives it (recall and list skip it), false restores it.")
    ] = None,
) -> UpdatedMemory:
    """Change a memory's content, tags, type or archived state; `changes` lists what changed."""
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
# (tool, how it is registered), in the order the server lists them
TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (store_memory, {"category": "write", "title": "Store a memory", "destructive": False}),
    (recall_memories, {"category": "read", "title": "Recall memories", **RO}),
    (list_memories, {"category": "read", "title": "List memories", **RO}),
    (get_memory, {"category": "read", "title": "Get a memory", **RO}),
    (update_memory, {"category": "write", "title": "Update a memory", "destructive": True, "idempotent": True}),
    (delete_memory, {"category": "delete", "title": "Delete a memory", "destructive": True, "idempotent": False}),
]
MERGE: tuple[Any, dict[str, Any]] = (
    merge_memories,
    {"category": "delete", "title": "Merge memories", "destructive": True, "idempotent": False},
)
