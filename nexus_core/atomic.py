"""Atomic file writes, for the host and every plugin: the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from pathlib import Path

STALE_AFTER = 60.0  # seconds: a temp file this old belongs to a write that was killed, not to one under way


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (str is written as UTF-8) through a temp file in the same folder.

    The temp file (``.<name>.XXXX.tmp``) is fsynced, then renamed over ``path`` with
    one ``os.replace``, so a crash at any point leaves the old file or the new one.
    An existing file keeps its permission bits; a new one gets 0o666 minus the umask.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    sweep(path.parent, f".{path.name}.")
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sweep(folder: Path, prefix: str = ".", *, recursive: bool = False) -> int:
    """Remove what writes killed mid-way left (``.<name>.XXXX.tmp`` older than a minute); returns how many."""
    removed = 0
    now = time.time()
    candidates = folder.rglob(f"{prefix}*.tmp") if recursive else folder.glob(f"{prefix}*.tmp")
    with contextlib.suppress(OSError):
        for tmp in candidates:
            with contextlib.suppress(OSError):
                info = tmp.lstat()
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_AFTER:
                    tmp.unlink()
                    removed += 1
    return removed


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads; Linux exposes it here.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current
