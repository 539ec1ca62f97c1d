"""Atomic file writes, for the host and every plugin: the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from pathlib import Path

from nexus_core.errors import ChangedMeanwhile

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_TMPFILE = getattr(os, "O_TMPFILE", 0)  # Linux only
STALE_AFTER = 60.0  # seconds: a temp file this old belongs to a write that was killed, not to one under way


def atomic_write(
    path: Path,
    data: bytes | str,
    *,
    mode: int | None = None,
    new_mode: int | None = None,
    expect: tuple[int, int, int] | None = None,
) -> None:
    """Replace ``path`` with ``data`` (str is written as UTF-8) through a temp file in the same folder.

    The temp file (``.<name>.XXXX.tmp``) is fsynced, then renamed over ``path`` with
    one ``os.replace``, so a crash at any point leaves the old file or the new one.
    An existing file keeps its permission bits; a new one gets ``new_mode`` (Nexus's own files: 0o600, see
    ``fs.modes``), else 0o666 minus the umask, as a file the user asked for. With ``expect`` (the
    ``(st_ino, st_mtime_ns, st_size)`` of the file as it was read), ``ChangedMeanwhile`` is raised instead of
    replacing a file another program changed since: a read-modify-write never drops an editor's change.
    """
    folder = os.open(path.parent, _DIR_FLAGS)
    try:
        write_at(folder, path.name, data, mode=mode, new_mode=new_mode, expect=expect)
    finally:
        os.close(folder)


def write_at(
    dir_fd: int,
    name: str,
    data: bytes | str,
    *,
    mode: int | None = None,
    new_mode: int | None = None,
    expect: tuple[int, int, int] | None = None,
) -> bool:
    """``atomic_write`` of the entry ``name`` in the folder open as ``dir_fd``; True when it was created.

    Nothing here follows a symlink: the temp file is created with ``O_EXCL | O_NOFOLLOW``
    and the rename replaces the entry itself, so a symlink planted at ``name`` is
    replaced, never written through. On Linux the content is written to an unnamed
    file (``O_TMPFILE``) that gets its temp name only once complete, just before the
    rename: a server killed while writing leaves nothing in the user's folder.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    _sweep_at(dir_fd, f".{name[:200]}.")
    try:
        old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise IsADirectoryError(21, "Is a directory", name)
    if mode is None and old is not None and stat.S_ISREG(old.st_mode):
        mode = stat.S_IMODE(old.st_mode)
    elif mode is None:
        mode = new_mode if new_mode is not None else 0o666 & ~_umask()
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"  # within NAME_MAX whatever the name
    fd = _unnamed(dir_fd)
    named = fd is None
    if fd is None:  # no O_TMPFILE here (another system, a file system without it): a named temp file
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode)
            if not named:
                # linkat through /proc gives the finished file a name (AT_EMPTY_PATH would need privileges)
                os.link(f"/proc/self/fd/{f.fileno()}", tmp, dst_dir_fd=dir_fd, follow_symlinks=True)
                named = True
        if expect is not None and _identity_at(dir_fd, name) != expect:  # checked last: the window is microseconds
            raise ChangedMeanwhile(f"'{name}' was changed by another program while it was being edited")
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if named:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
        raise
    return old is None


def _identity_at(dir_fd: int, name: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _unnamed(dir_fd: int) -> int | None:
    """A new unnamed file in the folder, or None where ``O_TMPFILE`` or ``/proc`` (to name it later) is missing."""
    if not _TMPFILE or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", _TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # not supported by this file system or kernel
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


def _sweep_at(dir_fd: int, prefix: str) -> None:
    """``sweep`` of one name's leftovers in the folder open as ``dir_fd`` (which may be an O_PATH descriptor)."""
    now = time.time()
    with contextlib.suppress(OSError):
        listing = os.open(".", _DIR_FLAGS, dir_fd=dir_fd)
        try:
            with os.scandir(listing) as it:
                names = [e.name for e in it if e.name.startswith(prefix) and e.name.endswith(".tmp")]
        finally:
            os.close(listing)
        for tmp in names:
            with contextlib.suppress(OSError):
                info = os.stat(tmp, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_AFTER:
                    os.unlink(tmp, dir_fd=dir_fd)


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads; Linux exposes it here.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current
