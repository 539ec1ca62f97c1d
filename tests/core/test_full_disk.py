"""Issue 37: on a full disk the audit log keeps one record per line, counts what it drops, and errors say why."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import nexus_manual
from nexus_core.access.audit import AuditLog

pytestmark = pytest.mark.anyio


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Fill the file system holding ``folder`` to the last byte; returns the filler, to free the space again."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
        for size in (65536, 4096, 512, 64, 1):
            while True:
                f.write(b"\0" * size)
    return filler


def records(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    assert text.endswith("\n"), text[-200:]
    return [json.loads(line) for line in text.splitlines()]  # every line whole


def test_a_full_disk_never_tears_a_line_and_drops_are_counted(small_disk: Path):
    path = small_disk / "audit.jsonl"
    audit = AuditLog(path, include_arguments=True)
    audit.record(plugin="p", tool="first", outcome="ok", duration_ms=1)
    filler = fill(small_disk)
    audit.record(plugin="p", tool="torn", outcome="ok", duration_ms=1, arguments={"x": "y" * 20_000})
    audit.record(plugin="p", tool="small", outcome="ok", duration_ms=1, arguments={"x": "y" * 5000})
    assert audit.dropped == 2
    assert [r["tool"] for r in records(path)] == ["first"]
    filler.unlink()
    audit.record(plugin="p", tool="after", outcome="ok", duration_ms=1)
    audit.close()
    assert [r["tool"] for r in records(path)] == ["first", "after"]  # the next record is never swallowed


async def test_a_tool_on_a_full_disk_says_why(make_host, small_disk: Path):
    (small_disk / "work").mkdir()
    (small_disk / "work" / "Plan.md").write_text("---\nentity_type: note\nrelations: []\n---\n# Plan\n")
    library = {"work": str(small_disk / "work")}
    config = {"roots": [str(small_disk)], "categories": ["read", "write"], "libraries": library}
    host = make_host({"manual": nexus_manual}, {"plugins": {"manual": config}})
    async with Client(host.server) as client:
        fill(small_disk)
        result = await client.call_tool(
            "add_entity_content", {"library_name": "work", "entity_name": "Plan", "new_content": "more " * 2000}
        )
    text = result.content[0].text
    assert result.is_error and "No space left on device" in text, text
