"""Every memory tool returns exactly the fields of the Exocortex design (plus the documented additions).

One client and one store for the module: each test calls its tool through the MCP client (real model, real
embedded Chroma) and checks the structured result's field names and types, and the advertised output schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from tests.memory.conftest import memory_host_at
from tests.memory.helpers import PG_FAILURE, PG_FIX, DictOf, assert_shape, call, store

pytestmark = pytest.mark.anyio

COUNT = {"name": str, "count": int}
LIST_ITEM = {"id": str, "summary": str, "type": str, "context": str, "tags": [str], "created_at": str}
LIST_ITEM_ADDED = {"updated_at": str, "archived": bool, "image": str}
RECALLED = (
    LIST_ITEM
    | {"content": str, "similarity": float}
    | LIST_ITEM_ADDED
    | {"score": float, "matched_terms": [str], "superseded_by": [str]}
)

# tool -> (design fields, fields Nexus adds). The test asserts the union, exactly.
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ping": ({"status": str, "version": str}, {"store": str}),
    "store_memory": (
        {
            "success": bool,
            "memory_id": str,
            "summary": str,
            "suggested_links": [
                {
                    "target_id": str,
                    "target_summary": str,
                    "similarity": float,
                    "suggested_relation": str,
                    "reason": str,
                }
            ],
            "insights": [
                {"type": str, "message": str, "related_memory_id": str, "confidence": float, "suggested_action": str}
            ],
            "link_suggestion_message": str,
        },
        {"suggested_tags": [str]},
    ),
    "recall_memories": ({"memories": [RECALLED], "total_found": int}, {"exact_terms": [str]}),
    "list_memories": ({"memories": [LIST_ITEM | LIST_ITEM_ADDED], "total_count": int, "has_more": bool}, {}),
    "get_memory": (
        {
            "id": str,
            "content": str,
            "summary": str,
            "type": str,
            "context": str,
            "tags": [str],
            "created_at": str,
            "updated_at": str,
        },
        {"archived": bool, "last_recalled_at": str, "image": str},
    ),
    "update_memory": ({"success": bool, "memory_id": str, "changes": [str]}, {"updated_at": str}),
    "delete_memory": ({"success": bool, "deleted_id": str}, {"links_removed": int}),
    "get_stats": (
        {
            "total_memories": int,
            "memories_by_type": DictOf(int),
            "total_contexts": int,
            "total_tags": int,
            "top_tags": [COUNT],
        },
        {
            "contexts": [COUNT],
            "tags": [COUNT],
            "total_links": int,
            "embedder": str,
            "backend": str,
            "embedded_text": str,
            "archived_memories": int,
            "parts_pending": int,
        },
    ),
    "link_memories": ({"success": bool, "source_id": str, "target_id": str, "relation_type": str}, {"created": bool}),
    "unlink_memories": ({"success": bool}, {"removed": int}),
    "get_memory_links": (
        {
            "memory_id": str,
            "links": [
                {"target_id": str, "target_summary": str, "relation_type": str, "reason": str, "created_at": str}
            ],
        },
        {
            "incoming": [
                {"source_id": str, "source_summary": str, "relation_type": str, "reason": str, "created_at": str}
            ]
        },
    ),
    "explore_related": (
        {
            "memory_id": str,
            "linked": [{"id": str, "summary": str, "relation_type": str, "reason": str, "direction": str}],
            "by_tag": [{"id": str, "summary": str, "shared_tags": [str]}],
            "by_context": [{"id": str, "summary": str, "context": str}],
        },
        {},
    ),
    "analyze_knowledge": (
        {
            "total_memories": int,
            "health_score": float,
            "issues": [
                {
                    "type": str,
                    "severity": str,
                    "message": str,
                    "affected_memory_ids": [str],
                    "suggested_action": str,
                    "details": [str],
                }
            ],
            "suggestions": [str],
            "stats": {"unlinked_memories": int, "memories_per_context": DictOf(int)},
        },
        {},
    ),
    "merge_memories": (
        {"success": bool, "memory_id": str, "summary": str, "merged_ids": [str], "links_moved": int},
        {},
    ),
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def seeded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Client, dict[str, str]]]:
    """A store with a failure linked both ways, tag and project siblings, and an untagged memory."""
    host = memory_host_at(tmp_path_factory.mktemp("shapes"))
    async with Client(host.server) as client:
        ids = {
            "failure": await store(client, PG_FAILURE, "billing", ["postgres", "docker"], "failure"),
            "sibling": await store(client, "Billing reads its settings from env vars.", "billing", ["config"]),
            "tagged": await store(client, "Docker Desktop needs host.docker.internal.", "web", ["docker"]),
            "untagged": await store(client, "Ran the nightly report by hand.", "ops", [], "note"),
        }
        await call(client, "link_memories", source_id=ids["failure"], target_id=ids["tagged"], relation_type="related")
        await call(client, "link_memories", source_id=ids["sibling"], target_id=ids["failure"], relation_type="extends")
        yield client, ids


def arguments(tool: str, ids: dict[str, str]) -> dict[str, Any]:
    return {
        "store_memory": {"content": PG_FIX, "context_name": "gateway", "tags": ["postgres"], "memory_type": "success"},
        "recall_memories": {"query": "ECONNREFUSED from the database container"},
        "get_memory": {"memory_id": ids["failure"]},
        "update_memory": {"memory_id": ids["sibling"], "tags": ["config", "env"]},
        "get_memory_links": {"memory_id": ids["failure"]},
        "explore_related": {"memory_id": ids["failure"]},
    }.get(tool, {})


async def prepared(client: Client, tool: str, ids: dict[str, str]) -> dict[str, Any]:
    """Arguments for the tools that need a memory or a link of their own to consume."""
    if tool == "delete_memory":
        return {"memory_id": await store(client, "A memory to delete.", "tmp", ["tmp"])}
    if tool == "unlink_memories":
        a, b = await store(client, "Unlink source.", "tmp", ["tmp"]), await store(client, "Unlink target.", "tmp")
        await call(client, "link_memories", source_id=a, target_id=b, relation_type="depends_on")
        return {"source_id": a, "target_id": b}
    if tool == "link_memories":
        return {"source_id": ids["tagged"], "target_id": ids["untagged"], "relation_type": "related", "reason": "r"}
    if tool == "merge_memories":
        a, b = await store(client, "Merge into me.", "tmp", ["a"]), await store(client, "Merge me.", "tmp", ["b"])
        return {"target_id": a, "source_ids": [b]}
    return arguments(tool, ids)


@pytest.mark.parametrize("tool", sorted(SHAPES))
async def test_fields_and_types_are_the_designs(seeded: tuple[Client, dict[str, str]], tool: str) -> None:
    client, ids = seeded
    design, added = SHAPES[tool]
    shape = design | added
    out = await call(client, tool, **await prepared(client, tool, ids))
    assert_shape(out, shape)
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed[tool].output_schema["properties"]) == set(shape)


async def test_parameters_are_the_designs(seeded: tuple[Client, dict[str, str]]) -> None:
    client, _ = seeded
    tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}

    def params(name: str) -> tuple[dict[str, Any], list[str]]:
        schema = tools[name]
        return {k: v.get("default") for k, v in schema["properties"].items()}, sorted(schema.get("required", []))

    assert params("ping") == ({}, [])
    # content may be left out when an image is given (its text is the content): the design's calls work as written
    images = {"image_path": None, "image_data": None, "image_mime_type": None}
    assert params("store_memory") == (
        {"content": "", "context_name": None, "tags": None, "memory_type": "insight", **images},
        ["context_name", "tags"],
    )
    filters = {"context_filter": None, "tag_filter": None, "type_filter": None}
    added = {"include_archived": False}  # Nexus's additions, all optional
    assert params("recall_memories") == ({"query": None, "limit": 5, **filters, **added}, ["query"])
    assert tools["recall_memories"]["properties"]["limit"]["description"] == "At most 20."  # checked on call
    assert params("list_memories") == ({"limit": 20, "offset": 0, **filters, **added}, [])
    for name in ("get_memory", "delete_memory", "get_memory_links"):
        assert params(name) == ({"memory_id": None}, ["memory_id"])
    assert params("update_memory") == (
        {"memory_id": None, "content": None, "tags": None, "memory_type": None, "archived": None},
        ["memory_id"],
    )
    assert params("get_stats") == params("analyze_knowledge") == ({}, [])
    assert params("link_memories") == (
        {"source_id": None, "target_id": None, "relation_type": None, "reason": ""},
        ["relation_type", "source_id", "target_id"],
    )
    assert params("unlink_memories") == (
        {"source_id": None, "target_id": None, "relation_type": None},
        ["source_id", "target_id"],
    )
    assert params("explore_related") == (
        {"memory_id": None, "include_tag_siblings": True, "include_context_siblings": True},
        ["memory_id"],
    )
