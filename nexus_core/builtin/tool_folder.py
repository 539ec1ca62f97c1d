"""The tool folder: the built-in plugin ``tools``, serving the tool files in ``[server] tool_dirs``.

Every ``*.py`` file there (default ``~/.config/nexus/tools``; names starting
with ``_`` or ``.`` are skipped) is read by ``tool_files`` at start and again
whenever it changes, while the server runs: each file is one publish group, so
adding, editing or deleting it replaces exactly its tools, and the host tells
connected clients (``notifications/tools/list_changed``). A file that fails to
load is logged on stderr and shown by ``nexus plugins``; the tools of its last
good version keep serving.

Changes are found by polling each folder's file stamps (``bench/tool_folder_bench.py``
measures the cost): no dependency, the same on every platform and file system,
and a folder created after start is picked up too.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import anyio
import anyio.to_thread
import importlib_metadata
from pydantic import Field

from nexus_core.access.grants import Category
from nexus_core.builtin.tool_files import DEFAULT_CATEGORY, ToolContext, ToolFileError, load_tool_file
from nexus_core.fs.trust import refusal
from nexus_core.hookspecs import hookimpl
from nexus_core.host.live_items import LiveTool
from nexus_core.host.registrars import PluginConfig, PluginContext

STARTUP_WAIT = 10.0  # seconds the first tools/list waits for the tool files' first load
LOAD_TIMEOUT = 30.0  # seconds one file may take to run
STATUS_WAIT = 10.0  # seconds nexus plugins waits for that first load

CATEGORIES = [
    Category(
        name=DEFAULT_CATEGORY,
        description="Tools of tool files that name no category (the files are your own code, in your folder).",
        default=True,
    ),
    Category(name="read", description='Tools whose file says category = "read": they only look.', default=True),
    Category(name="write", description='Tools whose file says category = "write": they change files or data.'),
    Category(name="execute", description='Tools whose file says category = "execute": they run programs.'),
]

CATEGORY_NAMES = [c.name for c in CATEGORIES]
Stamp = tuple[int, int, int]  # mtime_ns, size, inode: changes on every save, in place or by rename
Seen = Stamp | str | None  # a stamp; why the file is refused (fs.trust); None: a link out of its folder


class ToolFolderConfig(PluginConfig):
    SAMPLE: ClassVar[str] = """
