"""Smart recommended content: an entity created without content starts from the sections its type uses."""

from __future__ import annotations

import pytest

from tests.manual.conftest import write

pytestmark = pytest.mark.anyio


def typed(entity_type: str, body: str) -> str:
    return f"---\nentity_type: {entity_type}\n---\n{body}"


def body(path) -> str:
    return path.read_text().split("---\n", 2)[2]


async def test_a_new_entity_gets_the_sections_its_type_uses_in_the_library_most_common_first(manual, root) -> None:
    work = root / "work"
    write(work / "p1.md", typed("person", "# P1\n\n## Contact\n\n## Role\n\n## Notes\n"))
    write(work / "p2.md", typed("person", "# P2\n\n## Role\n\nEngineer.\n\n## Contact\n"))
    write(work / "p3.md", typed("person", "# P3\n\n## Role\n\n### Detail\n\n## Notes\n"))  # ### is not a section
    write(work / "p4.md", typed("person", "## role\n\n## Trips\n\n## Notes\n"))  # no title: its top headings
    write(work / "p5.md", typed("Person", "# P5\n\n## Role\n\n## Contact\n\n## Pets\n"))  # type case ignored
    write(work / "proj.md", typed("project", "# Proj\n\n## Budget\n\n## Budget 2\n"))  # another type
    write(work / "broken.md", "---\nentity_type: person\nrelations: [unclosed\n---\n## Junk\n")  # skipped
    for i, sections in enumerate(["## Actions", "## Agenda\n\n## Actions", "## Agenda\n\n## Actions", "## Agenda"]):
        write(work / f"m{i}.md", typed("meeting", f"# M{i}\n\n{sections}\n"))
    async with manual() as tools:
        made = await tools.ok(
            "add_entities",
            library_name="work",
            entities=[
                {"name": "ann", "entity_type": "person"},
                {"name": "standup", "entity_type": "meeting"},
                {"name": "given", "entity_type": "person", "content": "Just this."},
            ],
        )
        toc = await tools.ok("get_entities_toc", library_name="work", entity_names=["ann"])
        await tools.ok(
            "add_entity_content", library_name="work", entity_name="ann", in_section="Role", new_content="Designer."
        )
    # Role 5 of 5, Contact 3, Notes 3 (Contact usually comes earlier); Trips and Pets 1 each: under a quarter.
    assert body(work / "ann.md") == "# ann\n\n## Role\n\nDesigner.\n\n## Contact\n\n## Notes\n"
    # Agenda and Actions are used 3 times each; Agenda is where they usually start.
    assert body(work / "standup.md") == "# standup\n\n## Agenda\n\n## Actions\n"
    assert body(work / "given.md") == "Just this.\n"
    assert [t["heading"] for t in toc["entities"][0]["toc"]] == ["frontmatter", "ann", "Role", "Contact", "Notes"]
    assert made["changed"] == ["ann", "standup", "given"]
    assert "'ann' starts with sections other 'person' entities use: Role, Contact, Notes" in made["message"]


async def test_without_entities_of_its_type_a_new_entity_gets_a_small_default_outline(manual, root) -> None:
    work = root / "work"
    write(work / "p.md", typed("project", "# P\n\n## Budget\n"))
    async with manual() as tools:
        made = await tools.ok(
            "add_entities",
            library_name="work",
            entities=[
                {"name": "bo", "entity_type": "person"},
                {"name": "use-jsonl", "entity_type": "decision"},
                {"name": "widget", "entity_type": "gadget"},
            ],
        )
    assert body(work / "bo.md") == "# bo\n\n## Role\n\n## Contact\n\n## Notes\n"
    assert body(work / "use-jsonl.md") == "# use-jsonl\n\n## Context\n\n## Decision\n\n## Consequences\n"
    assert body(work / "widget.md") == "# widget\n\n## Summary\n\n## Notes\n"
    assert "'widget' starts with a default outline: Summary, Notes" in made["message"]
