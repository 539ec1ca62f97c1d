"""The Nexus Cortex design's public API: the tools' input schemas as designed, their results' fields and types,
the knowledge:// resources, and the health-review prompt built on get_entropy_report."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from mcp import Client

from tests.graph.helpers import add, call

pytestmark = pytest.mark.anyio

ENTITY = {
    "id": str,
    "category": str,
    "type": str,
    "name": str,
    "desc": str,
    "tags": [str],
    "created": str,
    "observations": [],
}
RELATION = {"src": str, "rel": str, "dst": str, "context": str, "created": str}
FINDING = {"count": int, "ids": [str], "suggestion": str}


def shape(value: Any) -> Any:
    """The field names and types of a JSON value: {name: shape}, [shape of the first item], or the type."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value)


async def test_tools_take_the_designed_input_schemas(graph_host) -> None:
    async with Client(graph_host(extra_categories=["decisions"]).server) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
    add_entity = listed["add_entity"]
    assert list(add_entity["properties"]) == ["category", "id", "type", "name", "desc", "tags"]
    assert add_entity["required"] == ["category", "id", "type", "name", "desc"]
    props = add_entity["properties"]
    assert props["category"]["enum"] == ["concepts", "tech_stack", "people", "projects", "decisions"]
    assert props["id"]["pattern"] == "^[a-z0-9-]+$"
    assert all(props[k]["type"] == "string" for k in ("category", "id", "type", "name", "desc"))
    assert props["tags"] == {"description": props["tags"]["description"], "type": "array", "items": {"type": "string"}}
    connect = listed["connect_entities"]
    assert list(connect["properties"]) == ["src", "rel", "dst", "context"]
    assert connect["required"] == ["src", "rel", "dst"]
    assert list(listed["search_knowledge"]["properties"]) == ["query", "limit"]  # limit is added
    assert listed["search_knowledge"]["required"] == ["query"]
    assert listed["get_entropy_report"].get("properties", {}) == {} and not listed["get_entropy_report"].get("required")


async def test_tools_return_their_fields(graph_host) -> None:
    async with Client(graph_host().server) as client:
        added = await add(client, "mcp-protocol", "MCP", type="concept", desc="The protocol", tags=["mcp"])
        await add(client, "python", "Python", "tech_stack", type="language", desc="A language")
        connected = await call(client, "connect_entities", src="python", rel="uses", dst="mcp-protocol", context="x")
        found = await call(client, "search_knowledge", query="protocol")
        report = await call(client, "get_entropy_report")
    assert shape(added) == {"entity": ENTITY | {"tags": [str]}, "file": str}
    assert shape(connected) == {"relation": RELATION, "added": bool, "message": str}
    hit = {
        "id": str,
        "name": str,
        "category": str,
        "type": str,
        "score": float,
        "matched_field": str,
        "matched_text": str,
    }
    assert shape(found) == {"query": str, "hits": [hit], "total_entities": int}
    assert shape(report) == {
        "entities": int,
        "relations": int,
        "density": float,
        "stale_days": int,
        "orphans": FINDING | {"ids": []},
        "stale": FINDING | {"ids": []},
        "components": FINDING | {"ids": [], "largest": int, "sizes": [int]},
        "hubs": {
            "hubs": [{"id": str, "name": str, "degree": int, "outgoing": int, "incoming": int}],
            "suggestion": str,
        },
        "duplicates": {"count": int, "groups": [], "suggestion": str},
        "dangling": {"count": int, "relations": [], "suggestion": str},
        "corrupt_lines": {"count": int, "lines": [], "suggestion": str},
        "summary": str,
    }


async def test_resources_serve_the_designed_uris_as_json(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "mcp-protocol", "MCP", type="concept", desc="The protocol", tags=["mcp"])
        await add(client, "python", "Python", "tech_stack", type="language")
        await call(client, "connect_entities", src="python", rel="uses", dst="mcp-protocol")
        templates = {t.uri_template: t.mime_type for t in (await client.list_resource_templates()).resource_templates}
        concrete = {str(r.uri): r.mime_type for r in (await client.list_resources()).resources}
        now = datetime.now(UTC)
        read = {}
        for uri in (
            "knowledge://entities/concept/mcp-protocol",  # the design's example: by its type
            "knowledge://entities/concepts/mcp-protocol",  # by its category folder
            f"knowledge://relations/{now:%Y}/{now:%m}",
            "knowledge://stats/entropy",
        ):
            (content,) = (await client.read_resource(uri)).contents
            assert content.mime_type == "application/json"
            read[uri] = json.loads(content.text)
    assert templates["knowledge://entities/{type}/{id}"] == "application/json"
    assert templates["knowledge://relations/{year}/{month}"] == "application/json"
    assert concrete["knowledge://stats/entropy"] == "application/json"
    entity = read["knowledge://entities/concept/mcp-protocol"]
    # The full JSON content of the entity at the top level, its relations beside it.
    assert shape(entity) == ENTITY | {"outgoing": [], "incoming": [RELATION]}
    assert entity["id"] == "mcp-protocol" and entity["desc"] == "The protocol" and entity["tags"] == ["mcp"]
    assert read["knowledge://entities/concepts/mcp-protocol"] == entity
    month = read[f"knowledge://relations/{now:%Y}/{now:%m}"]
    assert shape(month) == {"file": str, "count": int, "relations": [RELATION]}
    assert month["relations"][0]["src"] == "python"
    entropy = read["knowledge://stats/entropy"]
    assert entropy["density"] == pytest.approx(0.5) and entropy["orphans"]["count"] == 0 and entropy["entities"] == 2


async def test_review_graph_health_prompt_embeds_the_entropy_report(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "python", "Python", "tech_stack", type="language")
        await add(client, "pyhton", "Pyhton", "tech_stack", type="language")  # a look-alike, and two orphans
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        text = (await client.get_prompt("review_graph_health", {})).messages[0].content.text
        report = await call(client, "get_entropy_report")
    assert prompts["review_graph_health"].arguments in (None, [])
    embedded = json.loads(text.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
    assert embedded == report  # the same report the tool returns
    assert report["summary"] in text and report["orphans"]["ids"] == ["pyhton", "python"]
    assert "same_as" in text and "connect_entities" in text and "add_entity" in text
    async with Client(graph_host(categories=[]).server) as client:  # read not granted: no prompt
        assert (await client.list_prompts()).prompts == []
    async with Client(graph_host(deny_tools=["get_entropy_report"]).server) as client:  # it follows that tool
        assert (await client.list_prompts()).prompts == []
