"""The vcs category: read-only git in real repositories, flag injection and repos outside the roots."""

from __future__ import annotations

import pytest

from tests.files.helpers import call, fail, git

pytestmark = pytest.mark.anyio


async def test_git_status(files_client, repo):
    (repo / "README.md").write_text("# Changed\n")
    (repo / "docs" / "guide.md").write_text("Staged change.\n")
    git(repo, "add", "docs/guide.md")
    async with files_client() as client:
        status = await call(client, "git_status")
        assert status["branch"] == "main" and not status["clean"]
        entries = {e["path"]: (e["index"], e["worktree"]) for e in status["entries"]}
        assert entries["README.md"] == (".", "M")
        assert entries["docs/guide.md"] == ("M", ".")
        assert entries["image.bin"] == ("?", "?")
        assert "debug.log" not in entries  # gitignored


async def test_git_status_hides_what_a_symlink_in_the_repository_leads_to(files_client, repo):
    """A listed path is checked as what it really is: through a symlinked folder or file, at any depth."""
    (repo / "vault").mkdir()
    (repo / "vault" / "plan.txt").write_text("the plan\n")
    (repo / "src" / "plans").symlink_to(repo / "vault")  # a link below a plain folder, to a hidden folder
    (repo / "src" / "pkg" / "alias.txt").symlink_to(repo / "src" / "orders.classified")  # to a hidden file
    (repo / "src" / "orders.classified").write_text("orders\n")
    (repo / "src" / "pkg" / "util.py").write_text("changed\n")  # beside the link: shown
    git(repo, "rm", "-q", "--cached", "docs/guide.md")  # a path that is gone from the index: shown
    async with files_client(deny_paths=["vault/", "*.classified"]) as client:
        status = await call(client, "git_status")
    shown = {e["path"] for e in status["entries"]}
    assert {"src/pkg/util.py", "docs/guide.md"} <= shown
    assert not shown & {"vault/", "src/plans", "src/pkg/alias.txt", "src/orders.classified"}
    assert status["hidden"] >= 4


async def test_git_log_filters(files_client, repo):
    async with files_client() as client:
        log = await call(client, "git_log")
        assert [c["subject"] for c in log["commits"]] == ["Print the cwd", "Initial commit"]
        assert log["commits"][0]["author"] == "Grace Hopper"
        by_author = await call(client, "git_log", author="Ada")
        assert [c["subject"] for c in by_author["commits"]] == ["Initial commit"]
        by_path = await call(client, "git_log", path="docs")
        assert [c["subject"] for c in by_path["commits"]] == ["Initial commit"]
        recent = await call(client, "git_log", since="2024-06-01")
        assert [c["subject"] for c in recent["commits"]] == ["Print the cwd"]
        assert len((await call(client, "git_log", max=1))["commits"]) == 1


async def test_git_diff_modes(files_client, repo):
    (repo / "src" / "app.py").write_text((repo / "src" / "app.py").read_text() + "# unstaged\n")
    (repo / "README.md").write_text("# Staged\n")
    git(repo, "add", "README.md")
    async with files_client() as client:
        unstaged = await call(client, "git_diff")
        assert [f["path"] for f in unstaged["files"]] == ["src/app.py"] and "+# unstaged" in unstaged["diff"]
        staged = await call(client, "git_diff", staged=True)
        assert [f["path"] for f in staged["files"]] == ["README.md"] and "+# Staged" in staged["diff"]
        between = await call(client, "git_diff", base="HEAD~1", target="HEAD")
        assert between["files"] == [{"path": "src/app.py", "added": 1, "deleted": 0}]
        limited = await call(client, "git_diff", base="HEAD~1", path="docs")
        assert limited["files"] == []
        assert "needs base" in await fail(client, "git_diff", target="HEAD")


