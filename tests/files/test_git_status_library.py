"""git_status from libgit2 against git's own porcelain v2, state by state; and hostile repositories.

Each state is built in the fixture repository (tracked, untracked, ignored and deny-listed files,
symlinks, two commits, a second branch). One server answers twice: once as it does (libgit2
where it can give git's answer), once with the in-process path switched off (``git status``,
the path every answer had before). The two must be equal, and the test checks who answered:
the states libgit2 cannot answer alike must go to git.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nexus_files import git as git_module
from nexus_files import gitcache, gitkept, gitstatus
from tests.files.helpers import call, git

pytestmark = pytest.mark.anyio

State = Callable[[Path, Path], None]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def untouched(repo: Path, tmp: Path) -> None:
    """The fixture as it is: untracked and ignored files, symlinks, deny-listed files."""


def staged_unstaged_both(repo: Path, tmp: Path) -> None:
    write(repo / "README.md", "# Staged\n")
    git(repo, "add", "README.md")
    write(repo / "docs" / "guide.md", "Unstaged.\n")
    write(repo / "src" / "app.py", "staged = 1\n")
    git(repo, "add", "src/app.py")
    write(repo / "src" / "app.py", "then changed = 2\n")


def added(repo: Path, tmp: Path) -> None:
    write(repo / "new" / "a.txt", "a\n")
    write(repo / "new" / "b.txt", "b\n")
    write(repo / "new" / "c.txt", "c\n")
    git(repo, "add", "new")
    write(repo / "new" / "b.txt", "b changed\n")  # AM
    (repo / "new" / "c.txt").unlink()  # AD


def deleted(repo: Path, tmp: Path) -> None:
    (repo / "README.md").unlink()  # .D
    git(repo, "rm", "-q", "docs/guide.md")  # D.
    git(repo, "rm", "-q", "--cached", "src/pkg/util.py")  # D. and untracked again


def renamed(repo: Path, tmp: Path) -> None:
    git(repo, "mv", "docs/guide.md", "docs/handbook.md")
    git(repo, "mv", "src/pkg/util.py", "src/util.py")
    write(repo / "src" / "util.py", "changed after the move\n")  # RM


def renamed_and_edited(repo: Path, tmp: Path) -> None:
    """A rename only by similarity: git's rename detection decides."""
    git(repo, "mv", "src/app.py", "src/main.py")
    write(repo / "src" / "main.py", (repo / "src" / "main.py").read_text() + "# one more line\n")
    git(repo, "add", "src/main.py")


def renamed_twins(repo: Path, tmp: Path) -> None:
    """Two identical files moved: more than one exact pairing."""
    write(repo / "one.txt", "same\n")
    write(repo / "two.txt", "same\n")
    git(repo, "add", "one.txt", "two.txt")
    git(repo, "commit", "-qm", "twins")
    git(repo, "mv", "one.txt", "uno.txt")
    git(repo, "mv", "two.txt", "dos.txt")


def type_changes(repo: Path, tmp: Path) -> None:
    (repo / "README.md").unlink()
    (repo / "README.md").symlink_to("docs/guide.md")  # .T
    (repo / "docs" / "guide.md").unlink()
    (repo / "docs" / "guide.md").symlink_to("../src/app.py")
    git(repo, "add", "docs/guide.md")  # T.
    os.chmod(repo / "src" / "app.py", 0o755)  # a mode change: .M


def shapes(repo: Path, tmp: Path) -> None:
    """A file become a folder, a folder become a file, a tracked file inside an ignored folder."""
    (repo / "README.md").unlink()
    write(repo / "README.md" / "inside.txt", "a folder now\n")
    for child in (repo / "docs").iterdir():
        child.unlink()
    (repo / "docs").rmdir()
    write(repo / "docs", "a file now\n")
    write(repo / "build" / "kept.py", "tracked though ignored\n")
    git(repo, "add", "-f", "build/kept.py")
    git(repo, "commit", "-qm", "kept", "--", "build/kept.py")
    write(repo / "build" / "kept.py", "changed\n")
    write(repo / "build" / "other.py", "ignored\n")


