"""Opening files race-free: the file opened is the one the checked path names, or the call fails.

``PathPolicy.resolve()`` checks a path; a caller that opens it afterwards can be
fooled by a folder swapped for a symlink in between (check, then use). So here,
after resolving, every component below the root is opened relative to the
descriptor of the one above it (``openat``), with ``O_NOFOLLOW``: a symlink
anywhere along the way fails the call instead of being followed. Then the opened
file itself is checked with ``fstat``: a regular file (or a folder, where one is
asked for) and, when it has other names, not a hard link to a secret
(``hardlinks``). Writes go through the folder's descriptor the same way: a temp
file created with ``O_EXCL`` in it and renamed over the entry (``atomic.write_at``).

``PathPolicy`` gets these as methods (``open_read``, ``open_folder``,
``write_file``); plugins use them instead of opening resolved paths themselves.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from nexus_core.access.denied import PermissionDenied
from nexus_core.fs.atomic import write_at
from nexus_core.fs.hardlinks import refusal
from nexus_core.fs.nonblocking import Blocking, on_loop

if TYPE_CHECKING:
    from nexus_core.fs.paths import PathPolicy

# O_PATH (Linux) opens a folder for openat without needing read permission on it.
_DIR = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
# O_NONBLOCK: a FIFO planted under a checked name must not hang the open.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class Raced(PermissionDenied):
    """A component of a checked path became a symlink (or stopped being a folder) while it was opened."""


class OpenedFile:
    """A file (or folder) opened race-free: its descriptor, real path and ``fstat``."""

    def __init__(self, fd: int, path: Path, info: os.stat_result) -> None:
        self.fd, self.path, self.stat = fd, path, info
        self._file: BinaryIO | None = None

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.stat.st_mode)

    @property
    def file(self) -> BinaryIO:
        """A buffered binary reader over the descriptor (it owns it from then on)."""
        if self._file is None:
            self._file = os.fdopen(self.fd, "rb")
        return self._file

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (-1: to the end), as ``file.read``.

        A regular file is first asked for the size ``fstat`` saw plus one byte: a read of ``size`` bytes
        allocates that many (a cap such as max_file_size, 50 MB) before it shrinks to what the file holds,
        ~40 us for a file of a few KB. Only a file grown since is read on, up to ``size``.
        """
        seen = self.stat.st_size + 1
        if not 0 <= seen < size or not stat.S_ISREG(self.stat.st_mode):
            return self.file.read(size)
        data = self.file.read(seen)
        return data if len(data) < seen else data + self.file.read(size - seen)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> OpenedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_beneath(root: Path, path: Path, flags: int = _READ, mode: int = 0o666, *, shown: str = "") -> int:
    """A descriptor of ``path`` (real, inside ``root``), every component opened without following symlinks."""
    parts = _below(root, path)
    with _folder(root, parts[:-1], create=False, shown=shown or str(path)) as parent:
        if not parts:
            return os.open(root, (flags & ~os.O_CREAT) | os.O_NOFOLLOW | os.O_CLOEXEC)
        return _open_at(parent, parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, path, shown or str(path))


def _below(root: Path, path: Path) -> tuple[str, ...]:
    """``path.relative_to(root).parts`` for a normalised ``path``, on strings (pathlib parses every time)."""
    top, text = str(root), str(path)
    if text == top:
        return ()
    prefix = top if top.endswith("/") else top + "/"
    if not text.startswith(prefix):
        raise ValueError(f"{text!r} is not in the subpath of {top!r}")
    return tuple(text[len(prefix) :].split("/"))


def open_folder_beneath(root: Path, folder: Path, *, create: bool = False, shown: str = "") -> int:
    """A descriptor of the folder ``folder`` (inside ``root``); missing folders are made when ``create``."""
    with _folder(root, folder.relative_to(root).parts, create=create, shown=shown or str(folder)) as fd:
        return os.dup(fd)


@contextmanager
def _folder(root: Path, parts: tuple[str, ...], *, create: bool, shown: str) -> Iterator[int]:
    fd = os.open(root, _DIR)
    try:
        for i, name in enumerate(parts):
            path = root.joinpath(*parts[: i + 1])
            try:
                nxt = _open_at(fd, name, _DIR, 0, path, shown)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened below, not followed
                    os.mkdir(name, 0o777, dir_fd=fd)
                nxt = _open_at(fd, name, _DIR, 0, path, shown)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _open_at(dir_fd: int, name: str, flags: int, mode: int, path: Path, shown: str) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(dir_fd, name):
            raise Raced(
                f"permission denied: '{shown}' changed while it was opened ('{path}' is now a symlink); "
                "nothing was read or written"
            ) from None
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return True  # it changed again: still not what was checked


