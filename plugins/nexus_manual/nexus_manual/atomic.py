"""Atomic file writes: a temp file in the same folder, fsync, then one ``os.replace``.

A crash at any point leaves either the old file or the new one, never a mix.
Temp names start with a dot and end in ``.tmp``, so a leftover one is never
listed as an entity.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically, keeping the old file's permission bits."""
    data = text.encode("utf-8")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    # os.umask can only be read by setting it; done once per new file, under the library lock.
    current = os.umask(0o022)
    os.umask(current)
    return current
