"""Running a small tool body on the event loop where its file system work cannot hang.

Tool bodies run in a worker thread, so a call that blocks (a network file
system whose server is gone, a FUSE daemon that hangs, an automount that
waits) stalls that call and not every session of the shared server. For a
small read the hand-over costs more than the work (read_file of a 10 KB file:
~100 us against ~60 us), so a body may ask to run on the loop
(``run_nonblocking``). There, each step that touches the file system checks
first that it cannot block and raises ``Blocking`` when it might; the body
then runs again from the start in a worker thread. A body run this way must
not change anything before its last check.

The rule for a path (``plain_local``): absolute and normalised, and

- no mount whose mount point is the path or one of its folders has a file
  system type outside ``LOCAL_TYPES`` (disks and memory: ext4, xfs, btrfs,
  tmpfs, overlay, ...; nfs, cifs, fuse.*, 9p, autofs and any type not listed
  are not local). Every such mount counts, not only the one that serves the
  path, so a local mount hidden under a remote one cannot pass. The table
  comes from /proc/self/mountinfo and is read again when the kernel reports a
  change (``poll`` on it, one syscall a call); without it nothing is local;
- no symlink on the way: each folder and the path itself are ``lstat``-ed
  (on local file systems, by the rule above, in order from ``/``) and a
  symlink, whose target is not checked, sends the body to the thread;
- callers also refuse ``..`` (resolved after symlinks, so not lexically) and
  ``~user`` (a user lookup may ask a directory server).

Left open: a mount made between the check and the step (microseconds), a
prefix of a root swapped for a symlink in that window, and a local disk that
hangs (which hangs the peers' servers as well).
"""

from __future__ import annotations

import contextvars
import os
import re
import select
import stat
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

import anyio.to_thread

T = TypeVar("T")

MOUNTINFO = "/proc/self/mountinfo"
# File systems on a local disk or in memory: their calls wait at most for the disk. FUSE (fuse, fuseblk,
# fuse.*), network file systems, 9p/virtiofs (served by another process) and autofs (a lookup mounts) are not.
LOCAL_TYPES = frozenset(
    {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "f2fs", "jfs", "reiserfs", "nilfs2", "zfs",
        "tmpfs", "ramfs", "overlay", "squashfs", "erofs", "iso9660", "udf", "vfat", "msdos", "exfat",
        "ntfs3", "hfsplus", "devtmpfs", "devpts", "proc", "sysfs", "cgroup", "cgroup2", "mqueue",
        "securityfs", "debugfs", "tracefs", "configfs", "bpf", "pstore", "hugetlbfs", "efivarfs",
        "binfmt_misc", "fusectl", "nsfs", "rpc_pipefs", "selinuxfs",
    }
)  # fmt: skip

_on_loop: contextvars.ContextVar[bool] = contextvars.ContextVar("nexus_on_loop", default=False)
_ESCAPED = re.compile(r"\\([0-7]{3})")


class Blocking(Exception):
    """A body running on the event loop reached a step that might block: run it in a worker thread instead."""


def on_loop() -> bool:
    """Whether the running body is on the event loop (``run_nonblocking``): check before a step that may block."""
    return _on_loop.get()


async def run_nonblocking(fn: Callable[[], T]) -> T:
    """``fn()`` on the event loop; from the start in a worker thread when it raises ``Blocking``."""
    token = _on_loop.set(True)
    try:
        return fn()
    except Blocking:
        pass
    finally:
        _on_loop.reset(token)
    return await anyio.to_thread.run_sync(fn)


def parse_mountinfo(text: str) -> list[tuple[str, str]] | None:
    """(mount point, file system type) of each line of a mountinfo file; None when a line cannot be read."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            dash = fields.index("-", 6)  # optional fields end with "-", then the type
            mounts.append((_ESCAPED.sub(lambda m: chr(int(m.group(1), 8)), fields[4]), fields[dash + 1]))
        except (ValueError, IndexError):
            return None
    return mounts


def remote_points(mounts: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The mount points whose file system is not a local one (``LOCAL_TYPES``)."""
    return tuple(sorted({point for point, kind in mounts if kind not in LOCAL_TYPES}))


class MountTable:
    """The mount points of file systems that may block, kept current with the kernel's change reports."""

    def __init__(self, path: str = MOUNTINFO) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._poll: select.poll | None = None
        self._fd = -1
        self._mounts: list[tuple[str, str]] | None = None  # None: unknown, so nothing is local
        self._remote: tuple[str, ...] | None = None

    def remote(self) -> tuple[str, ...] | None:
        """The mount points of non-local file systems; None when the table cannot be read."""
        with self._lock:
            if self._poll is None:
                self._open()
            elif self._changed():
                self._read()
            return self._remote

    def types(self, path: str) -> list[str]:
        """The file system types mounted at ``path`` or above it, top first."""
        self.remote()
        return [kind for point, kind in self._mounts or () if _covers(point, path)]

    def local(self, path: str) -> bool:
        """Whether every mount at ``path`` or above it (absolute, normalised) is a local file system."""
        remote = self.remote()
        if remote is None:
            return False
        return not any(_covers(point, path) for point in remote)

    def _open(self) -> None:
        self._poll = select.poll()
        try:
            self._fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
            self._poll.register(self._fd, select.POLLPRI)
        except OSError:  # changes could not be seen: nothing is local
            self._fd, self._mounts, self._remote = -1, None, None
            return
        self._read()

    def forget(self) -> None:
        """Start over (in a forked child: the watched descriptor's change reports are shared with the parent)."""
        if self._fd >= 0:
            os.close(self._fd)
        self._lock = threading.Lock()
        self._poll, self._fd, self._mounts, self._remote = None, -1, None, None

    def _changed(self) -> bool:
        if self._fd < 0 or self._poll is None:
            return False
        return any(events & (select.POLLPRI | select.POLLERR) for _, events in self._poll.poll(0))

    def _read(self) -> None:
        try:
            with open(self._path, "rb") as f:
                self._mounts = parse_mountinfo(os.fsdecode(f.read())) or None
        except OSError:
            self._mounts = None
        self._remote = remote_points(self._mounts) if self._mounts else None


def _covers(point: str, path: str) -> bool:
    """Whether a mount at ``point`` lies on the way to ``path`` (both absolute, normalised)."""
    return path == point or point == "/" or path.startswith(point + "/")


MOUNTS = MountTable()
os.register_at_fork(after_in_child=MOUNTS.forget)


def on_local_fs(path: str) -> bool:
    """Whether every mount at ``path`` (absolute, resolved) or above it is a local file system (see the module doc)."""
    return MOUNTS.local(path)


def plain_local(path: str, mounts: MountTable | None = None) -> bool:
    """Whether ``path`` (absolute, normalised) lies on local file systems with no symlink on the way.

    Each folder from the top and then the path are ``lstat``-ed; a missing one, like a symlink, says no
    (the worker thread then resolves it as usual).
    """
    if not path.startswith("/") or path.startswith("//") or not (mounts or MOUNTS).local(path):
        return False
    at = 0
    while at != len(path):
        at = path.find("/", at + 1)
        if at < 0:
            at = len(path)
        try:
            if stat.S_ISLNK(os.lstat(path[:at]).st_mode):
                return False
        except OSError:
            return False
    return True
