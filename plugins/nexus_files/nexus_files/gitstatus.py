"""``git status`` answered in-process by libgit2 (pygit2), only where it gives git's own answer.

Starting git costs ~1.5-3.5 ms a call (the process, and reading ~30 safety settings);
libgit2 answers a small repository in ~0.2 ms. It runs no programs: no hooks, no
fsmonitor, no filter, diff or merge drivers (it knows only its built-in filters), and
reads no system, global or XDG config (their search paths are emptied below, as the git
path switches them off). ``status`` returns None whenever the answer could differ from
``git status --porcelain=v2 --untracked-files=all --ignore-submodules=dirty`` under the
git path's settings, and the caller then runs git: config keys outside a known list
(sparse checkout, split or sparse index, other object formats or ref stores, includes,
rename and status settings, attribute files, line-ending conversion...), an index that
is not version 2 (skip-worktree and intent-to-add entries need version 3), submodules,
renames other than unique exact ones, ambiguous upstream names, symlinked .gitignore or
.gitattributes files (git does not follow them), and any libgit2 error. Past ``MAX_ENTRIES``
tracked files git is as fast, and answers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .gitkept import Kept, cached_files

# pygit2 and what status reads of it, imported on first use (``_library``): a server that is never asked for
# git_status does not pay for it (~45 ms of every start, ~8 MB).
pygit2: Any = None
ConfigLevel: Any = None
FileMode: Any = None
FileStatus: Any = None
RepositoryOpenFlag: Any = None
# FileStatus bits as plain ints: the enum's own & runs in Python (~55 of them a status).
INDEX_LETTERS: tuple[tuple[int, str], ...] = ()
WORKTREE_LETTERS: tuple[tuple[int, str], ...] = ()
UNEXPECTED = IGNORED = CONFLICTED = WT_NEW = 0
_imported: bool | None = None  # None: not tried yet; False: pygit2 is not installed (the git process answers)
_import_lock = threading.Lock()


def _library() -> bool:
    """Whether pygit2 can answer: imported and set up once, on first use."""
    global pygit2, ConfigLevel, FileMode, FileStatus, RepositoryOpenFlag
    global INDEX_LETTERS, WORKTREE_LETTERS, UNEXPECTED, IGNORED, CONFLICTED, WT_NEW, _imported
    with _import_lock:
        if _imported is not None:
            return _imported
        try:
            import pygit2 as library
            from pygit2.enums import ConfigLevel, FileMode, FileStatus, RepositoryOpenFlag
        except ImportError:  # the git process path answers alone
            _imported = False
            return False
        for level in (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL, ConfigLevel.PROGRAMDATA):
            library.settings.search_path[level] = ""  # as GIT_CONFIG_NOSYSTEM and GIT_CONFIG_GLOBAL=/dev/null
        INDEX_LETTERS = (
            (int(FileStatus.INDEX_NEW), "A"),
            (int(FileStatus.INDEX_MODIFIED), "M"),
            (int(FileStatus.INDEX_DELETED), "D"),
            (int(FileStatus.INDEX_TYPECHANGE), "T"),
        )
        WORKTREE_LETTERS = (
            (int(FileStatus.WT_MODIFIED), "M"),
            (int(FileStatus.WT_DELETED), "D"),
            (int(FileStatus.WT_TYPECHANGE), "T"),
        )
        UNEXPECTED = int(FileStatus.WT_UNREADABLE | FileStatus.WT_RENAMED | FileStatus.INDEX_RENAMED)
        IGNORED, CONFLICTED, WT_NEW = int(FileStatus.IGNORED), int(FileStatus.CONFLICTED), int(FileStatus.WT_NEW)
        pygit2, _imported = library, True
        return True


# Config keys (as ``git config --list`` prints them) that libgit2 reads as git does for status, or that
# status never reads (programs, which the git path blanks and libgit2 never runs). Any other key: git.
# ignorecase and precomposeunicode are what git init writes on macOS; both libraries honour them alike.
ALLOWED_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode"
    r"|excludesfile|fsmonitor|hookspath|pager|editor|sshcommand|askpass|untrackedcache|quotepath|gitproxy)"
    r"|(user|author|committer|init|advice|alias|gui|i18n|pull|push|gc|credential|commit|tag|rebase|sequence"
    r"|format|sendemail|maintenance|web|instaweb|gpg|receive|transfer|pack|http|url)\..*"
    r"|remote\..+\.(url|pushurl|fetch|push|tagopt|prune|mirror|skipdefaultupdate|proxy)"
    r"|branch\..+\.(remote|merge|rebase|description|pushremote)"
    r"|(filter|diff|merge)\..+\.(clean|smudge|process|required|textconv|command|driver|name|binary|cachetextconv)",
    re.DOTALL,
)

log = logging.getLogger(__name__)
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
RULE_FILES = (".gitignore", ".gitattributes")
# Past about this many tracked files git (which stats them in parallel) answers as fast or faster: 500 files
# took libgit2 1.4 ms and git 3.2 ms, 2,000 files 13 ms against 9.5 ms (bench/git_status_bench.py --files).
MAX_ENTRIES = 1000
# git's rules for shortening a ref name, in its order (refs.c, shorten_unambiguous_ref).
SHORTEN_RULES = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}")


class Unsure(Exception):
    """libgit2's answer might differ from git's here: run git."""


@dataclass
class Entry:
    path: str
    index: str
    worktree: str
    original_path: str | None = None


@dataclass
class Answer:
    branch: str | None
    upstream: str | None
    ahead: int
    behind: int
    entries: list[Entry]


Settings = dict[str, list[str]]


def settings(config_entries: bytes) -> Settings | None:
    """``git config --list --null`` entries from files, by key; None when a key is not known to be safe."""
    found: Settings = {}
    for entry in config_entries.split(b"\0"):
        if not entry:
            continue
        key, _, value = os.fsdecode(entry).partition("\n")
        if not ALLOWED_KEYS.fullmatch(key):
            return None
        found.setdefault(key, []).append(value)
    return found


def status(top: Path, git_dir: Path, common_dir: Path, config: Settings, kept: Kept | None = None) -> Answer | None:
    """git's status of the repository at ``top``, or None when only git can give it. ``kept``: where the
    repository is kept open for the next call (``gitkept``)."""
    if not _library():
        return None
    try:
        return _status(top, git_dir, common_dir, config, kept)
    except Exception as e:  # Unsure, or anything libgit2 could not do: git answers (the tests check who answered)
        log.debug("git_status of %s: git answers (%r)", top, e, exc_info=not isinstance(e, Unsure))
        return None


def _status(top: Path, git_dir: Path, common_dir: Path, config: Settings, kept: Kept | None) -> Answer:
    index = _check_files(top, git_dir, common_dir, config)
    started = time.time_ns()
    key = (top, git_dir, common_dir)
    repo = (kept.take(key, config) if kept is not None else None) or _open(top, git_dir)
    flags = repo.status(untracked_files="all", ignored=True)  # ignored ones too: see _check_rule_files
    rules = _check_rule_files(top, index, flags)
    branch, upstream, ahead, behind = _branch(repo, common_dir, config)
    answer = Answer(branch, upstream, ahead, behind, _entries(repo, flags))
    if kept is not None:
        files = cached_files(git_dir, common_dir, config.get("core.excludesfile", []))
        kept.put(key, config, repo, [*files, *(top / name for name in rules)], started)
    return answer


def _open(top: Path, git_dir: Path) -> Any:
    """The repository at ``top``, when libgit2 finds there the git directory and work tree git found."""
    repo = pygit2.Repository(str(top), RepositoryOpenFlag.NO_SEARCH)
    if Path(repo.path).resolve() != git_dir.resolve() or repo.workdir is None:
        raise Unsure("another git dir")
    if Path(repo.workdir).resolve() != top.resolve():
        raise Unsure("another work tree")
    return repo


def _check_files(top: Path, git_dir: Path, common_dir: Path, config: Settings) -> bytes:
    """What git reads for status that libgit2 does not read alike; the index file's bytes."""
    if os.path.lexists(f"{top}/.gitmodules"):
        raise Unsure(".gitmodules")  # submodules: --ignore-submodules=dirty overrides their ignore settings
    for value in config.get("core.excludesfile", []):
        if not (value.startswith("~/") or os.path.isabs(value)):
            raise Unsure("relative core.excludesFile")  # relative: git resolves it from where it runs
    default = _default_excludes()
    if "core.excludesfile" not in config and default is not None and os.path.exists(default):
        raise Unsure("XDG ignore file")  # libgit2 reads it only along with the XDG config, which it must not read
    for name in ("remotes", "branches"):  # remotes defined the old way (on strings: a call is a few dozen us)
        try:
            if os.listdir(f"{common_dir}/{name}"):
                raise Unsure("legacy remotes")
        except (FileNotFoundError, NotADirectoryError):
            pass
    try:
        with open(f"{git_dir}/index", "rb") as file:
            index = file.read()
    except FileNotFoundError:
        return b""
    if index[:8] != b"DIRC\x00\x00\x00\x02":
        raise Unsure("index version")
    if int.from_bytes(index[8:12], "big") > MAX_ENTRIES:
        raise Unsure("a large index")  # not a difference: git is faster there
    return index