def _checked(
    fd: int, real: Path, root: Path, raw: str, denied: Callable[[Path], str | None], *, folders: bool
) -> OpenedFile:
    """``fd`` (just opened at ``real``) as an ``OpenedFile`` after ``open_read``'s checks on what it is."""
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode) and not folders:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(real))
        if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
            raise PermissionDenied(f"permission denied: '{raw}' is not a regular file")
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and on_loop():  # refusal() may list the home folder
            raise Blocking(raw)
        if stat.S_ISREG(info.st_mode) and (reason := refusal(fd, info, real, root, denied)):
            raise PermissionDenied(f"permission denied: '{raw}' {reason}")
        if stat.S_ISREG(info.st_mode):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return OpenedFile(fd, real, info)


class SafeOpening:
    """The race-free openings of ``PathPolicy`` (mixed into it): resolve, then open beneath the root."""

    def open_read(self: PathPolicy, path: str | os.PathLike[str], *, folders: bool = False) -> OpenedFile:
        """Open a regular file (or, with ``folders``, a folder) for reading; ``PermissionDenied`` saying why not.

        ``FileNotFoundError`` and the like pass through with the real path as their filename.
        """
        raw = os.fspath(path)
        real = self.resolve(raw)
        root = self._root_for(real)
        return _checked(open_beneath(root, real, shown=raw), real, root, raw, self.denied, folders=folders)

    def open_read_as_written(self: PathPolicy, path: str | os.PathLike[str]) -> OpenedFile:
        """``open_read`` for an absolute, normalised path that is most likely its own real path (one a walk of
        the roots found, like ripgrep's): the same file, the same checks, fewer system calls.

        The path is checked as written and opened from its root one folder at a time without following a
        symlink (as ``open_read`` opens); when that works, no symlink lies on the way, so the path is its real
        path and resolving it first (an ``lstat`` of every folder from ``/``) would change nothing. Anything
        else (a symlink, a refusal, a file that is not a plain regular one) goes through ``open_read`` itself,
        with its own answer and message.
        """
        raw = os.fspath(path)
        if (
            on_loop()
            or not raw.startswith("/")
            or raw.startswith("//")
            or "\x00" in raw
            or os.path.normpath(raw) != raw
        ):
            return self.open_read(raw)
        lexical = Path(raw)
        root = self.root_of(lexical)
        if root is None or self.denied(lexical) or root == lexical:
            return self.open_read(raw)
        try:
            fd = open_beneath(root, lexical, shown=raw)
        except (OSError, Raced):
            return self.open_read(raw)
        try:
            info = os.fstat(fd)
            plain = stat.S_ISREG(info.st_mode) and info.st_nlink == 1  # else open_read's own checks answer
            if plain:
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        if not plain:
            os.close(fd)
            return self.open_read(raw)
        return OpenedFile(fd, lexical, info)

    def open_folder(
        self: PathPolicy, path: str | os.PathLike[str], *, write: bool = False, create: bool = False
    ) -> int:
        """A descriptor of a folder inside the roots, for ``dir_fd`` calls; made (with its parents) when ``create``."""
        raw = os.fspath(path)
        real = self.resolve(raw, write=write)
        return open_folder_beneath(self._root_for(real), real, create=create, shown=raw)

    def write_file(
        self: PathPolicy,
        path: str | os.PathLike[str],
        data: bytes | str,
        *,
        create_dirs: bool = False,
        overwrite: bool = True,
        mode: int | None = None,
    ) -> bool:
        """Atomically replace (or create) a file inside the roots, through its folder's descriptor.

        Checks ``path`` for writing first; missing folders are made when ``create_dirs``;
        an existing file is ``FileExistsError`` unless ``overwrite`` (hold ``locked(path)``
        around this when that check matters). Returns whether the file was created.
        """
        raw = os.fspath(path)
        real = self.resolve(raw, write=True)
        root = self._root_for(real)
        if real == root:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(real))
        folder = open_folder_beneath(root, real.parent, create=create_dirs, shown=raw)
        try:
            if not overwrite and _exists(folder, real.name):
                raise FileExistsError(errno.EEXIST, "File exists", str(real))
            return write_at(folder, real.name, data, mode=mode)
        finally:
            os.close(folder)

    def _root_for(self: PathPolicy, real: Path) -> Path:
        root = self.root_of(real)
        if root is None:  # resolve() returned it, so a root holds it; a roots change in between is a refusal
            raise PermissionDenied(f"permission denied: '{real}' is outside the allowed roots")
        return root
