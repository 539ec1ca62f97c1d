"""Tool schemas without what tells a client nothing; calls validated exactly as before."""

from __future__ import annotations

import json
from typing import Annotated, Any

import jsonschema
import pytest
from mcp import Client
from pydantic import BaseModel, Field

from nexus_core import hookimpl
from nexus_core.host.schemas import compact


class Leaf(BaseModel):
    """A leaf."""

    title: str = Field(description="A property that happens to be called title.")


class Tree(BaseModel):
    name: str
    children: list[Tree] = Field(default_factory=list)


class Result(BaseModel):
    only: Leaf = Field(description="Used once.")
    pair: list[Leaf]
    tree: Tree
    note: str | None = None


class Args(BaseModel):
    start_line: int = Field(1, ge=1)
    leaf: Leaf
    author: str | None = None
    limit: int | None = Field(None, ge=1, le=100, description="At most 100.")
    tags: list[str] = Field(min_length=1, max_length=5)
    either: int | str | None = None
    nullable: int | None = 3  # null is a value here, not "left out": it keeps its null branch
    options: dict[str, Any] | None = None


def test_titles_go_single_use_definitions_are_inlined_and_output_defaults_drop() -> None:
    schema = compact(Result.model_json_schema(), output=True)
    text = json.dumps(schema)
    assert '"title": {' in text and '"title": "' not in text  # the property stays, pydantic's titles go
    assert set(schema["$defs"]) == {"Leaf", "Tree"}  # used twice, and recursive
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Tree"}
    assert "default" not in schema["properties"]["note"]
    args = compact(Args.model_json_schema())
    assert "$defs" not in args and args["properties"]["leaf"]["properties"]["title"]["type"] == "string"
    assert args["properties"]["start_line"] == {"default": 1, "type": "integer"}  # defaults stay, bounds go


def test_an_optional_input_is_its_type_without_null_or_bounds() -> None:
    props = compact(Args.model_json_schema())["properties"]
    assert props["author"] == {"type": "string"}  # not anyOf [string, null] with a null default
    assert props["limit"] == {"description": "At most 100.", "type": "integer"}
    assert props["tags"] == {"items": {"type": "string"}, "type": "array"}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["nullable"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 3}
    assert props["options"] == {"type": "object"}  # additionalProperties: true is what JSON Schema assumes


@pytest.mark.parametrize(
    "instance",
    [
        {"only": {"title": "a"}, "pair": [], "tree": {"name": "r", "children": [{"name": "c"}]}},
        {"only": {"title": "a"}, "pair": [{"title": "b"}], "tree": {"name": "r"}, "note": None},
        {"only": {}, "pair": [], "tree": {"name": "r"}},
        {"only": {"title": 1}, "pair": [], "tree": {"name": "r"}},
        {"only": {"title": "a"}, "pair": [{"title": "b"}], "tree": {"name": "r", "children": [{"children": []}]}},
        {"only": {"title": "a"}, "pair": [], "tree": {"name": "r"}, "note": 3},
    ],
)
def test_the_same_instances_pass_and_fail(instance: dict[str, Any]) -> None:
    full = Result.model_json_schema()
    assert _valid(full, instance) == _valid(compact(full, output=True), instance)


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


@pytest.mark.anyio
async def test_tools_list_carries_compact_schemas_and_clean_descriptions(make_host: Any) -> None:
    class Plugin:
        @hookimpl
        def nexus_register_tools(self, register: Any) -> None:
            def lines(path: str, start_line: int = 1) -> Leaf:
                """Read lines.

                Indented second paragraph.
                """
                return Leaf(title=path)

            register(lines, category="default")

    host = make_host({"demo": Plugin()})
    (tool,) = await host.server.list_tools()
    assert tool.description == "Read lines.\n\nIndented second paragraph."
    assert tool.input_schema["properties"] == {
        "path": {"type": "string"},
        "start_line": {"default": 1, "type": "integer"},
    }
    assert tool.output_schema == {
        "description": "A leaf.",
        "properties": {"title": {"description": "A property that happens to be called title.", "type": "string"}},
        "required": ["title"],
        "type": "object",
    }


@pytest.mark.anyio
async def test_bounds_and_null_left_out_of_the_schema_are_still_checked_on_every_call(make_host: Any) -> None:
    class Plugin:
        @hookimpl
        def nexus_register_tools(self, register: Any) -> None:
            def pick(
                name: Annotated[str, Field(min_length=1)],
                limit: Annotated[int, Field(ge=1, le=100)] = 10,
                author: str | None = None,
            ) -> str:
                """Pick."""
                return f"{name} {limit} {author}"

            register(pick, category="default")

    async with Client(make_host({"demo": Plugin()}).server) as client:
        (tool,) = (await client.list_tools()).tools
        over = await client.call_tool("pick", {"name": "a", "limit": 500})
        empty = await client.call_tool("pick", {"name": ""})
        null = await client.call_tool("pick", {"name": "a", "author": None})
    assert tool.input_schema["properties"] == {
        "name": {"type": "string"},
        "limit": {"default": 10, "type": "integer"},
        "author": {"type": "string"},
    }
    assert over.is_error and over.content[0].text == "invalid arguments for pick: limit must be at most 100, got 500"
    assert empty.is_error and empty.content[0].text == "invalid arguments for pick: name must have at least 1 character"
    assert not null.is_error and null.structured_content == {"result": "a 10 None"}  # an explicit null still means none