def _check_rule_files(top: Path, index: bytes, flags: dict[str, int]) -> list[str]:
    """No .gitignore or .gitattributes that libgit2 may have read is a symlink; their paths.

    git does not follow such symlinks in the work tree (a link out of the roots, or an
    answer that differs); libgit2 does. It reads them in every folder it walks, and every
    entry of those folders is tracked (in the index) or listed (untracked or ignored).
    """
    names = [p for p in flags if p.rpartition("/")[2] in RULE_FILES]
    for name in RULE_FILES:
        names += _index_paths_named(index, name)
    if any(os.path.islink(top / name) for name in names):
        raise Unsure("a symlinked .gitignore or .gitattributes")
    return names


def _index_paths_named(index: bytes, name: str) -> list[str]:
    """Paths in a version 2 index whose last component is ``name``, found on the bytes (no per-entry parsing).

    An entry's path follows its 2-byte flags, whose low 12 bits are the path's length
    and whose high byte is 0 for a path shorter than 256 bytes at stage 0; the path ends
    with a NUL. A match whose path cannot be read that way (a long path, a conflict, or
    the name inside an extension) leaves the answer to git.
    """
    found: list[str] = []
    needle = name.encode() + b"\0"
    pos = index.find(needle, 12)
    while pos >= 0:
        end = pos + len(needle) - 1
        nul = index.rfind(b"\0", 0, pos)
        for start in (nul + 1, nul + 2):
            if (int.from_bytes(index[start - 2 : start], "big") & 0xFFF) == end - start:
                path = os.fsdecode(index[start:end])
                if path.rpartition("/")[2] == name:
                    found.append(path)
                break
        else:
            raise Unsure(f"{name} in the index not read")
        pos = index.find(needle, end)
    return found


