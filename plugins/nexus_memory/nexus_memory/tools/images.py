"""Memories' images in the tools' answers and as resources.

``get_memory`` returns a memory's image as MCP image content beside its JSON; ``recall_memories`` returns a resource
link per recalled image (several full images would swell the answer), which the client reads at
``memory://<id>/image.<ext>``: one resource template per format, so each answer names its mime type.
"""

from __future__ import annotations

import base64
from typing import Any

from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, ContentBlock, ImageContent, ResourceLink, TextContent
from pydantic import BaseModel

from nexus_memory.images.files import EXTENSIONS, mime_of
from nexus_memory.models import RecallResult
from nexus_memory.runtime import Runtime
from nexus_memory.tools.resources import read_for_resource


def with_blocks(result: BaseModel, blocks: list[ContentBlock]) -> Any:
    """``result`` as the SDK answers it (structured, and as JSON text), then ``blocks``; ``result`` itself when there
    are none."""
    if not blocks:
        return result
    text = TextContent(type="text", text=result.model_dump_json(indent=2))
    return CallToolResult(content=[text, *blocks], structured_content=result.model_dump(mode="json"))


def image_content(image: tuple[str, bytes] | None) -> list[ContentBlock]:
    """A memory's image (``MemoryService.image``) as image content; nothing when it has none."""
    if image is None:
        return []
    mime_type, data = image
    return [ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)]


def image_links(result: RecallResult) -> list[ContentBlock]:
    """A resource link to each recalled memory's image."""
    return [
        ResourceLink(type="resource_link", uri=m.image, name=f"image of memory {m.id}", mime_type=mime_of(m.image))
        for m in result.memories
        if m.image
    ]


def image_resource(mime_type: str) -> Any:
    """The resource function of the images of one format: their bytes."""

    def image(rt: Runtime, id: str) -> bytes:
        found = read_for_resource(rt, lambda s: s.image(id))
        if found is None or found[0] != mime_type:
            raise ResourceNotFoundError(f"memory {id} has no {mime_type} image; get_memory names its image's URI")
        return found[1]

    return image


# (resource, its URI, how it is registered): one template per format
RESOURCES: list[tuple[Any, str, dict[str, Any]]] = [
    (
        image_resource(mime_type),
        f"memory://{{id}}/image.{ext}",
        {
            "name": f"memory_image_{ext}",
            "title": f"A memory's image ({ext.upper()})",
            "description": "The image stored with a memory, as the client gave it.",
            "mime_type": mime_type,
            "category": "read",
        },
    )
    for mime_type, ext in EXTENSIONS.items()
]
