"""The JSON Lines folder on disk: where each record goes, the lock, appends, and reading what was appended.

Layout under the graph folder::

    <category>/entities.jsonl        one entity per line, one file per category folder
    relations/<YYYY>/<MM>.jsonl      one relation per line, by the month it was made

The lock every writing process takes lives in the user's private lock folder (``lock_file``), not here: a
lock file in a folder others can read is one they can open and ``flock``, freezing every writer. It is
waited for at most ``NEXUS_LOCK_TIMEOUT`` seconds, then the call fails with a clear error.

Nothing is ever rewritten. An append is one ``os.write`` of complete lines
with ``O_APPEND`` under an exclusive ``flock``; if the write comes up short
(disk full), the file is truncated back to where it was, so a line is on disk
whole or not at all. Readers take the shared lock, and tolerate a last line
without its newline (a writer that crashed mid-way under another tool): it is
reported and skipped, and the next append starts on a fresh line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from nexus_core import NexusError, flock_within, lock_path, private_folder
from nexus_graph.records import GraphError

ENTITY_FILE = "entities.jsonl"
RELATIONS_DIR = "relations"
LOCK_FILE = ".lock"
YEAR_RE = re.compile(r"^\d{4}\Z")
MONTH_FILE_RE = re.compile(r"^(0[1-9]|1[0-2])\.jsonl\Z")
# A longer line is skipped unread (a hand-made file); the plugin's own records are far shorter.
MAX_LINE_BYTES = 1024 * 1024


def entity_file(root: Path, category: str) -> Path:
    return root / category / ENTITY_FILE


def relation_file(root: Path, created: str) -> Path:
    """``relations/2026/11.jsonl`` for a timestamp ``2026-11-...``."""
    return root / RELATIONS_DIR / created[:4] / f"{created[5:7]}.jsonl"


def dumps(record: dict[str, Any]) -> bytes:
    """One record as one line: compact, UTF-8, never containing a raw newline (JSON escapes them)."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def lock_file(root: Path) -> Path:
    """The graph folder's lock file: in the user's private lock folder (``nexus_core.lock_path``)."""
    return lock_path(root.resolve() / LOCK_FILE)


_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
# (home, the real path the lock stands for) -> its lock file, once its folders were checked and made.
_opened_before: dict[tuple[str, str], Path] = {}


def _open_lock(root: Path) -> int:
    """A descriptor of the graph folder's lock file, made (with the graph folder) when missing.

    The lock file's folders are checked and made the first time only: on every read they cost a search_knowledge
    call ~10 system calls (two realpaths, five mkdirs). The real path is still taken each time, so a folder
    moved behind a symlink gets its own lock as in any other process; a lock folder removed meanwhile fails the
    open, and everything is then checked and made again.
    """
    key = (os.environ.get("HOME", ""), os.path.realpath(root / LOCK_FILE))
    known = _opened_before.get(key)
    if known is not None:
        if not os.path.exists(root):
            private_folder(root)
        with contextlib.suppress(OSError):
            return os.open(known, _LOCK_FLAGS, 0o600)
        del _opened_before[key]
    private_folder(root)
    # In the user's private lock folder, not beside the graph: a lock file others can open, they can flock.
    path = lock_path(key[1])
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, _LOCK_FLAGS, 0o600)
    if len(_opened_before) >= 64:
        _opened_before.clear()
    _opened_before[key] = path
    return fd


