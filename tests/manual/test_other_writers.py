"""Programs that write library files without Nexus's lock (an editor, ``echo >>``, a sync tool): an edit made
while one writes never drops its change; it is made again on what was written, or fails clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_manual import library
from tests.manual.conftest import entity, write

pytestmark = pytest.mark.anyio


def editor_between_read_and_write(monkeypatch, path: Path, change, times: int = 1) -> None:
    """After each of the first ``times`` reads of ``path`` by a tool, another program rewrites it."""
    load = library.Library.load
    left = [times]

    def load_then_edit(self, name, where):
        doc = load(self, name, where)
        if where == path and left[0] > 0:
            left[0] -= 1
            path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
        return doc

    monkeypatch.setattr(library.Library, "load", load_then_edit)


async def test_an_editors_append_during_an_edit_is_kept(manual, root, monkeypatch) -> None:
    path = write(root / "work" / "log.md", entity("log", "# Log\n\n## Entries\n- first\n\n## End\n"))
    editor_between_read_and_write(monkeypatch, path, lambda text: text + "- from the editor\n")
    async with manual() as tools:
        await tools.ok(
            "add_entity_content",
            library_name="work",
            entity_name="log",
            in_section="Entries",
            new_content="- from nexus",
        )
    text = path.read_text(encoding="utf-8")
    assert "- first\n- from nexus\n" in text and text.endswith("- from the editor\n")


async def test_an_edit_whose_text_an_editor_changed_fails_and_keeps_the_editors_version(
    manual, root, monkeypatch
) -> None:
    path = write(root / "work" / "note.md", entity("note", "# Note\n\nThe colour is red.\n"))
    editor_between_read_and_write(monkeypatch, path, lambda text: text.replace("red", "blue"))
    async with manual() as tools:
        error = await tools.err(
            "replace_entity_content",
            library_name="work",
            entity_name="note",
            old_content="is red",
            new_content="is green",
        )
    assert "'is red' matches 0 times in entity 'note'; nothing changed" in error
    assert "The colour is blue." in path.read_text(encoding="utf-8")


async def test_a_file_that_keeps_changing_fails_the_edit_and_the_manual_too(manual, root, monkeypatch) -> None:
    path = write(root / "work" / "busy.md", entity("busy", "# Busy\n"))
    manual_file = write(root / "work" / "meta.md", "# Manual\n\n## Rules\n- one\n")
    editor_between_read_and_write(monkeypatch, path, lambda text: text + "x\n", times=10)
    async with manual() as tools:
        error = await tools.err("add_entity_content", library_name="work", entity_name="busy", new_content="mine")
        editor_between_read_and_write(monkeypatch, manual_file, lambda text: text + "- two\n")
        await tools.ok("add_manual_section", library_name="work", toc="Rules", new_content="- three")
    assert "'busy' in library 'work' kept changing while being edited" in error
    assert "mine" not in path.read_text(encoding="utf-8")
    assert manual_file.read_text(encoding="utf-8").endswith("- one\n- two\n- three\n")


async def test_a_write_the_disk_refuses_names_the_file_and_leaves_it_whole(manual, root) -> None:
    """As a full disk would: the temp file cannot grow past a size limit (RLIMIT_FSIZE) smaller than the new text."""
    import resource
    import signal

    path = write(root / "work" / "big.md", entity("big", "# Big\n\n" + "lorem ipsum\n" * 6000))
    before = path.read_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    async with manual() as tools:
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) - 1, hard))
        try:
            error = await tools.err("add_entity_content", library_name="work", entity_name="big", new_content="more")
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, previous)
    assert error.endswith("could not write 'big.md' in library 'work': File too large; it is unchanged")
    assert path.read_bytes() == before and [p.name for p in path.parent.iterdir()] == ["big.md"]


async def test_a_relation_edit_fails_when_an_editor_changed_the_file_and_keeps_crlf(manual, root, monkeypatch) -> None:
    work = root / "work"
    write(work / "b.md", entity("b", "# B\n"))
    edited = write(work / "edited.md", entity("edited", "# Edited\n"))
    crlf = work / "win.md"
    crlf.write_bytes(b"---\r\nentity_type: note\r\n---\r\n# Win\r\n")
    editor_between_read_and_write(monkeypatch, edited, lambda text: text + "typed meanwhile\n")
    async with manual() as tools:
        error = await tools.err(
            "create_relations", library_name="work", relations=[{"from": "edited", "to": "b", "type": "t"}]
        )
        await tools.ok("create_relations", library_name="work", relations=[{"from": "win", "to": "b", "type": "t"}])
    assert "'edited' in library 'work' was changed by another program while being edited" in error
    assert edited.read_text(encoding="utf-8").endswith("typed meanwhile\n")
    data = crlf.read_bytes()
    assert b"- type: t\r\n  to: b\r\n" in data and data.count(b"\n") == data.count(b"\r\n")
