"""Folders of code Nexus runs (the tool folder, ``plugin_dirs``): refused when another user could change them.

Like sshd's StrictModes and git's safe.directory: a file another user can write, or a folder where they can
add or replace one, would run as the server's user. A folder or file is refused when it is writable by group
or other, or owned by a user other than the server's and root (root can change anything anyway, and system
folders holding plugins are root's). Symlinks are judged by what they point to (``stat``, not ``lstat``).
Standard library only: ``nexus doctor`` calls ``findings`` without importing the SDK.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def refusal(path: str | os.PathLike[str]) -> str | None:
    """Why the code at ``path`` (a folder, or a file) may not run, or None when it may; a missing path is None."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if info.st_uid not in (os.getuid(), 0):
        return f"{path} is owned by another user (uid {info.st_uid})"
    if stat.S_IMODE(info.st_mode) & 0o022:
        return f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}): run chmod go-w {path}"
    return None


def findings(folders: list[Path]) -> list[str]:
    """Each refused folder, or refused ``*.py`` file in one, as a line for ``nexus doctor`` and the log."""
    lines = []
    for folder in folders:
        if reason := refusal(folder):
            lines.append(f"refused (code there would run as you): {reason}")
            continue
        try:
            files = sorted(f for f in Path(folder).glob("*.py") if not f.name.startswith(("_", ".")))
        except OSError:
            continue
        lines += [f"refused (code there would run as you): {reason}" for f in files if (reason := refusal(f))]
    return lines
