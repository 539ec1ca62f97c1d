"""The vcs category: read-only git, only in repositories inside the roots.

Every call runs ``git --no-pager -C <repo>`` with a scrubbed environment and
config overrides (GIT_CONFIG_COUNT) that keep a repository's own config from
running programs: fsmonitor, hooks, pager, and every filter, diff and merge
driver found in any config file git reads there (includes and
config.worktree too). User-supplied values starting with ``-`` are refused,
revisions come after ``--end-of-options`` and paths after ``--``; diffs and
shows take commits only (a blob's or tree's id would show content under no
path). Diff sections and status entries of deny-listed paths are withheld.
git_status is answered by libgit2 in-process where it gives git's answer
(``gitstatus``); the checks on the repository's paths run first either way.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import anyio.to_thread
from pydantic import BaseModel, Field

from nexus_core import PathPolicy, PluginContext, ToolError, ToolRegistrar

from .config import FilesConfig
from .gitcache import Config, Known, RepoCache, read_config_listing, stamp, watched_paths
from .gitkept import Kept
from .gitrun import run_git
from .gitstatus import Answer, Entry, settings
from .gitstatus import status as library_status
from .results import ToolOutput, tool

GIT = "files.git"  # the key of the context's Git in ctx.state
GIT_OUTPUT_CAP = 16 * 1024 * 1024  # parsing needs whole records; the text shown is capped separately
# Settings that keep a repository's own config from running programs, reading outside the
# repository or changing the output format this module parses. They are passed through
# GIT_CONFIG_COUNT/KEY/VALUE (the "command" scope, which wins over every config file), not
# ``-c``: ``-c`` splits at the first '=', so a driver named "a=b" could not be overridden.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.quotePath", "false"),
    ("core.attributesFile", os.devnull),
    ("core.untrackedCache", "false"),
    ("core.sshCommand", ""),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.relative", "false"),
    ("diff.ignoreSubmodules", "dirty"),  # "none" runs git status inside submodules, with their config
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.x509.program", ""),
    ("blame.ignoreRevsFile", ""),
    ("color.ui", "false"),
)
# Per-driver keys that name a program; every driver the config defines gets them blanked.
DRIVER_COMMANDS = {"filter": ("clean", "smudge", "process"), "diff": ("textconv", "command"), "merge": ("driver",)}
# Entries of a git directory that must not lead outside the roots (symlinks, alternates).
GIT_DIR_ENTRIES = ("objects", "refs", "packed-refs", "HEAD", "index", "config", "config.worktree", "info", "logs")

RepoArg = str  # any folder of the repository; "." is what a model means by "this repo"
RevArg = str


class StatusEntry(BaseModel):
    path: str
    index: str = Field(description="Staged change: M, A, D, R, C, U, ? or '.' for none.")
    worktree: str = Field(description="Unstaged change, same letters.")
    original_path: str | None = Field(None, description="For renames and copies, the old path.")


class GitStatus(ToolOutput):
    repo: str
    branch: str | None = Field(description="Current branch; None when HEAD is detached.")
    upstream: str | None
    ahead: int
    behind: int
    entries: list[StatusEntry]
    clean: bool
    hidden: int = Field(0, description="Changed paths left out because they match deny_paths.")

    def render(self) -> str:
        head = f"## {self.branch or '(detached HEAD)'}"
        if self.upstream:
            head += f"...{self.upstream} [ahead {self.ahead}, behind {self.behind}]"
        rows = [head]
        for e in self.entries:
            renamed = f"{e.original_path} -> " if e.original_path else ""
            rows.append(f"{e.index}{e.worktree} {renamed}{e.path}")
        if self.hidden:
            rows.append(f"({self.hidden} changed path(s) hidden by deny_paths)")
        if self.clean:
            rows.append("nothing to commit, working tree clean")
        return "\n".join(rows)


class Commit(BaseModel):
    commit: str
    author: str
    email: str
    date: str
    subject: str


class GitLog(ToolOutput):
    repo: str
    commits: list[Commit]

    def render(self) -> str:
        if not self.commits:
            return "no commits match"
        return "\n".join(f"{c.commit[:10]} {c.date[:10]} {c.author}: {c.subject}" for c in self.commits)


class FileStat(BaseModel):
    path: str
    added: int | None = Field(description="Lines added; None for binary files.")
    deleted: int | None


WITHHELD = Field(0, description="File sections left out because a path matches deny_paths.")


class Patch(ToolOutput):
    """A diff as tools return it: per-file counts, the text, and what was cut or withheld."""

    files: list[FileStat]
    diff: str
    truncated: bool
    withheld: int = WITHHELD
    notice: str | None = Field(None, description="Why sections were withheld, when some were.")


class GitDiff(Patch):
    repo: str
    description: str

    def render(self) -> str:
        note = f"\n[{self.notice}]" if self.notice else ""
        if not self.files and not self.diff.strip():
            return f"no differences ({self.description}){note}"
        text = self.diff + ("\n[diff cut at max_output_bytes; pass a path to see one file]" if self.truncated else "")
        return f"# {self.description}\n{text}{note}"


class GitShow(Patch):
    repo: str
    commit: Commit
    body: str

    def render(self) -> str:
        c = self.commit
        head = f"commit {c.commit}\nAuthor: {c.author} <{c.email}>\nDate:   {c.date}\n\n    {c.subject}\n"
        body = "".join(f"    {line}\n" for line in self.body.splitlines())
        cut = "\n[diff cut at max_output_bytes]" if self.truncated else ""
        note = f"\n[{self.notice}]" if self.notice else ""
        return f"{head}{body}\n{self.diff}{cut}{note}"


class BlameLine(BaseModel):
    line: int
    commit: str
    author: str
    date: str
    text: str


class GitBlame(ToolOutput):
    repo: str
    path: str
    lines: list[BlameLine]

    def render(self) -> str:
        return "\n".join(f"{b.commit[:8]} ({b.author[:16]:<16} {b.date[:10]} {b.line:>5}) {b.text}" for b in self.lines)


class Branch(BaseModel):
    name: str
    current: bool
    commit: str
    upstream: str | None
    track: str | None = Field(description="e.g. 'ahead 1, behind 2'.")
    date: str
    subject: str


class GitBranches(ToolOutput):
    repo: str
    branches: list[Branch]

    def render(self) -> str:
        return "\n".join(
            f"{'*' if b.current else ' '} {b.name:<30} {b.commit} {b.subject}"
            + (f" [{b.upstream}{': ' + b.track if b.track else ''}]" if b.upstream else "")
            for b in self.branches
        )


def refuse_options(**values: str | None) -> None:
    """Flag injection guard: no user-supplied value may look like an option."""
    for name, value in values.items():
        if value is None:
            continue
        if value.startswith("-"):
            raise ToolError(f"refused: {name} {value!r} starts with '-', which git would read as an option")
        if any(ord(c) < 32 for c in value):
            raise ToolError(f"refused: {name} contains control characters")


def check_revision(name: str, value: str | None) -> None:
    refuse_options(**{name: value})
    if value is not None and (":" in value or not value.strip() or " " in value):
        raise ToolError(
            f"refused: {name} {value!r} is not a plain revision (no spaces or ':'); use the path parameter for files"
        )


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _cut(text: str, cap: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text, False
    return data[:cap].decode("utf-8", errors="ignore"), True


def _numstat_z(out: bytes) -> list[tuple[FileStat, list[str]]]:
    """``--numstat -z`` records, with every path each touches (both sides of a rename)."""
    stats = []
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        parts = fields[i].split(b"\t", 2)
        i += 1
        if len(parts) != 3:
            continue
        added, deleted, path = (os.fsdecode(p) for p in parts)
        paths = [path]
        if not path and i + 1 < len(fields):  # a rename or copy: the old and the new path follow
            paths = [os.fsdecode(fields[i]), os.fsdecode(fields[i + 1])]
            i += 2
        stat = FileStat(
            path=paths[-1],
            added=int(added) if added.isdigit() else None,
            deleted=int(deleted) if deleted.isdigit() else None,
        )
        stats.append((stat, paths))
    return stats


C_ESCAPES = {ord(k): v for k, v in zip('abfnrtv\\"', '\a\b\f\n\r\t\v\\"', strict=True)}


def _c_unquote(data: bytes) -> bytes | None:
    """A C-quoted git path (``"a/caf\\303\\251"``) as bytes; None when ``data`` is not exactly one."""
    if len(data) < 2 or data[:1] != b'"' or data[-1:] != b'"':
        return None
    out = bytearray()
    i, end = 1, len(data) - 1
    while i < end:
        c = data[i]
        if c == ord('"'):
            return None  # an unescaped quote inside: not one quoted string
        if c != ord("\\"):
            out.append(c)
            i += 1
            continue
        if i + 1 >= end:
            return None
        nxt = data[i + 1]
        if nxt in C_ESCAPES:
            out += C_ESCAPES[nxt].encode()
            i += 2
        elif data[i + 1 : i + 4].isdigit() and len(data[i + 1 : i + 4]) == 3:
            out.append(int(data[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            return None
    return bytes(out)


def _path(data: bytes) -> bytes:
    """A path as git prints it after '--- ', 'rename from ' and the like: maybe quoted."""
    return _c_unquote(data) if data.startswith(b'"') and _c_unquote(data) is not None else data


def _header_paths(rest: bytes) -> set[bytes]:
    """Every reading of ``a/X b/Y`` from a ``diff --git`` line (unquoted paths may hold ' b/')."""
    found: set[bytes] = set()
    if rest.startswith(b'"'):
        for i in range(1, len(rest)):
            first = _c_unquote(rest[: i + 1]) if rest[i : i + 2] == b'" ' else None
            if first is not None:
                found |= {first, _path(rest[i + 2 :])}
    for i in range(len(rest)):
        if rest[i : i + 4] == b' "b/' and (second := _c_unquote(rest[i + 1 :])) is not None:
            found |= {rest[:i], second}
        if rest[i : i + 4] == b" b/":
            found |= {rest[:i], rest[i + 1 :]}
    return {p[2:] if p[:2] in (b"a/", b"b/") else p for p in found}


def section_paths(lines: list[bytes]) -> set[str]:
    """The paths one file section of a diff may be about (every candidate reading, for a safe check)."""
    head = lines[0]
    found: set[bytes] = set()
    if head.startswith(b"diff --git "):
        found |= _header_paths(head[len(b"diff --git ") :])
    else:  # diff --cc / --combined: one path
        found.add(_path(head.split(b" ", 2)[2]))
    for line in lines[1:]:
        if line.startswith((b"@@", b"Binary files ")):
            break  # the hunks: content, never headers
        for prefix in (b"rename from ", b"rename to ", b"copy from ", b"copy to ", b"--- ", b"+++ "):
            if line.startswith(prefix):
                name = line[len(prefix) :]
                name = name[:-1] if name.endswith(b"\t") else name  # git adds a tab after names with spaces
                name = _path(name)
                if prefix in (b"--- ", b"+++ "):
                    if name == b"/dev/null":
                        continue
                    name = name[2:] if name[:2] in (b"a/", b"b/") else name
                found.add(name)
    return {os.fsdecode(p) for p in found if p}


@dataclass
class FilteredPatch:
    text: str
    withheld: int
    reasons: list[str]

    def notice(self) -> str | None:
        if not self.withheld:
            return None
        what = "file section" if self.withheld == 1 else "file sections"
        return f"{self.withheld} {what} withheld: the path {'; '.join(self.reasons)} (deny_paths of [plugins.files])"


DIFF_STARTS = (b"diff --git ", b"diff --cc ", b"diff --combined ")


def filter_patch(patch: bytes, denial: Callable[[str], str | None]) -> FilteredPatch:
    """Drop every file section whose paths (any side, any reading) ``denial`` refuses.

    Sections are split on '\\n' only: a hunk line always starts with ' ', '+', '-'
    or '\\', so no file content can start a section of its own.
    """
    kept: list[bytes] = []
    section: list[bytes] = []
    withheld = 0
    reasons: list[str] = []

    def close() -> None:
        nonlocal withheld
        if not section:
            return
        paths = section_paths(section)
        found = [r for p in sorted(paths) if (r := denial(p))] if paths else ["could not be read from the diff"]
        if found:
            withheld += 1
            reasons.extend(r for r in found if r not in reasons)
        else:
            kept.extend(section)

    for line in patch.split(b"\n"):
        if line.startswith(DIFF_STARTS):
            close()
            section = [line]
        elif section:
            section.append(line)
        else:
            kept.append(line)
    close()
    return FilteredPatch(text=_text(b"\n".join(kept)), withheld=withheld, reasons=reasons)


# Diff output this module parses: fixed prefixes and no programs (external diff, textconv).
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--no-relative")

LOG_FORMAT = "%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e"


def _commits(out: str) -> list[Commit]:
    commits = []
    for record in out.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 5:
            commits.append(
                Commit(commit=fields[0], author=fields[1], email=fields[2], date=fields[3], subject=fields[4])
            )
    return commits


Override = tuple[str, str]

STATUS_ARGS = ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--ignore-submodules=dirty"]


def parse_status(out: str) -> Answer:
    """``git status`` run with ``STATUS_ARGS``, read."""
    answer = Answer(branch=None, upstream=None, ahead=0, behind=0, entries=[])
    records = out.split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if rec.startswith("# branch.head "):
            head = rec.split(" ", 2)[2]
            answer.branch = None if head == "(detached)" else head
        elif rec.startswith("# branch.upstream "):
            answer.upstream = rec.split(" ", 2)[2]
        elif rec.startswith("# branch.ab "):
            a, b = rec.split(" ")[2:4]
            answer.ahead, answer.behind = int(a), -int(b)
        elif rec.startswith("1 "):
            f = rec.split(" ", 8)
            answer.entries.append(Entry(path=f[8], index=f[1][0], worktree=f[1][1]))
        elif rec.startswith("2 "):
            f = rec.split(" ", 9)
            answer.entries.append(Entry(path=f[9], index=f[1][0], worktree=f[1][1], original_path=records[i]))
            i += 1
        elif rec.startswith("u "):
            f = rec.split(" ", 10)
            answer.entries.append(Entry(path=f[10], index="U", worktree="U"))
        elif rec.startswith("? "):
            answer.entries.append(Entry(path=rec[2:], index="?", worktree="?"))
    return answer


def driver_overrides(config_list: bytes) -> list[Override]:
    """Blanking settings for every filter, diff and merge driver in ``git config --list --null`` output.

    A key is ``section.subsection.name``: the subsection is everything between the
    first and the last dot, kept byte for byte (it may hold spaces, dots, '=' or
    any Unicode), exactly as git matches it against the ``filter=``/``diff=``/
    ``merge=`` attribute.
    """
    overrides: set[Override] = set()
    for entry in config_list.split(b"\0"):
        key = os.fsdecode(entry.partition(b"\n")[0])
        first, last = key.find("."), key.rfind(".")
        if first <= 0 or last == first:
            continue  # no subsection: not a driver
        section, driver = key[:first].lower(), key[first + 1 : last]
        for name in DRIVER_COMMANDS.get(section, ()):
            overrides.add((f"{section}.{driver}.{name}", ""))
        if section == "filter":
            overrides.add((f"filter.{driver}.required", "false"))  # a blanked required filter must not fail
    return sorted(overrides)


def _is_symlink(path: str) -> bool:
    return stat.S_ISLNK(_lstat_mode(path))


def _lstat_mode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0  # no such file: neither a symlink (as Path.is_symlink) nor a folder (as Path.is_dir)


def _is_plain_dir(path: str) -> bool:
    """A folder that is not a symlink (``is_dir() and not is_symlink()``, in one ``lstat``)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _symlinks(folder: Path, *, deep: bool) -> list[Path]:
    """The symlinks in ``folder`` (and, when ``deep``, in its subfolders; symlinked folders are not entered).

    ``os.scandir`` reports the entry type with the listing, so only the links cost a system call.
    """
    found: list[Path] = []
    pending = [folder]
    while pending:
        try:
            listing = os.scandir(pending.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                if entry.is_symlink():
                    found.append(Path(entry.path))
                elif deep and entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
    return found


class Git:
    """git in one repository inside the roots, with the safety settings applied."""

    def __init__(self, ctx: PluginContext) -> None:
        self.policy = ctx.paths
        self.config: FilesConfig = ctx.config
        self.binary = shutil.which("git")
        self.known = RepoCache()
        self.library = True  # answer git_status in-process where libgit2 gives git's answer (gitstatus)
        self.kept = Kept()  # the repositories libgit2 keeps open between calls (gitkept)

    def env(self, overrides: Sequence[Override] = ()) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        ceilings = {str(r.parent) for r in self.policy.roots}
        settings = [*SAFE_CONFIG, *overrides]
        env |= {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_OPTIONAL_LOCKS": "0",  # status must not write the index
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_CEILING_DIRECTORIES": os.pathsep.join(sorted(ceilings)),
            "GIT_CONFIG_COUNT": str(len(settings)),
        }
        for i, (key, value) in enumerate(settings):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        return env

    async def raw_bytes(self, cwd: Path, args: list[str], overrides: Sequence[Override] = ()) -> tuple[int, bytes, str]:
        if self.binary is None:
            raise ToolError("git is not installed on this machine")
        out = await run_git(
            [self.binary, "--no-pager", "-C", str(cwd), *args],
            cwd=str(cwd),
            env=self.env(overrides),
            timeout=self.config.command_timeout,
            cap=GIT_OUTPUT_CAP,
        )
        if out.exit_code is None:
            raise ToolError(f"git timed out after {self.config.command_timeout} s")
        return out.exit_code or 0, out.stdout, _text(out.stderr)

    async def raw(self, cwd: Path, args: list[str], overrides: Sequence[Override] = ()) -> tuple[int, str, str]:
        code, out, err = await self.raw_bytes(cwd, args, overrides)
        return code, _text(out), err

    async def repo(self, given: str) -> tuple[Path, list[Override]]:
        """The repository's top folder (inside the roots) and the overrides its config needs.

        What git said about a folder is reused while nothing it depends on changed
        (``gitcache``); the checks on the paths and the git directory run every time.
        """
        known = await self.locate(given)
        return known.top, list(known.overrides)

    async def status(self, known: Known) -> Answer:
        """The status of ``known``'s repository: from libgit2 where it answers as git would, else from git."""
        if self.library and known.settings is not None:
            args = (known.top, known.git_dir, known.common_dir, known.settings, self.kept)
            answer = await anyio.to_thread.run_sync(library_status, *args)
            if answer is not None:
                return answer
        return parse_status(await self.run(known.top, list(known.overrides), STATUS_ARGS))

    async def locate(self, given: str) -> Known:
        """What git said about the repository of ``given``, after the checks on its paths."""
        return (await self.located(given))[0]

    async def located(self, given: str) -> tuple[Known, bool]:
        """``locate``, and whether the repository's top folder is its own real path (no symlink on the way)."""
        real = self.policy.resolve(given)
        if not real.exists():
            raise ToolError(f"'{given}' does not exist")
        folder = real if real.is_dir() else real.parent
        known = self.known.get(folder)
        if known is None:
            known = await self._ask_git(given, folder)  # checked there, before git reads its config
        real_top = self._check_locations(given, known, {real: str(real)})  # (again, then: git took its time)
        return known, real_top == str(known.top)

    async def _ask_git(self, given: str, folder: Path) -> Known:
        started = time.time_ns()
        code, out, err = await self.raw(
            folder, ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"]
        )
        if code != 0:
            raise ToolError(f"'{given}' is not inside a git repository within the roots: {err.strip()}")
        top, git_dir, common_dir = (Path(p) for p in out.splitlines()[:3])
        self._check_locations(given, Known(top, git_dir, common_dir, (), (), ()))  # before git reads its config
        config = await self._config(top)
        watched = watched_paths(folder, top, git_dir, common_dir, config)
        known = Known(
            top, git_dir, common_dir, tuple(driver_overrides(config.entries)), watched, tuple(map(stamp, watched)),
            settings(config.file_entries),
        )  # fmt: skip
        self.known.put(folder, known, complete=config.complete, started_ns=started)
        return known

    def _check_locations(self, given: str, known: Known, real: dict[Path, str] | None = None) -> str:
        """Refuse a repository whose folders lead outside the roots; the real path of its top folder.

        ``real``: paths already resolved in this call (the one asked about), not resolved again."""
        real = dict(real or {})  # the git directory is most often the common one: resolved once
        for what, path in (
            ("repository", known.top),
            ("git directory", known.git_dir),
            ("common git directory", known.common_dir),
        ):
            if path not in real:
                real[path] = os.path.realpath(path)
            if self.policy.root_of(Path(real[path])) is None:
                raise ToolError(f"refused: the {what} of '{given}' ({path}) is outside the allowed roots")
        self._check_git_dir(given, known.git_dir, known.common_dir)
        return real[known.top]

    def _check_git_dir(self, given: str, git_dir: Path, common_dir: Path) -> None:
        """Objects, refs and config must not come from outside the roots (symlinks, alternates)."""
        links: list[Path] = []
        for folder in {git_dir, common_dir}:  # on strings: pathlib would cost more than these lstat calls
            base = str(folder)
            links += [Path(base, name) for name in GIT_DIR_ENTRIES if _is_symlink(f"{base}/{name}")]
            for shallow in (f"{base}/objects", f"{base}/objects/pack", f"{base}/objects/info"):
                if _is_plain_dir(shallow):
                    links += _symlinks(Path(shallow), deep=False)
            links += _symlinks(Path(base, "refs"), deep=True)
        for link in links:
            if self.policy.root_of(Path(os.path.realpath(link))) is None:
                raise ToolError(f"refused: {link} of '{given}' leads outside the allowed roots")
        alternates = common_dir / "objects" / "info" / "alternates"
        if alternates.is_file():
            for line in alternates.read_text(errors="replace").splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                target = Path(os.path.realpath(common_dir / "objects" / line.strip('"')))
                if line.startswith('"') or self.policy.root_of(target) is None:
                    raise ToolError(f"refused: the object alternates of '{given}' lead outside the allowed roots")

    async def _config(self, top: Path) -> Config:
        """Every config entry git reads here, with the files it came from (to blank every driver they define).

        No scope option: git then reads exactly what a later command reads (local,
        config.worktree with extensions.worktreeConfig, included files; system and
        global are switched off by the environment).
        """
        code, out, err = await self.raw_bytes(top, ["config", "--list", "--null", "--includes", "--show-origin"])
        if code != 0:
            raise ToolError(f"refused: cannot read the git config of {self.policy.display(top) or '.'}: {err.strip()}")
        return read_config_listing(out, top)

    async def require_commits(self, top: Path, overrides: Sequence[Override], **revisions: str | None) -> None:
        """Refuse a revision naming a blob or a tree (by id, through a tag, or as a range end).

        ``git diff <blob> <blob>`` and ``git show <blob>`` print content under no path,
        so nothing could tell a deny-listed file's content from another's: the git
        tools take commits only. Two git runs when all is well; the culprit is found
        only when one is not.
        """
        given = {name: rev for name, rev in revisions.items() if rev}
        if not given or await self._all_commits(top, overrides, list(given.values())):
            return
        for name, rev in given.items():
            if not await self._all_commits(top, overrides, [rev]):
                raise ToolError(
                    f"refused: {name} {rev!r} names a file's or folder's contents (a blob or tree), not a commit; "
                    "the git tools compare and show commits only: pass commits and limit them with path"
                )

    async def _all_commits(self, top: Path, overrides: Sequence[Override], revisions: list[str]) -> bool:
        """Whether every object ``revisions`` name (ranges expanded, tags peeled) is a commit; unknown ones pass
        (git's own command then says so)."""
        _, out, _ = await self.raw(top, ["rev-parse", "--revs-only", "--end-of-options", *revisions], overrides)
        ids = [line.lstrip("^") for line in out.split()]
        if not ids:
            return True
        peeled = [f"{i}^{{commit}}" for i in ids]
        code, _, _ = await self.raw(top, ["rev-parse", "--end-of-options", *peeled], overrides)
        return code == 0

    def rel(self, top: Path, given: str) -> str:
        """A path argument as a repo-relative pathspec, after the path policy (deny_paths included)."""
        real = self.policy.resolve(given)
        if not (real == top or real.is_relative_to(top)):
            raise ToolError(f"'{given}' is not inside the repository at {self.policy.display(top) or top}")
        rel = real.relative_to(top).as_posix()
        return ":(literal)" + rel if rel != "." else "."

    async def run(self, top: Path, overrides: Sequence[Override], args: list[str]) -> str:
        code, out, err = await self.raw(top, args, overrides)
        if code != 0:
            raise ToolError(f"git {args[0]} failed: {err.strip() or f'exit code {code}'}")
        return out

    async def run_bytes(self, top: Path, overrides: Sequence[Override], args: list[str]) -> bytes:
        code, out, err = await self.raw_bytes(top, args, overrides)
        if code != 0:
            raise ToolError(f"git {args[0]} failed: {err.strip() or f'exit code {code}'}")
        return out

    def denial(self, top: Path, rel: str) -> str | None:
        """Why a repo-relative path is hidden (a deny_paths match), or None when it may be shown."""
        lexical = Path(os.path.normpath(top / rel))
        if self.policy.root_of(lexical) is None:
            return "is outside the allowed roots"
        if reason := self.policy.denied(lexical):
            return reason
        real = Path(os.path.realpath(lexical))
        return self.policy.denied(real) if self.policy.root_of(real) is not None else None

    async def patch(self, top: Path, overrides: Sequence[Override], args: list[str]) -> FilteredPatch:
        """A diff with every file section that touches a deny-listed path withheld."""
        return filter_patch(await self.run_bytes(top, overrides, args), Denials(self, top))

    async def numstat(self, top: Path, overrides: Sequence[Override], args: list[str]) -> list[FileStat]:
        """``--numstat -z`` rows (``args`` include those options) without deny-listed paths."""
        out = await self.run_bytes(top, overrides, args)
        denial = Denials(self, top)
        return [s for s, paths in _numstat_z(out) if not any(denial(p) for p in paths)]


class Denials:
    """``Git.denial`` for the many paths of one status: the same answers, with fewer system calls.

    A path's real path is its lexical one when the top folder is real and no folder on the way below it, nor
    the path itself, is a symlink: then only those are ``lstat``-ed (each once per call: a status lists many
    files of few folders), not every folder from ``/``. Any symlink there sends the path to ``Git.denial``.
    Such a path is then checked on its text (``PathPolicy.visible``, told by that ``lstat`` whether it is a
    folder); only a hidden one is checked again for its reason.
    """

    def __init__(self, git: Git, top: Path, *, top_real: bool | None = None) -> None:
        """``top_real``: whether ``top`` is its own real path, when the caller just found out."""
        self.git, self.top = git, top
        self.prefix = str(top).rstrip("/") + "/"
        self.top_real = os.path.realpath(top) == str(top) if top_real is None else top_real
        self.modes: dict[str, int] = {}  # path -> its lstat mode (0: none), as realpath would see it

    def __call__(self, rel: str) -> str | None:
        lexical = os.path.normpath(self.prefix + rel)
        if not (self.top_real and lexical.startswith(self.prefix)) or self._any_link(lexical):
            return self.git.denial(self.top, rel)
        if self.git.policy.visible(lexical, stat.S_ISDIR(self.modes[lexical])):
            return None
        path = Path(lexical)
        if self.git.policy.root_of(path) is None:
            return "is outside the allowed roots"
        return self.git.policy.denied(path)  # the real path is this one: denial() would check it twice

    def _any_link(self, lexical: str) -> bool:
        end = len(self.prefix) - 1
        while end >= 0:
            end = lexical.find("/", end + 1)
            step = lexical if end < 0 else lexical[:end]
            mode = self.modes.get(step)
            if mode is None:
                mode = self.modes[step] = _lstat_mode(step)
            if stat.S_ISLNK(mode):
                return True
        return False


def shown(policy: PathPolicy, top: Path) -> str:
    return policy.display(top) or "."


def git_of(ctx: PluginContext) -> Git:
    """The context's ``Git``: its cache of what git said about each folder lives as long as the server."""
    return ctx.state[GIT]


async def git_status(ctx: PluginContext, repo: RepoArg = ".") -> GitStatus:
    """Branch, upstream, changed and untracked files."""
    git = git_of(ctx)
    refuse_options(repo=repo)
    known, top_real = await git.located(repo)
    top = known.top
    answer = await git.status(known)
    entries = [
        StatusEntry(path=e.path, index=e.index, worktree=e.worktree, original_path=e.original_path)
        for e in answer.entries
    ]
    denial = Denials(git, top, top_real=top_real)
    shown_entries = [e for e in entries if not any(denial(p) for p in (e.path, e.original_path) if p is not None)]
    return GitStatus(
        repo=shown(ctx.paths, top), branch=answer.branch, upstream=answer.upstream, ahead=answer.ahead,
        behind=answer.behind, entries=shown_entries, clean=not entries, hidden=len(entries) - len(shown_entries),
    )  # fmt: skip


async def git_log(
    ctx: PluginContext,
    repo: RepoArg = ".",
    path: str | None = None,
    author: str | None = None,
    since: Annotated[str | None, Field(description="e.g. '2024-01-31' or '2 weeks ago'.")] = None,
    max: Annotated[int, Field(ge=1, le=1000)] = 20,
    revision: Annotated[str | None, Field(description="Or a range; default HEAD.")] = None,
) -> GitLog:
    """Commit history, by path, author and date."""
    git = git_of(ctx)
    refuse_options(repo=repo, path=path, author=author, since=since)
    check_revision("revision", revision)
    top, ov = await git.repo(repo)
    args = ["log", f"--format={LOG_FORMAT}", f"--max-count={max}", "--no-color"]
    if author:
        args.append(f"--author={author}")
    if since:
        args.append(f"--since={since}")
    args += ["--end-of-options", *([revision] if revision else []), "--"]
    if path:
        args.append(git.rel(top, path))
    return GitLog(repo=shown(ctx.paths, top), commits=_commits(await git.run(top, ov, args)))


async def git_diff(
    ctx: PluginContext,
    repo: RepoArg = ".",
    staged: bool = False,
    base: str | None = None,
    target: Annotated[str | None, Field(description="To this revision (needs base).")] = None,
    path: str | None = None,
    context_lines: Annotated[int, Field(ge=0, le=100)] = 3,
) -> GitDiff:
    """Diff the working tree, the staged changes, or two revisions."""
    git = git_of(ctx)
    refuse_options(repo=repo, path=path)
    check_revision("base", base)
    check_revision("target", target)
    if target and not base:
        raise ToolError("target needs base: pass base (and target) to compare two revisions")
    if staged and target:
        raise ToolError("staged compares the index with a revision; do not combine it with target")
    top, ov = await git.repo(repo)
    await git.require_commits(top, ov, base=base, target=target)
    revs = [r for r in (base, target) if r]
    what = ["--cached"] if staged else []
    description = (
        f"{base}..{target}" if target else
        f"staged changes vs {base or 'HEAD'}" if staged else
        f"working tree vs {base}" if base else "unstaged changes (working tree vs index)"
    )  # fmt: skip
    tail = ["--end-of-options", *revs, "--", *([git.rel(top, path)] if path else [])]
    common = ["diff", *DIFF_OPTIONS, "--ignore-submodules=dirty", *what]
    stats = await git.numstat(top, ov, [*common, "--numstat", "-z", *tail])
    patch = await git.patch(top, ov, [*common, f"--unified={context_lines}", *tail])
    diff, cut = _cut(patch.text, ctx.config.max_output_bytes)
    return GitDiff(
        repo=shown(ctx.paths, top), description=description, files=stats, diff=diff, truncated=cut,
        withheld=patch.withheld, notice=patch.notice(),
    )  # fmt: skip


async def git_show(
    ctx: PluginContext,
    revision: RevArg = "HEAD",
    repo: RepoArg = ".",
    path: str | None = None,
) -> GitShow:
    """A commit's message, files and diff."""
    git = git_of(ctx)
    refuse_options(repo=repo, path=path)
    check_revision("revision", revision)
    top, ov = await git.repo(repo)
    await git.require_commits(top, ov, revision=revision)
    tail = ["--end-of-options", revision, "--", *([git.rel(top, path)] if path else [])]
    meta = await git.run(top, ov, ["show", "--no-patch", f"--format={LOG_FORMAT}%B", *tail])
    head, _, body = meta.partition("\x1e")
    commits = _commits(head + "\x1e")
    if not commits:
        raise ToolError(f"'{revision}' is not a commit")
    common = ["show", "--format=", *DIFF_OPTIONS]
    stats = await git.numstat(top, ov, [*common, "--numstat", "-z", *tail])
    patch = await git.patch(top, ov, [*common, "--patch", *tail])
    diff, cut = _cut(patch.text, ctx.config.max_output_bytes)
    body = body.strip("\n")
    body = body.split("\n", 1)[1].strip("\n") if "\n" in body else ""  # drop the subject line
    return GitShow(
        repo=shown(ctx.paths, top), commit=commits[0], body=body, files=stats, diff=diff, truncated=cut,
        withheld=patch.withheld, notice=patch.notice(),
    )  # fmt: skip


async def git_blame(
    ctx: PluginContext,
    path: str,
    repo: RepoArg = ".",
    revision: str | None = None,
    start_line: Annotated[int | None, Field(ge=1)] = None,
    end_line: Annotated[int | None, Field(ge=1)] = None,
) -> GitBlame:
    """Who last changed each line of a file."""
    git = git_of(ctx)
    refuse_options(repo=repo, path=path)
    check_revision("revision", revision)
    if start_line and end_line and end_line < start_line:
        raise ToolError("end_line must not be before start_line")
    top, ov = await git.repo(repo)
    spec = git.rel(top, path)
    args = ["blame", "--porcelain", "--no-textconv"]
    if start_line or end_line:
        args.append(f"-L{start_line or 1},{end_line or ''}")
    # blame's parser mishandles --end-of-options (git 2.39); check_revision already refused "-..." values.
    args += [*([revision] if revision else []), "--", spec.removeprefix(":(literal)")]
    out = await git.run(top, ov, args)
    lines: list[BlameLine] = []
    commits: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    sha, number = "", 0
    for row in out.split("\n"):
        if row.startswith("\t"):
            info = commits.setdefault(sha, current)
            lines.append(
                BlameLine(
                    line=number,
                    commit=sha,
                    author=info.get("author", ""),
                    date=info.get("date", ""),
                    text=row[1:],
                )
            )
            if len(lines) >= 5000:
                break
        elif len(row) > 41 and row[40] == " " and all(c in "0123456789abcdef" for c in row[:40]):
            sha, number = row[:40], int(row.split(" ")[2])
            current = commits.get(sha, {})
        elif row.startswith("author "):
            current["author"] = row[7:]
        elif row.startswith("author-time "):
            from datetime import UTC, datetime

            current["date"] = datetime.fromtimestamp(int(row[12:]), UTC).isoformat(timespec="seconds")
    return GitBlame(
        repo=shown(ctx.paths, top), path=ctx.paths.display(top / spec.removeprefix(":(literal)")), lines=lines
    )


async def git_branches(
    ctx: PluginContext,
    repo: RepoArg = ".",
    include_remote: bool = False,
) -> GitBranches:
    """Branches with their last commit and upstream."""
    git = git_of(ctx)
    refuse_options(repo=repo)
    top, ov = await git.repo(repo)
    fmt = "%1f".join(
        (
            "%(HEAD)", "%(refname:short)", "%(objectname:short)", "%(upstream:short)",
            "%(upstream:track,nobracket)", "%(committerdate:iso-strict)", "%(contents:subject)",
        )
    )  # fmt: skip
    refs = ["refs/heads", *(["refs/remotes"] if include_remote else [])]
    out = await git.run(top, ov, ["for-each-ref", f"--format={fmt}", *refs])
    branches = []
    for line in out.splitlines():
        f = line.split("\x1f")
        if len(f) == 7:
            branches.append(
                Branch(
                    current=f[0] == "*",
                    name=f[1],
                    commit=f[2],
                    upstream=f[3] or None,
                    track=f[4] or None,
                    date=f[5],
                    subject=f[6],
                )
            )
    return GitBranches(repo=shown(ctx.paths, top), branches=branches)


GIT_COMMANDS = ("status", "log", "diff", "show", "blame", "branch")


def _option(args: list[str], i: int, name: str) -> tuple[str, int]:
    """The value of ``--name=value`` or ``--name value`` at ``args[i]``, and the next index."""
    arg = args[i]
    if "=" in arg:
        return arg.split("=", 1)[1], i + 1
    if i + 1 >= len(args):
        raise ToolError(f"git {name} needs a value")
    return args[i + 1], i + 2


def parse_git_args(command: str, args: list[str]) -> dict[str, object]:
    """A git command line read into one ``git_*`` tool's parameters; any other option is refused.

    Only options the six tools know are read, so every call goes through their checks (revisions,
    paths, deny_paths, commits only): the command line never reaches git as it was given.
    """
    if command not in GIT_COMMANDS:
        raise ToolError(f"refused: 'git {command}' is not one of the read-only commands {', '.join(GIT_COMMANDS)}")
    params: dict[str, object] = {}
    revs: list[str] = []
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            paths += args[i + 1 :]
            break
        key = arg.split("=", 1)[0]
        if command == "log" and (key in ("-n", "--max-count") or (arg[:2] == "-n" and arg[2:].isdigit())):
            value, i = (arg[2:], i + 1) if arg[2:].isdigit() else _option(args, i, key)
            if not value.isdigit():
                raise ToolError(f"git log {key} takes a number, not {value!r}")
            params["max"] = int(value)
        elif command == "log" and key in ("--author", "--since", "--after"):
            value, i = _option(args, i, key)
            params["author" if key == "--author" else "since"] = value
        elif command == "diff" and arg in ("--staged", "--cached"):
            params["staged"], i = True, i + 1
        elif command == "diff" and (key == "--unified" or (arg[:2] == "-U" and arg[2:].isdigit())):
            value, i = (arg[2:], i + 1) if arg[:2] == "-U" else _option(args, i, key)
            params["context_lines"] = int(value) if value.isdigit() else -1
        elif command == "blame" and arg[:2] == "-L":
            start, _, end = (arg[2:] or (args[i + 1] if i + 1 < len(args) else "")).partition(",")
            i += 1 if arg[2:] else 2
            if not start.isdigit() or not (end.isdigit() or not end):
                raise ToolError("git blame -L takes START,END line numbers")
            params["start_line"], params["end_line"] = int(start), (int(end) if end else None)
        elif command == "branch" and arg in ("-a", "--all", "-r", "--remotes"):
            params["include_remote"], i = True, i + 1
        elif arg.startswith("-"):
            raise ToolError(f"refused: 'git {command}' option {arg!r} is not one the read-only git tool accepts")
        else:
            revs.append(arg)
            i += 1
    if command in ("status", "branch") and (revs or paths):
        raise ToolError(f"git {command} takes no revisions or paths here")
    if command == "blame":  # git blame [REV] [--] FILE
        if not paths and revs:
            paths = [revs.pop()]
        if len(paths) != 1 or len(revs) > 1:
            raise ToolError("git blame takes one file (and at most one revision)")
        params["path"] = paths[0]
        if revs:
            params["revision"] = revs[0]
        return params
    if len(paths) > 1:
        raise ToolError(f"git {command} takes at most one path here")
    if paths:
        params["path"] = paths[0]
    if command == "log":
        if len(revs) > 1:
            raise ToolError("git log takes one revision or range")
        if revs:
            params["revision"] = revs[0]
    elif command == "show":
        if len(revs) > 1:
            raise ToolError("git show takes one commit")
        if revs:
            params["revision"] = revs[0]
    elif command == "diff":
        if len(revs) == 1 and ".." in revs[0]:
            revs = [r for r in revs[0].split("..", 1)]
        if len(revs) > 2:
            raise ToolError("git diff takes at most two revisions")
        params.update(zip(("base", "target"), revs, strict=False))
    return params


async def git(
    ctx: PluginContext,
    command: Annotated[str, Field(description=", ".join(GIT_COMMANDS) + ".")],
    args: Annotated[
        list[str] | None,
        Field(description="e.g. ['-n', '5'] for log."),
    ] = None,
    repo: RepoArg = ".",
) -> ToolOutput:
    """A read-only git command, run as its git_* tool."""
    params = parse_git_args(command, list(args or []))
    body = {"status": git_status, "log": git_log, "diff": git_diff, "show": git_show}.get(command)
    body = body or {"blame": git_blame, "branch": git_branches}[command]
    # The bodies are called directly here, past the schema's bounds: check them as the schema would.
    if params.get("context_lines", 0) not in range(0, 101):
        raise ToolError("git diff -U takes 0 to 100 context lines")
    if params.get("max", 1) not in range(1, 1001) or params.get("start_line", 1) == 0:
        raise ToolError("git log -n takes 1 to 1000 commits; git blame -L lines start at 1")
    return await body(ctx, repo=repo, **params)  # type: ignore[operator]


TOOLS = (
    (git_status, "Git status", "uncommitted changes, modified files, dirty working tree"),
    (git_log, "Git log", "history, recent commits, who committed"),
    (git_diff, "Git diff", "what changed, compare revisions, patch"),
    (git_show, "Git show", "what a commit changed"),
    (git_blame, "Git blame", "who wrote or changed a line, author of a line"),
    (git_branches, "Git branches", "list branches, current branch"),
    (git, "Git (read-only)", "version control"),
)


def register(register: ToolRegistrar, ctx: PluginContext) -> None:
    ctx.state[GIT] = Git(ctx)
    for fn, title, keywords in TOOLS:
        register(tool(fn, ctx), category="vcs", title=title, read_only=True, idempotent=True, keywords=keywords)
