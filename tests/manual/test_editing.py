"""Editing by exact context: creating, changing and deleting entities; nothing changes on a bad call."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio

BODY = (
    "# Plan\n\nStep one.\n\n## Tasks\n\n- buy milk\n- call Ann\n\n"
    "### Later\n\n- paint\n\n## Notes\n\nA note.\nA note.\n"
)
FM_EXTRA = "owner: ann  # a comment kept\ncustom:\n  nested: [1, 2]\ndate modified: 2020-01-01\n"


def front(text: str) -> dict:
    return yaml.safe_load(text.split("---\n")[1])


async def test_add_entities_writes_front_matter_and_refuses_existing_names(manual, root) -> None:
    async with manual() as tools:
        created = await tools.ok(
            "add_entities",
            library_name="work",
            entities=[
                {"name": "alice", "entity_type": "person", "aliases": ["Al"], "content": "# Alice\n\nHello.\n"},
                {"name": "bob", "entity_type": "person", "relations": [{"type": "knows", "to": "alice"}]},
            ],
        )
        before = (root / "work" / "alice.md").read_bytes()
        again = await tools.err(
            "add_entities",
            library_name="work",
            entities=[{"name": "alice", "entity_type": "person"}, {"name": "carol", "entity_type": "person"}],
        )
        dangling = await tools.err(
            "add_entities",
            library_name="work",
            entities=[{"name": "dan", "entity_type": "person", "relations": [{"type": "x", "to": "nobody"}]}],
        )
    assert created["changed"] == ["alice", "bob"]
    text = (root / "work" / "alice.md").read_text()
    data = front(text)
    assert list(data) == ["entity_type", "aliases", "relations", "date created", "date modified"]
    assert data["entity_type"] == "person" and data["aliases"] == ["Al"] and data["relations"] == []
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", str(data["date created"]))
    assert text.endswith("---\n# Alice\n\nHello.\n")
    assert front((root / "work" / "bob.md").read_text())["relations"] == [{"type": "knows", "to": "alice"}]
    assert "already exists: alice" in again and not (root / "work" / "carol.md").exists()
    assert (root / "work" / "alice.md").read_bytes() == before
    assert "nobody" in dangling and not (root / "work" / "dan.md").exists()


@pytest.mark.parametrize("bad", ["../escape", "a/b", "a\\b", ".hidden", "x\x00y", "two..dots", "meta", "n.md", " pad"])
async def test_unsafe_entity_names_are_refused(manual, root, bad: str) -> None:
    async with manual() as tools:
        message = await tools.err("add_entities", library_name="work", entities=[{"name": bad, "entity_type": "note"}])
        read = await tools.err("read_entities", library_name="work", entity_names=[bad])
    assert "entity name" in message or "reserved" in message
    assert "entity name" in read or "reserved" in read
    assert sorted(p.name for p in root.rglob("*")) == ["personal", "work"]


async def test_content_is_added_to_a_section_before_its_subsections(manual, root) -> None:
    path = write(root / "work" / "plan.md", entity("plan", BODY, extra=FM_EXTRA))
    async with manual() as tools:
        await tools.ok(
            "add_entity_content",
            library_name="work",
            entity_name="plan",
            new_content="- pay rent",
            in_section="## tasks",
        )
        await tools.ok("add_entity_content", library_name="work", entity_name="plan", new_content="Appendix.")
        await tools.ok(
            "add_entity_content",
            library_name="work",
            entity_name="plan",
            new_content="- post letter",
            after="- buy milk",
        )
    text = path.read_text()
    assert "- buy milk\n- post letter\n- call Ann\n- pay rent\n\n### Later\n" in text  # the list stays tight
    assert text.endswith("A note.\nA note.\n\nAppendix.\n")
    # The front matter kept its unknown keys, order and comment; only `date modified` changed.
    head = text.split("---\n")[1]
    assert head.startswith("entity_type: note\nowner: ann  # a comment kept\ncustom:\n  nested: [1, 2]\n")
    assert "2020-01-01" not in head and "date modified: '" in head


async def test_replace_and_delete_need_exactly_one_match_and_change_nothing_otherwise(manual, root) -> None:
    path = write(root / "work" / "plan.md", entity("plan", BODY))
    before = path.read_bytes()
    async with manual() as tools:
        several = await tools.err(
            "replace_entity_content", library_name="work", entity_name="plan", old_content="A note.", new_content="x"
        )
        absent = await tools.err(
            "delete_entity_content", library_name="work", entity_name="plan", content_to_delete="no such"
        )
        outside = await tools.err(
            "delete_entity_content",
            library_name="work",
            entity_name="plan",
            content_to_delete="- paint",
            in_section="Notes",
        )
        no_section = await tools.err(
            "add_entity_content", library_name="work", entity_name="plan", new_content="x", in_section="Ghost"
        )
        after_twice = await tools.err(
            "add_entity_content", library_name="work", entity_name="plan", new_content="x", after="A note."
        )
        assert path.read_bytes() == before
        await tools.ok(
            "replace_entity_content",
            library_name="work",
            entity_name="plan",
            old_content="- call Ann",
            new_content="- call Ann and Bo",
            in_section="Tasks",
        )
        await tools.ok("delete_entity_content", library_name="work", entity_name="plan", content_to_delete="- paint\n")
    assert "matches 2 times" in several and "nothing changed" in several
    assert "matches 0 times" in absent and "matches 0 times" in outside
    assert "no section 'Ghost'" in no_section and "matches 2 times" in after_twice
    text = path.read_text()
    assert "- call Ann and Bo\n" in text and "- paint" not in text


async def test_the_front_matter_is_not_edited_as_text(manual, root) -> None:
    path = write(root / "work" / "plan.md", entity("plan", BODY, extra=FM_EXTRA))
    before = path.read_bytes()
    async with manual() as tools:
        refused = await tools.err(
            "replace_entity_content",
            library_name="work",
            entity_name="plan",
            old_content="owner: ann",
            new_content="owner: bo",
            in_section="frontmatter",
        )
    assert refused.endswith(
        ": the front matter is not edited as text; use the relation tools, rename_entity or merge_entities"
    )
    assert path.read_bytes() == before


async def test_replace_entity_section_replaces_subsections_and_can_change_heading(manual, root) -> None:
    path = write(root / "work" / "plan.md", entity("plan", BODY))
    async with manual() as tools:
        await tools.ok(
            "replace_entity_section",
            library_name="work",
            entity_name="plan",
            old_heading="tasks",
            new_heading="### Todo",
            new_body_content="- nothing left\n",
        )
        await tools.ok(
            "replace_entity_section",
            library_name="work",
            entity_name="plan",
            old_heading="Notes",
            new_body_content="New.",
        )
        ambiguous = await tools.err(
            "replace_entity_section",
            library_name="work",
            entity_name="plan",
            old_heading="frontmatter",
            new_body_content="x",
        )
    text = path.read_text()
    assert "### Todo\n\n- nothing left\n\n## Notes\n\nNew.\n" in text
    assert "buy milk" not in text and "### Later" not in text
    assert "front matter" in ambiguous


async def test_delete_entities_is_all_or_nothing(manual, root) -> None:
    for name in ("a", "b"):
        write(root / "work" / f"{name}.md", entity(name))
    async with manual() as tools:
        missing = await tools.err("delete_entities", library_name="work", entity_names=["a", "ghost"])
        assert (root / "work" / "a.md").exists()
        done = await tools.ok("delete_entities", library_name="work", entity_names=["a", "b"])
        listed = await tools.ok("list_entities", library_name="work")
    assert "'ghost'" in missing and done["changed"] == ["a", "b"] and listed["entities"] == []


async def test_an_entity_without_front_matter_gets_date_modified_on_edit(manual, root) -> None:
    path = write(root / "work" / "plain.md", "# Plain\n\ntext\n")
    async with manual() as tools:
        await tools.ok("add_entity_content", library_name="work", entity_name="plain", new_content="more")
    text = path.read_text()
    assert text.startswith("---\ndate modified: '") and text.endswith("# Plain\n\ntext\n\nmore\n")


async def test_write_tools_are_off_by_default_and_annotated(manual, root) -> None:
    write(root / "work" / "a.md", entity("a"))
    async with manual(categories=None) as tools:
        listed = {t.name: t for t in (await tools.client.list_tools()).tools}
        refused = await tools.err("delete_entities", library_name="work", entity_names=["a"])
    assert "list_entities" in listed and "read_manual" in listed and "find_relations" in listed
    assert not {"add_entities", "delete_entities", "rename_entity", "merge_entities"} & set(listed)
    assert "'write' category" in refused and (root / "work" / "a.md").exists()
    assert listed["read_entities"].annotations.read_only_hint is True
    async with manual() as tools:
        tools_ = {t.name: t for t in (await tools.client.list_tools()).tools}
    assert tools_["delete_entities"].annotations.destructive_hint is True
    assert tools_["add_entities"].annotations.destructive_hint is False
    assert tools_["replace_entity_section"].annotations.idempotent_hint is True
    assert tools_["rename_entity"].annotations.read_only_hint is False