def _default_excludes() -> Path | None:
    """The ignore file git reads when core.excludesFile is unset: git runs with HOME and without XDG_CONFIG_HOME."""
    home = os.environ.get("HOME")
    return Path(home, ".config", "git", "ignore") if home else None


def _letter(flags: int, letters: Iterable[tuple[int, str]]) -> str:
    found = [letter for bit, letter in letters if flags & bit]
    if len(found) > 1:
        raise Unsure("two letters")
    return found[0] if found else "."


def _entries(repo, flags: dict[str, int]) -> list[Entry]:
    tracked: dict[str, Entry] = {}
    untracked: list[str] = []
    for path, status in flags.items():
        path.encode("utf-8")  # UnicodeError (a name libgit2 could not decode): git
        f = int(status)
        if f & UNEXPECTED:
            raise Unsure("unreadable or renamed")
        if f & IGNORED:
            if f != IGNORED:
                raise Unsure("ignored and changed")
            continue
        if f & CONFLICTED:
            tracked[path] = Entry(path, "U", "U")
            continue
        x, y = _letter(f, INDEX_LETTERS), _letter(f, WORKTREE_LETTERS)
        if f & WT_NEW:
            if y != "." or x not in (".", "D"):
                raise Unsure("untracked over a change")
            untracked.append(path)
        if x != "." or y != ".":
            tracked[path] = Entry(path, x, y)
    if tracked:
        _check_modes(repo, tracked)
        _pair_renames(repo, tracked)
    return sorted(tracked.values(), key=lambda e: e.path) + [Entry(p, "?", "?") for p in sorted(untracked)]


def _head_tree(repo):
    return None if repo.head_is_unborn else repo.head.peel(pygit2.Tree)


