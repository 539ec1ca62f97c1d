"""libgit2 repositories kept open from one ``git_status`` to the next, while that cannot change the answer.

Opening a repository and answering its first status costs ~0.3 ms more than the next status of the same
one (the config, the index, the ignore and attribute files, the object database are read again). libgit2
rereads a file it keeps only when its (inode, size, mtime) changed, so a file changed twice within one
timestamp tick, or given its old mtime back, would go unseen by a repository kept open, where one opened
afresh reads it. So a kept repository is used again only while every file it may keep (packed refs,
info/exclude and info/attributes, the excludes file, every .gitignore and .gitattributes the status could
read) has the same (inode, size, mtime, ctime) as after the last status, and each was settled (unchanged for
``FRESH_NS``) when that status began; anything else opens the repository afresh. Not among them: the index,
which libgit2 reads again whenever its checksum (its last bytes) changed, whatever its stamp (git rewrites it
often: a status that refreshes it, every add), and the config: a repository is kept for one config reading
(the ``settings`` of one ``Known``), which ``gitcache`` replaces when a config file changes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .gitcache import FRESH_NS, Stamp, stamp

MAX_KEPT = 8  # repositories kept open (each holds its index, pack indexes and descriptors)

Key = tuple[Path, Path, Path]  # the work tree, the git directory, the common git directory


class Kept:
    """Open repositories by (work tree, git dir, common dir); one caller at a time uses each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[Key, tuple[Any, object, tuple[Path, ...], tuple[Stamp, ...]]] = {}

    def take(self, key: Key, settings: object) -> Any | None:
        """The repository kept for ``key`` under these ``settings`` if nothing it may keep changed since; None
        otherwise. It is taken out: a concurrent call opens its own."""
        with self._lock:
            kept = self._kept.pop(key, None)
        if kept is None:
            return None
        repo, kept_settings, paths, stamps = kept
        if kept_settings is not settings or tuple(map(stamp, paths)) != stamps:
            return None
        return repo

    def put(self, key: Key, settings: object, repo: Any, paths: Iterable[Path], started_ns: int) -> None:
        """Keep ``repo`` after a status begun at ``started_ns`` that may have read ``paths``, when all were settled."""
        paths = tuple(paths)
        stamps = tuple(map(stamp, paths))
        if any(s is not None and max(s[2], s[3]) > started_ns - FRESH_NS for s in stamps):
            return
        with self._lock:
            self._kept.pop(key, None)
            while len(self._kept) >= MAX_KEPT:
                del self._kept[next(iter(self._kept))]  # the longest unused
            self._kept[key] = (repo, settings, paths, stamps)


def cached_files(git_dir: Path, common_dir: Path, excludes: Iterable[str]) -> list[Path]:
    """The files of the git directory (and the excludes files) a repository may keep between two statuses."""
    paths = []
    for folder in dict.fromkeys((git_dir, common_dir)):
        paths += [folder / "packed-refs", folder / "info" / "exclude", folder / "info" / "attributes"]
    paths += [Path(os.path.expanduser(value)) for value in excludes]
    return paths
