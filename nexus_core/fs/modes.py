"""Modes of what Nexus creates: 0700 folders, 0600 files, set per path (never through the umask).

The umask is process-wide: changing it in a threaded server races with every other thread's file creation.
So each folder is made with ``mkdir(mode=0o700)`` and each file opened with 0600 (or chmod-ed right after a
library that chooses its own mode made it, as Chroma does). Folders Nexus did not create (``~/.local/share``,
a user's library folder) keep their mode: only the missing ones are made, and only those are private.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FOLDER, FILE = 0o700, 0o600


def private_folder(path: Path) -> Path:
    """``path`` and its missing parents, each created 0700; folders that already exist are left as they are."""
    missing = []
    for folder in [path, *path.parents]:
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=FOLDER)  # the umask can only take bits away from 0700
    return path


def make_private(root: Path) -> None:
    """Every folder and file below ``root`` (and ``root``), when this user owns it: 0700 and 0600 at most.

    For stores a library writes itself (Chroma's SQLite files and segment folders): called after it opened
    them. Symlinks are never followed; another user's entries are left alone.
    """
    uid = os.getuid()
    for folder, _names, files in os.walk(root, followlinks=False):
        for path, private in [(folder, FOLDER), *((os.path.join(folder, n), FILE) for n in files)]:
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if info.st_uid == uid and not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
                    os.chmod(path, stat.S_IMODE(info.st_mode) & private, follow_symlinks=False)
