"""Tool files in-process: both formats, the gate (categories, allow/deny, prefix, audit), errors, the folder's guard."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

import nexus_files
from nexus_core.builtin.tool_folder import ToolFolderPlugin
from nexus_core.host.build import Host

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).parents[2] / "examples" / "tool_files"

JSON_TOOL = '''
"""Say hello in a language."""
name = "greet"
parameters = {
    "type": "object",
    "properties": {
        "who": {"type": "string"},
        "language": {"type": "string", "enum": ["en", "fr"], "default": "en"},
        "times": {"type": "integer", "minimum": 1},
    },
    "required": ["who"],
}

def execute(args, context):
    word = {"en": "Hello", "fr": "Bonjour"}[args["language"]]
    return f"{word}, {args['who']}! ({context.tool} from {context.file.name})"
'''

TYPED_TOOLS = '''
from __future__ import annotations  # postponed annotations: the model is looked up in the file's module

from pydantic import BaseModel

class Total(BaseModel):
    total: int

def add(a: int, b: int = 1) -> Total:
    """Add two integers."""
    return Total(total=a + b)

def where(context) -> str:
    return str(context.paths)

TOOLS = [add, {"execute": where, "name": "where_am_i", "title": "Where", "read_only": True}]
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "tools"
    path.mkdir()
    return path


@pytest.fixture
def serve(make_host: Callable[..., Host], folder: Path) -> Callable[..., Any]:
    """``async with serve(config) as (client, host)``: a host with only the tool folder plugin, polling fast."""

    @asynccontextmanager
    async def connect(config: dict[str, Any] | None = None, **client: Any) -> AsyncIterator[tuple[Client, Host]]:
        data = config or {}
        data.setdefault("plugins", {}).setdefault("tools", {}).setdefault("poll_interval", 0.05)
        host = make_host({"tools": ToolFolderPlugin([folder])}, data)
        async with Client(host.server, **client) as session:
            yield session, host

    return connect


def text(result: types.CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


async def tools_of(client: Client) -> dict[str, types.Tool]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_a_json_schema_tool_in_the_designs_shape(serve: Any, folder: Path) -> None:
    write(folder, "greet.py", JSON_TOOL)
    async with serve() as (client, _host):
        greet = (await tools_of(client))["greet"]
        assert greet.description == "Say hello in a language."
        assert greet.input_schema["required"] == ["who"]
        assert greet.input_schema["properties"]["language"]["enum"] == ["en", "fr"]
        assert greet.meta is not None and greet.meta["nexus/plugin"] == "tools"
        assert greet.meta["nexus/category"] == "custom" and greet.meta["nexus/file"] == str(folder / "greet.py")

        assert text(await client.call_tool("greet", {"who": "Ada"})) == "Hello, Ada! (greet from greet.py)"
        assert text(await client.call_tool("greet", {"who": "Ada", "language": "fr"})).startswith("Bonjour, Ada!")
        bad = await client.call_tool("greet", {"who": 5, "language": "de", "times": 0})
        assert bad.is_error
        assert text(bad) == (
            "invalid arguments for greet: language must be one of ['en', 'fr'], got 'de'; "
            "times: 0 is less than the minimum of 1; who must be a string, got 5"
        )
        missing = await client.call_tool("greet", {})
        assert missing.is_error and text(missing) == "invalid arguments for greet: who is required"


async def test_typed_tools_take_their_schema_from_the_signature(serve: Any, folder: Path) -> None:
    write(folder, "maths.py", TYPED_TOOLS)
    async with serve() as (client, _host):
        tools = await tools_of(client)
        add = tools["add"]
        assert add.description == "Add two integers."
        assert add.input_schema["required"] == ["a"] and add.input_schema["properties"]["b"]["default"] == 1
        assert add.output_schema is not None and "total" in add.output_schema["properties"]
        assert add.annotations is not None and add.annotations.destructive_hint is True

        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert not result.is_error and result.structured_content == {"total": 42}
        bad = await client.call_tool("add", {"a": "two"})
        assert bad.is_error and text(bad) == "invalid arguments for add: a must be an integer, got 'two'"

        where = tools["where_am_i"]  # a dict entry: its own name, title and hints; context is not a parameter
        assert where.title == "Where" and where.annotations is not None and where.annotations.read_only_hint
        assert where.input_schema.get("properties", {}) == {}
        assert text(await client.call_tool("where_am_i", {})).startswith("PathPolicy(")


DESIGN_GET_TIME = """
from datetime import datetime
from zoneinfo import ZoneInfo

name = "get_time"
description = "获取当前时间"
category = "basic"
parameters = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "description": "时区，如 Asia/Shanghai"}},
    "required": [],
}


