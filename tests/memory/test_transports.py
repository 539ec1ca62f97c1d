"""The plugin over real stdio and Streamable HTTP, installed and found through its entry point: text memories, 002's
summary (the first 200 characters) and case-blind filters, export_memories and import_memories (which reports its
progress) in pages, through a file inside the roots and through the resource memory://export, reindex_memories
(progress too, recall answering meanwhile), and images (a file inside the roots over stdio, base64 over HTTP)
returned as image content and resource links."""

from __future__ import annotations

import base64
import json
import stat
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import http_client, server_env, stdio_session, write_config
from tests.memory.helpers import TRACE, call, screenshot

pytestmark = pytest.mark.anyio


LONG = (
    "Nginx answers 502 Bad Gateway for a minute after every deploy because the old pods are gone before the new "
    "ones pass their readiness checks; add a readiness probe and a preStop sleep so traffic drains first. Seen on "
    "the checkout service and the search API alike."
)


async def check_the_design_details(client: Any) -> None:
    """002's summary, filters that match regardless of case, and a round trip through export and import."""
    stored = await call(client, "store_memory", content=LONG, context_name="CheckOut", tags=["K8s-Probes"])
    mid = stored["memory_id"]
    assert len(LONG) > 200 and stored["summary"] == LONG[:200]  # exactly the first 200 characters
    assert (await call(client, "get_memory", memory_id=mid))["summary"] == LONG[:200]
    listed = await call(client, "list_memories", tag_filter=["k8s-probes"], context_filter="checkout")
    assert [m["id"] for m in listed["memories"]] == [mid]
    page = await call(client, "export_memories")
    assert json.loads(page["lines"][0])["kind"] == "header" and page["next_offset"] is None
    again = await call(client, "import_memories", lines=page["lines"])  # every id is there: skipped
    assert again["memories"] == 0 and again["skipped"] == page["total_lines"] - 1 - again["links"]
    copy = str(uuid.uuid4())
    line = next(json.loads(x) for x in page["lines"] if json.loads(x).get("id") == mid) | {"id": copy}
    added = await call(client, "import_memories", lines=[page["lines"][0], json.dumps(line)])
    assert (added["memories"], added["re_embedded"]) == (1, 0)  # the same embedder: its vector is reused
    assert (await call(client, "get_memory", memory_id=copy))["content"] == LONG
    # 60 memories of another embedder, re-embedded in steps of 50: the caller that asked hears the first
    other = json.dumps(json.loads(page["lines"][0]) | {"embedder": "another"})
    bare = {k: v for k, v in line.items() if k != "embedding"}
    many = [json.dumps(bare | {"id": str(uuid.uuid4()), "content": f"Imported note {i}."}) for i in range(60)]
    heard: list[tuple[float, Any, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    result = await client.call_tool("import_memories", {"lines": [other, *many]}, progress_callback=on_progress)
    assert result.structured_content["re_embedded"] == 60 and (50, 60, "import: 50/60 lines") in heard, heard


async def check_files_resources_and_reindex(client: Any, root: Path) -> None:
    """The export written to a file inside the roots and imported from it, memory://export read and its contents given
    back to import_memories, and reindex_memories with its progress while a recall is served beside it."""
    written = await call(client, "export_memories", path="export.jsonl")
    file = root / "export.jsonl"
    assert written["path"] == "export.jsonl" and stat.S_IMODE(file.stat().st_mode) == 0o600
    assert len(file.read_text().splitlines()) == written["total_lines"] == 1 + written["memories"] + written["links"]
    assert (await call(client, "import_memories", path="export.jsonl"))["skipped"] == written["memories"]
    (contents,) = (await client.read_resource("memory://export")).contents
    assert contents.mime_type == "application/jsonl"
    assert contents.text.splitlines()[1:] == file.read_text().splitlines()[1:]
    given = contents.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert (await call(client, "import_memories", resource=given))["skipped"] == written["memories"]
    heard: list[tuple[float, Any, Any]] = []
    answers: dict[str, Any] = {}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def reindex() -> None:
        answers["reindex"] = await client.call_tool("reindex_memories", {"force": True}, progress_callback=on_progress)

    async def recall() -> None:
        answers["recall"] = await client.call_tool("recall_memories", {"query": "bad gateway right after a release"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(reindex)
        tg.start_soon(recall)
    assert not answers["recall"].is_error and answers["recall"].structured_content["memories"]
    done = answers["reindex"].structured_content
    assert done["memories"] == done["re_embedded"] == written["memories"] and done["embedder"] == "minilm+use", done
    assert heard and heard[0][0] <= 50 and heard[-1][1] == written["memories"], heard
    assert all(m.startswith("reindex: ") and m.endswith(" memories") for _, _, m in heard), heard
    stats = await call(client, "get_stats")
    assert (stats["total_memories"], stats["embedded_text"]) == (written["memories"], "tags+content+sentences")


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nroots = ["{tmp_path}"]\n'
        '[plugins.memory]\ncategories = ["read", "write", "export", "reindex"]\n',
    )


FAST = {"NEXUS_PROGRESS_INTERVAL": "0.01"}  # an import's every step is sent


async def test_stdio(tmp_path: Path) -> None:
    async with stdio_session("--config", str(_config(tmp_path)), env=server_env(**FAST)) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"store_memory", "recall_memories", "reindex_memories"} <= names and "delete_memory" not in names
        stored = await session.call_tool(
            "store_memory",
            {"content": "Nginx 502 after deploys: add readiness checks.", "context_name": "gateway", "tags": ["nginx"]},
        )
        assert not stored.is_error
        hit = await session.call_tool("recall_memories", {"query": "bad gateway right after a release"})
        assert hit.structured_content["memories"][0]["id"] == stored.structured_content["memory_id"]
        await check_the_design_details(session)
        await check_files_resources_and_reindex(session, tmp_path)
        # an image by its path inside the root (a one-line screenshot: OCR costs time), returned as image content
        (tmp_path / "trace.png").write_bytes(image := screenshot(TRACE[-1:]))
        shot = await session.call_tool("store_memory", {"context_name": "shop", "tags": [], "image_path": "trace.png"})
        got = await session.call_tool("get_memory", {"memory_id": shot.structured_content["memory_id"]})
        assert got.structured_content["content"].startswith("KeyError")
        assert got.content[1].type == "image" and base64.b64decode(got.content[1].data) == image
    assert (tmp_path / "data" / "memory" / "chroma").is_dir()


async def test_streamable_http(http_server, tmp_path: Path) -> None:
    url = http_server("--config", str(_config(tmp_path)), env=server_env(**FAST))
    async with http_client(url) as client:
        with anyio.fail_after(120):  # each HTTP request must answer within the client's timeout: let it warm up
            while (await client.call_tool("ping", {})).structured_content["store"] == "warming up":
                await anyio.sleep(0.2)
        stored = await client.call_tool(
            "store_memory",
            {
                "content": "WebSockets drop after 60s behind nginx: raise proxy_read_timeout.",
                "context_name": "gateway",
                "tags": ["ws"],
            },
        )
        assert not stored.is_error
        hit = await client.call_tool("recall_memories", {"query": "live connections cut after a minute"})
        assert hit.structured_content["memories"][0]["id"] == stored.structured_content["memory_id"]
        bad = await client.call_tool("get_memory", {"memory_id": "not-an-id"})
        assert bad.is_error and "not a memory id" in bad.content[0].text
        await check_the_design_details(client)
        await check_files_resources_and_reindex(client, tmp_path)
        # an image as base64, recalled with a resource link the client reads
        image = screenshot(TRACE[-1:])
        await client.call_tool(
            "store_memory", {"context_name": "shop", "tags": [], "image_data": base64.b64encode(image).decode()}
        )
        hit = await client.call_tool("recall_memories", {"query": "KeyError price"})
        (link,) = [b for b in hit.content if b.type == "resource_link"]
        assert base64.b64decode((await client.read_resource(str(link.uri))).contents[0].blob) == image
