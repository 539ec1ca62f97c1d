"""The plugin over real stdio and Streamable HTTP, installed and found through its entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import http_client, stdio_session, write_config

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\nroots = ["{tmp_path}"]\n'
    )


async def test_stdio(tmp_path: Path) -> None:
    async with stdio_session("--config", str(_config(tmp_path))) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"store_memory", "recall_memories"} <= names and "delete_memory" not in names
        stored = await session.call_tool(
            "store_memory",
            {"content": "Nginx 502 after deploys: add readiness checks.", "context_name": "gateway", "tags": ["nginx"]},
        )
        assert not stored.is_error
        hit = await session.call_tool("recall_memories", {"query": "bad gateway right after a release"})
        assert hit.structured_content["results"][0]["id"] == stored.structured_content["id"]
    assert (tmp_path / "data" / "memory" / "chroma").is_dir()


async def test_streamable_http(http_server, tmp_path: Path) -> None:
    url = http_server("--config", str(_config(tmp_path)))
    async with http_client(url) as client:
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
        assert hit.structured_content["results"][0]["id"] == stored.structured_content["id"]
        bad = await client.call_tool("get_memory", {"memory_id": "not-an-id"})
        assert bad.is_error and "not a memory id" in bad.content[0].text


def test_start_loads_neither_chroma_nor_the_model(tmp_path: Path) -> None:
    """Building the server and listing its tools imports no chromadb, onnxruntime or tokenizers."""
    import subprocess
    import sys

    code = (
        "import sys, anyio\n"
        "from mcp import Client\n"
        "from nexus_core.config import parse_config\n"
        "from nexus_core.host import build_host\n"
        f"host = build_host(parse_config({{'server': {{'data_dir': {str(tmp_path)!r}}}}}))\n"
        "async def main():\n"
        "    async with Client(host.server) as c:\n"
        "        names = {t.name for t in (await c.list_tools()).tools}\n"
        "    assert 'recall_memories' in names, names\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in ('chromadb', 'onnxruntime', 'tokenizers', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
    assert not (tmp_path / "memory").exists()  # no data dir, no Chroma files until first use
