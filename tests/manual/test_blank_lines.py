"""Repeated edits keep one blank line between blocks: nothing piles up, code blocks keep their own blank lines."""

from __future__ import annotations

import re

import pytest

from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio

BODY = "# Plan\n\ntext\n\n## Tasks\n\n- a\n\n```python\ndef f():\n\n\n    return 1\n```\n\n## Next\n\nend\n"
MANUAL = "# Manual\n\nintro\n\n## Rules\n\nr1\n\n## Other\n\no\n"


def body(text: str) -> str:
    return text.split("---\n", 2)[2]


def piled(text: str) -> list[str]:
    """Runs of two or more blank lines outside the code fence, and blank lines at the end."""
    outside = text.replace("def f():\n\n\n    return 1", "def f():")
    return re.findall(r"\n[ \t]*\n[ \t]*\n", outside) + re.findall(r"\n\n\Z", outside)


async def test_many_successive_entity_edits_do_not_pile_up_blank_lines(manual, root) -> None:
    path = write(root / "work" / "plan.md", entity("plan", BODY))
    ref = {"library_name": "work", "entity_name": "plan"}
    async with manual() as tools:
        for i in range(12):
            steps = [
                ("add_entity_content", {"new_content": f"\n\nx{i}\n\n\n", "in_section": "Tasks"}),
                ("delete_entity_content", {"content_to_delete": f"x{i}"}),
                ("add_entity_content", {"new_content": f"y{i}\n\n"}),
                ("replace_entity_content", {"old_content": f"y{i}", "new_content": "\n\n"}),
                ("add_entity_content", {"new_content": f"z{i}", "after": "- a"}),
                ("delete_entity_content", {"content_to_delete": f"z{i}", "in_section": "Tasks"}),
                ("replace_entity_section", {"old_heading": "Next", "new_body_content": "\n\n\nend\n\n\n"}),
            ]
            for tool, args in steps:
                await tools.ok(tool, **ref, **args)
                assert not piled(body(path.read_text())), (tool, body(path.read_text()))
    # Twelve rounds of adding and taking away the same text leave the body exactly as it was.
    assert body(path.read_text()) == BODY


async def test_many_successive_manual_edits_do_not_pile_up_blank_lines(manual, root) -> None:
    path = write(root / "work" / "meta.md", MANUAL)
    ref = {"library_name": "work"}
    async with manual() as tools:
        for i in range(12):
            steps = [
                ("add_manual_section", {"toc": "Rules", "new_content": f"\n\nr{i + 2}\n\n\n"}),
                ("delete_manual_section", {"toc": "Rules", "deleting_content": f"r{i + 2}"}),
                ("update_manual_section", {"toc": "Other", "old_content": "o", "new_content": "o\n\n\n"}),
                ("add_manual_section", {"toc": "Scratch", "new_content": "tmp"}),
                ("delete_manual_section", {"toc": "Scratch", "deleting_content": "tmp"}),  # removes the section
            ]
            for tool, args in steps:
                await tools.ok(tool, **ref, **args)
                assert not piled(path.read_text()), (tool, path.read_text())
    assert path.read_text() == MANUAL


async def test_blank_lines_in_code_blocks_and_outside_the_edited_sections_are_left_alone(manual, root) -> None:
    untouched = "# Far\n\n\n\nkept as the user wrote it\n\n\n"
    path = write(root / "work" / "plan.md", entity("plan", untouched + BODY))
    async with manual() as tools:
        await tools.ok(
            "delete_entity_content", library_name="work", entity_name="plan", content_to_delete="def f():\n\n\n"
        )
        assert "```python\n    return 1\n```" in path.read_text()  # an exact deletion is exactly that
        await tools.ok(
            "replace_entity_content",
            library_name="work",
            entity_name="plan",
            old_content="```python\n    return 1",
            new_content="```python\ndef g():\n\n\n    return 2",
            in_section="Tasks",
        )
        await tools.ok("delete_entity_content", library_name="work", entity_name="plan", content_to_delete="- a")
    text = body(path.read_text())
    assert text.startswith(untouched)  # another section: not normalised
    assert "## Tasks\n\n```python\ndef g():\n\n\n    return 2\n```\n\n## Next" in text  # the fence keeps its lines
