"""Library files someone else put there (a cloned repository used as a library): each bad file fails alone,
with its name, and costs bounded time and memory; every other entity is still served."""

from __future__ import annotations

import os
import time

import pytest

from nexus_manual import library, sections
from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio


async def test_a_symlink_loop_hides_only_itself(manual, root) -> None:
    work = root / "work"
    write(work / "a.md", entity("a", "# A\n", relations=[("knows", "b")]))
    write(work / "b.md", entity("b", "# B\n"))
    os.symlink("loop.md", work / "loop.md")
    os.symlink("l2.md", work / "l1.md")
    os.symlink("l1.md", work / "l2.md")
    async with manual() as tools:
        listed = await tools.ok("list_entities", library_name="work")
        found = await tools.ok("find_relations", library_name="work")
        renamed = await tools.ok("rename_entity", library_name="work", old_name="b", new_name="c")
    assert listed["entities"] == ["a", "b"]
    assert found["relations"] == [{"from": "a", "to": "b", "type": "knows"}]
    assert renamed["files_updated"] == ["a"] and not (work / "b.md").exists()


async def test_an_oversized_entity_is_refused_by_name_and_the_others_are_served(manual, root, monkeypatch) -> None:
    monkeypatch.setattr(library, "MAX_FILE_BYTES", 4096)
    work = root / "work"
    big = write(work / "big.md", entity("big", "# Big\n\n## Notes\n" + "lorem ipsum\n" * 400))
    write(work / "small.md", entity("small", "# Small\n"))
    before = big.read_bytes()
    async with manual() as tools:
        read = await tools.err("read_entities", library_name="work", entity_names=["big"])
        toc = await tools.err("get_entities_toc", library_name="work", entity_names=["big"])
        edit = await tools.err("add_entity_content", library_name="work", entity_name="big", new_content="x")
        small = await tools.ok("read_entities", library_name="work", entity_names=["small"])
        listed = await tools.ok("list_entities", library_name="work")
    for error in (read, toc, edit):
        assert "'big' in library 'work' is 0 MB, over the 0 MB a file may have" in error
    assert "# Small" in small["entities"][0]["content"] and listed["entities"] == ["big", "small"]
    assert big.read_bytes() == before


async def test_front_matter_after_a_byte_order_mark_stays_one_front_matter(manual, root) -> None:
    path = root / "work" / "bom.md"
    path.write_bytes(
        b"\xef\xbb\xbf---\nentity_type: person\nrelations:\n- type: knows\n  to: x\n---\n# Bom\n\n## Notes\n"
    )
    async with manual() as tools:
        toc = await tools.ok(
            "read_entities_sections", library_name="work", entity_names=["bom"], section_globs=["frontmatter"]
        )
        await tools.ok(
            "add_entity_content", library_name="work", entity_name="bom", in_section="Notes", new_content="hi"
        )
        found = await tools.ok("find_relations", library_name="work")
    text = path.read_text(encoding="utf-8")
    assert "entity_type: person" in toc["entities"][0]["sections"][0]["content"]
    assert (
        text.count("---\n") == 2 and text.startswith("---\nentity_type: person\n") and text.endswith("## Notes\n\nhi\n")
    )
    assert found["relations"] == [{"from": "bom", "to": "x", "type": "knows"}]


def test_many_headings_are_outlined_in_linear_time() -> None:
    """100k headings in a file: their sections' extents in one pass (looking ahead from each took 15 s)."""
    found = [(f"H{i}", 2 + i % 3, i * 10, i * 10 + 5) for i in range(60_000)]
    started = time.perf_counter()
    headings = sections._extents(found, 600_000)
    assert time.perf_counter() - started < 1.5
    assert (headings[0].own_end, headings[0].end, headings[1].end, headings[2].end, headings[-1].end) == (
        10,
        30,
        30,
        30,
        600_000,
    )


async def test_a_crlf_file_is_edited_with_lf_text_and_keeps_crlf_line_breaks(manual, root) -> None:
    path = root / "work" / "win.md"
    path.write_bytes(
        b"---\r\nentity_type: note\r\n---\r\n# Win\r\n\r\n## Notes\r\nline one\r\nline two\r\n\r\n## End\r\n"
    )
    async with manual() as tools:
        await tools.ok(
            "replace_entity_content",
            library_name="work",
            entity_name="win",
            old_content="one\nline",
            new_content="1\nL",
        )
        await tools.ok(
            "add_entity_content", library_name="work", entity_name="win", in_section="Notes", new_content="- a\n- b"
        )
        copied = (await tools.ok("read_entities", library_name="work", entity_names=["win"]))["entities"][0]
        await tools.ok("delete_entity_content", library_name="work", entity_name="win", content_to_delete="- a\r\n")
    data = path.read_bytes()
    assert "- a\r\n- b" in copied["content"]
    assert data.count(b"\n") == data.count(b"\r\n") and b"\r\r" not in data
    assert data.endswith(b"## Notes\r\nline 1\r\nL two\r\n\r\n- b\r\n\r\n## End\r\n")
    assert data.startswith(b"---\r\nentity_type: note\r\ndate modified: ")


@pytest.mark.parametrize(
    "journey",
    [b'- !!python/object/apply:os.system ["touch pwned"]\n', b"- at: [unclosed\n", b"\xff\xfe\n"],
    ids=["tag", "broken", "not-utf8"],
)
async def test_a_journey_yaml_that_cannot_be_read_does_not_fail_a_done_rename(manual, root, journey) -> None:
    work = root / "work"
    write(work / "a.md", entity("a", "# A\n"))
    (work / "journey.yaml").write_bytes(journey)
    async with manual() as tools:
        renamed = await tools.ok("rename_entity", library_name="work", old_name="a", new_name="b")
    text = (work / "journey.yaml").read_bytes()
    assert renamed["new_name"] == "b" and (work / "b.md").is_file() and not (work / "pwned").exists()
    assert text.startswith(journey) and text.endswith(b"  action: rename\n  from: a\n  to: b\n  files_updated: 0\n")
