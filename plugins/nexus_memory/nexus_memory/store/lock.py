"""One process per embedded Chroma directory.

Embedded Chroma keeps its index in the process that opened it: a second
process writing the same folder gets a diverging copy and, in the end, a
corrupt index. So the first process takes an exclusive ``flock`` on a lock
file beside the store, writes its pid in it, and keeps it until it exits (the
kernel releases it then, even after a crash). Hosts inside that process share
it; another process is told which pid holds it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

_held: dict[Path, int] = {}  # lock file -> the descriptor that holds it, for this process's lifetime
_guard = threading.Lock()


class Held(Exception):
    """Another process holds the lock."""

    def __init__(self, path: Path, pid: int | None) -> None:
        super().__init__(f"{path} is held by process {pid if pid else '(unknown pid)'}")
        self.path = path
        self.pid = pid


def hold(path: Path) -> None:
    """Take the lock at ``path`` for the rest of this process's life; raise ``Held`` if another process has it."""
    path = path.resolve()
    with _guard:
        if path in _held:
            return
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid_in(fd)
            os.close(fd)
            raise Held(path, pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held[path] = fd


def _pid_in(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def holder(pid: int | None) -> str:
    """Who holds the store, as a user can find it: the process and its command line."""
    if not pid:
        return "another process"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return f"process {pid}"
    command = " ".join(a.decode(errors="replace") for a in argv)
    if "server run --key" in command:
        return f"another shared Nexus server (pid {pid}, another config or install: {command[:300]})"
    return f"process {pid} ({command[:300]})"