def unmerged(repo: Path, tmp: Path) -> None:
    git(repo, "checkout", "-q", "feature")
    write(repo / "src" / "app.py", "feature side\n")
    git(repo, "rm", "-q", "docs/guide.md")
    git(repo, "commit", "-qam", "feature")
    git(repo, "checkout", "-q", "main")
    write(repo / "src" / "app.py", "main side\n")
    write(repo / "docs" / "guide.md", "main edits the guide\n")
    git(repo, "commit", "-qam", "main")
    subprocess_merge(repo)


def subprocess_merge(repo: Path) -> None:
    import subprocess

    from tests.files.helpers import GIT_ENV

    done = subprocess.run(["git", "-C", str(repo), "merge", "-q", "feature"], env=os.environ | GIT_ENV)
    assert done.returncode != 0  # the conflict is the point


def untracked_nested(repo: Path, tmp: Path) -> None:
    write(repo / "a" / "b" / "c" / "deep.txt", "deep\n")
    write(repo / "a" / "top.txt", "top\n")
    (repo / "empty" / "folder").mkdir(parents=True)  # git lists no empty folder
    write(repo / "caf\u00e9 menu.txt", "unicode and a space\n")
    nested = repo / "vendored"
    nested.mkdir()
    git(nested, "init", "-q")  # an untracked repository: listed as its folder
    write(nested / "x.txt", "x\n")


def ignore_rules(repo: Path, tmp: Path) -> None:
    write(repo / "src" / ".gitignore", "*.tmp\n!keep.tmp\ncache/\n")
    write(repo / "src" / "a.tmp", "ignored\n")
    write(repo / "src" / "keep.tmp", "kept\n")
    write(repo / "src" / "cache" / "x.txt", "ignored folder\n")
    write(repo / ".git" / "info" / "exclude", "*.bak\n")
    write(repo / "notes.bak", "excluded\n")
    excludes = tmp / "global-ignore"
    write(excludes, "*.swp\n")
    git(repo, "config", "core.excludesFile", str(excludes))
    write(repo / "docs" / ".guide.md.swp", "excluded by core.excludesFile\n")
    write(repo / "docs" / "kept.txt", "shown\n")


def symlinked_gitignore_untracked(repo: Path, tmp: Path) -> None:
    """git does not follow a symlinked .gitignore in the work tree; libgit2 would (here, out of the roots)."""
    write(tmp / "outside" / "rules", "*.txt\n")
    write(repo / "more" / "a.txt", "a\n")
    (repo / "more" / ".gitignore").symlink_to(tmp / "outside" / "rules")


def symlinked_gitignore_hidden(repo: Path, tmp: Path) -> None:
    """A symlinked .gitignore that ignores itself: listed nowhere but among the ignored files."""
    write(tmp / "outside" / "all", "*\n")
    write(repo / "hidden" / "a.txt", "a\n")
    (repo / "hidden" / ".gitignore").symlink_to(tmp / "outside" / "all")


def symlinked_gitignore_tracked(repo: Path, tmp: Path) -> None:
    write(repo / "src" / "rules", "*.tmp\n")
    (repo / "src" / ".gitignore").symlink_to("rules")
    git(repo, "add", "src/.gitignore", "src/rules")
    git(repo, "commit", "-qm", "a symlinked .gitignore")
    write(repo / "src" / "x.tmp", "x\n")


def symlinked_gitattributes(repo: Path, tmp: Path) -> None:
    write(tmp / "outside" / "attributes", "*.md text eol=crlf\n")
    (repo / "docs" / ".gitattributes").symlink_to(tmp / "outside" / "attributes")
    git(repo, "add", "docs/.gitattributes")
    git(repo, "commit", "-qm", "attributes")
    write(repo / "docs" / "guide.md", "Use helper() to double.\r\n")


def long_path_gitignore(repo: Path, tmp: Path) -> None:
    """A tracked .gitignore under a path of 256 bytes or more: its index entry is not read on the bytes."""
    folder = repo / ("d" * 130) / ("e" * 130)
    write(folder / ".gitignore", "*.tmp\n")
    git(repo, "add", str(folder / ".gitignore"))
    git(repo, "commit", "-qm", "deep")
    write(folder / "x.tmp", "ignored\n")
    write(folder / "y.txt", "shown\n")