async def execute(args, context):
    tz = args.get("timezone") or "Asia/Shanghai"
    return datetime.now(ZoneInfo(tz)).strftime("%Z")
"""


async def test_the_designs_own_tool_category_is_granted_like_any_other(
    make_host: Callable[..., Host], folder: Path
) -> None:
    """003's get_time says category 'basic': refused, naming the grant, until `categories` lists it."""
    write(folder, "get_time.py", DESIGN_GET_TIME)
    for granted in (None, ["custom", "basic"]):
        table: dict[str, Any] = {"poll_interval": 0.05, **({"categories": granted} if granted else {})}
        host = make_host({"tools": ToolFolderPlugin([folder], granted)}, {"plugins": {"tools": table}})
        async with Client(host.server) as client:
            listed = await tools_of(client)  # waits for the folder's first load
            result = await client.call_tool("get_time", {})
            if granted is None:
                assert "get_time" not in listed
                assert result.is_error and 'add "basic" to categories in [plugins.tools]' in text(result)
            else:
                assert "get_time" in listed and text(result) == "CST"


async def test_the_documented_examples_work(serve: Any, folder: Path, tmp_path: Path) -> None:
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, folder)
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    async with serve({"server": {"roots": [str(tmp_path)]}}) as (client, _host):
        assert {"get_time", "text_stats", "line_count"} <= set(await tools_of(client))
        assert text(await client.call_tool("get_time", {"timezone": "Asia/Shanghai"})).endswith("CST")
        unknown = await client.call_tool("get_time", {"timezone": "Mars/Olympus"})
        assert unknown.is_error and "unknown time zone 'Mars/Olympus'" in text(unknown)
        stats = await client.call_tool("text_stats", {"text": "a b\nc"})
        assert stats.structured_content == {"lines": 2, "words": 3, "characters": 5}
        assert (await client.call_tool("line_count", {"path": "notes.txt"})).structured_content == {"result": 3}
        outside = await client.call_tool("line_count", {"path": "/etc/passwd"})
        assert outside.is_error and "outside the allowed roots" in text(outside)


async def test_categories_gate_tool_files_and_write_is_off_by_default(serve: Any, folder: Path) -> None:
    write(
        folder, "cats.py", 'def look() -> str:\n    return "looked"\n\ndef change() -> str:\n    return "changed"\n\n'
    )
    with (folder / "cats.py").open("a") as f:
        f.write('TOOLS = [{"execute": look, "category": "read"}, {"execute": change, "category": "write"}]\n')
    async with serve() as (client, _host):
        assert {"look"} <= set(await tools_of(client)) and "change" not in await tools_of(client)
        refused = await client.call_tool("change", {})
        assert refused.is_error and text(refused) == (
            "permission denied: tool 'change' needs the 'write' category of plugin 'tools', which is not granted; "
            'add "write" to categories in [plugins.tools]'
        )
    async with serve({"plugins": {"tools": {"categories": ["write"]}}}) as (client, _host):
        assert set(await tools_of(client)) == {"change"}
        assert text(await client.call_tool("change", {})) == "changed"


async def test_prefix_deny_tools_and_audit_apply(serve: Any, folder: Path, data_dir: Path) -> None:
    write(folder, "maths.py", TYPED_TOOLS)
    config = {"plugins": {"tools": {"prefix": "my", "deny_tools": ["where_am_i"]}}}
    async with serve(config) as (client, _host):
        assert set(await tools_of(client)) == {"my_add"}
        assert (await client.call_tool("my_add", {"a": 1})).structured_content == {"total": 2}
        denied = await client.call_tool("my_where_am_i", {})
        assert denied.is_error and "listed in deny_tools of [plugins.tools]" in text(denied)
    audit = [json.loads(line) for line in (data_dir / "audit.jsonl").read_text().splitlines()]
    assert [(r["plugin"], r["tool"], r["outcome"]) for r in audit] == [
        ("tools", "my_add", "ok"),
        ("tools", "my_where_am_i", "denied"),
    ]


