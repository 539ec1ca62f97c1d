"""The knowledge:// resources: an entity, a month of relations, the entropy report, and malformed URIs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.graph.helpers import add, call

pytestmark = pytest.mark.anyio


async def read_json(client: Client, uri: str) -> dict:
    result = await client.read_resource(uri)
    (content,) = result.contents
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def test_entity_relations_and_entropy_resources(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "python", "Python", "tech_stack", type="language")
        await add(client, "guido", "Guido", "people", type="person")
        await call(client, "connect_entities", src="guido", rel="created", dst="python")
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert {"knowledge://entities/{type}/{id}", "knowledge://relations/{year}/{month}"} <= templates
        entity = await read_json(client, "knowledge://entities/tech_stack/python")
        assert entity["name"] == "Python" and entity["incoming"][0]["src"] == "guido"
        by_type = await read_json(client, "knowledge://entities/language/python")  # its type works too
        assert by_type == entity
        now = datetime.now(UTC)
        month = await read_json(client, f"knowledge://relations/{now:%Y}/{now:%m}")
        assert month["file"] == f"relations/{now:%Y}/{now:%m}.jsonl" and month["count"] == 1
        assert month["relations"][0]["rel"] == "created"
        empty = await read_json(client, "knowledge://relations/1999/1")
        assert empty == {"file": "relations/1999/01.jsonl", "count": 0, "relations": []}
        entropy = await read_json(client, "knowledge://stats/entropy")
        assert entropy["entities"] == 2 and entropy["relations"] == 1


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("knowledge://entities/tech_stack/Python", "not an entity id"),
        ("knowledge://entities/tech_stack/a%2Fb", "not an entity id"),
        ("knowledge://entities/Tech/python", "not a category"),
        ("knowledge://entities/../python", "Unknown resource"),
        ("knowledge://entities/tech_stack/..", "Unknown resource"),
        ("knowledge://entities/tech_stack/%2E%2E", "Unknown resource"),
        ("knowledge://relations/2026/13", "expected knowledge://relations/YYYY/MM"),
        ("knowledge://relations/26/01", "expected knowledge://relations/YYYY/MM"),
        ("knowledge://entities/people/python", "no entity 'python' in 'people'"),
        ("knowledge://entities/tech_stack/cobol", "no entity 'cobol'"),
    ],
)
async def test_malformed_traversing_or_unknown_uris_are_refused(graph_host, uri: str, expected: str) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "python", "Python", "tech_stack")
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert expected in str(caught.value)