def large_index(repo: Path, tmp: Path) -> None:
    """More tracked files than libgit2 answers faster than git."""
    for i in range(gitstatus.MAX_ENTRIES):
        write(repo / "many" / f"f{i}.txt", f"{i}\n")
    git(repo, "add", "many")
    write(repo / "many" / "f0.txt", "changed\n")


def detached(repo: Path, tmp: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    write(repo / "README.md", "# Detached edit\n")


def no_commits(repo: Path, tmp: Path) -> None:
    for name in ("src/app.py", "README.md"):
        git(repo, "rm", "-q", "--cached", name)
    git(repo, "checkout", "-q", "--orphan", "fresh")
    git(repo, "rm", "-q", "-r", "--cached", ".")
    git(repo, "add", "README.md", "docs")


def upstream_ahead_behind(repo: Path, tmp: Path) -> None:
    git(repo, "remote", "add", "origin", str(tmp / "nowhere.git"))
    git(repo, "checkout", "-q", "-b", "theirs", "HEAD~1")
    write(repo / "theirs.txt", "theirs\n")
    git(repo, "add", "theirs.txt")
    git(repo, "commit", "-qm", "theirs 1")
    write(repo / "theirs.txt", "theirs 2\n")
    git(repo, "commit", "-qam", "theirs 2")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "--set-upstream-to", "origin/main")


def upstream_local(repo: Path, tmp: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    write(repo / "topic.txt", "topic\n")
    git(repo, "add", "topic.txt")
    git(repo, "commit", "-qm", "topic")
    git(repo, "branch", "-q", "--set-upstream-to", "feature")


def upstream_gone(repo: Path, tmp: Path) -> None:
    upstream_ahead_behind(repo, tmp)
    git(repo, "update-ref", "-d", "refs/remotes/origin/main")


def upstream_ambiguous(repo: Path, tmp: Path) -> None:
    """A local branch named like the remote-tracking one: git shows a longer name."""
    upstream_ahead_behind(repo, tmp)
    git(repo, "branch", "-q", "origin/main", "HEAD")


def one_commit(folder: Path, name: str, text: str) -> Path:
    """A new repository in ``folder`` whose one commit adds the file ``name``."""
    folder.mkdir()
    write(folder / name, text)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", name)
    return folder


def submodule(repo: Path, tmp: Path) -> None:
    lib = one_commit(tmp / "lib", "lib.txt", "lib\n")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "Add a submodule")
    write(repo / "vendor" / "lib" / "lib.txt", "lib 2\n")
    git(repo / "vendor" / "lib", "commit", "-qam", "lib 2")  # a new commit checked out: shown
    write(repo / "vendor" / "lib" / "lib.txt", "dirty\n")  # not shown: --ignore-submodules=dirty


def submodule_ignored_by_gitmodules(repo: Path, tmp: Path) -> None:
    """.gitmodules says ignore = all; --ignore-submodules=dirty overrides it, so the new commit shows.

    The submodule's settings are taken out of the config (as in a clone before ``submodule init``),
    which leaves .gitmodules the only sign of it.
    """
    submodule(repo, tmp)
    git(repo, "config", "--remove-section", "submodule.vendor/lib")
    git(repo, "config", "-f", ".gitmodules", "submodule.vendor/lib.ignore", "all")
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-qm", "ignore the submodule", "--", ".gitmodules")


def gitlink_without_gitmodules(repo: Path, tmp: Path) -> None:
    nested = one_commit(repo / "nested", "n.txt", "n\n")
    git(repo, "add", "nested")  # a gitlink, with no .gitmodules
    git(repo, "commit", "-qm", "gitlink")
    write(nested / "n.txt", "n 2\n")
    git(nested, "commit", "-qam", "n 2")


def ignorecase(repo: Path, tmp: Path) -> None:
    """Where libgit2 sorts paths ignoring case, git still sorts them byte by byte."""
    git(repo, "config", "core.ignorecase", "true")
    write(repo / "README.md", "# Upper case first for git\n")
    write(repo / "docs" / "guide.md", "lower case\n")
    write(repo / "Zed.txt", "untracked\n")


