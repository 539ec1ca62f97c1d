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


def writing_into(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` holds a file open in ``folder`` that is not yet in place: a write under way."""
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            target = os.readlink(f"{fds}/{fd}")
        except OSError:
            continue
        if target.startswith(f"{folder}/") and target.endswith((" (deleted)", ".tmp")):
            return True
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the write under way")
def test_a_writer_killed_mid_write_leaves_old_or_new_and_nothing_else(tmp_path: Path) -> None:
    """kill -9 during a large write: the file is whole (old or new), and no temp file is left in the folder."""
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "big.txt"
    path.write_text("old\n" * 10)
    writer = (
        "import sys; from pathlib import Path; from nexus_core import atomic_write\n"
        "print('go', flush=True)\n"
        "while True: atomic_write(Path(sys.argv[1]), 'new\\n' * 5_000_000)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", writer, str(path)], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"go\n"
    deadline = time.monotonic() + 30
    while not writing_into(proc.pid, tmp_path) and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert path.read_text() in ("old\n" * 10, "new\n" * 5_000_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.txt"]


def test_a_stale_temp_file_of_our_pattern_is_swept_by_the_next_write(tmp_path: Path) -> None:
    """Where no unnamed file can be made, a killed write leaves ``.name.XXXX.tmp``: the next write removes it."""
    import time

    path = tmp_path / "big.txt"
    path.write_text("old\n")
    stale, fresh = tmp_path / ".big.txt.0badcafe.tmp", tmp_path / ".big.txt.1234abcd.tmp"
    for tmp in (stale, fresh):
        tmp.write_text("half")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    atomic_write(path, "after\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".big.txt.1234abcd.tmp", "big.txt"]  # a write under way
    assert path.read_text() == "after\n"