poll_interval = 0.5             # seconds between looks at the tool folders ([server] tool_dirs)
"""
    poll_interval: float = Field(0.5, gt=0, le=60, description="Seconds between looks at the tool folders.")


@dataclass
class ToolFile:
    """One file as last seen: its stamp, the tools of its last good version, and what went wrong since."""

    path: Path
    stamp: Seen = None
    tools: list[LiveTool] = field(default_factory=list)
    error: str | None = None
    problems: list[str] = field(default_factory=list)  # tools not served: another file or plugin has the name

    @property
    def module_name(self) -> str:
        return f"nexus_tools.{self.path.stem}_{hashlib.sha1(str(self.path).encode()).hexdigest()[:8]}"


class ToolFolder:
    """The files of the tool folders, kept in step with what the plugin publishes."""

    def __init__(self, ctx: PluginContext, folders: list[Path], categories: list[str] | None = None) -> None:
        self.ctx, self.folders = ctx, _distinct(folders)
        self.categories = categories or CATEGORY_NAMES  # the declared ones; a tool of another is refused
        self.files: dict[str, ToolFile] = {}
        self.loaded = anyio.Event()  # set once every file has been read the first time

    async def watch(self) -> None:
        while True:
            try:
                await self.scan()
            except Exception:  # a bug here must not end the watching
                self.ctx.log.exception("looking at the tool folders failed")
            self.loaded.set()
            await anyio.sleep(self.ctx.config.poll_interval)

    async def scan(self) -> None:
        """Load what is new or changed and withdraw what is gone; then retry the tools that lost a name clash."""
        found = await anyio.to_thread.run_sync(stamps, self.folders)
        changed = False
        for path in [p for p in self.files if p not in found]:
            await self._remove(self.files.pop(path))
            changed = True
        for path, stamp in found.items():
            record = self.files.get(path)
            if record is None or record.stamp != stamp:
                record = self.files.setdefault(path, ToolFile(Path(path)))
                record.stamp = stamp
                await self._load(record)
                changed = True
        if changed:
            for record in self.files.values():
                if record.problems:
                    record.problems = await self.ctx.publish(str(record.path), tools=record.tools)

    async def _load(self, record: ToolFile) -> None:
        if isinstance(record.stamp, str):  # another user could have written it: it never runs, its tools go
            record.error = f"refused: {record.stamp}"
            if record.tools:
                record.tools = []
                await self.ctx.publish(str(record.path))
            self.ctx.log.error("tool file %s refused, not run: %s", record.path, record.stamp)
            return
        try:
            if record.stamp is None:
                raise ToolFileError(
                    f"is a link to {os.path.realpath(record.path)}, outside the tool folder: tool files are code "
                    "Nexus runs, so they must live in the folder its tools may not write to (copy it in instead)"
                )
            load = functools.partial(
                load_tool_file,
                record.path,
                record.module_name,
                self.categories,
                functools.partial(self._context, record.path),
            )
            with anyio.fail_after(LOAD_TIMEOUT):  # a file that never finishes must not hold up the others, or shutdown
                tools = await anyio.to_thread.run_sync(load, abandon_on_cancel=True)
        except Exception as exc:  # ToolFileError, a timeout, or what the file made pydantic raise
            record.error = _failure(exc)
            kept = f"its previous version keeps serving ({_names(record.tools)})" if record.tools else "no tools served"
            self.ctx.log.error("tool file %s failed to load: %s; %s", record.path, record.error, kept)
            return
        record.error, record.tools = None, tools
        record.problems = await self.ctx.publish(str(record.path), tools=tools)
        self.ctx.log.info("tool file %s loaded: %s", record.path, _names(tools) or "no tools")

    async def _remove(self, record: ToolFile) -> None:
        await self.ctx.publish(str(record.path))
        sys.modules.pop(record.module_name, None)
        self.ctx.log.info("tool file %s removed: %s withdrawn", record.path, _names(record.tools) or "no tools")

    def _context(self, file: Path, tool: str) -> ToolContext:
        ctx = self.ctx
        return ToolContext(tool, file, ctx.paths, ctx.log.getChild(file.stem), ctx.data_dir_path / file.stem)

    def status(self) -> list[str]:
        lines = []
        for folder in self.folders:
            records = [r for r in self.files.values() if r.path.parent == folder]
            served = sum(len(r.tools) for r in records)
            counts = f"{_count(len(records), 'file')}, {_count(served, 'tool')}"
            lines.append(f"{folder}: {counts}" if folder.is_dir() else f"{folder}: no such folder")
            if reason := refusal(folder):
                lines.append(f"{folder}: refused, no file there runs: {reason}")
        for record in self.files.values():
            if record.error:
                kept = f"serving its previous version ({_names(record.tools)})" if record.tools else "no tools served"
                lines.append(f"{record.path.name}: failed to load: {record.error}; {kept}")
            lines += [f"{record.path.name}: {problem}" for problem in record.problems]
        return lines


def stamps(folders: list[Path]) -> dict[str, Seen]:
    """Each tool file in ``folders`` now, by path; None for one that may not be served (a link out of its folder),
    the reason for one another user could have written (its folder or itself: ``fs.trust``).

    Paths stay strings: building a ``Path`` per file would cost more than the ``stat``.
    """
    found: dict[str, Seen] = {}
    for folder in folders:
        unsafe = refusal(folder)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # not there (yet): created later, it is picked up then
        for entry in entries:
            if not entry.name.endswith(".py") or entry.name[0] in "_.":
                continue
            try:
                info = entry.stat()
            except OSError:
                continue  # deleted while we looked
            inside = not entry.is_symlink() or Path(os.path.realpath(entry)).is_relative_to(os.path.realpath(folder))
            found[entry.path] = (info.st_mtime_ns, info.st_size, info.st_ino) if inside else None
            reason = unsafe or _unsafe_file(info, entry.path)
            if reason:
                found[entry.path] = reason
    return found


def _unsafe_file(info: os.stat_result, path: str) -> str | None:
    """``fs.trust.refusal`` from the ``stat`` the scan already made (it runs every poll)."""
    if info.st_uid in (os.getuid(), 0) and not info.st_mode & 0o022:
        return None
    return refusal(path)


def _failure(exc: Exception) -> str:
    if isinstance(exc, ToolFileError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return f"still running after {LOAD_TIMEOUT:g} s: a tool file should only define its tools when it runs"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def _names(tools: list[LiveTool]) -> str:
    return ", ".join(tool.definition.name for tool in tools)


def _distinct(folders: list[Path]) -> list[Path]:
    """The folders, each once even when named twice or through a link."""
    seen: dict[str, Path] = {}
    for folder in folders:
        seen.setdefault(os.path.realpath(folder), folder)
    return list(seen.values())


def _version() -> str:
    try:
        return importlib_metadata.version("nexus-core")
    except importlib_metadata.PackageNotFoundError:
        return ""


class ToolFolderPlugin:
    """The plugin object discovery registers as ``tools``, bound to the configured folders."""

    __version__ = _version()

    def __init__(self, folders: list[Path], granted: list[str] | None = None) -> None:
        self.folders = folders
        # Categories tool files name for themselves (003's 'basic'), declared once the config grants them.
        self.own = [c for c in dict.fromkeys(granted or []) if c not in CATEGORY_NAMES]

    @hookimpl
    def nexus_permission_categories(self) -> list[Category]:
        own = [Category(name=c, description=f'Tools whose file says category = "{c}".') for c in self.own]
        return [*CATEGORIES, *own]

    @hookimpl
    def nexus_config_model(self) -> type[PluginConfig]:
        return ToolFolderConfig

    @hookimpl
    async def nexus_startup(self, ctx: PluginContext) -> None:
        folder = ctx.state["folder"] = ToolFolder(ctx, self.folders, [*CATEGORY_NAMES, *self.own])
        ctx.start_background(folder.watch, name="watch")
        ctx.delay_listing(folder.loaded, at_most=STARTUP_WAIT)

    @hookimpl
    async def nexus_status(self, ctx: PluginContext) -> list[str]:
        folder: ToolFolder = ctx.state["folder"]
        with anyio.move_on_after(STATUS_WAIT):
            await folder.loaded.wait()
        return folder.status()