async def test_git_show_blame_branches(files_client):
    async with files_client() as client:
        show = await call(client, "git_show")
        assert show["commit"]["subject"] == "Print the cwd" and "+    print(os.getcwd())" in show["diff"]
        first = await call(client, "git_show", revision="HEAD~1", path="docs")
        assert [f["path"] for f in first["files"]] == ["docs/guide.md"]
        blame = await call(client, "git_blame", path="src/app.py")
        authors = {b["line"]: b["author"] for b in blame["lines"]}
        assert authors[6] == "Grace Hopper" and authors[1] == "Ada Lovelace"
        window = await call(client, "git_blame", path="src/app.py", start_line=5, end_line=6)
        assert [b["line"] for b in window["lines"]] == [5, 6]
        branches = await call(client, "git_branches")
        assert {(b["name"], b["current"]) for b in branches["branches"]} == {("main", True), ("feature", False)}


async def test_flag_injection_is_refused(files_client, tmp_path):
    async with files_client() as client:
        for tool, args in [
            ("git_log", {"author": "--output=/tmp/pwned"}),
            ("git_log", {"revision": "--all"}),
            ("git_diff", {"base": "--output=x"}),
            ("git_show", {"revision": "-p"}),
            ("git_blame", {"path": "-L1,2"}),
            ("git_status", {"repo": "--git-dir=/"}),
        ]:
            assert "starts with '-'" in await fail(client, tool, **args), (tool, args)
        assert "use the path parameter" in await fail(client, "git_show", revision="HEAD:.env")
    assert not (tmp_path / "pwned").exists()


async def test_only_repositories_inside_the_roots(files_client, repo, outside, tmp_path):
    git(outside, "init", "-q")
    async with files_client() as client:
        assert "outside the allowed roots" in await fail(client, "git_status", repo=str(outside))
        assert "symlink" in await fail(client, "git_log", repo="escape_dir")
        assert "deny_paths" in await fail(client, "git_log", path=".env")
    # A root inside a repository: git would read the parent repo, which is outside.
    async with files_client(roots=[str(repo / "src")]) as client:
        assert "not inside a git repository" in await fail(client, "git_status")
    (repo / "plain").mkdir()
    async with files_client(roots=[str(repo / "plain")]) as client:
        assert "not inside a git repository" in await fail(client, "git_log")


async def test_repository_config_cannot_run_programs(files_client, repo, tmp_path):
    marker = tmp_path / "PWNED"
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    git(repo, "config", "diff.evil.textconv", f"touch {marker}; cat")
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    (repo / "src" / "app.py").write_text("changed = True\n")
    async with files_client() as client:
        await call(client, "git_status")
        diff = await call(client, "git_diff")
        assert "+changed = True" in diff["diff"]
        await call(client, "git_show", revision="HEAD")
        await call(client, "git_blame", path="src/pkg/util.py")
    assert not marker.exists()


async def test_the_design_git_tool_runs_a_read_only_command_as_the_git_tools_do(files_client, repo):
    """001's one read-only ``git`` skill: a command and its arguments, under the git_* tools' refusals."""
    (repo / "README.md").write_text("# Changed\n")
    async with files_client() as client:
        assert (await call(client, "git", command="status"))["branch"] == "main"
        log = await call(client, "git", command="log", args=["-n", "1"])
        assert [c["subject"] for c in log["commits"]] == ["Print the cwd"]
        assert [c["subject"] for c in (await call(client, "git", command="log", args=["--", "docs"]))["commits"]] == [
            "Initial commit"
        ]
        between = await call(client, "git", command="diff", args=["HEAD~1", "HEAD"])
        assert between["files"] == [{"path": "src/app.py", "added": 1, "deleted": 0}]
        assert "+# Changed" in (await call(client, "git", command="diff"))["diff"]
        assert (await call(client, "git", command="show", args=["HEAD~1"]))["commit"]["subject"] == "Initial commit"
        assert (await call(client, "git", command="blame", args=["-L", "1,1", "src/app.py"]))["lines"][0]["line"] == 1
        assert [b["name"] for b in (await call(client, "git", command="branch"))["branches"]] == ["feature", "main"]
        assert "not one of the read-only commands" in await fail(client, "git", command="commit", args=["-m", "x"])
        assert "not one the read-only git tool accepts" in await fail(
            client, "git", command="log", args=["--output=/tmp/x"]
        )
        assert "starts with '-'" in await fail(client, "git", command="status", repo="--git-dir=/tmp")
        assert "not a plain revision" in await fail(client, "git", command="show", args=["HEAD:README.md"])
