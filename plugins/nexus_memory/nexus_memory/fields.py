"""What goes into the tools and comes out: inputs checked before anything is written, records as the tools'
fields, and the time stamps every write gives."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from nexus_core import ToolError
from nexus_memory.analysis import summarize
from nexus_memory.images.files import image_uri
from nexus_memory.models import Memory, MemoryListItem
from nexus_memory.store import Record

MAX_CONTENT = 100_000
MAX_TAG = 64


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
        image=image_uri(r.id, r.image),
    )


def full(r: Record) -> Memory:
    """The whole memory: its list item's fields, with the content and when recall last returned it."""
    return Memory(**list_item(r).model_dump(), content=r.content, last_recalled_at=r.last_recalled_at)


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
