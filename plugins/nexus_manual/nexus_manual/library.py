"""Libraries: named folders of Markdown entities, every path checked by the host's path policy.

A library's folder is resolved through ``ctx.paths`` on every call, so a folder
outside the plugin's roots, or a symlink that leads out of them, is refused
even if it changed after the server started. Entity files must then resolve to
a file directly inside that folder: a symlinked entity pointing elsewhere
(another library included) is refused too.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from nexus_core import ChangedMeanwhile, PathPolicy, PermissionDenied, ToolError, atomic_write, locked
from nexus_manual import frontmatter
from nexus_manual.models import Changed
from nexus_manual.names import MANUAL_NAME, check_entity_name
from nexus_manual.sections import Heading, Splice, edit, outline

JOURNEY = "journey.yaml"
_log = logging.getLogger("nexus.manual")
_CACHE_SIZE = 64  # outlines kept, keyed by file identity; a 5 MB file's outline is a few KB

EDIT_ATTEMPTS = 3  # an edit is made again on what another program wrote meanwhile, this many times at most
NEW_FILE = 0o600  # a note Nexus creates is the user's alone (the library folder keeps its own mode)
# Larger files are refused, not read: a 5 MB file already takes a second to parse, and a 200 MB one put in a
# cloned library would hold gigabytes and the call for minutes.
MAX_FILE_BYTES = 16 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO swapped in after the listing must not block


class Unreadable(Exception):
    """A library file that is not read: not a regular file, or over ``MAX_FILE_BYTES``; the text says which."""


def open_file(path: str | Path) -> BinaryIO:
    """``path`` open for reading, never blocking; Unreadable for a FIFO, a device or an oversized file."""
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise Unreadable(f"is {st.st_size / 2**20:.0f} MB, over the {MAX_FILE_BYTES // 2**20} MB a file may have")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_file(path: str | Path) -> bytes | None:
    """A library file's bytes, or None when it cannot be read (gone, unreadable): for scans over every file,
    where one bad file must not hide the others."""
    try:
        with open_file(path) as f:
            return f.read()
    except (OSError, Unreadable):
        return None


@dataclass(frozen=True)
class Doc:
    """One Markdown file as read: its text, front matter split and top-level headings."""

    name: str
    path: Path
    text: str
    parts: frontmatter.Split
    headings: list[Heading]
    stamp: tuple[int, int, int] | None = None  # (inode, mtime, size) as read: a write of an edit expects it

    @property
    def where(self) -> str:
        return f"'{self.name}'"


@dataclass(frozen=True)
class Outline:
    """What is cached per file: its identity, headings, and byte offsets of every section boundary."""

    key: tuple[int, int, int]
    headings: list[Heading]
    body_start: int
    byte_at: dict[int, int]  # character offset -> byte offset, for the boundaries above


def _identity(f: BinaryIO) -> tuple[int, int, int]:
    st = os.fstat(f.fileno())
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _crlf(text: str) -> bool:
    """Whether a file's line breaks are CRLF, as its first one is."""
    first = text.find("\n")
    return first > 0 and text[first - 1] == "\r"


