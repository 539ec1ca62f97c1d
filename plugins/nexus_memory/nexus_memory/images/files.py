"""Where a memory's image is kept: ``<data_dir>/images/<memory id>.<ext>``, a 0600 file in a 0700 folder.

The bytes are the ones the client gave (never re-encoded). Chroma's metadata holds only the image's mime type
(``Record.image``); the file is named by the memory's id, so it follows the memory and goes with it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from nexus_core import ToolError, atomic_write, private_folder

log = logging.getLogger("nexus.memory")

# The formats an image may have, by mime type, and the extension of its file (and of its resource's URI).
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp", "image/gif": "gif"}
MAX_IMAGE_BYTES = 8 << 20  # base64 makes 10.7 MB of it: get_memory's answer stays under a message's 16 MiB
MAX_PIXELS = 40_000_000  # an 8K screenshot is 33 million; more is refused before it is decoded
EXTRA = "pip install 'nexus-stack-memory[ocr]'"


class ImageError(ToolError):
    """An image that cannot be stored (unreadable, too large, another format, no OCR installed): one line."""


def image_uri(memory_id: str, mime_type: str) -> str:
    """The resource a memory's image is read at: ``memory://<id>/image.<ext>``; '' without an image."""
    return f"memory://{memory_id}/image.{EXTENSIONS[mime_type]}" if mime_type in EXTENSIONS else ""


def mime_of(uri: str) -> str:
    """The mime type of an image resource's URI (``image_uri``'s inverse)."""
    ext = uri.rsplit(".", 1)[-1]
    return next((m for m, e in EXTENSIONS.items() if e == ext), "application/octet-stream")


class ImageFiles:
    """The images of one store's memories, in ``<data_dir>/images`` (made 0700 on the first image)."""

    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "images"

    def path(self, memory_id: str, mime_type: str) -> Path:
        return self.folder / f"{memory_id}.{EXTENSIONS[mime_type]}"

    def put(self, memory_id: str, data: bytes, mime_type: str) -> None:
        private_folder(self.folder)
        atomic_write(self.path(memory_id, mime_type), data, new_mode=0o600)

    def read(self, memory_id: str, mime_type: str) -> bytes | None:
        """The image's bytes; None (logged) when its file is gone."""
        try:
            return self.path(memory_id, mime_type).read_bytes()
        except FileNotFoundError:
            log.warning("the image of memory %s is missing: %s", memory_id, self.path(memory_id, mime_type))
            return None

    def move(self, source_id: str, target_id: str, mime_type: str) -> None:
        os.replace(self.path(source_id, mime_type), self.path(target_id, mime_type))

    def remove(self, memory_id: str, mime_type: str) -> None:
        """Remove the file, if it is there; a failure is logged (the memory is gone already: an orphan file)."""
        try:
            self.path(memory_id, mime_type).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not remove the image of memory %s: %s", memory_id, exc)


__all__ = ["EXTENSIONS", "EXTRA", "MAX_IMAGE_BYTES", "MAX_PIXELS", "ImageError", "ImageFiles", "image_uri", "mime_of"]
