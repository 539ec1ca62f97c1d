"""The write category: write_file, edit_file, append_file, mkdir, rename, copy_file, delete_file.

Every change lands through a temp file in the target folder and a rename, made
through the folder's descriptor opened race-free (``PathPolicy.write_file``), so a
reader never sees a half-written file and a folder swapped for a symlink meanwhile
is not followed. Every check runs before the first byte is written, so a refused
call changes nothing, and every read-modify-write (edit, append) or
check-then-write (overwrite=false) holds ``locked(path)``, so concurrent calls,
in this server or another, never lose a change.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from nexus_core import (
    PathPolicy,
    PermissionDenied,
    PluginContext,
    ToolError,
    ToolRegistrar,
    lock_path,
    locked,
    write_at,
)

from .config import FilesConfig
from .fs import open_file, read_data, read_text
from .results import ToolOutput, tool
from .walk import walk

PathArg = str  # relative to the first root, or absolute inside one


class Edit(BaseModel):
    old_text: str = Field(min_length=1, description="Text to replace; must occur exactly once in the file.")
    new_text: str = Field(description="Replacement text.")


class WriteResult(ToolOutput):
    path: str
    bytes_written: int
    created: bool

    def render(self) -> str:
        return f"{'created' if self.created else 'wrote'} {self.path} ({self.bytes_written} bytes)"


class EditResult(ToolOutput):
    path: str
    edits: int
    dry_run: bool
    diff: str = Field(description="Unified diff of the change.")

    def render(self) -> str:
        head = f"{'would apply' if self.dry_run else 'applied'} {self.edits} edit(s) to {self.path}"
        return f"{head}\n{self.diff}" if self.diff else f"{head} (no change)"


class AppendResult(ToolOutput):
    path: str
    bytes_appended: int
    size: int

    def render(self) -> str:
        return f"appended {self.bytes_appended} bytes to {self.path} (now {self.size} bytes)"


class PathChange(ToolOutput):
    action: str
    path: str
    destination: str | None = None
    changed: bool = True

    def render(self) -> str:
        target = f" -> {self.destination}" if self.destination else ""
        return f"{self.action} {self.path}{target}" + ("" if self.changed else " (already there)")


def entry_path(policy: PathPolicy, given: str) -> Path:
    """The path of the directory entry itself (a symlink is not followed), checked for writing.

    The parent folder is resolved, so ``..`` and symlinked folders cannot lead
    out of the roots; the entry is also checked as written and, if a link,
    through its target.
    """
    raw = Path(given).expanduser()
    lexical = Path(os.path.normpath(raw if raw.is_absolute() else policy.roots[0] / raw))
    if lexical.name in ("", ".", ".."):
        raise ToolError(f"'{given}' does not name a file")
    parent = policy.resolve(lexical.parent, write=True)
    entry = parent / lexical.name
    if policy.root_of(entry) is None or entry in policy.roots:
        raise PermissionDenied(f"permission denied: '{given}' is a root or outside the allowed roots")
    if reason := policy.denied(entry):
        raise PermissionDenied(f"permission denied: '{given}' {reason}")
    if entry.name.casefold() == ".git":  # in any case, as the core: one name on a case-insensitive disk
        raise PermissionDenied(f"permission denied: '{given}' is a .git directory; writes there are refused")
    policy.check_entry(entry, given)  # the name itself: a rename or mkdir to '.husky' or 'HEAD' that does not exist yet
    if entry.is_symlink() or entry.exists():
        policy.resolve(entry, write=True)
    return entry


def _refuse_hidden_inside(policy: PathPolicy, folder: Path, given: str) -> None:
    """A folder moved as a whole must not carry deny-listed files to a visible place."""
    visible = sum(1 for _ in walk(folder, policy, include_ignored=True))
    total = sum(len(dirs) + len(files) for _, dirs, files in os.walk(folder))
    if visible != total:
        raise PermissionDenied(
            f"permission denied: '{given}' contains files hidden by deny_paths, .git data or links out of the roots; "
            "move its visible files one by one instead"
        )


@contextlib.contextmanager
def locked_all(*targets: Path) -> Iterator[None]:
    """``locked`` for several targets, taken in one order (so two calls never wait on each other)."""
    with contextlib.ExitStack() as stack:
        for key in sorted({lock_path(t): t for t in targets}.items()):
            stack.enter_context(locked(key[1]))
        yield


@contextlib.contextmanager
def entry_folder(policy: PathPolicy, entry: Path) -> Iterator[int]:
    """The descriptor of the folder holding ``entry``, opened race-free, for ``dir_fd`` calls."""
    fd = policy.open_folder(entry.parent, write=True)
    try:
        yield fd
    finally:
        os.close(fd)


def move_entry(src_dir: int, src: str, dst_dir: int, dst: str, *, shown: str) -> None:
    """Rename an entry between two open folders; across filesystems, copy a file or link and remove the old."""
    try:
        os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)  # atomic on one filesystem
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    info = os.stat(src, dir_fd=src_dir, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(src, dir_fd=src_dir)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dst, dir_fd=dst_dir)
        os.symlink(target, dst, dir_fd=dst_dir)
    elif stat.S_ISREG(info.st_mode):
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_dir)
        with os.fdopen(fd, "rb") as f:
            write_at(dst_dir, dst, f.read(), mode=stat.S_IMODE(info.st_mode))
    else:
        raise ToolError(f"'{shown}' is a folder on another filesystem than its destination; move its files instead")
    os.unlink(src, dir_fd=src_dir)


def check_content(config: FilesConfig, text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > config.max_file_size:
        raise ToolError(f"the content is {len(data)} bytes, above max_file_size of {config.max_file_size} bytes")
    return data


def write_file(
    ctx: PluginContext,
    path: PathArg,
    content: Annotated[str, Field(description="The whole new content (UTF-8).")],
    overwrite: Annotated[bool, Field(description="Replace the file when it exists.")] = True,
    create_dirs: Annotated[bool, Field(description="Create missing parent folders.")] = True,
) -> WriteResult:
    """Create or overwrite a file atomically (temp file + rename, file mode kept)."""
    policy = ctx.paths
    real = policy.resolve(path, write=True)
    shown = policy.display(real)
    data = check_content(ctx.config, content)
    with locked(real):
        created = replace(
            policy, real, shown, data, overwrite=overwrite, create_dirs=create_dirs, missing="pass create_dirs=true"
        )
    return WriteResult(path=shown, bytes_written=len(data), created=created)


def replace(
    policy: PathPolicy,
    real: Path,
    shown: str,
    data: bytes,
    *,
    overwrite: bool = True,
    create_dirs: bool = False,
    mode: int | None = None,
    missing: str = "create it with mkdir",
) -> bool:
    """``policy.write_file`` with this plugin's messages; True when the file was created."""
    try:
        return policy.write_file(real, data, create_dirs=create_dirs, overwrite=overwrite, mode=mode)
    except FileExistsError:
        raise ToolError(f"'{shown}' exists; pass overwrite=true to replace it") from None
    except IsADirectoryError:
        raise ToolError(f"'{shown}' is a folder") from None
    except FileNotFoundError:
        raise ToolError(f"the folder of '{shown}' does not exist; {missing}") from None