async def test_a_crash_in_a_tool_is_logged_and_the_model_sees_only_that_it_failed(
    serve: Any, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(
        folder,
        "crash.py",
        """
        from nexus_core import ToolError

        def typed_crash() -> str:
            raise RuntimeError("internal detail")

        def refuse(args):
            raise ToolError("not today")

        def schema_crash(args, context):
            return {}["missing"]

        TOOLS = [
            typed_crash,
            {"execute": refuse, "parameters": {"type": "object"}},
            {"execute": schema_crash, "parameters": {"type": "object"}},
        ]
        """,
    )
    async with serve() as (client, _host):
        for tool in ("typed_crash", "schema_crash"):
            result = await client.call_tool(tool, {})
            assert result.is_error and text(result) == f"Error executing tool {tool}"
        refused = await client.call_tool("refuse", {})
        assert refused.is_error and text(refused) == "Error executing tool refuse: not today"
    assert "internal detail" in caplog.text and "KeyError: 'missing'" in caplog.text  # the traceback, on stderr


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("def execute(:\n    pass\n", "SyntaxError at line 1: invalid syntax"),
        ("x = 1\n\ny = undefined_name\n", "NameError at line 3: name 'undefined_name' is not defined"),
        ("x = 1\n", "defines no tool: give it an execute function (one tool) or a TOOLS list"),
        ("TOOLS = [42]\n", "TOOLS[0] is neither a function nor a dict"),
        ("def f(): pass\nTOOLS = [{'execute': f, 'desc': 'x'}]\n", "TOOLS[0] has unknown key 'desc'"),
        ("def f(): pass\nTOOLS = [f, f]\n", "defines tool 'f' twice"),
        ("def f(): pass\nTOOLS = [{'execute': f, 'name': 'no spaces'}]\n", "tool name 'no spaces' must start with"),
        (
            "def f(): pass\nTOOLS = [{'execute': f, 'category': 'two words'}]\n",
            "tool 'f': category 'two words' must be a name",
        ),
        (
            "def execute(a): pass\nparameters = {'type': 'array'}\n",
            'tool \'bad\': parameters must be a JSON schema with "type": "object"',
        ),
        (
            "def execute(a): pass\nparameters = {'type': 'object', 'properties': {'x': {'type': 'text'}}}\n",
            "tool 'bad': parameters is not a valid JSON schema: properties/x/type: 'text' is not valid",
        ),
    ],
)
async def test_a_file_that_cannot_load_is_reported_with_where_and_why(
    serve: Any, folder: Path, source: str, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    write(folder, "good.py", "def fine() -> str:\n    return 'fine'\n\nTOOLS = [fine]\n")
    write(folder, "bad.py", source)
    async with serve() as (client, host):
        assert set(await tools_of(client)) == {"fine"}  # the others keep serving
        lines = (await host.status())["tools"]
    assert lines[0] == f"{folder}: 2 files, 1 tool"
    assert lines[1].startswith("bad.py: failed to load: " + error) and lines[1].endswith("; no tools served")
    assert f"tool file {folder / 'bad.py'} failed to load: {error}" in caplog.text


async def test_a_name_two_files_define_is_served_once_and_freed_when_one_goes(serve: Any, folder: Path) -> None:
    write(folder, "a.py", "def dup() -> str:\n    return 'a'\n\nTOOLS = [dup]\n")
    write(folder, "b.py", "def dup() -> str:\n    return 'b'\n\nTOOLS = [dup]\n")
    async with serve() as (client, host):
        assert text(await client.call_tool("dup", {})) == "a"  # files load in name order
        status = (await host.status())["tools"]
        assert f"b.py: tool 'dup' is not served: plugin 'tools' ({folder / 'a.py'}) already serves that name" in status
        (folder / "a.py").unlink()
        with anyio.fail_after(10):
            while (await client.call_tool("dup", {})).content[0].text != "b":  # type: ignore[union-attr]
                await anyio.sleep(0.05)
        assert not [line for line in (await host.status())["tools"] if "not served" in line]


async def test_a_link_out_of_the_folder_is_not_loaded(serve: Any, folder: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "repo" / "tool.py"  # e.g. in a repository a model may write to
    elsewhere.parent.mkdir()
    elsewhere.write_text("def linked() -> str:\n    return 'ran'\n\nTOOLS = [linked]\n")
    (folder / "tool.py").symlink_to(elsewhere)
    async with serve() as (client, host):
        assert "linked" not in await tools_of(client)
        status = (await host.status())["tools"]
    assert f"tool.py: failed to load: is a link to {elsewhere}, outside the tool folder" in status[1]


async def test_the_tool_folders_are_protected_from_nexus_own_tools(
    make_host: Callable[..., Host], tmp_path: Path
) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    config = {
        "server": {"roots": [str(tmp_path)], "tool_dirs": [str(folder)]},
        "plugins": {"files": {"categories": ["read", "write"]}},
    }
    host = make_host({"files": nexus_files}, config)
    async with Client(host.server) as client:
        written = await client.call_tool("write_file", {"path": str(folder / "evil.py"), "content": "TOOLS = []\n"})
        assert written.is_error and "is Nexus's own configuration, data or code" in text(written)
        assert not (folder / "evil.py").exists()
        elsewhere = await client.call_tool("write_file", {"path": str(tmp_path / "fine.txt"), "content": "ok\n"})
        assert not elsewhere.is_error
