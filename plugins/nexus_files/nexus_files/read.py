"""The read category: read_file, read_many_files, tail, file_info, list_directory, directory_tree."""

from __future__ import annotations

import functools
import mimetypes
import operator
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from nexus_core import Blocking, OpenedFile, PermissionDenied, PluginContext, ToolError, ToolRegistrar, on_loop

from .config import FilesConfig
from .fs import (
    SNIFF_BYTES,
    TooLarge,
    check_text,
    human_size,
    looks_binary,
    open_file,
    pread_all,
    read_data,
    read_text,
)
from .lines import IndexCache, index_of, now_ns, only_newlines
from .results import ToolOutput, tool
from .walk import walk

ON_LOOP_BYTES = 256 << 10  # larger files are read in a worker thread: their read and decode would hold the loop
PREFIX_BLOCK = 1024  # line-number prefixes are made and kept this many at a time
LINE_INDEXES = "files.line_indexes"  # the key of read_file's IndexCache in ctx.state

PathArg = str  # relative to the first root, or absolute inside one: what a model writes anyway
DirArg = str


class FileContent(ToolOutput):
    path: str
    content: str = Field(description="The lines, each prefixed with its 1-based number and a tab.")
    start_line: int = Field(description="First line shown, 1-based (offset + 1).")
    end_line: int = Field(description="Last line shown, 1-based (0 when none).")
    total_lines: int
    truncated: bool = Field(description="True when more lines follow or the byte cap cut the output.")
    next_offset: int | None = Field(
        description="The offset (0-indexed: lines to skip) that reads on from here, when more follows."
    )
    note: str | None = None

    def render(self) -> str:
        return self.content + (f"\n[{self.note}]" if self.note else "")


class ManyFile(BaseModel):
    path: str
    content: str | None = None
    lines: int | None = None
    truncated: bool = False
    error: str | None = None


class ManyFiles(ToolOutput):
    files: list[ManyFile]
    truncated: bool = Field(description="True when the byte cap cut some content.")

    def render(self) -> str:
        parts = []
        for f in self.files:
            body = (
                f"error: {f.error}"
                if f.error
                else (f.content or "") + ("\n[cut by the byte cap]" if f.truncated else "")
            )
            parts.append(f"==> {f.path} <==\n{body}")
        return "\n\n".join(parts)


class FileInfo(ToolOutput):
    path: str
    type: Literal["file", "directory", "symlink", "other"]
    size: int
    modified: str = Field(description="Last modification time, ISO 8601 UTC.")
    permissions: str = Field(description="Like ls -l, e.g. -rw-r--r--.")
    mode: str = Field(description="Octal permission bits, e.g. 0644.")
    is_text: bool | None = Field(description="False for binary files; None for folders and unchecked files.")
    line_count: int | None = None
    mime_type: str | None = None
    symlink_target: str | None = Field(None, description="Where a symlink given as the path points.")

    def render(self) -> str:
        rows = [
            ("path", self.path),
            ("type", self.type),
            ("size", f"{self.size} bytes ({human_size(self.size)})"),
            ("modified", self.modified),
            ("permissions", f"{self.permissions} ({self.mode})"),
        ]
        if self.is_text is not None:
            rows.append(("content", "text" if self.is_text else "binary"))
        if self.line_count is not None:
            rows.append(("lines", str(self.line_count)))
        if self.mime_type:
            rows.append(("mime type", self.mime_type))
        if self.symlink_target:
            rows.append(("symlink to", self.symlink_target))
        return "\n".join(f"{k}: {v}" for k, v in rows)


class DirEntry(BaseModel):
    path: str
    name: str
    type: Literal["file", "directory", "symlink"]
    size: int | None = Field(description="Bytes, for files.")
    depth: int


class DirectoryListing(ToolOutput):
    path: str
    entries: list[DirEntry]
    truncated: bool

    def render(self) -> str:
        lines = [f"{self.path}/"]
        for e in self.entries:
            indent = "  " * e.depth
            if e.type == "directory":
                lines.append(f"{indent}{e.name}/")
            elif e.type == "symlink":
                lines.append(f"{indent}{e.name}@")
            else:
                lines.append(f"{indent}{e.name}  ({human_size(e.size or 0)})")
        if self.truncated:
            lines.append(f"[listing cut at {len(self.entries)} entries; list a subfolder or lower depth]")
        return "\n".join(lines)


class TreeNode(BaseModel):
    name: str
    type: Literal["file", "directory", "symlink"]
    size: int | None = None
    children: list[TreeNode] | None = None


