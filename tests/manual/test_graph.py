"""Relations, rename and merge: links repaired across the library."""

from __future__ import annotations

import pytest
import yaml

from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio


def front(path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def edge(a: str, b: str, t: str) -> dict:
    return {"from": a, "to": b, "type": t}


async def test_create_find_and_delete_relations(manual, root) -> None:
    for name in ("ann", "bo", "cy"):
        write(root / "work" / f"{name}.md", entity(name, extra="colour: blue\n"))
    async with manual() as tools:
        made = await tools.ok(
            "create_relations",
            library_name="work",
            relations=[edge("ann", "bo", "knows"), edge("cy", "bo", "knows"), edge("ann", "cy", "manages")],
        )
        again = await tools.ok("create_relations", library_name="work", relations=[edge("ann", "bo", "knows")])
        to_ghost = await tools.err("create_relations", library_name="work", relations=[edge("ann", "ghost", "knows")])
        to_bo = await tools.ok("find_relations", library_name="work", to_entity="bo")
        manages = await tools.ok("find_relations", library_name="work", relation_type="manages")
        absent = await tools.err(
            "delete_relations", library_name="work", relations=[edge("ann", "bo", "knows"), edge("bo", "ann", "knows")]
        )
        assert {"type": "knows", "to": "bo"} in front(root / "work" / "ann.md")["relations"]
        await tools.ok("delete_relations", library_name="work", relations=[edge("ann", "bo", "knows")])
    assert len(made["changed"]) == 3 and again["changed"] == [] and again["unchanged"] == [edge("ann", "bo", "knows")]
    assert "ghost" in to_ghost
    assert sorted(r["from"] for r in to_bo["relations"]) == ["ann", "cy"]
    assert manages["relations"] == [edge("ann", "cy", "manages")]
    assert "no such relation: bo -[knows]-> ann" in absent
    ann = front(root / "work" / "ann.md")
    assert ann["relations"] == [{"type": "manages", "to": "cy"}] and ann["colour"] == "blue"


async def test_garbage_collect_lists_then_removes_dangling_relations(manual, root) -> None:
    write(root / "work" / "a.md", entity("a", relations=[("knows", "b"), ("knows", "gone")]))
    write(root / "work" / "b.md", entity("b"))
    async with manual() as tools:
        listed = await tools.ok("garbage_collect_relations", library_name="work")
        assert front(root / "work" / "a.md")["relations"] == [
            {"type": "knows", "to": "b"},
            {"type": "knows", "to": "gone"},
        ]
        removed = await tools.ok("garbage_collect_relations", library_name="work", remove=True)
        after = await tools.ok("garbage_collect_relations", library_name="work")
    assert listed == {"library": "work", "dangling": [edge("a", "gone", "knows")], "removed": False}
    assert removed["removed"] is True and after["dangling"] == []
    assert front(root / "work" / "a.md")["relations"] == [{"type": "knows", "to": "b"}]


def make_linked_library(folder, target: str, count: int = 100) -> None:
    write(folder / f"{target}.md", entity(target, f"# {target}\n\nSelf link [[{target}]].\n"))
    for i in range(count):
        links = f"See [[{target}]], [[{target}|the thing]] and [[{target}#Intro]]; not [[{target}x]].\n"
        rels = [("about", target)] if i % 2 == 0 else [("other", "n0")]
        write(folder / f"n{i}.md", entity(f"n{i}", f"# Note {i}\n\n{links}", relations=rels))
    write(folder / "meta.md", f"# Manual\n\nStart at [[{target}]].\n")


async def test_rename_rewrites_relations_and_wikilinks_across_100_files(manual, root) -> None:
    work = root / "work"
    make_linked_library(work, "旧名")
    async with manual() as tools:
        taken = await tools.err("rename_entity", library_name="work", old_name="旧名", new_name="n1")
        assert (work / "旧名.md").exists() and "[[旧名]]" in (work / "n0.md").read_text()
        result = await tools.ok("rename_entity", library_name="work", old_name="旧名", new_name="新名")
        gone = await tools.err("read_entities", library_name="work", entity_names=["旧名"])
    assert "already exists" in taken
    assert len(result["files_updated"]) == 101  # 100 notes + the manual
    assert not (work / "旧名.md").exists() and "Self link [[新名]]" in (work / "新名.md").read_text()
    n0 = (work / "n0.md").read_text()
    assert "[[新名]], [[新名|the thing]] and [[新名#Intro]]; not [[旧名x]]" in n0
    assert front(work / "n0.md")["relations"] == [{"type": "about", "to": "新名"}]
    assert front(work / "n1.md")["relations"] == [{"type": "other", "to": "n0"}]
    assert "date modified: '" in n0
    assert "[[新名]]" in (work / "meta.md").read_text()
    assert "'旧名'" in gone
    journey = yaml.safe_load((work / "journey.yaml").read_text())
    assert journey[-1]["action"] == "rename" and journey[-1]["from"] == "旧名" and journey[-1]["to"] == "新名"


async def test_merge_combines_entities_and_redirects_links_across_100_files(manual, root) -> None:
    work = root / "work"
    make_linked_library(work, "dup")
    write(
        work / "main.md",
        "---\nentity_type: topic\naliases: [Main]\nrelations:\n- type: about\n  to: n3\n- type: see\n  to: dup\n"
        "weight: 3\n---\n# Main\n\nMain body.\n",
    )
    write(
        work / "copy.md",
        "---\nentity_type: topic\naliases: [Main, Copy]\nrelations:\n- type: about\n  to: n3\n- type: about\n  to: n5\n"
        "source: web\n---\n# Copy\n\nCopy body.\n",
    )
    async with manual() as tools:
        bad = await tools.err("merge_entities", library_name="work", source_names=["main"], target_name="main")
        result = await tools.ok("merge_entities", library_name="work", source_names=["dup", "copy"], target_name="main")
        names = (await tools.ok("list_entities", library_name="work"))["entities"]
    assert "both a source and the target" in bad
    assert result["merged"] == ["dup", "copy"] and len(result["files_updated"]) == 101
    assert "dup" not in names and "copy" not in names and "main" in names
    data = front(work / "main.md")
    assert data["aliases"] == ["Main", "dup", "copy", "Copy"]
    assert data["relations"] == [{"type": "about", "to": "n3"}, {"type": "about", "to": "n5"}]  # no self-link, no dupes
    assert data["weight"] == 3 and data["source"] == "web"
    body = (work / "main.md").read_text().split("---\n", 2)[2]
    assert body.index("Main body.") < body.index("<!-- merged from dup -->") < body.index("<!-- merged from copy -->")
    assert "Copy body." in body and "Self link [[main]]" in body
    assert front(work / "n0.md")["relations"] == [{"type": "about", "to": "main"}]
    assert "[[main|the thing]]" in (work / "n7.md").read_text()
    journey = yaml.safe_load((work / "journey.yaml").read_text())
    assert journey[-1]["action"] == "merge" and journey[-1]["sources"] == ["dup", "copy"]
    assert journey[-1]["target"] == "main" and "at" in journey[-1]


async def test_merge_into_a_missing_target_changes_nothing(manual, root) -> None:
    write(root / "work" / "a.md", entity("a"))
    async with manual() as tools:
        message = await tools.err("merge_entities", library_name="work", source_names=["a"], target_name="b")
    assert "'b'" in message and (root / "work" / "a.md").exists() and not (root / "work" / "journey.yaml").exists()


async def test_rename_repairs_wikilinks_even_in_a_file_with_broken_front_matter(manual, root) -> None:
    work = root / "work"
    write(work / "old.md", entity("old"))
    write(work / "broken.md", "---\nrelations: [unclosed\n  to: old\n---\nLink to [[old]].\n")
    async with manual() as tools:
        found = await tools.ok("find_relations", library_name="work")
        result = await tools.ok("rename_entity", library_name="work", old_name="old", new_name="new")
    assert found["relations"] == []  # the broken file is skipped, not fatal
    assert result["files_updated"] == ["broken"]
    text = (work / "broken.md").read_text()
    assert "Link to [[new]]." in text and "relations: [unclosed\n  to: old\n" in text


async def test_merge_joins_sections_of_one_heading_so_the_section_tools_still_find_one(manual, root) -> None:
    """Sections the target already has take the source's text under their one heading, marked with the source."""
    work = root / "work"
    write(work / "main.md", "# Main\n\nMain body.\n\n## Notes\n\n- main note\n\n## Links\n\nnone\n")
    write(work / "dup.md", "# Dup\n\nDup body.\n\n## Notes\n\n- dup note\n\n## Extra\n\nonly in dup\n")
    write(work / "copy.md", "## Notes\n\n- copy note\n")
    async with manual() as tools:
        merged = dict(library_name="work", source_names=["dup", "copy"], target_name="main")
        await tools.ok("merge_entities", **merged)
        where = dict(library_name="work", entity_name="main")
        await tools.ok("add_entity_content", **where, in_section="Notes", new_content="- later note")
        await tools.ok("replace_entity_section", **where, old_heading="Links", new_body_content="some")
    body = (work / "main.md").read_text().split("---\n", 2)[-1]
    assert body.count("## Notes") == 1 and body.count("## Extra") == 1 and "only in dup" in body
    text = body.split("## Notes", 1)[1].split("\n## ", 1)[0]
    order = ["- main note", "<!-- merged from dup -->", "- dup note", "<!-- merged from copy -->", "- copy note"]
    assert [text.index(piece) for piece in order] == sorted(text.index(piece) for piece in order)
    assert "- later note" in text and body.index("Dup body.") > body.index("## Links")
