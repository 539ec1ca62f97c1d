"""The NEXUS skills design's public API: its skill names, read_file's parameters and defaults, bash_safe."""

from __future__ import annotations

import pytest

from tests.files.helpers import ALL, call, fail

pytestmark = pytest.mark.anyio

# The design's skill list by category. "git (read-only subset)" is served as git_status, git_log, ...
DESIGN_SKILLS = {
    "read": {"read_file", "tail", "file_info", "list_directory"},
    "search": {"glob", "grep", "concat_files"},
    "write": {"write_file", "edit_file", "append_file", "mkdir", "rename", "copy_file"},
    "execute": {"bash_safe", "run_python"},
}


async def test_every_design_skill_is_a_tool_and_off_by_default_where_the_design_says(files_client):
    async with files_client(categories=ALL) as client:
        everything = {t.name for t in (await client.list_tools()).tools}
    async with files_client() as client:
        default = {t.name for t in (await client.list_tools()).tools}
    assert set().union(*DESIGN_SKILLS.values()) <= everything
    assert {"git_status", "git_log", "git_diff", "git_show", "git_blame", "git_branches"} <= default
    assert DESIGN_SKILLS["read"] | DESIGN_SKILLS["search"] <= default  # enabled by default
    assert not (DESIGN_SKILLS["write"] | DESIGN_SKILLS["execute"]) & default  # disabled by default


async def test_read_file_takes_path_offset_limit_with_the_designed_defaults(files_client):
    async with files_client() as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}["read_file"]
        result = await call(client, "read_file", path="README.md")
    schema = listed.input_schema
    assert list(schema["properties"]) == ["path", "offset", "limit"] and schema["required"] == ["path"]
    assert schema["properties"]["path"]["type"] == "string"
    assert schema["properties"]["offset"]["type"] == "integer" and schema["properties"]["offset"]["default"] == 0
    assert schema["properties"]["limit"]["type"] == "integer" and schema["properties"]["limit"]["default"] == 2000
    assert "0-indexed" in schema["properties"]["offset"]["description"]
    types = {
        "path": str,
        "content": str,
        "start_line": int,
        "end_line": int,
        "total_lines": int,
        "truncated": bool,
        "next_offset": type(None),
        "note": type(None),
    }
    assert {k: type(v) for k, v in result.items()} == types
    assert set(listed.output_schema["properties"]) == set(types)
    assert result["content"] == "     1  # Demo\n     2  \n     3  A demo project.\n"


async def test_bash_safe_is_run_command_under_the_designed_name(files_client):
    async with files_client(categories=["read", "execute"], allowed_commands=["echo"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        ran = await call(client, "bash_safe", command="echo hello")
        refused = await fail(client, "bash_safe", command="cat README.md")
    assert tools["bash_safe"].input_schema == tools["run_command"].input_schema
    assert list(tools["bash_safe"].input_schema["properties"]) == ["command", "cwd", "timeout"]
    assert tools["bash_safe"].output_schema == tools["run_command"].output_schema
    assert tools["bash_safe"].annotations.destructive_hint is True
    assert ran["stdout"] == "hello\n" and ran["exit_code"] == 0 and ran["cwd"] == "."
    assert "allowed_commands" in refused  # the same checks as run_command