class DirectoryTree(ToolOutput):
    path: str
    tree: TreeNode
    directories: int
    files: int
    truncated: bool

    def render(self) -> str:
        lines = [self.path]
        _draw(self.tree.children or [], "", lines)
        lines.append(f"\n{self.directories} directories, {self.files} files")
        if self.truncated:
            lines.append("[tree cut at max_entries; show a subfolder or lower depth]")
        return "\n".join(lines)


def _draw(nodes: list[TreeNode], indent: str, lines: list[str]) -> None:
    for i, node in enumerate(nodes):
        last = i == len(nodes) - 1
        suffix = "/" if node.type == "directory" else ("@" if node.type == "symlink" else "")
        lines.append(f"{indent}{'└── ' if last else '├── '}{node.name}{suffix}")
        if node.children:
            _draw(node.children, indent + ("    " if last else "│   "), lines)


@functools.lru_cache(maxsize=16)
def _prefix_block(block: int) -> tuple[str, ...]:
    """The prefixes ("     1  ", the design's f"{n:6d}  ") of lines ``block * PREFIX_BLOCK + 1`` on."""
    first = block * PREFIX_BLOCK + 1
    return tuple(str(n).rjust(6) + "  " for n in range(first, first + PREFIX_BLOCK))


def _prefixes(first: int, count: int) -> list[str]:
    """The prefixes of lines ``first`` to ``first + count - 1`` (1-based)."""
    out: list[str] = []
    while len(out) < count:
        block, at = divmod(first + len(out) - 1, PREFIX_BLOCK)
        out += _prefix_block(block)[at : at + count - len(out)]
    return out


def number_lines(lines: list[str], first: int, cap: int) -> tuple[str, int, bool]:
    """Lines numbered from ``first``, stopping before ``cap`` bytes: (text, lines shown, cut)."""
    # Kept prefixes joined to the lines in C (map): a third of the time of a format per line.
    text = "\n".join(map(operator.add, _prefixes(first, len(lines)), lines)) + "\n" if lines else ""
    if len(text) <= cap and (text.isascii() or len(text.encode("utf-8")) <= cap):
        return text, len(lines), False  # everything fits: the common case, one join and one length check
    out: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        row = f"{first + i:6d}  {line}\n"
        size = len(row.encode("utf-8"))
        if used + size > cap:
            if not out:  # one huge line: show its head rather than nothing
                out.append(row.encode("utf-8")[:cap].decode("utf-8", errors="ignore"))
                return "".join(out), 1, True
            return "".join(out), len(out), True
        out.append(row)
        used += size
    return "".join(out), len(out), False


def read_lines(
    opened: OpenedFile, shown: str, offset: int, limit: int, limit_bytes: int, indexes: IndexCache
) -> tuple[list[str], int]:
    """Lines ``offset`` to ``offset + limit`` (0: to the end) of an opened text file, and how many it has.

    A file read before and unchanged since is read only in the window (``lines``); otherwise
    all of it is read once and counted on the bytes, decoding only the window.
    """
    if opened.stat.st_size > limit_bytes:
        raise TooLarge(opened.stat.st_size, shown, limit_bytes)
    if opened.stat.st_size > ON_LOOP_BYTES and on_loop():
        raise Blocking(shown)
    index = indexes.get(opened.stat)
    if index is not None:
        return index.lines(offset, limit, functools.partial(pread_all, opened.fd)), index.total
    started = now_ns()
    data = read_data(opened, shown, limit_bytes)
    check_text(data, shown)
    if not only_newlines(data):  # \r, form feeds and the like: as str.splitlines splits them
        every = data.decode("utf-8", errors="replace").splitlines()
        return (every[offset : offset + limit] if limit else every[offset:]), len(every)
    index = index_of(data)
    indexes.put(opened.stat, index, started)
    return index.lines(offset, limit, lambda at, size: data[at : at + size]), index.total


