"""Paths, isolation, atomic writes, and the plugin over real stdio and Streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import http_client, server_env, stdio_session, write_config
from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio


async def test_a_configured_library_is_its_own_root(manual, root, tmp_path) -> None:
    """The config writer chose the folder: it works outside the roots too, and nothing beside it is reachable."""
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "secret.md", entity("secret", "# Secret\n"))
    (tmp_path / "beside").mkdir()
    write(tmp_path / "beside" / "other.md", entity("other", "# Other\n"))
    os.symlink(outside, root / "escape")
    libraries = {"work": str(root / "work"), "escape": str(root / "escape"), "far": str(outside)}
    async with manual(libraries=libraries) as tools:
        via_link = await tools.ok("list_entities", library_name="escape")
        direct = await tools.ok("read_entities", library_name="far", entity_names=["secret"])
        created = await tools.ok("add_entities", library_name="escape", entities=[{"name": "x", "entity_type": "note"}])
        beside = await tools.err("read_entities", library_name="far", entity_names=["../beside/other"])
    assert via_link["entities"] == ["secret"] and "# Secret" in str(direct)
    assert created and (outside / "x.md").is_file()
    assert "contains a path separator" in beside


async def test_an_entity_symlinked_out_of_its_library_is_refused(manual, root) -> None:
    write(root / "personal" / "diary.md", entity("diary", "# Dear diary\n"))
    os.symlink(root / "personal" / "diary.md", root / "work" / "diary.md")
    async with manual() as tools:
        listed = await tools.ok("list_entities", library_name="work")
        read = await tools.err("read_entities", library_name="work", entity_names=["diary"])
        edit = await tools.err("add_entity_content", library_name="work", entity_name="diary", new_content="x")
    assert listed["entities"] == []
    assert "outside the library folder" in read and "outside the library folder" in edit
    assert "x" not in (root / "personal" / "diary.md").read_text().split("---\n")[2]


async def test_two_libraries_are_isolated(manual, root) -> None:
    async with manual() as tools:
        await tools.ok(
            "add_entities",
            library_name="work",
            entities=[{"name": "shared", "entity_type": "note", "content": "work side"}],
        )
        await tools.ok(
            "add_entities",
            library_name="personal",
            entities=[{"name": "shared", "entity_type": "note", "content": "home side"}],
        )
        await tools.ok("add_manual_section", library_name="work", toc="Rules", new_content="work rules")
        await tools.ok("rename_entity", library_name="work", old_name="shared", new_name="office")
        work = await tools.ok("list_entities", library_name="work")
        home = await tools.ok("read_entities", library_name="personal", entity_names=["shared"])
        manual_home = await tools.ok("read_manual", library_name="personal")
    assert work["entities"] == ["office"]
    assert home["entities"][0]["content"].endswith("home side\n")
    assert manual_home["exists"] is False and not (root / "personal" / "journey.yaml").exists()


CRASH = """
import os, signal, sys
from nexus_core import PathPolicy
from nexus_manual import entities
from nexus_manual.library import Library

root, folder = sys.argv[1], sys.argv[2]
lib = Library("work", folder, PathPolicy([root]))
os.replace = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)  # die between temp write and rename
entities.replace_content(lib, "alpha", "old text", "new text", None)
"""


async def test_a_crash_between_temp_write_and_rename_leaves_the_original_intact(manual, root) -> None:
    path = write(root / "work" / "alpha.md", entity("alpha", "# Alpha\n\nold text\n"))
    before = path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASH), str(root), str(root / "work")],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr.decode()
    assert path.read_bytes() == before
    temps = [p for p in (root / "work").iterdir() if p.name != "alpha.md"]
    assert len(temps) == 1 and temps[0].name.startswith(".alpha.md.") and temps[0].name.endswith(".tmp")
    assert "new text" in temps[0].read_text()  # the kill came after the temp file was written
    async with manual() as tools:
        listed = await tools.ok("list_entities", library_name="work")
        read = await tools.ok("read_entities", library_name="work", entity_names=["alpha"])
    assert listed["entities"] == ["alpha"] and "old text" in read["entities"][0]["content"]


async def test_writes_keep_the_file_mode(manual, root) -> None:
    path = write(root / "work" / "m.md", entity("m", "body\n"))
    path.chmod(0o600)
    async with manual() as tools:
        await tools.ok("add_entity_content", library_name="work", entity_name="m", new_content="more")
    assert (path.stat().st_mode & 0o777) == 0o600


def config_file(tmp_path, root) -> str:
    text = f"""
