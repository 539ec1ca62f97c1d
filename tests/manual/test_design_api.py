"""The memories-off design's public API: every tool's parameters (names, order, which are required) as listed
through the MCP client, and the names and types of what each returns, checked by calling it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio

# tool: (the design's parameters in its order, parameters Nexus adds, the required ones)
PARAMETERS = {
    "read_manual": (["library_name"], [], {"library_name"}),
    "update_manual_section": (
        ["library_name", "toc", "old_content", "new_content"],
        [],
        {"library_name", "toc", "old_content", "new_content"},
    ),
    "add_manual_section": (["library_name", "toc", "new_content"], [], {"library_name", "toc", "new_content"}),
    "delete_manual_section": (
        ["library_name", "toc", "deleting_content"],
        [],
        {"library_name", "toc", "deleting_content"},
    ),
    "create_relations": (["library_name", "relations"], [], {"library_name", "relations"}),
    "delete_relations": (["library_name", "relations"], [], {"library_name", "relations"}),
    "find_relations": (["library_name", "to_entity", "relation_type"], [], {"library_name"}),
    "list_entities": (["library_name", "entity_glob"], [], {"library_name"}),
    "add_entities": (["library_name", "entities"], [], {"library_name", "entities"}),
    "delete_entities": (["library_name", "entity_names"], [], {"library_name", "entity_names"}),
    "read_entities": (["library_name", "entity_names"], [], {"library_name", "entity_names"}),
    "get_entities_toc": (["library_name", "entity_names"], [], {"library_name", "entity_names"}),
    "read_entities_sections": (
        ["library_name", "entity_names", "section_globs"],
        [],
        {"library_name", "entity_names", "section_globs"},
    ),
    "rename_entity": (["library_name", "old_name", "new_name"], [], {"library_name", "old_name", "new_name"}),
    "merge_entities": (
        ["library_name", "source_names", "target_name"],
        [],
        {"library_name", "source_names", "target_name"},
    ),
    "add_entity_content": (
        ["library_name", "entity_name", "in_section", "new_content"],
        ["after"],
        {"library_name", "entity_name", "new_content"},
    ),
    "delete_entity_content": (
        ["library_name", "entity_name", "content_to_delete"],
        ["in_section"],
        {"library_name", "entity_name", "content_to_delete"},
    ),
    "replace_entity_section": (
        ["library_name", "entity_name", "old_heading", "new_heading", "new_body_content"],
        [],
        {"library_name", "entity_name", "old_heading", "new_body_content"},
    ),
    "garbage_collect_relations": (["library_name"], ["remove"], {"library_name"}),
    "replace_entity_content": (
        [],
        ["library_name", "entity_name", "old_content", "new_content", "in_section"],
        {"library_name", "entity_name", "old_content", "new_content"},
    ),
}
# add_entities' items: name and entity_type required, the rest optional.
NEW_ENTITY = (["name", "entity_type", "aliases", "relations", "content"], ["entity_type", "name"])

CHANGED = {"library": str, "changed": [str], "message": str}
EDGE = {"from": str, "to": str, "type": str}


def shape(value: Any) -> Any:
    """The field names and types of a JSON value: {name: shape}, [shape of the first item], or the type."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value)


def items_of(schema: dict[str, Any], field: str) -> dict[str, Any]:
    """The schema of a list parameter's items, written in place or as a definition."""
    items = schema["properties"][field]["items"]
    return schema["$defs"][items["$ref"].rsplit("/", 1)[1]] if "$ref" in items else items


async def test_every_tool_takes_the_designed_parameters(manual) -> None:
    async with manual() as tools:
        listed = {t.name: t for t in (await tools.client.list_tools()).tools}
    assert set(listed) == set(PARAMETERS)
    for name, (design, added, required) in PARAMETERS.items():
        schema = listed[name].input_schema
        assert list(schema["properties"]) == design + added, name
        assert set(schema.get("required", [])) == required, name
    items = items_of(listed["add_entities"].input_schema, "entities")
    assert list(items["properties"]) == NEW_ENTITY[0] and sorted(items["required"]) == NEW_ENTITY[1]
    edge = items_of(listed["create_relations"].input_schema, "relations")
    assert list(edge["properties"]) == ["from", "to", "type"] and sorted(edge["required"]) == ["from", "to", "type"]
    assert listed["list_entities"].input_schema["properties"]["entity_glob"]["default"] == "*"


