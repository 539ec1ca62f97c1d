"""The resources: one memory as Markdown (``memory://{id}``), and the statistics as JSON (``memory://stats``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from nexus_core import ToolError
from nexus_memory.fields import NotFound
from nexus_memory.runtime import Runtime
from nexus_memory.service import MemoryService

T = TypeVar("T")


def read_for_resource(rt: Runtime, read: Callable[[MemoryService], T]) -> T:
    """``read`` run on the store, its errors as a resource read's: not found, or why it failed."""
    try:
        return rt.run_sync(read)
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from None
    except ToolError as exc:
        raise ResourceError(str(exc)) from None


def memory(rt: Runtime, id: str) -> str:
    m = read_for_resource(rt, lambda s: s.get_memory(id))
    tags = ", ".join(m.tags) or "(none)"
    image = f"- image: {m.image}\n" if m.image else ""
    return (
        f"# {m.type}: {m.context}\n\n- id: {m.id}\n- type: {m.type}\n- context: {m.context}\n- tags: {tags}\n"
        f"- created_at: {m.created_at}\n- updated_at: {m.updated_at}\n{image}\n{m.content}\n"
    )


def stats(rt: Runtime) -> str:
    try:
        return json.dumps(rt.run_sync(lambda s: s.stats()).model_dump(), indent=2)
    except ToolError as exc:
        raise ResourceError(str(exc)) from None


# (resource, its URI, how it is registered)
RESOURCES: list[tuple[Any, str, dict[str, Any]]] = [
    (
        memory,
        "memory://{id}",
        {
            "name": "memory",
            "title": "A memory",
            "description": "One memory as Markdown: its type, context, tags and times, then its content.",
            "mime_type": "text/markdown",
            "category": "read",
        },
    ),
    (
        stats,
        "memory://stats",
        {
            "name": "memory_stats",
            "title": "Memory statistics",
            "description": "What get_stats returns, as JSON.",
            "mime_type": "application/json",
            "category": "read",
        },
    ),
]