def _check_modes(repo, tracked: dict[str, Entry]) -> None:
    """A changed submodule (a gitlink, in the index or HEAD): git decides what --ignore-submodules=dirty shows."""
    index, tree = repo.index, _head_tree(repo)
    conflicts = index.conflicts if index.conflicts is not None else {}
    for path, found in tracked.items():
        entries = [e for e in conflicts[path] if e is not None] if found.index == "U" else []
        if path in index and found.index != "U":
            entries.append(index[path])
        if any(e.mode == FileMode.COMMIT for e in entries):
            raise Unsure("gitlink")
        if tree is not None and path in tree and tree[path].filemode == FileMode.COMMIT:
            raise Unsure("gitlink in HEAD")


def _pair_renames(repo, tracked: dict[str, Entry]) -> None:
    """Staged renames as git finds them: only unique exact ones are paired here; anything else is git's."""
    added = [e for e in tracked.values() if e.index == "A"]
    deleted = [e for e in tracked.values() if e.index == "D"]
    if not added or not deleted:
        return
    index, tree = repo.index, _head_tree(repo)
    if tree is None:
        raise Unsure("rename without HEAD")
    new = {e.path: (str(index[e.path].id), index[e.path].mode) for e in added}
    old = {e.path: (str(tree[e.path].id), tree[e.path].filemode) for e in deleted}
    for path, (oid, mode) in new.items():
        sources = [p for p, (o, _) in old.items() if o == oid]
        twins = [p for p, (o, _) in new.items() if o == oid]
        if len(sources) != 1 or len(twins) != 1 or oid == EMPTY_BLOB or old[sources[0]][1] != mode:
            # no exact source (git may pair by similarity), or more than one way to pair
            raise Unsure("inexact or ambiguous rename")
        source = sources[0]
        entry = tracked[path]
        tracked[path] = Entry(path, "R", entry.worktree, source)
        del tracked[source]


def _branch(repo, common_dir: Path, config: Settings) -> tuple[str | None, str | None, int, int]:
    if repo.head_is_detached:
        return None, None, 0, 0
    target = repo.lookup_reference("HEAD").target
    if not isinstance(target, str) or not target.startswith("refs/heads/"):
        raise Unsure("HEAD outside refs/heads")
    branch = target.removeprefix("refs/heads/")
    tracking = _tracking_ref(branch, config)
    if tracking is None:
        return branch, None, 0, 0
    upstream = _shorten(repo, common_dir, tracking)
    ref = repo.references.get(tracking)
    if ref is None or repo.head_is_unborn:
        return branch, upstream, 0, 0
    ahead, behind = repo.ahead_behind(repo.head.target, ref.resolve().peel(pygit2.Commit).id)
    return branch, upstream, ahead, behind


def _tracking_ref(branch: str, config: Settings) -> str | None:
    """The ref git compares ``branch`` with (remote.c, branch_get_upstream), or None when it has none."""
    remote = config.get(f"branch.{branch}.remote", [])
    merges = config.get(f"branch.{branch}.merge", [])
    if not remote or not merges:
        return None
    if len(merges) > 1 or not merges[0].startswith("refs/"):
        raise Unsure("merge settings")
    merge = merges[0]
    if remote[-1] == ".":
        return merge
    for spec in config.get(f"remote.{remote[-1]}.fetch", []):
        spec = spec.removeprefix("+")
        if spec.startswith("^") or not spec.startswith("refs/"):
            raise Unsure("fetch refspec")
        source, _, destination = spec.partition(":")
        if not destination:
            continue
        if "*" in source:
            before, _, after = source.partition("*")
            if merge.startswith(before) and merge.endswith(after) and len(merge) >= len(before) + len(after):
                return destination.replace("*", merge[len(before) : len(merge) - len(after)], 1)
        elif source == merge:
            return destination
    return None


def _shorten(repo, common_dir: Path, ref: str) -> str:
    """``ref`` as git names it in status; Unsure where git would have to pick a longer, unambiguous form."""
    for i in (4, 3):
        prefix = SHORTEN_RULES[i].format("")
        if ref.startswith(prefix) and not ref.endswith("/HEAD"):
            short = ref[len(prefix) :]
            for rule in SHORTEN_RULES[:i]:
                name = rule.format(short)
                if os.path.lexists(common_dir / name) or repo.references.get(name) is not None:
                    raise Unsure("ambiguous upstream name")
            return short
    raise Unsure("upstream outside heads and remotes")
