"""What git said about a repository is reused between calls, and never once something it depends on changed.

Files written by these tests are seconds old at most, which the cache never trusts
(a timestamp tick can hide a second change); FRESH_NS = 0 lets it trust them here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nexus_files import gitcache
from tests.files.helpers import call, fail, git
from tests.files.test_git_security import append_config, drivers, modify_tracked_files

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def trust_fresh_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitcache, "FRESH_NS", 0)


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a `git` first on PATH that records each subcommand, then runs the real git."""
    shim, log = tmp_path / "shim", tmp_path / "git-calls.log"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\necho "$4" >> {log}\nexec {shutil.which("git")} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{Path(shutil.which('git') or '').parent}")
    return log


async def test_a_second_status_runs_no_git_process(files_client, repo, git_log):
    async with files_client() as client:
        first = await call(client, "git_status")
        git(repo, "update-index", "--refresh")  # another git client rewrites .git/index
        git_log.write_text("")
        second = await call(client, "git_status")
        assert git_log.read_text().split() == []  # libgit2 answers (gitstatus)
        assert second == first
        (repo / "src" / "new.py").write_text("new = 1\n")  # a new file in a subfolder: discovery is unchanged
        assert "src/new.py" in {e["path"] for e in (await call(client, "git_status"))["entries"]}
        git_log.write_text("")
        await call(client, "git_status", repo="src")  # another folder: asked once
        await call(client, "git_status", repo="src")
        assert git_log.read_text().split() == ["rev-parse", "config"]


async def test_drivers_added_to_the_config_between_calls_are_neutralised(files_client, repo, tmp_path):
    marker = tmp_path / "PWNED"
    (repo / ".gitattributes").write_text("* filter=late diff=late\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    async with files_client() as client:
        await call(client, "git_status")
        append_config(repo / ".git" / "config", drivers("late", marker))
        modify_tracked_files(repo)
        assert {"src/app.py", "src/pkg/util.py"} <= {e["path"] for e in (await call(client, "git_status"))["entries"]}
        assert "+changed = True" in (await call(client, "git_diff"))["diff"]
    assert not marker.exists()


async def test_an_include_created_after_a_call_is_neutralised(files_client, repo, tmp_path):
    marker = tmp_path / "PWNED"
    (repo / ".gitattributes").write_text("* filter=later diff=later\n")
    (repo / "conf").mkdir()  # a folder git never looks at, unlike .git and the top folder
    append_config(repo / ".git" / "config", "[include]\n\tpath = ../conf/later.inc\n")  # missing for now
    async with files_client() as client:
        await call(client, "git_status")
        (repo / "conf" / "later.inc").write_text(drivers("later", marker))
        modify_tracked_files(repo)
        await call(client, "git_status")
        await call(client, "git_diff")
    assert not marker.exists()


async def test_a_branch_switch_that_includes_drivers_is_neutralised(files_client, repo, tmp_path):
    marker = tmp_path / "PWNED"
    (repo / ".gitattributes").write_text("* filter=branchy diff=branchy\n")
    (repo / ".git" / "branch.inc").write_text(drivers("branchy", marker))
    append_config(repo / ".git" / "config", '[includeIf "onbranch:feature"]\n\tpath = branch.inc\n')
    async with files_client() as client:
        assert (await call(client, "git_status"))["branch"] == "main"
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")  # in place: .git itself is unchanged
        modify_tracked_files(repo)
        assert (await call(client, "git_status"))["branch"] == "feature"
        await call(client, "git_diff")
    assert not marker.exists()


async def test_a_symlink_planted_after_a_call_is_refused(files_client, repo, outside):
    async with files_client() as client:
        await call(client, "git_status")
        git(outside, "init", "-q")
        (repo / ".git" / "refs" / "tags").rmdir()
        (repo / ".git" / "refs" / "tags").symlink_to(outside / ".git" / "refs")
        assert "leads outside the allowed roots" in await fail(client, "git_status")


async def test_a_repository_moved_out_of_the_roots_is_refused(files_client, repo, outside):
    async with files_client() as client:
        await call(client, "git_status")
        shutil.move(repo / ".git", outside / "moved.git")
        (repo / ".git").write_text(f"gitdir: {outside / 'moved.git'}\n")
        assert "outside the allowed roots" in await fail(client, "git_status")


async def test_a_repository_created_inside_is_found(files_client, repo):
    async with files_client() as client:
        assert (await call(client, "git_status", repo="src/pkg"))["repo"] == "."
        git(repo / "src", "init", "-q")
        assert (await call(client, "git_status", repo="src/pkg"))["repo"] == "src"