@contextlib.contextmanager
def locked(root: Path, *, exclusive: bool, wait: bool = True) -> Iterator[bool]:
    """Hold the graph folder's lock: exclusive for writers, shared for readers.

    Yields whether it is held: False only with ``wait=False`` when another process holds it exclusively.
    """
    fd: int | None = None
    try:
        fd = _open_lock(root)
    except OSError as exc:
        if exclusive:
            raise GraphError(f"cannot lock the graph folder {root} for writing: {exc.strerror}") from None
    if fd is None:
        yield True  # a folder we may not write to: read unlocked (a line mid-append then reads as truncated, briefly)
        return
    try:
        operation = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            if wait:
                flock_within(fd, operation, root / LOCK_FILE)
            else:
                fcntl.flock(fd, operation | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except NexusError as exc:
            raise GraphError(str(exc)) from None
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the lock


class KeptLock:
    """The graph folder's lock file kept open for a reader on the event loop that only asks whether a writer holds
    it at this moment (``free``): without the real path taken, the file opened and closed each time (~30 us). The
    caller keeps it only while the folder is the same one (its watch holds); a lock file removed since is not
    trusted."""

    def __init__(self) -> None:
        self._fd = -1

    @property
    def kept(self) -> bool:
        return self._fd >= 0

    def keep(self, root: Path) -> None:
        self.close()
        with contextlib.suppress(OSError):
            self._fd = _open_lock(root)

    def free(self) -> bool:
        """Whether no writer holds the lock now (taken shared and let go at once); False when one does."""
        try:
            if os.fstat(self._fd).st_nlink == 0:  # removed (a cleaner of old files): others lock another file
                self.close()
                return False
            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # BlockingIOError included: a writer holds it
            return False
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


# O_NONBLOCK: a FIFO put where a graph file goes must fail the call, not hang it with the lock held.
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC


def append_lines(path: Path, lines: list[bytes], *, durable: bool = True) -> None:
    """Append complete lines with one write. Call it under the exclusive lock.

    A file whose last line lacks its newline (a crashed writer) gets one first,
    so the damaged line stays a line of its own and the new ones stay intact.
    """
    long = next((len(line) for line in lines if len(line) > MAX_LINE_BYTES), 0)
    if long:
        raise GraphError(f"a record of {long} bytes is over the {MAX_LINE_BYTES} a line may have; nothing was written")
    private_folder(path.parent)
    try:
        fd = os.open(path, _APPEND_FLAGS | os.O_CREAT, 0o600)  # the graph is the user's alone
    except OSError as exc:  # ENXIO: a FIFO nobody reads; ENOSPC, EACCES, ...
        raise GraphError(f"could not append to {path}: {exc.strerror}; nothing was written") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GraphError(f"{path} is not a regular file; nothing was written")
        size = st.st_size
        data = b"".join(lines)
        if size and _last_byte(path, size) != b"\n":
            data = b"\n" + data
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            if durable:
                os.fsync(fd)
        except OSError as exc:
            os.ftruncate(fd, size)  # nothing half-written stays behind
            raise GraphError(f"could not append to {path.parent.name}/{path.name}: {exc}; nothing was written") from exc
    finally:
        os.close(fd)


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as f:
        f.seek(size - 1)
        return f.read(1)


@dataclass
class FileState:
    """How far a file has been read: the byte offset after the last complete line, and its line count."""

    ino: int
    size: int
    mtime_ns: int
    offset: int = 0
    lines: int = 0


@dataclass
class Line:
    number: int
    data: Any = None
    error: str | None = None


def read_new_lines(path: Path, state: FileState) -> tuple[list[Line], Line | None]:
    """The complete lines after ``state.offset`` (parsed, or with the parse error), and a partial last line.

    ``state`` advances past the complete lines only, so a partial line is read
    again, and parsed once its writer finishes it. A line over ``MAX_LINE_BYTES`` is
    skipped unread, so a hand-made file costs bounded memory; a file that is not a regular
    one (a FIFO, a device) is not read at all: it comes back as the partial line, with why.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return [], Line(state.lines + 1, error=f"cannot be read: {exc.strerror}")
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return [], Line(state.lines + 1, error="not a regular file; not read")
        f.seek(state.offset)
        lines: list[Line] = []
        partial = None
        for raw in iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""):
            size = len(raw) if raw.endswith(b"\n") else _rest_of_line(f, raw)
            if size is None:  # no newline before the end: a writer still at it, or one that crashed
                if raw.strip():
                    partial = Line(state.lines + 1, error="truncated: the last line has no newline")
                break
            state.offset += size
            state.lines += 1
            if size > MAX_LINE_BYTES:
                lines.append(Line(state.lines, error=f"line of {size} bytes, over the {MAX_LINE_BYTES} read; skipped"))
            elif raw.strip():
                lines.append(_parse(state.lines, raw))
    return lines, partial


def _rest_of_line(f: BinaryIO, head: bytes) -> int | None:
    """The length of a line that ``head`` began, read past in blocks; None when the file ends first."""
    if len(head) <= MAX_LINE_BYTES:
        return None
    size = len(head)
    while True:
        block = f.readline(1 << 20)
        size += len(block)
        if not block.endswith(b"\n"):
            if not block:
                return None
            continue
        return size


def _parse(number: int, raw: bytes) -> Line:
    try:
        return Line(number, json.loads(raw))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: [[[[... nested too deep
        return Line(number, error=f"not valid JSON ({type(exc).__name__}: {exc})"[:300])


def entity_files(root: Path) -> dict[str, Path]:
    """Every ``<folder>/entities.jsonl`` under the graph folder, by folder name."""
    found: dict[str, Path] = {}
    with contextlib.suppress(FileNotFoundError), os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir() and entry.name != RELATIONS_DIR and not entry.name.startswith("."):
                path = Path(entry.path) / ENTITY_FILE
                if path.is_file():
                    found[entry.name] = path
    return found


def relation_files(root: Path) -> list[Path]:
    """Every ``relations/YYYY/MM.jsonl``, oldest first."""
    found: list[Path] = []
    base = root / RELATIONS_DIR
    with contextlib.suppress(FileNotFoundError), os.scandir(base) as years:
        for year in years:
            if year.is_dir() and YEAR_RE.match(year.name):
                with os.scandir(year.path) as months:
                    found += [Path(m.path) for m in months if m.is_file() and MONTH_FILE_RE.match(m.name)]
    return sorted(found)


FolderStamp = tuple[int, int] | None
# Folder timestamps are coarse (a file created within the same tick leaves them unchanged), so a listing
# is reused only when every folder it came from was last changed this long before the listing started.
SETTLED_NS = 2_000_000_000


def listing_folders(root: Path) -> list[Path]:
    """The folders whose entries decide what ``entity_files`` and ``relation_files`` find."""
    found = [root, root / RELATIONS_DIR]
    for base in found[:2]:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(base) as entries:
            found += [Path(e.path) for e in entries if e.is_dir() and not e.name.startswith(".")]
    return found


def folder_stamps(folders: list[Path]) -> tuple[FolderStamp, ...]:
    """(inode, mtime) of each folder, None when it is not there: a new or removed entry changes its mtime."""
    stamps: list[FolderStamp] = []
    for folder in folders:
        try:
            st = os.stat(folder)
        except OSError:
            stamps.append(None)
        else:
            stamps.append((st.st_ino, st.st_mtime_ns))
    return tuple(stamps)
