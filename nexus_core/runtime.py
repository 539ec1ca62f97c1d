"""The user's private folders for what runs: the shared server's socket, locks, logs.

``runtime_dir()`` is ``$XDG_RUNTIME_DIR/nexus`` when the system provides one
(a per-user tmpfs, gone at logout), else ``<user state dir>/run``. It is created
with mode 0700 and refused when another user owns it, so no one else can reach
the socket or plant a lock. ``state_dir()`` keeps what should survive a reboot
(the shared server's log).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from nexus_core.errors import NexusError


def state_dir() -> Path:
    return _private(Path(platformdirs.user_state_dir("nexus")))


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        return _private(Path(base) / "nexus")
    return _private(state_dir() / "run")


def _private(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise NexusError(f"{folder} belongs to another user; refusing to use it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder
