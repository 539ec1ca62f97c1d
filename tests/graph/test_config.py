"""The plugin's config keys: defaults, validation and where the graph lives."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

import nexus_graph
from tests.graph.helpers import add

pytestmark = pytest.mark.anyio


async def test_the_graph_defaults_to_the_plugin_data_dir(make_host, data_dir: Path) -> None:
    host = make_host({"graph": nexus_graph}, {"plugins": {"graph": {"categories": ["read", "write"]}}})
    async with Client(host.server) as client:
        await add(client, "x", "X")
    assert (data_dir / "graph" / "concepts" / "entities.jsonl").is_file()


@pytest.mark.parametrize(
    ("keys", "reason"),
    [
        ({"graph_dir": "relative/dir"}, "absolute"),
        ({"extra_categories": ["Bad-Name"]}, "invalid"),
        ({"extra_categories": ["relations"]}, "invalid"),
        ({"stale_days": 0}, "greater than or equal to 1"),
        ({"categories_extra": ["x"]}, "unknown key"),
    ],
)
async def test_invalid_config_keys_stop_the_plugin_with_the_key_and_reason(make_host, keys, reason) -> None:
    host = make_host({"graph": nexus_graph}, {"plugins": {"graph": keys}})
    status = host.plugins["graph"].status
    assert status.startswith("failed") and reason in status
    assert "plugins.graph." in status
    async with Client(host.server) as client:
        assert (await client.list_tools()).tools == []