async def test_every_tool_returns_the_documented_fields(manual, root) -> None:
    work = root / "work"
    write(work / "meta.md", "## Rules\n\nBe brief.\n")
    write(work / "alice.md", entity("alice", "# Alice\n\n## Notes\n\nHi [[bob]].\n"))
    w = {"library_name": "work"}
    x_edge = {"from": "alice", "to": "bob", "type": "x"}
    async with manual() as tools:
        ok = tools.ok
        made = await ok(
            "add_entities",
            **w,
            entities=[
                {"name": "bob", "entity_type": "person", "aliases": ["Bo"], "content": "## Notes\n\nBob."},
                {"name": "carol", "entity_type": "person", "relations": [{"type": "knows", "to": "bob"}]},
            ],
        )
        await ok("create_relations", **w, relations=[x_edge])  # so that the next call finds it unchanged
        shapes = {
            "add_entities": made,
            "list_entities": await ok("list_entities", **w, entity_glob="*"),
            "read_entities": await ok("read_entities", **w, entity_names=["alice"]),
            "get_entities_toc": await ok("get_entities_toc", **w, entity_names=["alice"]),
            "read_entities_sections": await ok(
                "read_entities_sections", **w, entity_names=["alice"], section_globs=["Notes"]
            ),
            "add_entity_content": await ok(
                "add_entity_content", **w, entity_name="alice", in_section="Notes", new_content="More."
            ),
            "delete_entity_content": await ok(
                "delete_entity_content", **w, entity_name="alice", content_to_delete="More."
            ),
            "replace_entity_content": await ok(
                "replace_entity_content", **w, entity_name="alice", old_content="Hi", new_content="Hello"
            ),
            "replace_entity_section": await ok(
                "replace_entity_section",
                **w,
                entity_name="alice",
                old_heading="Notes",
                new_heading="## About",
                new_body_content="Alice knows [[bob]] and [[carol]].",
            ),
            "create_relations": await ok("create_relations", **w, relations=[x_edge, {**x_edge, "type": "y"}]),
            "find_relations": await ok("find_relations", **w, to_entity="bob", relation_type="x"),
            "delete_relations": await ok("delete_relations", **w, relations=[x_edge]),
            "rename_entity": await ok("rename_entity", **w, old_name="bob", new_name="robert"),
            "merge_entities": await ok("merge_entities", **w, source_names=["carol"], target_name="robert"),
            "delete_entities": await ok("delete_entities", **w, entity_names=["robert"]),
            "garbage_collect_relations": await ok("garbage_collect_relations", **w),  # alice -y-> robert
            "read_manual": await ok("read_manual", **w),
            "update_manual_section": await ok(
                "update_manual_section", **w, toc="Rules", old_content="brief", new_content="kind"
            ),
            "add_manual_section": await ok("add_manual_section", **w, toc="Rules", new_content="Be clear."),
            "delete_manual_section": await ok("delete_manual_section", **w, toc="Rules", deleting_content="Be clear."),
        }
    expected = {
        "add_entities": CHANGED,
        "list_entities": {"library": str, "entities": [str], "count": int},
        "read_entities": {"library": str, "entities": [{"name": str, "content": str}]},
        "get_entities_toc": {"library": str, "entities": [{"name": str, "toc": [{"heading": str, "level": int}]}]},
        "read_entities_sections": {
            "library": str,
            "entities": [{"name": str, "sections": [{"heading": str, "level": int, "content": str}]}],
        },
        "add_entity_content": CHANGED,
        "delete_entity_content": CHANGED,
        "replace_entity_content": CHANGED,
        "replace_entity_section": CHANGED,
        "create_relations": {"library": str, "changed": [EDGE], "unchanged": [EDGE]},
        "find_relations": {"library": str, "relations": [EDGE], "count": int},
        "delete_relations": {"library": str, "changed": [EDGE], "unchanged": []},
        "rename_entity": {"library": str, "old_name": str, "new_name": str, "files_updated": [str]},
        "garbage_collect_relations": {"library": str, "dangling": [EDGE], "removed": bool},
        "merge_entities": {"library": str, "target": str, "merged": [str], "files_updated": [str]},
        "delete_entities": CHANGED,
        "read_manual": {"library": str, "exists": bool, "content": str, "toc": [{"heading": str, "level": int}]},
        "update_manual_section": CHANGED,
        "add_manual_section": CHANGED,
        "delete_manual_section": CHANGED,
    }
    assert {name: shape(result) for name, result in shapes.items()} == expected
    assert shapes["rename_entity"]["files_updated"] == ["alice", "carol"]  # [[bob]] and carol's relation
    assert shapes["merge_entities"]["merged"] == ["carol"] and shapes["merge_entities"]["files_updated"] == ["alice"]
    assert shapes["garbage_collect_relations"]["dangling"] == [{"from": "alice", "to": "robert", "type": "y"}]
