"""What git found out about a repository (its folders and config overrides), kept while nothing it read changed.

Finding the repository (``git rev-parse``) and listing its config (``git config
--list``) cost two git processes per call. Their answers depend only on files:
what git looks for in each folder from the one asked about up to the top (a
``.git``, or the ``HEAD``, ``objects`` and ``refs`` of a bare repository), the
``.git`` file or folder, ``commondir`` and ``HEAD`` (for ``includeIf
"onbranch:..."``), and every config file git read or could include. Each file is
stamped (inode, size, mtime, ctime), each folder by its identity only (what
matters inside it is watched entry by entry, and other git clients rewrite the
index in ``.git`` all the time); a later call reuses the answer only when every
stamp is the same. An answer is kept only when every
file was last changed ``FRESH_NS`` before git started reading: timestamps are
coarse (a file can change twice within one tick), and a change while git was
reading would otherwise be stamped as if git had seen it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

FRESH_NS = 2_000_000_000
MAX_REPOS = 64

Stamp = tuple[int, int, int, int] | None


def stamp(path: Path) -> Stamp:
    """(inode, size, mtime, ctime) of the file ``path`` points to; (inode, -1, 0, 0) for a folder; None if absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return st.st_ino, -1, 0, 0
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@dataclass(frozen=True)
class Config:
    """``git config --list --null --includes --show-origin`` read: its entries, and the files behind them."""

    entries: bytes  # as ``git config --list --null`` prints them
    files: frozenset[Path]  # files read, and include targets (read or not)
    complete: bool  # False when a source could not be named (so it cannot be watched)
    file_entries: bytes = b""  # the entries that came from files (not the command-line safety settings)


def read_config_listing(out: bytes, cwd: Path) -> Config:
    fields = out.split(b"\0")
    entries: list[bytes] = []
    from_files: list[bytes] = []
    files: set[Path] = set()
    complete = True
    for origin, entry in zip(fields[0::2], fields[1::2], strict=False):
        kind, _, where = os.fsdecode(origin).partition(":")
        entries.append(entry)
        if kind == "command line":
            continue
        if kind != "file":
            complete = False
            continue
        from_files.append(entry)
        source = cwd / where
        files.add(source)
        key, _, value = os.fsdecode(entry).partition("\n")
        key = key.lower()
        if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
            target = include_target(value, source)
            if target is None:
                complete = False
            else:
                files.add(target)
    return Config(b"\0".join(entries), frozenset(files), complete, b"\0".join(from_files))


def include_target(value: str, source: Path) -> Path | None:
    """The file an include directive in ``source`` names, as git resolves it; None when unsure."""
    if value.startswith("~/"):
        home = os.environ.get("HOME")
        return Path(home, value[2:]) if home else None
    if value.startswith(("~", "%(")):
        return None  # ~user/ and %(prefix)/: not worth resolving, so not cached
    return source.parent / value


@dataclass(frozen=True)
class Known:
    """One repository as git described it, with the stamps of what the description depends on."""

    top: Path
    git_dir: Path
    common_dir: Path
    overrides: tuple[tuple[str, str], ...]
    watched: tuple[Path, ...]
    stamps: tuple[Stamp, ...]
    settings: dict[str, list[str]] | None = None  # the config's own settings, when all are safe for libgit2

    def still_true(self) -> bool:
        return self.stamps == tuple(stamp(p) for p in self.watched)


def watched_paths(folder: Path, top: Path, git_dir: Path, common_dir: Path, config: Config) -> tuple[Path, ...]:
    """Every path whose change could change what rev-parse or the config listing said for ``folder``."""
    below_top = [folder, *(p for p in folder.parents if p != top and p.is_relative_to(top))] if folder != top else []
    paths = {folder, top, top / ".git", git_dir / "commondir", git_dir / "HEAD", *config.files}
    for step in below_top:  # where discovery could stop before the top
        paths |= {step / ".git", step / "HEAD", step / "objects", step / "refs"}
    for folder_ in {git_dir, common_dir}:
        paths |= {folder_ / "config", folder_ / "config.worktree"}
    return tuple(sorted(paths))


class RepoCache:
    """Per-folder ``Known`` entries, trusted only while their stamps hold."""

    def __init__(self) -> None:
        self._known: dict[Path, Known] = {}

    def get(self, folder: Path) -> Known | None:
        known = self._known.get(folder)
        if known is not None and not known.still_true():
            del self._known[folder]
            return None
        return known

    def put(self, folder: Path, known: Known, *, complete: bool, started_ns: int) -> None:
        """Keep ``known``, found by git processes started at ``started_ns``, if it can be trusted later."""
        if not complete or any(s is not None and max(s[2], s[3]) > started_ns - FRESH_NS for s in known.stamps):
            return
        if len(self._known) >= MAX_REPOS:
            self._known.clear()
        self._known[folder] = known
