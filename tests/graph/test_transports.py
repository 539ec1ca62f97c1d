"""nexus-graph served by `nexus serve`, over real stdio and Streamable HTTP, found through its entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import http_client, stdio_session, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n\n'
        f'[plugins.graph]\ncategories = ["read", "write"]\nstale_days = 7\nextra_categories = ["decisions"]\n',
    )


async def test_over_stdio_the_graph_lives_in_the_data_dir(config: Path, tmp_path: Path) -> None:
    async with stdio_session("--config", str(config), cwd=tmp_path) as session:
        added = await session.call_tool(
            "add_entity",
            {"category": "decisions", "id": "use-jsonl", "type": "decision", "name": "Use JSONL", "desc": "d"},
        )
        assert not added.is_error, added.content
        found = await session.call_tool("search_knowledge", {"query": "jsonl use"})
        assert found.structured_content["hits"][0]["id"] == "use-jsonl"
        report = await session.call_tool("get_entropy_report", {})
        assert report.structured_content["stale_days"] == 7
    assert (tmp_path / "data" / "graph" / "decisions" / "entities.jsonl").is_file()


async def test_over_streamable_http(config: Path, tmp_path: Path, http_server) -> None:
    url = http_server("--config", str(config))
    async with http_client(url) as client:
        await client.call_tool(
            "add_entity", {"category": "concepts", "id": "a", "type": "t", "name": "Alpha", "desc": ""}
        )
        await client.call_tool(
            "add_entity", {"category": "concepts", "id": "b", "type": "t", "name": "Beta", "desc": ""}
        )
        linked = await client.call_tool("connect_entities", {"src": "a", "rel": "precedes", "dst": "b"})
        assert linked.structured_content["added"] is True
        path = await client.call_tool("find_path", {"src": "b", "dst": "a"})
        assert path.structured_content["message"] == "b <-precedes- a"
        resource = await client.read_resource("knowledge://entities/concepts/a")
        assert '"precedes"' in resource.contents[0].text
        refused = await client.call_tool(
            "add_entity", {"category": "concepts", "id": "a", "type": "t", "name": "A", "desc": ""}
        )
        assert refused.is_error and "already exists" in refused.content[0].text