def filter_driver(repo: Path, tmp: Path) -> None:
    """A clean filter git is told to skip: both sides compare the file as it is."""
    write(repo / ".gitattributes", "*.md filter=upper\n")
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    write(repo / "README.md", "# DEMO\n\nA DEMO PROJECT.\n")


def split_index(repo: Path, tmp: Path) -> None:
    write(repo / "README.md", "# Changed\n")
    git(repo, "update-index", "--split-index")


def sparse(repo: Path, tmp: Path) -> None:
    git(repo, "sparse-checkout", "set", "src")
    write(repo / "src" / "app.py", "sparse edit\n")


def intent_to_add(repo: Path, tmp: Path) -> None:
    write(repo / "later.txt", "later\n")
    git(repo, "add", "-N", "later.txt")


def linked_worktree(repo: Path, tmp: Path) -> None:
    git(repo, "worktree", "add", "-q", str(repo / "wt"), "feature")  # inside the roots, untracked in main
    write(repo / "wt" / "README.md", "# Worktree edit\n")


# state -> whether libgit2 answers it (False: git must)
STATES: dict[str, tuple[State, bool]] = {
    "untouched": (untouched, True),
    "staged-unstaged-both": (staged_unstaged_both, True),
    "added": (added, True),
    "deleted": (deleted, True),
    "renamed": (renamed, True),
    "renamed-and-edited": (renamed_and_edited, False),
    "renamed-twins": (renamed_twins, False),
    "type-changes": (type_changes, True),
    "shapes": (shapes, True),
    "unmerged": (unmerged, True),
    "untracked-nested": (untracked_nested, True),
    "ignore-rules": (ignore_rules, True),
    "symlinked-gitignore-untracked": (symlinked_gitignore_untracked, False),
    "symlinked-gitignore-hidden": (symlinked_gitignore_hidden, False),
    "symlinked-gitignore-tracked": (symlinked_gitignore_tracked, False),
    "symlinked-gitattributes": (symlinked_gitattributes, False),
    "long-path-gitignore": (long_path_gitignore, False),
    "large-index": (large_index, False),
    "detached": (detached, True),
    "no-commits": (no_commits, True),
    "upstream-ahead-behind": (upstream_ahead_behind, True),
    "upstream-local": (upstream_local, True),
    "upstream-gone": (upstream_gone, True),
    "upstream-ambiguous": (upstream_ambiguous, False),
    "submodule": (submodule, False),
    "submodule-ignored-by-gitmodules": (submodule_ignored_by_gitmodules, False),
    "gitlink-without-gitmodules": (gitlink_without_gitmodules, False),
    "ignorecase": (ignorecase, True),
    "filter-driver": (filter_driver, True),
    "split-index": (split_index, False),
    "sparse": (sparse, False),
    "intent-to-add": (intent_to_add, False),
    "linked-worktree": (linked_worktree, True),
}


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether libgit2 answered, per git_status call (the real function, watched)."""
    seen: list[bool] = []
    real = git_module.library_status

    def watched(*args):
        answer = real(*args)
        seen.append(answer is not None)
        return answer

    monkeypatch.setattr(git_module, "library_status", watched)
    return seen


@pytest.mark.parametrize("state", list(STATES))
async def test_status_equals_git(files_client, repo, tmp_path, answered, monkeypatch, state):
    build, by_library = STATES[state]
    build(repo, tmp_path)
    async with files_client() as client:
        ours = await call(client, "git_status")
        monkeypatch.setattr(git_module, "library_status", lambda *args: None)  # git answers, as before
        theirs = await call(client, "git_status")
        if state == "linked-worktree":
            assert await call(client, "git_status", repo="wt") == await call(client, "git_status", repo="wt")
    assert (True in answered) == by_library  # False: git answered (libgit2 declined or was never asked)
    assert ours == theirs
    assert theirs["entries"] or state == "untouched"


async def test_linked_worktree_is_answered_by_libgit2(files_client, repo, tmp_path, answered):
    linked_worktree(repo, tmp_path)
    async with files_client() as client:
        status = await call(client, "git_status", repo="wt")
    assert answered == [True]
    assert status["branch"] == "feature"
    assert [(e["path"], e["index"], e["worktree"]) for e in status["entries"]] == [("README.md", ".", "M")]


async def test_upstream_counts(files_client, repo, tmp_path, answered):
    upstream_ahead_behind(repo, tmp_path)
    async with files_client() as client:
        status = await call(client, "git_status")
    assert answered == [True]
    assert (status["upstream"], status["ahead"], status["behind"]) == ("origin/main", 1, 2)


async def test_the_default_ignore_file_leaves_the_answer_to_git(files_client, repo, tmp_path, answered, monkeypatch):
    """git reads ~/.config/git/ignore when core.excludesFile is unset; libgit2 would not (no XDG config)."""
    home = tmp_path / "home"
    write(home / ".config" / "git" / "ignore", "*.bin\n")
    monkeypatch.setenv("HOME", str(home))
    async with files_client() as client:
        ours = await call(client, "git_status")
        monkeypatch.setattr(git_module, "library_status", lambda *args: None)
        theirs = await call(client, "git_status")
    assert answered == [False]
    assert ours == theirs and "image.bin" not in {e["path"] for e in ours["entries"]}


async def test_a_config_change_between_calls_is_seen(files_client, repo, answered, monkeypatch):
    """The settings libgit2 is trusted with are re-read with the config (gitcache's stamps)."""
    monkeypatch.setattr(gitcache, "FRESH_NS", 0)
    async with files_client() as client:
        await call(client, "git_status")
        git(repo, "config", "core.autocrlf", "true")  # line endings libgit2 might convert otherwise
        await call(client, "git_status")
    assert answered == [True]  # the second call went to git without asking libgit2


def git_dir_snapshot(repo: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in (repo / ".git").rglob("*") if p.is_file()}


async def test_libgit2_writes_nothing(files_client, repo, answered):
    """Like git with GIT_OPTIONAL_LOCKS=0: status does not refresh or write the index, or anything else."""
    (repo / "README.md").write_text("# Changed\n")
    os.utime(repo / "docs" / "guide.md")  # only the stat data changed: git would refresh it, given the lock
    before = git_dir_snapshot(repo)
    async with files_client() as client:
        await call(client, "git_status")
        await call(client, "git_status")
    assert answered == [True, True]
    assert git_dir_snapshot(repo) == before


def hostile(repo: Path, marker: Path) -> None:
    """Every way a repository's config could ask status to run a program, each touching ``marker``."""
    run = f"touch {marker}; cat"
    hooks = repo / "my-hooks"
    hooks.mkdir()
    for name in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction", "fsmonitor-watchman"):
        write(hooks / name, f"#!/bin/sh\ntouch {marker}\n")
        (hooks / name).chmod(0o755)
        write(repo / ".git" / "hooks" / name, f"#!/bin/sh\ntouch {marker}\n")
        (repo / ".git" / "hooks" / name).chmod(0o755)
    git(repo, "config", "core.fsmonitor", f"touch {marker}; echo")
    git(repo, "config", "core.hooksPath", str(hooks))
    git(repo, "config", "filter.evil.clean", run)
    git(repo, "config", "filter.evil.process", run)
    git(repo, "config", "filter.evil.required", "true")
    write(repo / ".gitattributes", "* filter=evil\n")
    write(repo / "README.md", "# Changed, so status must look at its content\n")
    write(repo / "src" / "app.py", "changed = True\n")


async def test_hostile_repository_runs_nothing(files_client, repo, tmp_path, answered, monkeypatch):
    marker = tmp_path / "PWNED"
    hostile(repo, marker)
    async with files_client() as client:
        ours = await call(client, "git_status")
        monkeypatch.setattr(git_module, "library_status", lambda *args: None)
        theirs = await call(client, "git_status")
    assert answered == [True]  # libgit2 read this repository
    assert not marker.exists()
    assert ours == theirs
    assert {"README.md", "src/app.py", ".gitattributes"} <= {e["path"] for e in ours["entries"]}


async def test_the_path_checks_run_before_libgit2(files_client, repo, outside, answered):
    """A repository that turns hostile after a call that libgit2 answered is refused, not read."""
    async with files_client() as client:
        await call(client, "git_status")
        refs = repo / ".git" / "refs" / "heads"
        (refs / "escape").symlink_to(outside / "secret.txt")
        result = await client.call_tool("git_status", {})
    assert answered == [True]  # the second call never reached libgit2
    assert result.is_error and "leads outside the allowed roots" in result.content[0].text


def random_step(repo: Path, rng: random.Random) -> None:
    """One change a developer makes: edit, create, delete, stage, move, commit, ignore, chmod."""
    files = sorted(p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts and not p.is_symlink())
    pick = rng.choice(files) if files else None
    rel = str(pick.relative_to(repo)) if pick else ""
    action = rng.choice(["edit", "create", "delete", "stage", "move", "commit", "ignore", "chmod", "unstage"])
    if action == "edit" and pick:
        pick.write_text(pick.read_text(errors="replace") + f"line {rng.random()}\n")
    elif action == "create":
        write(repo / rng.choice(["", "src/", "new/deep/", "docs/"]) / f"f{rng.randrange(1000)}.txt", "x\n")
    elif action == "delete" and pick:
        pick.unlink()
    elif action == "stage":
        git(repo, "add", "-A", rng.choice(["src", "docs", "."]))
    elif action == "move" and pick and git(repo, "ls-files", "--", rel).strip():
        git(repo, "mv", rel, f"moved{rng.randrange(1000)}.txt")
    elif action == "commit":
        git(repo, "commit", "-qm", "step", "--allow-empty")
    elif action == "ignore":
        with open(repo / ".gitignore", "a") as f:
            f.write(f"f{rng.randrange(1000)}.txt\n")
    elif action == "chmod" and pick:
        pick.chmod(pick.stat().st_mode ^ 0o100)
    elif action == "unstage" and pick:
        git(repo, "reset", "-q", "--", rel)


@pytest.mark.parametrize("seed", [1, 2, 3, "kept"])
async def test_random_changes_equal_git(files_client, repo, answered, opened, monkeypatch, seed):
    """``kept``: every file counts as settled at once, so repositories are kept open from step to step."""
    if seed == "kept":
        settle_at_once(monkeypatch)
    rng = random.Random(seed)
    (repo / "big.dat").unlink()  # 60 MB of zeros: nothing to learn from hashing it at every step
    real = git_module.library_status
    async with files_client() as client:
        for step in range(15):
            random_step(repo, rng)
            monkeypatch.setattr(git_module, "library_status", real)
            ours = await call(client, "git_status")
            monkeypatch.setattr(git_module, "library_status", lambda *args: None)
            theirs = await call(client, "git_status")
            assert ours == theirs, f"step {step}"
    assert answered.count(True) >= 10  # libgit2 answered most steps (inexact renames go to git)
    if seed == "kept":
        assert len(opened) < answered.count(True)  # some steps used the repository kept from the one before


def settle_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled as soon as they are written: what gitcache and gitkept keep only for files
    unchanged for 2 s, they keep at once (the fixture repository was just written)."""
    monkeypatch.setattr(gitcache, "FRESH_NS", 0)
    monkeypatch.setattr(gitkept, "FRESH_NS", 0)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The repositories libgit2 opened afresh, not kept open from an earlier call."""
    seen: list[Path] = []
    real = gitstatus._open

    def watched(top: Path, git_dir: Path):
        seen.append(top)
        return real(top, git_dir)

    monkeypatch.setattr(gitstatus, "_open", watched)
    return seen


async def test_a_repository_is_kept_open_from_one_call_to_the_next(files_client, repo, answered, opened, monkeypatch):
    settle_at_once(monkeypatch)
    async with files_client() as client:
        first = await call(client, "git_status")
        (repo / "docs" / "new.md").write_text("new\n")
        second = await call(client, "git_status")
    assert answered == [True, True] and opened == [repo]
    assert "docs/new.md" in {e["path"] for e in second["entries"]} - {e["path"] for e in first["entries"]}


async def test_a_repository_is_not_kept_while_its_files_are_fresh(files_client, repo, answered, opened, monkeypatch):
    """The fixture's .gitignore was written just now: changed again within the same tick of the clock, a kept
    repository could not tell (libgit2 compares inode, size and mtime), so it is opened afresh."""
    monkeypatch.setattr(gitcache, "FRESH_NS", 0)  # what git said of the repository is kept: only gitkept decides
    async with files_client() as client:
        await call(client, "git_status")
        await call(client, "git_status")
    assert answered == [True, True] and opened == [repo, repo]


async def test_an_index_written_just_now_does_not_keep_the_repository_from_being_kept(
    files_client, repo, answered, opened, monkeypatch
):
    """libgit2 reads the index again whenever its checksum changed: git rewriting it (an add, a status that
    refreshes it: mcp-server-git's, an editor's) between two calls is no reason to open the repository afresh."""
    monkeypatch.setattr(gitcache, "FRESH_NS", 0)
    monkeypatch.setattr(gitkept, "FRESH_NS", 300_000_000)
    time.sleep(0.35)  # the fixture's files settle
    write(repo / "docs" / "guide.md", "Staged now.\n")
    git(repo, "add", "docs/guide.md")  # the index, rewritten just now
    async with files_client() as client:
        first = await call(client, "git_status")
        git(repo, "reset", "-q", "docs/guide.md")  # and again between the calls
        second = await call(client, "git_status")
        monkeypatch.setattr(git_module, "library_status", lambda *args: None)
        theirs = await call(client, "git_status")
    assert answered == [True, True] and opened == [repo]
    assert ("docs/guide.md", "M", ".") in {(e["path"], e["index"], e["worktree"]) for e in first["entries"]}
    assert second == theirs and ("docs/guide.md", ".", "M") in {
        (e["path"], e["index"], e["worktree"]) for e in second["entries"]
    }


async def test_a_rule_file_changed_behind_its_mtime_is_read_again(files_client, repo, answered, opened, monkeypatch):
    """.gitignore rewritten to the same size with its old mtime put back: libgit2 would keep the old rules in a
    kept repository; the ctime tells, and the repository is opened afresh."""
    settle_at_once(monkeypatch)
    ignore = repo / ".gitignore"
    async with files_client() as client:
        await call(client, "git_status")
        before = ignore.stat()
        ignore.write_text(ignore.read_text().replace("*.log", "*.txt"))  # debug.log is no longer ignored
        os.utime(ignore, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert ignore.stat().st_size == before.st_size
        ours = await call(client, "git_status")
        monkeypatch.setattr(git_module, "library_status", lambda *args: None)
        theirs = await call(client, "git_status")
    assert answered == [True, True] and opened == [repo, repo]
    assert ours == theirs and "debug.log" in {e["path"] for e in ours["entries"]}


async def test_sha256_repository_goes_to_git(files_client, repo, answered, monkeypatch):
    """Another object format (extensions.objectformat): libgit2 is not asked."""
    sha = repo / "sha"
    write(sha / "a.txt", "a\n")
    git(sha, "init", "-q", "--object-format=sha256")
    git(sha, "add", "a.txt")
    git(sha, "commit", "-qm", "a")
    write(sha / "a.txt", "changed\n")
    async with files_client() as client:
        ours = await call(client, "git_status", repo="sha")
        monkeypatch.setattr(git_module, "library_status", lambda *args: None)
        theirs = await call(client, "git_status", repo="sha")
    assert answered == []
    assert ours == theirs and [(e["path"], e["worktree"]) for e in ours["entries"]] == [("a.txt", "M")]


def test_libgit2_loads_at_the_first_git_status_not_at_start() -> None:
    """A server that is never asked for git_status does not import pygit2 (~45 ms of every start, ~8 MB)."""
    code = (
        "import sys\nimport nexus_files, nexus_files.git\nfrom nexus_files import gitstatus\n"
        "print('pygit2' in sys.modules, gitstatus._library(), 'pygit2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr
