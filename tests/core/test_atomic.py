"""The shared atomic write: old or new content, never half, mode kept, no leftovers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nexus_core import atomic_write


def test_replaces_content_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "script.sh"
    path.write_text("old")
    path.chmod(0o750)
    atomic_write(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓" and (path.stat().st_mode & 0o777) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]


def test_a_failed_rename_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"old")

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "fresh.txt", b"x")
    finally:
        os.umask(old)
    assert ((tmp_path / "fresh.txt").stat().st_mode & 0o777) == 0o640
