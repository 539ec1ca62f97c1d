"""Locks that serialise every read-modify-write of a shared file, across threads and processes.

Two calls that each read a file, change it and write it back lose one change
when they interleave, whether they run in two threads of one server or in two
servers. ``locked(path)`` holds an exclusive ``flock`` on a lock file named
after the target's real path, in the user's private runtime folder (never
beside the target: the lock must outlive the atomic rename that replaces the
target's inode). ``flock`` locks belong to an open file, so two threads of one
process exclude each other too.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from nexus_core.runtime import runtime_dir


@contextlib.contextmanager
def locked(target: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive lock of ``target`` (a file, or any key such as a folder) for the block."""
    path = lock_path(target)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def lock_path(target: str | os.PathLike[str]) -> Path:
    """Where ``locked`` keeps the lock file of ``target`` (for tests and diagnostics)."""
    real = os.path.realpath(os.fspath(target)).encode("utf-8", "surrogateescape")
    return runtime_dir() / "locks" / f"{hashlib.sha256(real).hexdigest()[:32]}.lock"