def _as_crlf(text: str) -> str:
    """``text`` with every line break CRLF (a CRLF file is edited as LF and written back so)."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _byte_offsets(text: str, points: set[int]) -> dict[int, int]:
    if text.isascii():
        return {p: p for p in points}
    out, prev, acc = {}, 0, 0
    for p in sorted(points):
        acc += len(text[prev:p].encode("utf-8"))
        out[p], prev = acc, p
    return out


class Library:
    def __init__(self, name: str, folder: str, paths: PathPolicy) -> None:
        self.name = name
        self.folder = Path(folder).expanduser()
        self.paths = paths
        # One writer at a time, across threads and server processes: edits are read-modify-write.
        self.lock = locked(self.folder.absolute())
        self._outlines: OrderedDict[Path, Outline] = OrderedDict()
        self._outlines_lock = threading.Lock()

    # -- paths ----------------------------------------------------------------------

    def root(self) -> Path:
        """The library's real folder, or PermissionDenied / ToolError saying why it cannot be used."""
        try:
            real = self.paths.resolve(self.folder)
        except PermissionDenied as exc:
            raise PermissionDenied(
                f"library '{self.name}' is refused: {exc}. Add its folder to roots in [plugins.manual]."
            ) from None
        if not real.is_dir():
            raise ToolError(f"library '{self.name}': '{self.folder}' does not exist or is not a folder")
        return real

    def entity_path(self, name: str, *, write: bool = False, root: Path | None = None) -> Path:
        """The real path of ``<name>.md``; ``root`` (from ``root()``) saves resolving the folder again in a loop."""
        check_entity_name(name)
        return self._inside(f"{name}.md", write=write, root=root)

    def manual_path(self, *, write: bool = False, root: Path | None = None) -> Path:
        return self._inside(f"{MANUAL_NAME}.md", write=write, root=root)

    def _inside(self, file_name: str, *, write: bool, root: Path | None = None) -> Path:
        root = root or self.root()
        real = self.paths.resolve(root / file_name, write=write)
        if real.parent != root:
            raise PermissionDenied(
                f"permission denied: '{file_name}' in library '{self.name}' resolves to '{real}', "
                "outside the library folder"
            )
        return real

    # -- listing and reading --------------------------------------------------------

    def names(self) -> list[str]:
        """Every entity name, sorted: ``*.md`` files directly in the folder, except meta.md and hidden files."""
        root = self.root()
        found = []
        with os.scandir(root) as entries:
            for entry in entries:
                stem = entry.name[:-3]
                if not entry.name.endswith(".md") or entry.name.startswith(".") or stem == MANUAL_NAME:
                    continue
                try:
                    if self._listed(entry, root):
                        found.append(stem)
                except OSError:  # a symlink loop, a file gone: not an entity, and the others are still listed
                    continue
        return sorted(found)

    def _listed(self, entry: os.DirEntry[str], root: Path) -> bool:
        if entry.is_symlink():
            real = Path(os.path.realpath(entry.path))
            if real.parent != root or not self.paths.allows(real):
                return False  # a symlink out of the library is not one of its entities
        elif self.paths.deny_patterns and not self.paths.allows(Path(entry.path)):
            return False
        return entry.is_file()

    def exists(self, name: str) -> bool:
        return self.entity_path(name).is_file()

    def require(self, names: list[str]) -> list[Path]:
        """The paths of existing entities; one ToolError naming every missing one."""
        paths = [self.entity_path(n) for n in names]
        missing = [n for n, p in zip(names, paths, strict=True) if not p.is_file()]
        if missing:
            raise ToolError(
                f"no entity named {', '.join(repr(m) for m in missing)} in library '{self.name}'; "
                "list_entities shows the names"
            )
        return paths

    def read(self, name: str) -> Doc:
        return self.load(name, self.require([name])[0])

    def read_text(self, name: str, path: Path) -> str:
        """A file's whole text, without parsing its outline (for serving it as it is)."""
        with self._open(name, path) as f:
            return self._decode(name, f.read())

    def load(self, name: str, path: Path) -> Doc:
        """Read a file and its outline; the outline is cached per file identity (inode, mtime, size)."""
        with self._open(name, path) as f:
            key = _identity(f)
            text = self._decode(name, f.read())
        cached = self._cached(path, key) or self._remember(path, key, text)
        return Doc(name, path, text, frontmatter.split(text), cached.headings, key)

    def peek(
        self, name: str, path: Path, pick: Callable[[list[Heading]], list[Heading]], *, front: bool = False
    ) -> tuple[list[Heading], str, list[tuple[Heading, str]]]:
        """The headings, the front matter block (when ``front``) and the text of the sections ``pick`` chooses.

        With the outline cached, only the chosen byte ranges are read: a section of a
        large file costs a seek and a small read, not a parse.
        """
        with self._open(name, path) as f:
            key = _identity(f)
            cached = self._cached(path, key)
            if cached is None:
                text = self._decode(name, f.read())
                cached = self._remember(path, key, text)
                chosen = pick(cached.headings)
                block = text[: cached.body_start] if front else ""
                return cached.headings, block, [(h, text[h.start : h.end]) for h in chosen]
            chosen = pick(cached.headings)
            at = cached.byte_at
            block = self._span(name, f, 0, at[cached.body_start]) if front else ""
            return cached.headings, block, [(h, self._span(name, f, at[h.start], at[h.end])) for h in chosen]

    def _open(self, name: str, path: Path) -> BinaryIO:
        try:
            return open_file(path)
        except FileNotFoundError:
            raise ToolError(f"'{name}' no longer exists in library '{self.name}'") from None
        except Unreadable as exc:
            raise ToolError(f"'{name}' in library '{self.name}' {exc}; it is not read") from None

    def _decode(self, name: str, data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"'{name}' in library '{self.name}' is not UTF-8 text") from None

    def _span(self, name: str, f: BinaryIO, start: int, end: int) -> str:
        f.seek(start)
        return self._decode(name, f.read(end - start))

    def _cached(self, path: Path, key: tuple[int, int, int]) -> Outline | None:
        with self._outlines_lock:
            cached = self._outlines.get(path)
            if cached is None or cached.key != key:
                return None
            self._outlines.move_to_end(path)
            return cached

    def _remember(self, path: Path, key: tuple[int, int, int], text: str) -> Outline:
        body_start = frontmatter.split(text).body_start
        headings = outline(text, body_start)
        points = {0, body_start, len(text), *(h.start for h in headings), *(h.end for h in headings)}
        entry = Outline(key, headings, body_start, _byte_offsets(text, points))
        with self._outlines_lock:
            self._outlines[path] = entry
            while len(self._outlines) > _CACHE_SIZE:
                self._outlines.popitem(last=False)
        return entry

    @staticmethod
    def parse(name: str, path: Path, text: str) -> Doc:
        """A Doc for text about to be written (no cache: it is not on disk yet)."""
        parts = frontmatter.split(text)
        return Doc(name, path, text, parts, outline(text, parts.body_start))

    # -- writing --------------------------------------------------------------------

    def write(self, path: Path, text: str, expect: tuple[int, int, int] | None = None) -> None:
        """Replace the file; with ``expect`` (``Doc.stamp``), ChangedMeanwhile if another program changed it.

        A write that fails (a full disk, a read-only folder) leaves the old file whole and says which file.
        """
        try:
            atomic_write(path, text, new_mode=NEW_FILE, expect=expect)
        except OSError as exc:
            raise ToolError(
                f"could not write '{path.name}' in library '{self.name}': {exc.strerror or exc}; it is unchanged"
            ) from None

    def rewrite(self, doc: Doc, text: str) -> None:
        """Write ``text`` over the entity ``doc`` was read from, in its line breaks; a ToolError, writing nothing,
        when another program changed the file since it was read."""
        if _crlf(doc.text):
            text = _as_crlf(text)
        try:
            self.write(self.entity_path(doc.name, write=True), text, expect=doc.stamp)
        except ChangedMeanwhile:
            raise ToolError(
                f"'{doc.name}' in library '{self.name}' was changed by another program while being edited; "
                "it was not written (read it again and retry)"
            ) from None

    def edit(self, name: str, make: Callable[[Any], tuple[Splice, str]], *, manual: bool = False) -> Changed:
        """Read an entity (or, with ``manual``, the manual: None when it has none yet), apply the edit ``make``
        returns (with the result's message) and write it back, under the library's lock.

        A program that does not take the lock (an editor, ``echo >>``) may write the file meanwhile: the write
        then fails with ChangedMeanwhile instead of dropping that change, and the edit is made again on what
        was written; an exact text no longer there fails then, as it would have had it been read first.
        """
        with self.lock:
            for _attempt in range(EDIT_ATTEMPTS):
                path = self.manual_path(write=True) if manual else self.require([name])[0]
                doc = (self.load(name, path) if path.is_file() else None) if manual else self.load(name, path)
                crlf = doc is not None and _crlf(doc.text)
                if crlf:  # edited as LF, written back as CRLF: no file ends up with mixed line breaks
                    doc = replace(self.parse(name, path, doc.text.replace("\r\n", "\n")), stamp=doc.stamp)
                splice, message = make(doc)
                text = edit(doc.text, doc.headings, doc.parts.body_start, splice) if doc else splice.apply("")
                text = frontmatter.touch(text, add_if_missing=not manual)
                if crlf:
                    text = _as_crlf(text)
                if not manual:
                    path = self.entity_path(name, write=True)
                try:
                    self.write(path, text, expect=doc.stamp if doc else None)
                except ChangedMeanwhile:
                    continue
                return Changed(library=self.name, changed=[name], message=message)
        raise ToolError(
            f"'{name}' in library '{self.name}' kept changing while being edited (another program is writing it); "
            "nothing changed, try again"
        )

    def write_many(self, items: list[tuple[Path, str]]) -> None:
        """Write several files, each atomically, in parallel.

        Each write waits on its own fsync; run side by side, the file system
        commits them together, which makes a rename touching hundreds of files
        several times faster on a busy disk.
        """
        if len(items) < 4:
            for path, text in items:
                self.write(path, text)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="manual-write") as pool:
            for future in [pool.submit(self.write, path, text) for path, text in items]:
                future.result()  # the first failure is raised once every write has finished

    def remove(self, path: Path) -> None:
        path.unlink()

    def log_journey(self, entry: dict[str, Any]) -> None:
        """Append one record to journey.yaml in the library (read, append, atomic rewrite).

        Called once the rename or merge is done, so it must not fail the call: a journey.yaml that cannot be
        read as a YAML list (broken, a tag that builds objects, not UTF-8, too large) is not rewritten; the
        record is appended to its end as a list item.
        """
        import yaml

        path = self._inside(JOURNEY, write=True)
        record = {"at": frontmatter.now(), **entry}
        records: list[Any] = []
        if path.exists():
            try:
                with open_file(path) as f:
                    loaded = yaml.load(f.read().decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except (OSError, Unreadable, UnicodeDecodeError, yaml.YAMLError) as exc:
                _log.warning("library '%s': %s is not read (%s); the record is appended to it", self.name, path, exc)
                item = yaml.safe_dump([record], sort_keys=False, allow_unicode=True, default_flow_style=False)
                _append(path, "\n" + item)
                return
            records = loaded if isinstance(loaded, list) else ([] if loaded is None else [loaded])
        records.append(record)
        text = yaml.safe_dump(records, sort_keys=False, allow_unicode=True, default_flow_style=False)
        self.write(path, text)


def _append(path: Path, text: str) -> None:
    """Append to a regular file, never blocking on a FIFO; what cannot be appended is logged, not raised."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        _log.warning("cannot append to %s: %s", path, exc.strerror)
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, text.encode("utf-8"))
    except OSError as exc:
        _log.warning("cannot append to %s: %s", path, exc.strerror)
    finally:
        os.close(fd)


class Libraries:
    """Every configured library, by name."""

    def __init__(self, folders: dict[str, str], paths: PathPolicy) -> None:
        self._libs = {name: Library(name, folder, paths) for name, folder in folders.items()}
        for lib in self._libs.values():
            if lib.folder.is_absolute():  # the config chose this folder: it is the plugin's own root
                paths.include(lib.folder)

    def get(self, name: str) -> Library:
        lib = self._libs.get(name)
        if lib is None:
            known = ", ".join(f"'{n}'" for n in self._libs) or "none; configure [plugins.manual.libraries]"
            raise ToolError(f"unknown library '{name}'; known libraries: {known}")
        return lib

    def __iter__(self) -> Iterator[Library]:
        return iter(self._libs.values())
