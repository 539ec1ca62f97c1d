"""The tools and the resource that export and import memories as JSON Lines (the format of ``nexus memory export``).

They run in the server that owns the store, so ``nexus memory export|import`` reach the store through them while
clients are connected, instead of opening it a second time. Three ways out: pages in the call (``read``), a file
inside the roots (``export_memories(path=...)``, which also needs ``export``: it writes the user's files), and the
resource ``memory://export`` (pages at ``memory://export?offset=N``). Three ways in, all ``write``: the lines, a file
inside the roots, or the contents of a resource (``memory://export`` read from another Nexus, given by the client).
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ResourceError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nexus_core import PermissionDenied, ToolError
from nexus_memory import transfer
from nexus_memory.export_file import read_export, write_export
from nexus_memory.models import ExportPage, ImportCounts
from nexus_memory.runtime import Runtime
from nexus_memory.service import MemoryService


class ResourceContents(BaseModel):
    """A resource's contents as resources/read returns them (text, or blob in base64), or an embedded resource."""

    # {uri, mimeType, text} or {uri, mimeType, blob}; an embedded resource ({type: "resource", resource: {...}}) is
    # taken as its resource, hence no field is required at the top.
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    uri: str = ""
    mime_type: str | None = Field(None, alias="mimeType")
    text: str | None = None
    blob: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _embedded(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("type") == "resource" and isinstance(data.get("resource"), dict):
            return data["resource"]
        return data

    def content(self) -> str:
        """The JSON Lines it carries."""
        if self.text is not None:
            return self.text
        if self.blob is None:
            raise ToolError(f"resource '{self.uri}' has neither text nor blob: give its contents as read")
        try:
            return base64.b64decode(self.blob, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise ToolError(f"resource '{self.uri}': blob is not base64 of UTF-8 text (JSON Lines)") from None


def contents(resource: dict[str, Any]) -> ResourceContents:
    """The ``resource`` argument read as a resource's contents, or a one-line error."""
    try:
        return ResourceContents.model_validate(resource)
    except ValidationError as exc:
        raise ToolError(f"resource: not a resource's contents ({exc.errors()[0]['msg']})") from None


async def export_memories(
    rt: Runtime,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=10_000)] = 1000,
    path: Annotated[str | None, Field(description="Or write it all to this file (category export).")] = None,
    overwrite: bool = False,  # replace an existing file
) -> ExportPage:
    """Export memories and links as JSON Lines, by page or into a file."""
    if path is None:
        lines, total, start = await rt.run(lambda service: transfer.export_page(service.store, offset, limit))
        end = start + len(lines)  # fewer than asked once a page is large (memories with images)
        return ExportPage(lines=lines, offset=start, next_offset=end if end < total else None, total_lines=total)
    if reason := rt.ctx.category_refusal("export", tool="export_memories"):
        raise PermissionDenied(f"{reason} (export_memories writes a file only with it; without path it pages)")
    written = await rt.run(lambda service: write_export(rt.ctx.paths, path, service.store, overwrite))
    counts = written.counts
    return ExportPage(
        lines=[],
        offset=0,
        next_offset=None,
        total_lines=1 + counts.memories + counts.links,
        path=written.path,
        memories=counts.memories,
        links=counts.links,
        bytes_written=written.size,
    )


async def import_memories(
    rt: Runtime,
    lines: Annotated[list[str] | None, Field(min_length=1, description="Its lines, header first.")] = None,
    path: Annotated[str | None, Field(description="Or an export file.")] = None,
    # An object, described in words: the contents' own schema would cost every client ~450 bytes of tools/list.
    resource: Annotated[dict[str, Any] | None, Field(description="Or resources/read contents.")] = None,
) -> ImportCounts:
    """Import an export from one of these."""
    if sum(x is not None for x in (lines, path, resource)) != 1:
        raise ToolError("give one of lines, path or resource")

    def run(service: MemoryService) -> transfer.TransferCounts:
        if lines is not None:
            text = "\n".join(lines)
        else:
            text = read_export(rt.ctx.paths, path) if path is not None else contents(resource).content()  # type: ignore[arg-type]
        try:
            return transfer.import_memories(service.store, io.StringIO(text))
        except ValueError as exc:  # a bad line: the whole input was checked first, nothing was imported
            raise ToolError(f"{exc}; nothing was imported") from None

    counts = await rt.run(run)
    return ImportCounts(
        memories=counts.memories, re_embedded=counts.re_embedded, skipped=counts.skipped, links=counts.links
    )


def export_resource(rt: Runtime) -> str:
    return export_resource_page(rt, "0")


def export_resource_page(rt: Runtime, offset: str = "0") -> str:
    if not offset.isdigit():  # ASCII digits only: a query string is text (and the SDK's own refusal says not why)
        raise ResourceError(f"offset must be a whole number, 0 or more (a page's next_offset), not '{offset}'")
    try:
        return rt.run_sync(lambda service: transfer.export_resource_page(service.store, int(offset)))
    except ToolError as exc:
        raise ResourceError(str(exc)) from None


TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (
        export_memories,
        # with path it writes (and with overwrite replaces) a file: neither read-only nor harmless
        {"category": "read", "title": "Export memories", "read_only": False, "destructive": True, "idempotent": True}
        | {"keywords": "backup, dump, save to a file, move notes to another machine"},
    ),
    (
        import_memories,
        {"category": "write", "title": "Import memories", "destructive": False, "idempotent": True}
        | {"keywords": "restore, load a backup, from a file or a resource"},
    ),
]

EXPORT_DESCRIPTION = (
    "Every memory and link as JSON Lines (the format of nexus memory export), in pages of about 4 MB: each page is "
    "the header, with offset, next_offset (null on the last page) and total_lines, then its lines. Read the next at "
    "memory://export?offset=<next_offset>; import_memories takes each page as it is."
)

# (resource, its URI, how it is registered)
RESOURCES: list[tuple[Any, str, dict[str, Any]]] = [
    (
        export_resource,
        "memory://export",
        {"name": "memory_export", "title": "Memory export", "description": EXPORT_DESCRIPTION}
        | {"mime_type": "application/jsonl", "category": "read"},
    ),
    (
        export_resource_page,
        "memory://export{?offset}",
        {"name": "memory_export_page", "title": "Memory export, from a line", "description": EXPORT_DESCRIPTION}
        | {"mime_type": "application/jsonl", "category": "read"},
    ),
]