def edit_file(
    ctx: PluginContext,
    path: PathArg,
    edits: Annotated[list[Edit], Field(min_length=1, description="Applied in order, each to the previous result.")],
    dry_run: Annotated[bool, Field(description="Only return the diff; change nothing.")] = False,
) -> EditResult:
    """Replace exact text in a file; every old_text must match exactly once, or nothing changes.

    Returns a unified diff; with dry_run the file is left as it is.
    """
    config: FilesConfig = ctx.config
    policy = ctx.paths
    real = policy.resolve(path, write=True)
    shown = policy.display(real)
    with locked(real):  # read, change, write back: no other edit may come in between
        before, _ = read_text(policy, str(real), config.max_file_size, shown=shown)
        after = before
        for i, edit in enumerate(edits, 1):
            count = after.count(edit.old_text)
            if count != 1:
                where = "does not occur" if count == 0 else f"occurs {count} times"
                hint = "copy it exactly from read_file" if count == 0 else "add surrounding lines to make it unique"
                raise ToolError(
                    f"edit {i} of {len(edits)}: old_text {where} in '{shown}' (it must match exactly once); "
                    f"{hint}. No edit was applied."
                )
            after = after.replace(edit.old_text, edit.new_text, 1)
        if not dry_run and after != before:
            replace(policy, real, shown, after.encode("utf-8"))
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{shown}", f"b/{shown}"
        )
    )
    return EditResult(path=shown, edits=len(edits), dry_run=dry_run, diff=diff)


