"""Whether anything changed in the graph folder since it was read, told by the kernel (Linux inotify).

A search on the event loop must know that the index still holds what is on disk; asking with a ``stat`` of
every file and folder (27 for a graph of 1,000 entities) cost more than the search itself. Instead, once the
index is read, every folder of the listing and every file read is watched: a change to any of them, from any
process and through any name (a file's own watch sees a write through another hard link), queues an event,
and one ``read`` on the watch tells whether one came. A folder renamed or removed is an event too, and the
graph folder's own identity is checked each time (a symlink on its path pointed elsewhere). Watches are armed
after a read, then everything is compared once more with its ``stat`` (a change between the read and the
arming is seen there); until that holds, the caller asks ``stat`` as before. Where inotify cannot be had
(another system, the user's watch limits reached), ``available`` is False and nothing changes for the caller.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import weakref
from collections.abc import Iterable
from pathlib import Path

# inotify(7): a file changed (written, truncated, its attributes or links), an entry made, removed or renamed
# in a folder, the watched thing itself removed or renamed. The kernel adds IN_IGNORED and IN_Q_OVERFLOW.
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF
)  # fmt: skip

_libc: ctypes.CDLL | None = None
_watches: weakref.WeakSet[Watch] = weakref.WeakSet()


def _inotify() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform == "linux":
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.inotify_init1  # noqa: B018
            libc.inotify_add_watch  # noqa: B018
        except (OSError, AttributeError):
            return None
        _libc = libc
    return _libc


class Watch:
    """The folders and files of one reading of the graph folder, watched for any change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd = -1
        self._identity: tuple[int, int] | None = None
        self.available = _inotify() is not None
        _watches.add(self)

    def arm(self, folders: Iterable[Path], files: Iterable[Path]) -> bool:
        """Watch these (dropping what was watched); False when they cannot all be watched."""
        self.close()
        libc = _inotify()
        if libc is None or not self.available:
            return False
        try:
            identity = os.stat(self.root)
        except OSError:
            return False
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            self.available = ctypes.get_errno() not in (errno.EMFILE, errno.ENFILE, errno.ENOSYS)
            return False
        for path in (*folders, *files):
            if libc.inotify_add_watch(fd, os.fsencode(path), MASK) >= 0:
                continue
            error = ctypes.get_errno()
            if error in (errno.ENOENT, errno.ENOTDIR):  # not there (relations/ before the first): its parent's
                continue  # watch sees it come; a file gone since the listing fails the caller's check after arming
            if error == errno.ENOSPC:  # the user's watch limit: stat from now on
                self.available = False
            os.close(fd)
            return False
        self._fd, self._identity = fd, (identity.st_dev, identity.st_ino)
        return True

    def unchanged(self) -> bool:
        """Whether nothing watched changed since ``arm`` (one ``read``, one ``stat``); False when not armed."""
        if self._fd < 0:
            return False
        try:
            os.read(self._fd, 4096)
        except BlockingIOError:  # no event queued
            try:
                identity = os.stat(self.root)
            except OSError:
                identity = None
            if identity is not None and (identity.st_dev, identity.st_ino) == self._identity:
                return True
        except OSError:
            pass
        self.close()  # something changed: watched again after the next full read
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def forget(self) -> None:
        """In a forked child: the descriptor's queue is shared with the parent, whose events it would take."""
        self._fd = -1

    def __del__(self) -> None:
        self.close()


def _forget_all() -> None:
    for watch in list(_watches):
        watch.forget()


os.register_at_fork(after_in_child=_forget_all)
