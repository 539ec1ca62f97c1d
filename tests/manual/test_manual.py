"""The manual, meta.md: read, and edited section by section with normalised headings."""

from __future__ import annotations

import pytest

from tests.manual.conftest import write

pytestmark = pytest.mark.anyio

MANUAL = (
    "# Manual\n\nHow this library is kept.\n\n"
    "## Conventions\n\n- one entity per person\n- names in lower case\n\n"
    "## Tags\n\nUse #tags sparingly.\n"
)


async def test_read_manual_before_and_after_it_exists(manual, root) -> None:
    async with manual() as tools:
        empty = await tools.ok("read_manual", library_name="work")
        write(root / "work" / "meta.md", MANUAL)
        full = await tools.ok("read_manual", library_name="work")
    assert empty == {"library": "work", "exists": False, "content": "", "toc": []}
    assert full["content"] == MANUAL
    assert [t["heading"] for t in full["toc"]] == ["Manual", "Conventions", "Tags"]


async def test_add_manual_section_creates_the_file_and_section_then_appends(manual, root) -> None:
    path = root / "work" / "meta.md"
    async with manual() as tools:
        await tools.ok("add_manual_section", library_name="work", toc="## Conventions", new_content="- be brief")
        await tools.ok("add_manual_section", library_name="work", toc="CONVENTIONS", new_content="- be kind")
        await tools.ok("add_manual_section", library_name="work", toc="# 規約", new_content="日本語で書く。")
    # An item added to a tight list stays in it as one more item: no blank line makes the list loose.
    assert path.read_text() == "## Conventions\n\n- be brief\n- be kind\n\n# 規約\n\n日本語で書く。\n"


async def test_an_item_added_after_a_wrapped_item_keeps_the_list_tight(manual, root) -> None:
    path = write(root / "work" / "meta.md", "## Conventions\n\n- names in lower case,\n  even for acronyms\n")
    async with manual() as tools:
        await tools.ok("add_manual_section", library_name="work", toc="Conventions", new_content="- be brief")
        await tools.ok("add_manual_section", library_name="work", toc="Conventions", new_content="A paragraph.")
    assert path.read_text() == (
        "## Conventions\n\n- names in lower case,\n  even for acronyms\n- be brief\n\nA paragraph.\n"
    )


async def test_update_manual_section_needs_one_exact_match_within_the_section(manual, root) -> None:
    path = write(root / "work" / "meta.md", MANUAL)
    async with manual() as tools:
        outside = await tools.err(
            "update_manual_section", library_name="work", toc="tags", old_content="lower case", new_content="x"
        )
        missing = await tools.err(
            "update_manual_section", library_name="work", toc="Nope", old_content="lower case", new_content="x"
        )
        assert path.read_text() == MANUAL
        await tools.ok(
            "update_manual_section",
            library_name="work",
            toc="## conventions",
            old_content="names in lower case",
            new_content="names as people write them",
        )
    assert "matches 0 times in section 'Tags'" in outside and "no section 'Nope'" in missing
    assert "- names as people write them\n" in path.read_text()


async def test_a_section_left_empty_loses_its_heading(manual, root) -> None:
    path = write(root / "work" / "meta.md", MANUAL)
    async with manual() as tools:
        await tools.ok(
            "delete_manual_section", library_name="work", toc="tags", deleting_content="Use #tags sparingly."
        )
        await tools.ok(
            "update_manual_section",
            library_name="work",
            toc="Conventions",
            old_content="- one entity per person\n- names in lower case\n",
            new_content="",
        )
        read = await tools.ok("read_manual", library_name="work")
    assert path.read_text() == "# Manual\n\nHow this library is kept.\n"
    assert [t["heading"] for t in read["toc"]] == ["Manual"]


async def test_ambiguous_manual_headings_are_refused(manual, root) -> None:
    text = "## Notes\n\none\n\n## Notes\n\ntwo\n"
    path = write(root / "work" / "meta.md", text)
    async with manual() as tools:
        message = await tools.err("add_manual_section", library_name="work", toc="notes", new_content="three")
    assert "2 sections headed" in message and path.read_text() == text


async def test_manual_front_matter_is_kept_and_dated(manual, root) -> None:
    path = write(root / "work" / "meta.md", "---\nkeeper: me\ndate modified: 2020-01-01\n---\n## Rules\n\nBe nice.\n")
    async with manual() as tools:
        await tools.ok(
            "update_manual_section", library_name="work", toc="rules", old_content="nice", new_content="kind"
        )
    text = path.read_text()
    assert text.startswith("---\nkeeper: me\ndate modified: '") and "2020-01-01" not in text
    assert text.endswith("## Rules\n\nBe kind.\n")
