"""The image a ``store_memory`` call gives: a file inside the roots, or base64 content; read, bounded, checked, read
by OCR. Every check happens before anything is written, each refusal in one line."""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from typing import Any

from nexus_core import PathPolicy
from nexus_memory.images import ocr
from nexus_memory.images.files import EXTENSIONS, MAX_IMAGE_BYTES, MAX_PIXELS, ImageError

FORMATS = "PNG, JPEG, WebP or GIF"
ALIASES = {"image/jpg": "image/jpeg"}


@dataclass(frozen=True)
class GivenImage:
    data: bytes  # as the client gave them
    mime_type: str  # read from the bytes (one of files.EXTENSIONS)
    text: str  # what OCR read in it, a line a line ('' when none)


def given(paths: PathPolicy, image_path: str | None, image_data: str | None, mime_type: str | None) -> GivenImage:
    """The image of ``image_path`` (through ``paths``: inside the roots) or ``image_data`` (base64, or a base64
    ``data:`` URL), decoded, and its text. ``mime_type``, when given, must be the one the bytes have."""
    ocr.require()
    if image_path is not None and image_data is not None:
        raise ImageError("give image_path or image_data, not both")
    if image_data is not None:
        data, declared = from_base64(image_data)
        mime_type = mime_type or declared
    elif image_path is not None:
        data = from_file(paths, image_path)
    else:
        raise ImageError("image_mime_type describes an image: give it with image_data")
    actual, picture = decoded(data)
    if mime_type and ALIASES.get(mime_type.strip().lower(), mime_type.strip().lower()) != actual:
        raise ImageError(f"image_mime_type is '{mime_type}' but the image is {actual}")
    return GivenImage(data, actual, ocr.read_text(picture))


def too_large(size: int) -> ImageError:
    return ImageError(f"the image is {size:,} bytes; the limit is {MAX_IMAGE_BYTES:,}: crop it or save it smaller")


def from_base64(text: str) -> tuple[bytes, str]:
    """The bytes of base64 ``text`` and the mime type a ``data:`` URL declares ('' otherwise)."""
    declared, body = "", text.strip()
    if body.startswith("data:"):
        head, _, body = body.partition(",")
        if not head.endswith(";base64"):
            raise ImageError("image_data is a data: URL that is not base64 (data:image/png;base64,...)")
        declared = head[len("data:") : -len(";base64")]
    body = "".join(body.split())
    if len(body) > (MAX_IMAGE_BYTES + 2) // 3 * 4:
        raise too_large(len(body) // 4 * 3)
    try:
        return base64.b64decode(body, validate=True), declared
    except (binascii.Error, ValueError):
        raise ImageError("image_data is not base64: give the image's bytes in base64 (with image_mime_type)") from None


def from_file(paths: PathPolicy, image_path: str) -> bytes:
    """The bytes of the file at ``image_path``, opened through the path policy (inside the roots, no secrets)."""
    try:
        with paths.open_read(image_path) as opened:
            if opened.stat.st_size > MAX_IMAGE_BYTES:
                raise too_large(opened.stat.st_size)
            data = opened.read(MAX_IMAGE_BYTES + 1)
    except FileNotFoundError:
        raise ImageError(f"image_path '{image_path}' does not exist") from None
    except OSError as exc:
        raise ImageError(f"image_path '{image_path}' cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_IMAGE_BYTES:  # it grew since the stat
        raise too_large(len(data))
    return data


def decoded(data: bytes) -> tuple[str, Any]:
    """The image's mime type and the image decoded by Pillow, or why it cannot be stored."""
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_IMAGE_BYTES:
        raise too_large(len(data))
    try:
        picture = Image.open(io.BytesIO(data))
        mime_type = Image.MIME.get(picture.format or "", "")
        if mime_type not in EXTENSIONS:
            raise ImageError(f"the image is {picture.format or 'of an unknown format'}; give a {FORMATS}")
        if picture.width * picture.height > MAX_PIXELS:
            raise ImageError(
                f"the image is {picture.width}x{picture.height} pixels; the limit is {MAX_PIXELS:,} pixels"
            )
        picture.load()  # decodes it all: a truncated or damaged file fails here, before anything is stored
    except UnidentifiedImageError:
        raise ImageError(f"the image is not a {FORMATS} file Pillow can read") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ImageError(f"the image cannot be decoded: {' '.join(str(exc).split())}") from None
    return mime_type, picture


IMAGE_TEXT = "Text in the image:"


def with_text(content: str, image: GivenImage | None) -> str:
    """The content a memory keeps: the content given, then the image's text under ``IMAGE_TEXT`` (the image's text
    alone when no content is given), so it is embedded, matched literally and shown like any content."""
    if image is None:
        return content
    if not image.text:
        if not content.strip():
            raise ImageError("no text was found in the image and content is empty: write what the image shows")
        return content
    return f"{content.strip()}\n\n{IMAGE_TEXT}\n{image.text}" if content.strip() else image.text