def read_file(
    ctx: PluginContext,
    path: PathArg,
    offset: Annotated[int, Field(ge=0, description="Lines to skip (0-indexed).")] = 0,
    limit: Annotated[int, Field(ge=0, le=100_000, description="0: no limit.")] = 2000,
) -> FileContent:
    """Read a text file as numbered lines; next_offset reads on."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    indexes: IndexCache = ctx.state[LINE_INDEXES]
    with open_file(policy, path) as opened:
        shown = policy.display(opened.path)
        window, total = read_lines(opened, shown, offset, limit, config.max_file_size, indexes)
    text, shown_count, cut = number_lines(window, offset + 1, config.max_output_bytes)
    end = offset + shown_count  # the last line shown, 1-based; also the offset that reads on
    more = end < total
    note = None
    if offset and offset >= total:  # the design answers an offset past the end with nothing, not an error
        note = f"offset {offset} is past the end: '{shown}' has {total} lines"
    elif cut:
        note = f"output cut at {config.max_output_bytes} bytes after line {end}; read on with offset={end}"
    elif more:
        note = f"showing lines {offset + 1}-{end} of {total}; read on with offset={end}"
    return FileContent(
        path=shown,
        content=text,
        start_line=offset + 1,
        end_line=end,
        total_lines=total,
        truncated=more or cut,
        next_offset=end if more else None,
        note=note,
    )


def read_many_files(
    ctx: PluginContext,
    paths: Annotated[list[str], Field(min_length=1, max_length=200)],
) -> ManyFiles:
    """Read several text files at once."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    budget = config.max_output_bytes
    out: list[ManyFile] = []
    any_cut = False
    for given in paths:
        try:
            text, shown = read_text(policy, given, config.max_file_size)
        except (ToolError, OSError) as exc:
            out.append(ManyFile(path=given, error=str(exc) if isinstance(exc, ToolError) else exc.strerror))
            continue
        data = text.encode("utf-8")
        cut = len(data) > budget
        content = data[:budget].decode("utf-8", errors="ignore") if cut else text
        budget = max(0, budget - len(data))
        any_cut |= cut
        out.append(ManyFile(path=shown, content=content, lines=len(text.splitlines()), truncated=cut))
    return ManyFiles(files=out, truncated=any_cut)


def tail(
    ctx: PluginContext,
    path: PathArg,
    lines: Annotated[int, Field(ge=1, le=10_000)] = 20,
) -> FileContent:
    """The last lines of a text file, numbered."""
    config: FilesConfig = ctx.config
    text, shown = read_text(ctx.paths, path, config.max_file_size)
    all_lines = text.splitlines()
    total = len(all_lines)
    window = all_lines[max(0, total - lines) :]
    # Cut from the front, so the end of the file is always shown.
    used, keep = 0, 0
    for line in reversed(window):
        used += len(line.encode("utf-8")) + 8
        if used > config.max_output_bytes:
            break
        keep += 1
    cut = keep < len(window)
    skipped = total - len(window)  # lines before the window: the read_file offset of its first line
    window = window[len(window) - keep :] if keep else window[-1:]
    first = total - len(window) + 1
    text, _, _ = number_lines(window, first, config.max_output_bytes)
    note = None
    if cut and first - 1 > skipped:
        note = (
            f"output cut at {config.max_output_bytes} bytes; lines {skipped + 1}-{first - 1} omitted: "
            f"read them with read_file offset={skipped} limit={first - 1 - skipped}"
        )
    elif cut:
        note = f"output cut at {config.max_output_bytes} bytes inside line {first}"
    return FileContent(
        path=shown,
        content=text,
        start_line=first,
        end_line=total,
        total_lines=total,
        truncated=cut,
        next_offset=None,
        note=note,
    )


