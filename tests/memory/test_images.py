"""Images in memories (002's multimodal memories): a screenshot given to store_memory is kept, its text read by OCR
(RapidOCR's models, the [ocr] extra) and embedded with the content, so recall finds a stack trace by a question
about the error; get_memory returns the image as image content, recall as a resource link.

One host and one client for the module (real MiniLM, real embedded Chroma, real OCR models, loaded once per
process: 1.1 CPU-s, then 0.5 CPU-s for a one-line screenshot, 1.4 for the six-line trace); the images are rendered
with Pillow, short where the test allows, as OCR time grows with the lines.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from PIL import Image

import nexus_memory
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager
from nexus_memory import transfer
from nexus_memory.embed import checksums
from nexus_memory.images import files, ocr
from tests.memory.helpers import TRACE, call, fails, screenshot, store

pytestmark = pytest.mark.anyio

# Other memories of the same project, two of them near the screenshot's words (checkout, cart, KeyError, prices).
OTHERS = [
    ("Checkout page was slow: the cart total ran one query per item (N+1). Prefetched the items.", ["django"]),
    ("KeyError 'user_id' in the session middleware after logout: the session was flushed first.", ["django"]),
    ("Postgres refused connections on 5432: the container was not ready; added a healthcheck.", ["postgres"]),
    ("Prices were rounded twice in invoices; use Decimal with quantize once at the end.", ["billing"]),
]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("images")


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    """The memory plugin with ``root/work`` as its root; its data in ``root/data``."""
    (root / "work").mkdir()
    pm = get_plugin_manager()
    pm.register(nexus_memory, name="memory")
    config = {
        "server": {"data_dir": str(root / "data"), "roots": [str(root / "work")]},
        "plugins": {"memory": {"embedder": "minilm", "categories": ["read", "write", "delete"]}},
    }
    host = build_host(parse_config(config, source="test.toml", base_dir=root), pm)
    async with Client(host.server) as c:
        for content, tags in OTHERS:
            await store(c, content, "shop", tags)
        yield c


def image_files(root: Path) -> list[Path]:
    return sorted((root / "data" / "memory" / "images").glob("*"))


async def count(client: Client) -> int:
    return (await call(client, "get_stats"))["total_memories"]


async def test_a_screenshot_of_a_stack_trace_is_recalled_by_a_question_about_the_error(client: Client) -> None:
    image = screenshot(TRACE)
    stored = await call(client, "store_memory", context_name="shop", tags=[], image_data=b64(image))
    memory_id = stored["memory_id"]
    assert stored["summary"].startswith("Traceback (most recent call last):")

    recalled = await client.call_tool(
        "recall_memories", {"query": "placing an order fails because a cart item is missing its price"}
    )
    top = recalled.structured_content["memories"][0]
    assert top["id"] == memory_id and top["image"] == f"memory://{memory_id}/image.png"
    links = {str(b.uri): b.mime_type for b in recalled.content if b.type == "resource_link"}
    assert links[top["image"]] == "image/png"  # and one for each other recalled memory with an image
    assert set(links) == {m["image"] for m in recalled.structured_content["memories"] if m["image"]}
    read = await client.read_resource(top["image"])
    assert base64.b64decode(read.contents[0].blob) == image and read.contents[0].mime_type == "image/png"

    got = await client.call_tool("get_memory", {"memory_id": memory_id})
    assert [b.type for b in got.content] == ["text", "image"]
    assert got.content[1].mime_type == "image/png" and base64.b64decode(got.content[1].data) == image
    assert "KeyError" in got.structured_content["content"] and "place_order" in got.structured_content["content"]
    markdown = (await client.read_resource(f"memory://{memory_id}")).contents[0].text
    assert f"\n- image: {top['image']}\n" in markdown


async def test_an_image_file_inside_the_roots_is_kept_beside_the_text_in_a_private_file(
    client: Client, root: Path
) -> None:
    (root / "work" / "trace.jpg").write_bytes(screenshot(TRACE[-1:], "JPEG"))  # one line: each costs OCR time
    note = "Checkout crashed for carts holding a gift card: gift cards have no price."
    stored = await call(
        client, "store_memory", content=note, context_name="shop", tags=["checkout"], image_path="trace.jpg"
    )
    got = await call(client, "get_memory", memory_id=stored["memory_id"])
    head, _, text = got["content"].partition("\n\nText in the image:\n")
    assert head == note and text.startswith("KeyError:") and text.endswith("'price'")
    assert got["image"].endswith("/image.jpeg")
    kept = root / "data" / "memory" / "images" / f"{stored['memory_id']}.jpeg"
    assert kept.read_bytes() == (root / "work" / "trace.jpg").read_bytes()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700

    await call(client, "delete_memory", memory_id=stored["memory_id"])
    assert not kept.exists()


async def test_a_merged_memory_keeps_the_image_of_a_source(client: Client, root: Path) -> None:
    target = await store(client, "Gift cards broke the cart total.", "shop", ["checkout"])
    image = b64(screenshot(TRACE[-1:]))
    source = (await call(client, "store_memory", context_name="shop", tags=[], image_data=image))["memory_id"]
    await call(client, "merge_memories", target_id=target, source_ids=[source])
    got = await client.call_tool("get_memory", {"memory_id": target})
    assert got.structured_content["image"] == f"memory://{target}/image.png" and got.content[1].type == "image"
    assert {p.stem for p in image_files(root)} >= {target} and source not in {p.stem for p in image_files(root)}


async def test_an_export_carries_the_image_and_an_import_brings_it_back(
    client: Client, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = screenshot(TRACE[-1:])
    memory_id = (await call(client, "store_memory", context_name="shop", tags=[], image_data=b64(image)))["memory_id"]
    monkeypatch.setattr(transfer, "PAGE_BYTES", 2000)  # under one memory's line: a page a line, cut by size
    lines: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await call(client, "export_memories", offset=offset, limit=1000)
        assert len(page["lines"]) == 1 and page["offset"] == len(lines)
        lines, offset = lines + page["lines"], page["next_offset"]
    assert len(lines) == page["total_lines"]
    (mine,) = [line for line in lines if memory_id in line]
    exported = json.loads(mine)
    assert exported["image_mime_type"] == "image/png" and base64.b64decode(exported["image_data"]) == image

    await call(client, "delete_memory", memory_id=memory_id)
    assert (await call(client, "import_memories", lines=[lines[0], mine]))["memories"] == 1
    got = await client.call_tool("get_memory", {"memory_id": memory_id})
    assert got.content[1].type == "image" and base64.b64decode(got.content[1].data) == image
    assert (root / "data" / "memory" / "images" / f"{memory_id}.png").read_bytes() == image

    broken = json.dumps(exported | {"id": "other", "image_data": "not base64!"})
    assert "image_data is not base64" in await fails(client, "import_memories", lines=[lines[0], broken])


async def test_bad_images_are_refused_in_one_line_and_nothing_is_stored(client: Client, root: Path) -> None:
    (root / "work" / "notes.txt").write_text("not an image")
    (root / "outside.png").write_bytes(screenshot(["x"]))
    png = b64(screenshot(TRACE))
    before, kept = await count(client), image_files(root)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"image_path": str(root / "outside.png")}, "permission denied"),
        ({"image_path": "missing.png"}, "image_path 'missing.png' does not exist"),
        ({"image_path": "notes.txt"}, "is not a PNG, JPEG, WebP or GIF file"),
        ({"image_data": "not base64!"}, "image_data is not base64"),
        ({"image_data": png, "image_mime_type": "image/jpeg"}, "image_mime_type is 'image/jpeg' but the image is"),
        ({"image_data": png, "image_path": "trace.png"}, "give image_path or image_data, not both"),
        ({"image_data": b64(screenshot(TRACE, "BMP"))}, "the image is BMP; give a PNG, JPEG, WebP or GIF"),
        ({"image_data": b64(screenshot(TRACE)[:400])}, "the image cannot be decoded"),
        ({"image_data": "A" * (files.MAX_IMAGE_BYTES // 3 * 4 + 8)}, "the limit is 8,388,608: crop it"),
        ({"image_data": b64(screenshot([" "]))}, "no text was found in the image and content is empty"),
    ]
    for args, expected in cases:
        message = await fails(client, "store_memory", context_name="shop", tags=[], **args)
        assert expected in message and "\n" not in message, (args.keys(), message)
    assert await count(client) == before and image_files(root) == kept  # nothing stored, the server serves on


async def test_without_the_ocr_extra_an_image_is_refused_naming_the_extra(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr", None)  # as if `pip install nexus-stack-memory` had no [ocr]
    message = await fails(client, "store_memory", context_name="shop", tags=[], image_path="missing.png")
    assert message.endswith(
        ": storing an image needs the memory plugin's OCR extra: pip install 'nexus-stack-memory[ocr]'"
    )
    assert (await call(client, "recall_memories", query="a cart item without a price"))["memories"]  # text still


async def test_a_memory_without_an_image_answers_as_before(client: Client) -> None:
    memory_id = await store(client, "Plain text memories carry no image.", "shop", ["misc"])
    got = await client.call_tool("get_memory", {"memory_id": memory_id})
    assert [b.type for b in got.content] == ["text"] and got.structured_content["image"] == ""


def test_the_ocr_models_come_from_the_installed_wheel_and_nothing_is_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh engine, with every socket refused: it loads the two checked files of the package and reads text."""

    def refuse(*args: object) -> None:
        raise AssertionError(f"the OCR reached for the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(ocr, "_engine", None)  # the engine the other tests share is put back after
    engine = ocr.engine()
    folder = checksums.folder(checksums.RAPIDOCR)
    assert engine.cfg.Det.model_path == str(folder / "models" / "PP-OCRv6_det_small.onnx")
    assert engine.cfg.Rec.model_path == str(folder / "models" / "PP-OCRv6_rec_small.onnx")
    assert engine.cfg.Global.use_cls is False
    picture = Image.open(io.BytesIO(screenshot(TRACE[-1:])))
    assert ocr.read_text(picture).startswith("KeyError")
