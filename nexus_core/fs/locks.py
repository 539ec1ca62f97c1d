"""Locks that serialise every read-modify-write of a shared file, across threads and processes.

Two calls that each read a file, change it and write it back lose one change
when they interleave, whether they run in two threads of one server or in two
servers. ``locked(path)`` holds an exclusive ``flock`` on a lock file named
after the target's real path, in the user's private runtime folder (never
beside the target: the lock must outlive the atomic rename that replaces the
target's inode). ``flock`` locks belong to an open file, so two threads of one
process exclude each other too; within one thread the lock is re-entrant.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from nexus_core.config.folders import runtime_dir
from nexus_core.errors import NexusError

LOCK_TIMEOUT = float(os.environ.get("NEXUS_LOCK_TIMEOUT") or 30)  # seconds a lock is waited for
_held = threading.local()  # per thread: lock path -> [descriptor, depth]


class locked:
    """Hold the exclusive lock of ``target`` (a file, or any key such as a folder) for a ``with`` block.

    The object may be kept and entered again (``self.lock = locked(folder)``; ``with self.lock:``).
    """

    def __init__(self, target: str | os.PathLike[str]) -> None:
        self.path = lock_path(target)

    def __enter__(self) -> None:
        held: dict[Path, list[int]] = _held.__dict__.setdefault("locks", {})
        if self.path in held:
            held[self.path][1] += 1
            return
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            flock_within(fd, fcntl.LOCK_EX, self.path)
        except BaseException:
            os.close(fd)
            raise
        held[self.path] = [fd, 1]

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        held: dict[Path, list[int]] = _held.__dict__["locks"]
        entry = held[self.path]
        entry[1] -= 1
        if entry[1] == 0:
            del held[self.path]
            os.close(entry[0])  # closing releases the lock


def flock_within(fd: int, operation: int, path: os.PathLike[str] | str, timeout: float | None = None) -> None:
    """``flock`` that gives up after ``timeout`` seconds (``NEXUS_LOCK_TIMEOUT``) with a clear error: a lock
    held for ever (a stuck process) must fail the call that waits for it, not hang it."""
    deadline = time.monotonic() + (LOCK_TIMEOUT if timeout is None else timeout)
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() >= deadline:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                raise NexusError(f"timed out waiting for the lock {path}: another process holds it") from None
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def lock_path(target: str | os.PathLike[str]) -> Path:
    """Where ``locked`` keeps the lock file of ``target`` (for tests and diagnostics)."""
    real = os.path.realpath(os.fspath(target)).encode("utf-8", "surrogateescape")
    return runtime_dir() / "locks" / f"{hashlib.sha256(real).hexdigest()[:32]}.lock"
