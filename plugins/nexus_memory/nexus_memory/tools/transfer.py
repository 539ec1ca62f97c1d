"""The tools that export and import memories as JSON Lines (the format of ``nexus memory export``).

They run in the server that owns the store, so ``nexus memory export|import`` reach the store through them
while clients are connected, instead of opening it a second time.
"""

from __future__ import annotations

import io
from typing import Annotated, Any

from pydantic import Field

from nexus_memory import transfer
from nexus_memory.models import ExportPage, ImportCounts
from nexus_memory.runtime import Runtime


async def export_memories(
    rt: Runtime,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=10_000)] = 1000,
) -> ExportPage:
    """Export memories and links as JSON Lines."""

    lines, total = await rt.run(lambda service: transfer.export_page(service.store, offset, limit))
    end = offset + len(lines)  # fewer than asked once a page is large (memories with images)
    return ExportPage(lines=lines, offset=offset, next_offset=end if end < total else None, total_lines=total)


async def import_memories(
    rt: Runtime,
    lines: Annotated[list[str], Field(min_length=1, description="export_memories lines, header first.")],
) -> ImportCounts:
    """Import exported memories and links."""
    counts = await rt.run(lambda s: transfer.import_memories(s.store, io.StringIO("\n".join(lines))))
    return ImportCounts(
        memories=counts.memories, re_embedded=counts.re_embedded, skipped=counts.skipped, links=counts.links
    )


TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (
        export_memories,
        {"category": "read", "title": "Export memories", "read_only": True, "idempotent": True}
        | {"keywords": "backup, dump, move notes to another machine"},
    ),
    (
        import_memories,
        {"category": "write", "title": "Import memories", "destructive": False, "idempotent": True}
        | {"keywords": "restore, load a backup"},
    ),
]