def file_info(ctx: PluginContext, path: PathArg) -> FileInfo:
    """A file's size, type, times, permissions, line count."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    link_target = _link_target(policy, path)
    with open_file(policy, path, folders=True) as opened:
        real, st = opened.path, opened.stat
        kind = "directory" if opened.is_dir else "file"
        is_text = line_count = None
        if kind == "file":
            head = opened.read(SNIFF_BYTES)
            is_text = not looks_binary(head)
            if is_text and st.st_size <= config.max_file_size:
                line_count, last = _count_lines(head, opened)
                if last not in (b"", b"\n"):
                    line_count += 1
    shown = policy.display(real)
    return FileInfo(
        path=shown,
        type="symlink" if link_target else kind,
        size=st.st_size,
        modified=datetime.fromtimestamp(st.st_mtime, UTC).isoformat(timespec="seconds"),
        permissions=stat.filemode(st.st_mode),
        mode=f"{stat.S_IMODE(st.st_mode):04o}",
        is_text=is_text,
        line_count=line_count,
        mime_type=mimetypes.guess_type(real.name)[0] if kind == "file" else None,
        symlink_target=link_target,
    )


def list_directory(
    ctx: PluginContext,
    path: DirArg = ".",
    depth: Annotated[int, Field(ge=1, le=10)] = 1,
    include_ignored: bool = False,
    max_entries: Annotated[int, Field(ge=1, le=10_000)] = 1000,
) -> DirectoryListing:
    """List a folder with sizes, .gitignore-aware."""
    policy = ctx.paths
    real = _folder(policy, path)
    entries: list[DirEntry] = []
    truncated = False
    for e in walk(real, policy, max_depth=depth, include_ignored=include_ignored):
        if len(entries) >= max_entries:
            truncated = True
            break
        entries.append(
            DirEntry(
                path=policy.display(Path(e.path)),
                name=e.rel.rsplit("/", 1)[-1],
                type=_kind(e.is_dir, e.is_symlink),
                size=_size(e.path) if not e.is_dir and not e.is_symlink else None,
                depth=e.depth,
            )
        )
    return DirectoryListing(path=policy.display(real) or ".", entries=entries, truncated=truncated)


def directory_tree(
    ctx: PluginContext,
    path: DirArg = ".",
    depth: Annotated[int, Field(ge=1, le=20)] = 3,
    include_ignored: bool = False,
    max_entries: Annotated[int, Field(ge=1, le=20_000)] = 2000,
) -> DirectoryTree:
    """A tree view of a folder, .gitignore-aware."""
    policy = ctx.paths
    real = _folder(policy, path)
    top = TreeNode(name=real.name or str(real), type="directory", children=[])
    stack = [top]  # stack[d] is the open folder at depth d
    dirs = files = 0
    truncated = False
    for e in walk(real, policy, max_depth=depth, include_ignored=include_ignored):
        if dirs + files >= max_entries:
            truncated = True
            break
        node = TreeNode(name=e.rel.rsplit("/", 1)[-1], type=_kind(e.is_dir, e.is_symlink))
        del stack[e.depth :]
        assert stack[-1].children is not None
        stack[-1].children.append(node)
        if e.is_dir:
            dirs += 1
            node.children = []
            stack.append(node)
        else:
            files += 1
            node.size = None if e.is_symlink else _size(e.path)
    return DirectoryTree(path=policy.display(real) or ".", tree=top, directories=dirs, files=files, truncated=truncated)


TOOLS = (
    (read_file, "Read a file", "open, show, view, cat a file, lines of a file"),
    (read_many_files, "Read many files", "open several files together"),
    (tail, "Last lines of a file", "end or bottom of a file, latest log lines"),
    (file_info, "File information", "metadata, stat, how big, when modified"),
    (list_directory, "List a folder", "ls, folder contents, what files are in"),
    (directory_tree, "Folder tree", "project structure, layout"),
)


def register(register: ToolRegistrar, ctx: PluginContext) -> None:
    ctx.state[LINE_INDEXES] = IndexCache()  # what read_file learnt of the files it read, for this server
    for fn, title, keywords in TOOLS:
        # read_file checks each step that may block (open_file, read_lines): it runs on the event loop when
        # the file is small and on a local file system (nexus_core/fs/nonblocking.py), without the thread hand-over.
        wrapped = tool(fn, ctx, on_loop=fn is read_file)
        register(wrapped, category="read", title=title, read_only=True, idempotent=True, keywords=keywords)


def _folder(policy, path: str) -> Path:
    real = policy.resolve(path)
    if not real.exists():
        raise ToolError(f"'{path}' does not exist")
    if not real.is_dir():
        raise ToolError(f"'{path}' is not a folder; use file_info or read_file")
    return real


def _kind(is_dir: bool, is_link: bool) -> Literal["file", "directory", "symlink"]:
    return "symlink" if is_link else "directory" if is_dir else "file"


def _size(path: str) -> int | None:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return None


def _count_lines(head: bytes, opened: OpenedFile) -> tuple[int, bytes]:
    """Newlines in ``head`` and the rest of the opened file, and the file's last byte."""
    count, last = head.count(b"\n"), head[-1:]
    for chunk in iter(lambda: opened.read(1 << 20), b""):
        count, last = count + chunk.count(b"\n"), chunk[-1:]
    return count, last


def _link_target(policy, given: str) -> str | None:
    """Where ``given`` points when it is itself a symlink (checked lexically inside a root)."""
    lexical = Path(os.path.normpath(policy.roots[0] / Path(given).expanduser()))
    if not lexical.is_symlink():
        return None
    try:
        return policy.display(policy.resolve(lexical))
    except PermissionDenied:
        return None
