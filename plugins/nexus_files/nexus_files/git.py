"""The vcs category: read-only git, only in repositories inside the roots.

Every call runs ``git --no-pager -C <repo>`` with a scrubbed environment and
``-c`` overrides that keep a repository's own config from running programs
(fsmonitor, hooks, filters, textconv, external diff). User-supplied values
starting with ``-`` are refused, revisions come after ``--end-of-options`` and
paths after ``--``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from nexus_core import PluginContext, ToolError

from .config import FilesConfig
from .process import run_process
from .results import ToolOutput, tool

GIT_OUTPUT_CAP = 16 * 1024 * 1024  # parsing needs whole records; the text shown is capped separately
SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.quotePath=false",
    "diff.external=",
    "protocol.allow=never",
    "log.showSignature=false",
    "color.ui=false",
    "core.untrackedCache=false",
)

RepoArg = Annotated[str, Field(description="A folder inside a git repository inside the roots.")]
RevArg = Annotated[str, Field(description="A commit, branch or tag (e.g. HEAD~2, main, v1.0).")]


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

    def render(self) -> str:
        head = f"## {self.branch or '(detached HEAD)'}"
        if self.upstream:
            head += f"...{self.upstream} [ahead {self.ahead}, behind {self.behind}]"
        rows = [head]
        for e in self.entries:
            renamed = f"{e.original_path} -> " if e.original_path else ""
            rows.append(f"{e.index}{e.worktree} {renamed}{e.path}")
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


class GitDiff(ToolOutput):
    repo: str
    description: str
    files: list[FileStat]
    diff: str
    truncated: bool

    def render(self) -> str:
        if not self.files:
            return f"no differences ({self.description})"
        text = self.diff + ("\n[diff cut at max_output_bytes; pass a path to see one file]" if self.truncated else "")
        return f"# {self.description}\n{text}"


class GitShow(ToolOutput):
    repo: str
    commit: Commit
    body: str
    files: list[FileStat]
    diff: str
    truncated: bool

    def render(self) -> str:
        c = self.commit
        head = f"commit {c.commit}\nAuthor: {c.author} <{c.email}>\nDate:   {c.date}\n\n    {c.subject}\n"
        body = "".join(f"    {line}\n" for line in self.body.splitlines())
        cut = "\n[diff cut at max_output_bytes]" if self.truncated else ""
        return f"{head}{body}\n{self.diff}{cut}"


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


def _numstat(out: str) -> list[FileStat]:
    stats = []
    for line in out.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3:
            added, deleted, path = parts
            stats.append(
                FileStat(
                    path=path,
                    added=int(added) if added.isdigit() else None,
                    deleted=int(deleted) if deleted.isdigit() else None,
                )
            )
    return stats


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


class Git:
    """git in one repository inside the roots, with the safety settings applied."""

    def __init__(self, ctx: PluginContext) -> None:
        self.policy = ctx.paths
        self.config: FilesConfig = ctx.config
        self.binary = shutil.which("git")

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        ceilings = {str(r.parent) for r in self.policy.roots}
        return env | {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_OPTIONAL_LOCKS": "0",  # status must not write the index
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_CEILING_DIRECTORIES": os.pathsep.join(sorted(ceilings)),
        }

    async def raw(self, cwd: Path, args: list[str], overrides: list[str] = ()) -> tuple[int, str, str]:
        if self.binary is None:
            raise ToolError("git is not installed on this machine")
        argv = [self.binary, "--no-pager", "-C", str(cwd)]
        for setting in (*SAFE_CONFIG, *overrides):
            argv += ["-c", setting]
        out = await run_process(
            [*argv, *args],
            cwd=cwd,
            env=self.env(),
            timeout=self.config.command_timeout,
            max_output=GIT_OUTPUT_CAP,
        )
        if out.timed_out:
            raise ToolError(f"git timed out after {self.config.command_timeout} s")
        return out.exit_code or 0, _text(out.stdout), _text(out.stderr)

    async def repo(self, given: str) -> tuple[Path, list[str]]:
        """The repository's top folder (inside the roots) and the overrides its config needs."""
        real = self.policy.resolve(given)
        if not real.exists():
            raise ToolError(f"'{given}' does not exist")
        folder = real if real.is_dir() else real.parent
        code, out, err = await self.raw(folder, ["rev-parse", "--show-toplevel", "--absolute-git-dir"])
        if code != 0:
            raise ToolError(f"'{given}' is not inside a git repository within the roots: {err.strip()}")
        top, git_dir = (Path(p) for p in out.splitlines()[:2])
        for what, path in (("repository", top), ("git directory", git_dir)):
            if self.policy.root_of(Path(os.path.realpath(path))) is None:
                raise ToolError(f"refused: the {what} of '{given}' ({path}) is outside the allowed roots")
        return top, await self._driver_overrides(top)

    async def _driver_overrides(self, top: Path) -> list[str]:
        """Blank every filter and diff driver the repo's config defines, so none runs a program."""
        code, out, _ = await self.raw(
            top, ["config", "--local", "--includes", "--name-only", "--get-regexp", r"^(filter|diff)\."]
        )
        overrides = []
        for key in out.split() if code == 0 else []:
            section, _, name = key.partition(".")
            driver = name.rpartition(".")[0]
            if section == "filter" and driver:
                overrides += [f"filter.{driver}.clean=", f"filter.{driver}.smudge=", f"filter.{driver}.process="]
            elif section == "diff" and driver:
                overrides += [f"diff.{driver}.textconv=", f"diff.{driver}.command="]
        return sorted(set(overrides))

    def rel(self, top: Path, given: str) -> str:
        """A path argument as a repo-relative pathspec, after the path policy (deny_paths included)."""
        real = self.policy.resolve(given)
        if not (real == top or real.is_relative_to(top)):
            raise ToolError(f"'{given}' is not inside the repository at {self.policy.display(top) or top}")
        rel = real.relative_to(top).as_posix()
        return ":(literal)" + rel if rel != "." else "."

    async def run(self, top: Path, overrides: list[str], args: list[str]) -> str:
        code, out, err = await self.raw(top, args, overrides)
        if code != 0:
            raise ToolError(f"git {args[0]} failed: {err.strip() or f'exit code {code}'}")
        return out


