"""Helpers for calling the memory tools through the MCP client, and for checking the shapes they return."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from mcp import Client

PG_FAILURE = (
    "Postgres connections failed with ECONNREFUSED 127.0.0.1:5432 because docker-compose published the "
    "database on port 5433. Changed the port mapping to 5432:5432."
)
PG_FIX = (
    "Fixed the Postgres connection refused error in docker: the compose file now maps 5432:5432 and the API connects."
)


# A Python stack trace: the text of the screenshots the image tests store.
TRACE = [
    "Traceback (most recent call last):",
    '  File "/srv/shop/checkout/views.py", line 88, in place_order',
    "    total = cart.total(currency)",
    '  File "/srv/shop/checkout/cart.py", line 41, in total',
    '    return sum(item["price"] * item["qty"] for item in self.items)',
    "KeyError: 'price'",
]


def screenshot(lines: list[str], fmt: str = "PNG") -> bytes:
    """A terminal-like screenshot of ``lines``: light text on a dark background, rendered by Pillow (the [ocr] extra
    brings it) with its built-in font, so it is the same on every machine."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=18)
    picture = Image.new("RGB", (760, 30 + 26 * len(lines)), (30, 30, 30))
    draw = ImageDraw.Draw(picture)
    for i, line in enumerate(lines):
        draw.text((14, 14 + 26 * i), line, font=font, fill=(230, 230, 230))
    out = io.BytesIO()
    picture.save(out, fmt)
    return out.getvalue()


async def call(client: Any, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured output."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content


async def fails(client: Client, tool: str, **args: Any) -> str:
    """Call a tool that must fail; its error text."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return result.content[0].text


async def store(
    client: Any, content: str, context: str = "api", tags: list[str] | None = None, memory_type: str = "insight"
) -> str:
    out = await call(
        client, "store_memory", content=content, context_name=context, tags=tags or [], memory_type=memory_type
    )
    return out["memory_id"]


@dataclass(frozen=True)
class DictOf:
    """A JSON object with any keys, whose values all have this shape."""

    value: Any


def assert_shape(value: Any, shape: Any, where: str = "$") -> None:
    """``value`` has exactly this shape: a dict's keys are exactly the shape's keys, a scalar has exactly
    the type (an int is not a float, a bool is not an int). A list of objects must not be empty, so the
    shape of its items is checked too."""
    if isinstance(shape, dict):
        assert isinstance(value, dict), f"{where}: expected an object, got {value!r}"
        assert set(value) == set(shape), f"{where}: fields {sorted(value)} != {sorted(shape)}"
        for key, sub in shape.items():
            assert_shape(value[key], sub, f"{where}.{key}")
    elif isinstance(shape, list):
        assert isinstance(value, list), f"{where}: expected a list, got {value!r}"
        assert value or not isinstance(shape[0], dict | DictOf), f"{where}: empty, so its items are not checked"
        for i, item in enumerate(value):
            assert_shape(item, shape[0], f"{where}[{i}]")
    elif isinstance(shape, DictOf):
        assert isinstance(value, dict) and value, f"{where}: expected a non-empty object, got {value!r}"
        for key, item in value.items():
            assert_shape(item, shape.value, f"{where}.{key}")
    else:
        assert type(value) is shape, f"{where}: expected {shape.__name__}, got {type(value).__name__} {value!r}"
