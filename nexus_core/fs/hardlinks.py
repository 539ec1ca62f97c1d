"""Whether a file that has other names (hard links) may be served.

Deny patterns check names, and a hard link is another name for the same file:
``ln ~/.ssh/id_ed25519 repo/notes.txt`` passes every pattern. The kernel cannot
list an inode's names, so a regular file with ``st_nlink > 1`` is refused when

- it is one of the secret files the built-in list names in the home folder
  (same ``st_dev`` and ``st_ino``; ``~/.ssh/``, ``~/.aws/``, ``~/.netrc``, ...);
- it is a deny-listed entry of its own folder or of a folder above it, up to
  its root (a repository's ``.env`` linked as ``src/notes.txt``);
- it belongs to another user (linking someone else's file needs
  ``fs.protected_hardlinks`` off, or write access to it);
- its first bytes are key material (private keys, PuTTY keys, cloud credentials).

A file with one name was reached by the name that was checked: nothing more to do,
so the common case costs one ``fstat``. The home folder's secret locations are
listed again only when a folder there changed (its mtime).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pathspec

from nexus_core.fs.secrets import SECRETS, anywhere

SNIFF = 8192
KEY_MATERIAL = re.compile(
    rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d|aws_secret_access_key\s*="
    rb'|"private_key"\s*:\s*"-----BEGIN|\[default\]\s*\n\s*aws_access_key_id'
)
MAX_ENTRIES = 5000  # per home scan: a huge ~/.password-store must not make every linked read slow
MAX_DEPTH = 6

_SECRET_SPEC = pathspec.GitIgnoreSpec.from_lines(anywhere(SECRETS))
# A folder's listing: (its mtime, the (dev, ino) of its files, its subfolders).
_listings: dict[str, tuple[int, frozenset[tuple[int, int]], tuple[str, ...]]] = {}


def refusal(fd: int, info: os.stat_result, real: Path, root: Path, denied: Callable[[Path], str | None]) -> str | None:
    """Why the regular file open as ``fd`` (at ``real``, below ``root``) may not be served, or None."""
    if info.st_nlink <= 1:
        return None
    identity = (info.st_dev, info.st_ino)
    if identity in home_secrets():
        return "is a hard link to a secret file in the home folder"
    if (other := _denied_twin(identity, real, root, denied)) is not None:
        return f"is a hard link to '{other}', which is hidden"
    if info.st_uid != os.getuid():
        return "has other names (hard links) and belongs to another user"
    if KEY_MATERIAL.search(os.pread(fd, SNIFF, 0)):
        return "has other names (hard links) and holds key material"
    return None


def home_secrets() -> set[tuple[int, int]]:
    """The (st_dev, st_ino) of every file the built-in secret list names in the home folder."""
    found: set[tuple[int, int]] = set()
    budget = [MAX_ENTRIES]
    for home in _homes():
        try:
            with os.scandir(home) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not _SECRET_SPEC.match_file(entry.name + "/" if is_dir else entry.name):
                    if is_dir:  # secrets deeper down: .config/gcloud/, .local/share/keyrings/, ...
                        found |= _secrets_below(entry.path, entry.name + "/", budget, 1)
                    continue
                if is_dir:
                    found |= _files_below(entry.path, budget, 1)
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    found.add((info.st_dev, info.st_ino))
            except OSError:
                continue
    return found


def _homes() -> set[str]:
    homes = {os.path.expanduser("~")}
    with contextlib.suppress(KeyError):
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    return homes


def _listing(folder: str, budget: list[int]) -> tuple[frozenset[tuple[int, int]], tuple[str, ...]]:
    """The files and subfolders of ``folder``, listed again only when its mtime changed."""
    try:
        mtime = os.stat(folder, follow_symlinks=False).st_mtime_ns
    except OSError:
        return frozenset(), ()
    cached = _listings.get(folder)
    if cached is not None and cached[0] == mtime:
        budget[0] -= len(cached[1]) + len(cached[2])
        return cached[1], cached[2]
    files: set[tuple[int, int]] = set()
    folders: list[str] = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if budget[0] <= 0:
                    break
                budget[0] -= 1
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    files.add((info.st_dev, info.st_ino))
                elif stat.S_ISDIR(info.st_mode):
                    folders.append(entry.path)
    except OSError:
        pass
    _listings[folder] = (mtime, frozenset(files), tuple(folders))
    return frozenset(files), tuple(folders)


def _files_below(folder: str, budget: list[int], depth: int) -> set[tuple[int, int]]:
    files, folders = _listing(folder, budget)
    found = set(files)
    if depth < MAX_DEPTH:
        for sub in folders:
            found |= _files_below(sub, budget, depth + 1)
    return found


def _secrets_below(folder: str, rel: str, budget: list[int], depth: int) -> set[tuple[int, int]]:
    """Secret files in a folder that is not itself secret, for the list's patterns with a slash inside."""
    if depth >= 3 or not any(p.lstrip("!").startswith(rel) for p in SECRETS):
        return set()
    found: set[tuple[int, int]] = set()
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return found
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            name = rel + entry.name
            if _SECRET_SPEC.match_file(name + "/" if is_dir else name):
                if is_dir:
                    found |= _files_below(entry.path, budget, depth + 1)
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    found.add((info.st_dev, info.st_ino))
            elif is_dir:
                found |= _secrets_below(entry.path, name + "/", budget, depth + 1)
        except OSError:
            continue
    return found


def _denied_twin(identity: tuple[int, int], real: Path, root: Path, denied: Callable[[Path], str | None]) -> str | None:
    """A hidden entry of ``real``'s folder or a folder above it (up to ``root``) that is the same file."""
    for folder in real.parents:
        if not folder.is_relative_to(root):
            break
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                if denied(path) is None:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    with os.scandir(path) as inner:
                        twins = [e for e in inner if _same(e, identity)]
                    if twins:
                        return str(Path(twins[0].path).relative_to(root))
                elif _same(entry, identity):
                    return str(path.relative_to(root))
            except OSError:
                continue
    return None


def _same(entry: os.DirEntry[str], identity: tuple[int, int]) -> bool:
    info = entry.stat(follow_symlinks=False)
    return stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) == identity