[server]
data_dir = "{tmp_path / "data"}"

[plugins.manual]
roots = ["{root}"]

[plugins.manual.libraries]
work = "{root / "work"}"
"""
    return str(write_config(tmp_path / "nexus.toml", text))


async def check_the_designs_edits(client, root) -> None:
    """merge_entities joins the sections of one heading (the section tools then find one); add_manual_section
    keeps a tight list tight."""
    work = root / "work"
    write(work / "main.md", entity("main", "# Main\n\n## Notes\n\n- main note\n"))
    write(work / "dup.md", entity("dup", "# Dup\n\n## Notes\n\n- dup note\n"))
    calls = [
        ("merge_entities", {"source_names": ["dup"], "target_name": "main"}),
        ("add_entity_content", {"entity_name": "main", "in_section": "Notes", "new_content": "- later note"}),
        ("add_manual_section", {"toc": "## Conventions", "new_content": "- be brief"}),
        ("add_manual_section", {"toc": "## Conventions", "new_content": "- be kind"}),
    ]
    for tool, arguments in calls:
        result = await client.call_tool(tool, {"library_name": "work", **arguments})
        assert not result.is_error, result.content[0].text
    notes = (work / "main.md").read_text().split("## Notes\n", 1)[1]
    assert "## Notes" not in notes and "- main note" in notes and "<!-- merged from dup -->" in notes
    assert "- later note" in notes and (work / "meta.md").read_text() == "## Conventions\n\n- be brief\n- be kind\n"


async def test_over_real_stdio(tmp_path, root) -> None:
    write(root / "work" / "日記.md", entity("日記", "# 今日\n\n晴れ。\n\n# 明日\n\n雨。\n"))
    config = config_file(tmp_path, root)
    async with stdio_session("--config", config, env=server_env()) as session:
        tools = {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool(
            "read_entities_sections", {"library_name": "work", "entity_names": ["日記"], "section_globs": ["明日"]}
        )
        denied = await session.call_tool(
            "add_entities", {"library_name": "work", "entities": [{"name": "x", "entity_type": "note"}]}
        )
    assert "read_entities_sections" in tools and "add_entities" not in tools  # write is off by default
    assert result.structured_content["entities"][0]["sections"][0]["content"] == "# 明日\n\n雨。\n"
    assert denied.is_error and not (root / "work" / "x.md").exists()
    # One client's --enable grants it write, on the same shared server.
    async with stdio_session("--config", config, "--enable", "read,write", env=server_env()) as session:
        await check_the_designs_edits(session, root)


async def test_over_streamable_http(tmp_path, root, http_server) -> None:
    write(root / "work" / "a.md", entity("a", "# A\n"))
    url = http_server("--config", config_file(tmp_path, root), "--set", 'plugins.manual.categories=["read", "write"]')
    async with http_client(url) as client:
        made = await client.call_tool(
            "create_relations", {"library_name": "work", "relations": [{"from": "a", "to": "a", "type": "self"}]}
        )
        found = await client.call_tool("find_relations", {"library_name": "work", "to_entity": "a"})
        await check_the_designs_edits(client, root)
    assert not made.is_error
    assert found.structured_content["relations"] == [{"from": "a", "to": "a", "type": "self"}]