def append_file(
    ctx: PluginContext,
    path: PathArg,
    content: Annotated[str, Field(description="Text to add at the end (UTF-8).")],
) -> AppendResult:
    """Append text to a file (created when missing), atomically."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    real = policy.resolve(path, write=True)
    shown = policy.display(real)
    data = check_content(config, content)
    with locked(real):  # read, append, write back: no other change may come in between
        try:
            with policy.open_read(real) as opened:
                old = read_data(opened, shown, config.max_file_size - len(data))
        except FileNotFoundError:
            old = b""
        except IsADirectoryError:
            raise ToolError(f"'{shown}' is not a regular file") from None
        replace(policy, real, shown, old + data)
    return AppendResult(path=shown, bytes_appended=len(data), size=len(old) + len(data))


def mkdir(ctx: PluginContext, path: PathArg) -> PathChange:
    """Create a folder and any missing parents; an existing folder is fine."""
    policy = ctx.paths
    real = policy.resolve(path, write=True)
    shown = policy.display(real)
    if real.exists() and not real.is_dir():
        raise ToolError(f"'{shown}' exists and is not a folder")
    existed = real.exists()
    os.close(policy.open_folder(real, write=True, create=True))
    return PathChange(action="created folder", path=shown, changed=not existed)


def rename(
    ctx: PluginContext,
    source: PathArg,
    destination: PathArg,
    overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
) -> PathChange:
    """Rename or move a file or folder inside the roots."""
    policy = ctx.paths
    src = entry_path(policy, source)
    dst = entry_path(policy, destination)
    with locked_all(src, dst):
        if not src.is_symlink() and not src.exists():
            raise ToolError(f"'{source}' does not exist")
        if src.is_dir() and not src.is_symlink():
            _refuse_hidden_inside(policy, src, source)
            policy.check_moved_tree(src, dst, source)
            if dst == src or dst.is_relative_to(src):
                raise ToolError(f"cannot move '{source}' into itself")
        if dst.exists() or dst.is_symlink():
            if dst.is_dir() and not dst.is_symlink():
                raise ToolError(f"'{destination}' is an existing folder; name the new path inside it")
            if not overwrite:
                raise ToolError(f"'{destination}' exists; pass overwrite=true to replace it")
        if not dst.parent.is_dir():
            raise ToolError(f"the folder of '{destination}' does not exist; create it with mkdir")
        with entry_folder(policy, src) as src_dir, entry_folder(policy, dst) as dst_dir:
            move_entry(src_dir, src.name, dst_dir, dst.name, shown=source)
    return PathChange(action="renamed", path=policy.display(src), destination=policy.display(dst))


def copy_file(
    ctx: PluginContext,
    source: PathArg,
    destination: PathArg,
    overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
) -> PathChange:
    """Copy a file (content and mode) inside the roots; the copy appears atomically."""
    policy = ctx.paths
    with open_file(policy, source) as opened:
        shown = policy.display(opened.path)
        data = read_data(opened, shown, ctx.config.max_file_size)
        mode = stat.S_IMODE(opened.stat.st_mode)
    dst = policy.resolve(destination, write=True)
    if dst.is_dir():
        raise ToolError(f"'{destination}' is a folder; name the new file inside it")
    with locked(dst):
        replace(policy, dst, destination, data, overwrite=overwrite, mode=mode)
    return PathChange(action="copied", path=shown, destination=policy.display(dst))


def delete_file(ctx: PluginContext, path: PathArg) -> PathChange:
    """Delete one file or symlink (the link itself, never its target). Folders are refused."""
    policy = ctx.paths
    entry = entry_path(policy, path)
    with locked(entry), entry_folder(policy, entry) as folder:
        try:
            info = os.stat(entry.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            raise ToolError(f"'{path}' does not exist") from None
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"'{path}' is a folder; delete_file removes files only")
        os.unlink(entry.name, dir_fd=folder)
    return PathChange(action="deleted", path=policy.display(entry))


def register(register: ToolRegistrar, ctx: PluginContext) -> None:
    write = {"category": "write"}
    for fn, title, destructive, idempotent, keywords in (
        (write_file, "Write a file", True, True, "create a file, save content, overwrite"),
        (edit_file, "Edit a file", True, False, "change code, replace text in a file, patch"),
        (append_file, "Append to a file", False, False, "add at the end of a file"),
        (mkdir, "Create a folder", False, True, "make a directory"),
        (rename, "Rename or move", True, False, "mv, move a file or folder"),
        (copy_file, "Copy a file", True, False, "duplicate, cp"),
        (delete_file, "Delete a file", True, False, "remove, rm"),
    ):
        hints = {"destructive": destructive, "idempotent": idempotent, "keywords": keywords}
        register(tool(fn, ctx), title=title, **hints, **write)
