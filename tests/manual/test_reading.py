"""Reading in three depths: names, tables of contents, sections, whole files."""

from __future__ import annotations

import pytest

from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio

DOC = """# Title

Intro text.

## Setup

Install it.

```bash
# not a heading
echo hi
```

### Details

More setup.

## Usage

Run it.
"""


async def test_list_entities_globs_names_and_hides_manual_temp_and_hidden_files(manual, root) -> None:
    work = root / "work"
    for name in ("alpha", "Beta", "gamma"):
        write(work / f"{name}.md", entity(name))
    write(work / "meta.md", "# Manual\n")
    write(work / ".alpha.md.x1.tmp", "partial")
    write(work / ".hidden.md", "x")
    write(work / "notes.txt", "x")
    (work / "folder.md").mkdir()
    async with manual() as tools:
        everything = await tools.ok("list_entities", library_name="work")
        assert everything["entities"] == ["Beta", "alpha", "gamma"] and everything["count"] == 3
        some = await tools.ok("list_entities", library_name="work", entity_glob="b*")
        assert some["entities"] == ["Beta"]  # case-insensitive
        none = await tools.ok("list_entities", library_name="work", entity_glob="zzz*")
        assert none["entities"] == [] and none["count"] == 0


async def test_toc_starts_with_frontmatter_and_skips_headings_in_code_fences(manual, root) -> None:
    write(root / "work" / "doc.md", entity("doc", DOC))
    async with manual() as tools:
        toc = (await tools.ok("get_entities_toc", library_name="work", entity_names=["doc"]))["entities"][0]["toc"]
    assert toc == [
        {"heading": "frontmatter", "level": 0},
        {"heading": "Title", "level": 1},
        {"heading": "Setup", "level": 2},
        {"heading": "Details", "level": 3},
        {"heading": "Usage", "level": 2},
    ]


async def test_sections_run_to_the_next_heading_of_the_same_or_higher_level(manual, root) -> None:
    write(root / "work" / "doc.md", entity("doc", DOC))
    async with manual() as tools:
        result = await tools.ok(
            "read_entities_sections", library_name="work", entity_names=["doc"], section_globs=["setup", "USAGE"]
        )
    sections = {s["heading"]: s for s in result["entities"][0]["sections"]}
    setup = sections["Setup"]["content"]
    assert setup.startswith("## Setup\n") and "# not a heading" in setup and "### Details" in setup
    assert "More setup." in setup and "## Usage" not in setup
    assert sections["Usage"]["content"] == "## Usage\n\nRun it.\n"
    assert sections["Setup"]["level"] == 2


async def test_section_globs_match_frontmatter_and_wildcards(manual, root) -> None:
    write(root / "work" / "doc.md", entity("doc", DOC, extra="owner: ann\n"))
    async with manual() as tools:
        fm = await tools.ok(
            "read_entities_sections", library_name="work", entity_names=["doc"], section_globs=["frontmatter"]
        )
        deep = await tools.ok(
            "read_entities_sections", library_name="work", entity_names=["doc"], section_globs=["#*ails"]
        )
        missing = await tools.err(
            "read_entities_sections", library_name="work", entity_names=["doc"], section_globs=["Nope"]
        )
    front = fm["entities"][0]["sections"]
    assert front[0]["heading"] == "frontmatter" and "owner: ann" in front[0]["content"]
    assert front[0]["content"].startswith("---\n") and "# Title" not in front[0]["content"]
    assert [s["heading"] for s in deep["entities"][0]["sections"]] == ["Details"]
    assert "no section matches" in missing and "'Setup'" in missing


async def test_read_entities_returns_whole_files_and_names_missing_ones(manual, root) -> None:
    text = entity("a", "# A\n\nbody\n")
    write(root / "work" / "a.md", text)
    async with manual() as tools:
        read = await tools.ok("read_entities", library_name="work", entity_names=["a"])
        missing = await tools.err("read_entities", library_name="work", entity_names=["a", "ghost"])
        unknown = await tools.err("read_entities", library_name="play", entity_names=["a"])
    assert read["entities"] == [{"name": "a", "content": text}]
    assert "'ghost'" in missing and "list_entities" in missing
    assert "unknown library 'play'" in unknown and "'work'" in unknown and "'personal'" in unknown


async def test_non_ascii_names_and_headings(manual, root) -> None:
    body = "# 概要\n\n中文内容。\n\n## 設定\n\n日本語の設定。\n\n## 使い方\n\n使う。\n"
    write(root / "work" / "知識ベース.md", entity("知識ベース", body))
    async with manual() as tools:
        names = await tools.ok("list_entities", library_name="work", entity_glob="知識*")
        section = await tools.ok(
            "read_entities_sections", library_name="work", entity_names=["知識ベース"], section_globs=["設定"]
        )
        # The second read comes from the cached outline: byte offsets must land on the same characters.
        warm = await tools.ok(
            "read_entities_sections",
            library_name="work",
            entity_names=["知識ベース"],
            section_globs=["使い方", "frontmatter", "概要"],
        )
    assert names["entities"] == ["知識ベース"]
    warm_sections = warm["entities"][0]["sections"]
    assert [s["heading"] for s in warm_sections] == ["frontmatter", "概要", "使い方"]
    assert warm_sections[0]["content"].startswith("---\nentity_type: note") and warm_sections[0]["content"].endswith(
        "---\n"
    )
    assert warm_sections[1]["content"].startswith("# 概要\n\n中文内容。") and "使う" in warm_sections[1]["content"]
    assert warm_sections[2]["content"] == "## 使い方\n\n使う。\n"
    assert section["entities"][0]["sections"] == [
        {"heading": "設定", "level": 2, "content": "## 設定\n\n日本語の設定。\n\n"}
    ]


async def test_setext_headings_and_quoted_hashes(manual, root) -> None:
    body = "Top\n===\n\ntext\n\n> # quoted, not a section\n\nSub\n---\n\nsub text\n"
    write(root / "work" / "s.md", body)  # no front matter at all
    async with manual() as tools:
        toc = (await tools.ok("get_entities_toc", library_name="work", entity_names=["s"]))["entities"][0]["toc"]
        sub = await tools.ok("read_entities_sections", library_name="work", entity_names=["s"], section_globs=["sub"])
    assert toc[1:] == [{"heading": "Top", "level": 1}, {"heading": "Sub", "level": 2}]
    assert sub["entities"][0]["sections"][0]["content"] == "Sub\n---\n\nsub text\n"


async def test_reading_sees_outside_changes_despite_the_outline_cache(manual, root) -> None:
    path = write(root / "work" / "c.md", "# One\n\nfirst\n")
    async with manual() as tools:
        first = await tools.ok("get_entities_toc", library_name="work", entity_names=["c"])
        write(path, "# One\n\nfirst, changed\n\n# Two\n\nsecond\n")
        second = await tools.ok("get_entities_toc", library_name="work", entity_names=["c"])
    assert [t["heading"] for t in first["entities"][0]["toc"]] == ["frontmatter", "One"]
    assert [t["heading"] for t in second["entities"][0]["toc"]] == ["frontmatter", "One", "Two"]