def register(register, ctx: PluginContext) -> None:
    git = Git(ctx)
    config: FilesConfig = ctx.config
    policy = ctx.paths

    def shown(top: Path) -> str:
        return policy.display(top) or "."

    async def git_status(repo: RepoArg = ".") -> GitStatus:
        """Branch, upstream, and changed, staged and untracked files (git status)."""
        refuse_options(repo=repo)
        top, ov = await git.repo(repo)
        out = await git.run(top, ov, ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"])
        branch = upstream = None
        ahead = behind = 0
        entries: list[StatusEntry] = []
        records = out.split("\0")
        i = 0
        while i < len(records):
            rec = records[i]
            i += 1
            if rec.startswith("# branch.head "):
                head = rec.split(" ", 2)[2]
                branch = None if head == "(detached)" else head
            elif rec.startswith("# branch.upstream "):
                upstream = rec.split(" ", 2)[2]
            elif rec.startswith("# branch.ab "):
                a, b = rec.split(" ")[2:4]
                ahead, behind = int(a), -int(b)
            elif rec.startswith("1 "):
                f = rec.split(" ", 8)
                entries.append(StatusEntry(path=f[8], index=f[1][0], worktree=f[1][1]))
            elif rec.startswith("2 "):
                f = rec.split(" ", 9)
                entries.append(StatusEntry(path=f[9], index=f[1][0], worktree=f[1][1], original_path=records[i]))
                i += 1
            elif rec.startswith("u "):
                f = rec.split(" ", 10)
                entries.append(StatusEntry(path=f[10], index="U", worktree="U"))
            elif rec.startswith("? "):
                entries.append(StatusEntry(path=rec[2:], index="?", worktree="?"))
        return GitStatus(
            repo=shown(top), branch=branch, upstream=upstream, ahead=ahead, behind=behind,
            entries=entries, clean=not entries,
        )  # fmt: skip

    async def git_log(
        repo: RepoArg = ".",
        path: Annotated[str | None, Field(description="Only commits touching this file or folder.")] = None,
        author: Annotated[str | None, Field(description="Only commits whose author matches this text.")] = None,
        since: Annotated[
            str | None, Field(description="Only commits after this date, e.g. '2024-01-31' or '2 weeks ago'.")
        ] = None,
        max: Annotated[int, Field(ge=1, le=1000, description="Most commits to return.")] = 20,
        revision: Annotated[str | None, Field(description="Start from this revision or range (default HEAD).")] = None,
    ) -> GitLog:
        """Commit history, newest first, optionally filtered by path, author and date."""
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
        return GitLog(repo=shown(top), commits=_commits(await git.run(top, ov, args)))

    async def git_diff(
        repo: RepoArg = ".",
        staged: Annotated[bool, Field(description="Staged changes (index vs HEAD) instead of unstaged.")] = False,
        base: Annotated[str | None, Field(description="Compare from this revision (with target: between two).")] = None,
        target: Annotated[str | None, Field(description="Compare to this revision (needs base).")] = None,
        path: Annotated[str | None, Field(description="Limit to this file or folder.")] = None,
        context_lines: Annotated[int, Field(ge=0, le=100)] = 3,
    ) -> GitDiff:
        """Diff of the working tree (default), the staged changes, or between revisions."""
        refuse_options(repo=repo, path=path)
        check_revision("base", base)
        check_revision("target", target)
        if target and not base:
            raise ToolError("target needs base: pass base (and target) to compare two revisions")
        if staged and target:
            raise ToolError("staged compares the index with a revision; do not combine it with target")
        top, ov = await git.repo(repo)
        revs = [r for r in (base, target) if r]
        what = ["--cached"] if staged else []
        description = (
            f"{base}..{target}" if target else
            f"staged changes vs {base or 'HEAD'}" if staged else
            f"working tree vs {base}" if base else "unstaged changes (working tree vs index)"
        )  # fmt: skip
        tail = ["--end-of-options", *revs, "--", *([git.rel(top, path)] if path else [])]
        common = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", *what]
        stats = _numstat(await git.run(top, ov, [*common, "--numstat", *tail]))
        patch = await git.run(top, ov, [*common, f"--unified={context_lines}", *tail])
        diff, cut = _cut(patch, config.max_output_bytes)
        return GitDiff(repo=shown(top), description=description, files=stats, diff=diff, truncated=cut)

    async def git_show(
        revision: RevArg = "HEAD",
        repo: RepoArg = ".",
        path: Annotated[str | None, Field(description="Limit the diff to this file or folder.")] = None,
    ) -> GitShow:
        """A commit: author, date, message, changed files and its diff."""
        refuse_options(repo=repo, path=path)
        check_revision("revision", revision)
        top, ov = await git.repo(repo)
        tail = ["--end-of-options", revision, "--", *([git.rel(top, path)] if path else [])]
        meta = await git.run(top, ov, ["show", "--no-patch", f"--format={LOG_FORMAT}%B", *tail])
        head, _, body = meta.partition("\x1e")
        commits = _commits(head + "\x1e")
        if not commits:
            raise ToolError(f"'{revision}' is not a commit")
        common = ["show", "--format=", "--no-color", "--no-ext-diff", "--no-textconv"]
        stats = _numstat(await git.run(top, ov, [*common, "--numstat", *tail]))
        patch = await git.run(top, ov, [*common, "--patch", *tail])
        diff, cut = _cut(patch, config.max_output_bytes)
        body = body.strip("\n")
        body = body.split("\n", 1)[1].strip("\n") if "\n" in body else ""  # drop the subject line
        return GitShow(repo=shown(top), commit=commits[0], body=body, files=stats, diff=diff, truncated=cut)

    async def git_blame(
        path: Annotated[str, Field(description="The file to blame.")],
        repo: RepoArg = ".",
        revision: Annotated[str | None, Field(description="Blame as of this revision (default: working tree).")] = None,
        start_line: Annotated[int | None, Field(ge=1)] = None,
        end_line: Annotated[int | None, Field(ge=1)] = None,
    ) -> GitBlame:
        """Who last changed each line of a file, and in which commit."""
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
        return GitBlame(repo=shown(top), path=policy.display(top / spec.removeprefix(":(literal)")), lines=lines)

    async def git_branches(
        repo: RepoArg = ".",
        include_remote: Annotated[bool, Field(description="Also list remote-tracking branches.")] = False,
    ) -> GitBranches:
        """Local (and optionally remote) branches with their last commit and upstream."""
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
        return GitBranches(repo=shown(top), branches=branches)

    for fn, title in (
        (git_status, "Git status"),
        (git_log, "Git log"),
        (git_diff, "Git diff"),
        (git_show, "Git show"),
        (git_blame, "Git blame"),
        (git_branches, "Git branches"),
    ):
        register(tool(fn), category="vcs", title=title, read_only=True, idempotent=True)
