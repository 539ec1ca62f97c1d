"""library:// resources and the prompts: what they serve, and that categories and the path policy hold."""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest
from mcp.shared.exceptions import MCPError

from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio

MANUAL = "# Manual\n\nOne entity per person.\n\n## Decisions\n\nEach decision is an entity of type decision.\n"


async def read(tools, uri: str) -> str:
    (content,) = (await tools.client.read_resource(uri)).contents
    assert content.mime_type == "text/markdown"
    return content.text


async def refused(tools, uri: str) -> str:
    with pytest.raises(MCPError) as caught:
        await tools.client.read_resource(uri)
    return str(caught.value)


async def test_entities_and_the_manual_are_resources(manual, root) -> None:
    work = root / "work"
    write(work / "meta.md", MANUAL)
    alice = write(work / "alice.md", entity("alice", "# Alice\n\nHello.\n"))
    write(work / "旧名.md", entity("旧名", "# 旧名\n"))
    async with manual() as tools:
        templates = {t.uri_template: t for t in (await tools.client.list_resource_templates()).resource_templates}
        assert {"library://{library}/meta.md", "library://{library}/{entity}"} <= set(templates)
        assert templates["library://{library}/{entity}"].mime_type == "text/markdown"
        assert await read(tools, "library://work/meta.md") == MANUAL
        assert await read(tools, "library://work/alice") == alice.read_text()
        assert await read(tools, "library://work/alice.md") == alice.read_text()
        assert await read(tools, f"library://work/{quote('旧名')}") == (work / "旧名.md").read_text()
        no_manual = await refused(tools, "library://personal/meta.md")
        no_entity = await refused(tools, "library://work/bob")
        no_library = await refused(tools, "library://home/alice")
    assert "library 'personal' has no manual yet" in no_manual
    assert "no entity named 'bob'" in no_entity and "unknown library 'home'" in no_library


async def test_resources_keep_the_path_policy(manual, root, tmp_path) -> None:
    write(tmp_path / "beside.md", entity("beside", "BESIDE\n"))
    write(root / "personal" / "diary.md", entity("diary", "DEAR DIARY\n"))
    os.symlink(root / "personal" / "diary.md", root / "work" / "diary.md")
    write(root / "work" / "hidden-notes.md", entity("hidden-notes", "HIDDEN\n"))
    async with manual(deny_paths=["**/hidden-*"]) as tools:
        messages = [
            await refused(tools, "library://work/diary"),  # a symlink into another library
            await refused(tools, "library://work/hidden-notes"),  # deny_paths
            await refused(tools, "library://work/..%2F..%2Fbeside"),  # traversal, encoded
            await refused(tools, "library://work/%2E%2E"),
            await refused(tools, "library://work/a%2Fb"),
        ]
    assert "outside the library folder" in messages[0] and "deny_paths" in messages[1]
    assert "path separator" in messages[4]
    assert not any(secret in m for m in messages for secret in ("DEAR DIARY", "BESIDE", "HIDDEN"))


async def test_resources_and_prompts_exist_only_with_their_category(manual, root) -> None:
    write(root / "work" / "alice.md", entity("alice"))
    async with manual(categories=["write"]) as tools:
        templates = (await tools.client.list_resource_templates()).resource_templates
        prompts = {p.name for p in (await tools.client.list_prompts()).prompts}
        unreadable = await refused(tools, "library://work/alice")
    assert templates == [] and prompts == {"record_decision"}
    assert "needs the 'read' category" in unreadable
    async with manual(categories=None) as tools:  # the default grant: read only
        prompts = {p.name for p in (await tools.client.list_prompts()).prompts}
        templates = (await tools.client.list_resource_templates()).resource_templates
    assert prompts == {"library_briefing"} and len(templates) == 2
    async with manual(deny_tools=["read_entities", "add_entities"]) as tools:  # each follows its tool's grant
        prompts = {p.name for p in (await tools.client.list_prompts()).prompts}
        templates = {t.uri_template for t in (await tools.client.list_resource_templates()).resource_templates}
        denied = await refused(tools, "library://work/alice")
    assert prompts == {"library_briefing"} and templates == {"library://{library}/meta.md"}
    assert "deny_tools" in denied


async def test_library_briefing_embeds_the_manual_and_what_the_library_holds(manual, root) -> None:
    write(root / "work" / "meta.md", MANUAL)
    for name in ("alice", "bob"):
        write(root / "work" / f"{name}.md", entity(name))
    async with manual() as tools:
        prompts = {p.name: p for p in (await tools.client.list_prompts()).prompts}
        work = (await tools.client.get_prompt("library_briefing", {"library_name": "work"})).messages[0].content.text
        empty = await tools.client.get_prompt("library_briefing", {"library_name": "personal"})
        with pytest.raises(MCPError) as unknown:
            await tools.client.get_prompt("library_briefing", {"library_name": "home"})
    assert [(a.name, a.required) for a in prompts["library_briefing"].arguments] == [("library_name", True)]
    assert f"<manual>\n{MANUAL}\n</manual>" in work and "It holds 2 entities: alice, bob." in work
    assert "get_entities_toc" in work and "'work'" in work
    text = empty.messages[0].content.text
    assert "no manual (meta.md) yet" in text and "It holds 0 entities." in text
    assert "unknown library 'home'" in str(unknown.value)


async def test_record_decision_guides_the_assistant_through_the_write_tools(manual, root) -> None:
    async with manual() as tools:
        prompts = {p.name: p for p in (await tools.client.list_prompts()).prompts}
        args = {"library_name": "work", "decision": "Store the graph as JSONL.", "context": "Git-friendly diffs."}
        text = (await tools.client.get_prompt("record_decision", args)).messages[0].content.text
        with pytest.raises(MCPError) as unknown:
            await tools.client.get_prompt("record_decision", {"library_name": "home", "decision": "x"})
        # Following the prompt: an entity of type decision starts from the decision outline.
        await tools.ok("add_entities", library_name="work", entities=[{"name": "use-jsonl", "entity_type": "decision"}])
        toc = await tools.ok("get_entities_toc", library_name="work", entity_names=["use-jsonl"])
    arguments = [(a.name, a.required) for a in prompts["record_decision"].arguments]
    assert arguments == [("library_name", True), ("decision", True), ("context", False)]
    assert "Store the graph as JSONL." in text and "Git-friendly diffs." in text
    for step in ("read_manual('work')", "list_entities", "add_entities", "entity_type 'decision'", "create_relations"):
        assert step in text
    assert "unknown library 'home'" in str(unknown.value)
    sections = [t["heading"] for t in toc["entities"][0]["toc"]]
    assert sections == ["frontmatter", "use-jsonl", "Context", "Decision", "Consequences"]
