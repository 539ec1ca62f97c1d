"""The vcs tools against hostile repositories: config that tries to run programs, and deny-listed contents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.files.helpers import call, fail, git

pytestmark = pytest.mark.anyio


async def every_vcs_tool(client) -> dict:
    """Call each tool that reads the working tree or history; return git_status's result."""
    status = await call(client, "git_status")
    await call(client, "git_diff")
    await call(client, "git_diff", staged=True)
    await call(client, "git_diff", base="HEAD")
    await call(client, "git_show", revision="HEAD")
    await call(client, "git_blame", path="src/app.py")
    await call(client, "git_blame", path="src/pkg/util.py")
    await call(client, "git_log", path="src/app.py")
    await call(client, "git_branches")
    await client.get_prompt("review_diff", {})
    return status


def modify_tracked_files(repo: Path) -> None:
    """Changed tracked files: git must clean (filter) and diff (textconv, external diff) them."""
    (repo / "src" / "app.py").write_text("changed = True\n")
    (repo / "src" / "pkg" / "util.py").write_text("def helper(x):\n    return x * 3\n")


def append_config(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def drivers(name: str, marker: Path) -> str:
    """Config text defining filter, diff and merge drivers called ``name`` that each touch ``marker``."""
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    run = f'"touch {marker} && cat"'
    return (
        f'[filter "{quoted}"]\n\tclean = {run}\n\tsmudge = {run}\n\tprocess = {run}\n\trequired = true\n'
        f'[diff "{quoted}"]\n\ttextconv = {run}\n\tcommand = {run}\n'
        f'[merge "{quoted}"]\n\tdriver = {run}\n'
    )


# Names that str.split() cuts (Unicode spaces, \x1c-\x1f), that `-c key=value` misreads ('='),
# and with dots (the subsection runs from the first to the last dot).
HOSTILE_NAMES = ["a\u00a0b", "a\x1cb", "a\u2003b\x1fc", "x=y", "dotted.name.clean", 'q"uote\\d']


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=["nbsp", "x1c", "em-space", "equals", "dots", "quote"])
async def test_driver_names_git_does_not_split_are_neutralised(files_client, repo, tmp_path, name):
    marker = tmp_path / "PWNED"
    (repo / ".gitattributes").write_text(f"* filter={name} diff={name} merge={name}\n")
    append_config(repo / ".git" / "config", drivers(name, marker))
    assert git(repo, "config", f"filter.{name}.clean").strip()  # git itself reads the driver
    modify_tracked_files(repo)
    async with files_client() as client:
        status = await every_vcs_tool(client)
        assert {"src/app.py", "src/pkg/util.py"} <= {e["path"] for e in status["entries"]}
        diff = await call(client, "git_diff")
        assert "+changed = True" in diff["diff"]  # plain diff, no textconv
    assert not marker.exists()


async def test_drivers_in_config_worktree_are_neutralised(files_client, repo, tmp_path):
    marker = tmp_path / "PWNED"
    git(repo, "config", "extensions.worktreeConfig", "true")
    (repo / ".gitattributes").write_text("* filter=wt diff=wt\n")
    append_config(repo / ".git" / "config.worktree", drivers("wt", marker))
    assert git(repo, "config", "--worktree", "filter.wt.clean").strip()
    modify_tracked_files(repo)
    async with files_client() as client:
        await every_vcs_tool(client)
    assert not marker.exists()


async def test_drivers_in_included_config_files_are_neutralised(files_client, repo, tmp_path):
    marker = tmp_path / "PWNED"
    (repo / ".gitattributes").write_text("*.py filter=inc diff=inc\n*.md filter=cond diff=cond\n")
    (repo / ".git" / "evil.inc").write_text(drivers("inc", marker))
    (repo / ".git" / "cond.inc").write_text(drivers("cond", marker))
    append_config(
        repo / ".git" / "config",
        f'[include]\n\tpath = evil.inc\n[includeIf "gitdir:{repo}/"]\n\tpath = cond.inc\n',
    )
    assert git(repo, "config", "filter.cond.clean").strip() and git(repo, "config", "filter.inc.clean").strip()
    modify_tracked_files(repo)
    (repo / "README.md").write_text("# Changed\n")
    async with files_client() as client:
        await every_vcs_tool(client)
    assert not marker.exists()


async def test_submodule_config_does_not_run(files_client, repo, tmp_path):
    """git status/diff of a dirty submodule would run `git status` inside it, with its own drivers."""
    marker = tmp_path / "PWNED"
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "lib.txt").write_text("lib\n")
    (upstream / ".gitattributes").write_text("* filter=sub\n")
    git(upstream, "init", "-q")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(upstream), "vendor/lib")
    git(repo, "commit", "-qm", "Add a submodule")
    append_config(repo / ".git" / "modules" / "vendor" / "lib" / "config", drivers("sub", marker))
    (repo / "vendor" / "lib" / "lib.txt").write_text("dirty\n")
    async with files_client() as client:
        await every_vcs_tool(client)
        await call(client, "git_status", repo="vendor/lib")
    assert not marker.exists()


async def test_objects_from_outside_the_roots_are_refused(files_client, repo, outside):
    git(outside, "init", "-q")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{outside}/.git/objects\n")
    async with files_client() as client:
        message = await fail(client, "git_log")
        assert "alternates" in message and "outside the allowed roots" in message
    (repo / ".git" / "objects" / "info" / "alternates").unlink()
    (repo / ".git" / "refs" / "tags").rmdir()
    (repo / ".git" / "refs" / "tags").symlink_to(outside / ".git" / "refs")
    async with files_client() as client:
        assert "leads outside the allowed roots" in await fail(client, "git_status")


SECRET = "API_KEY=hunter2"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


async def test_diffs_withhold_deny_listed_files(files_client, repo):
    """A tracked .env changed in the working tree and commits adding .pem files: no secret in any diff."""
    git(repo, "add", ".env")
    git(repo, "commit", "-qm", "Track the env file")
    (repo / ".env").write_text(f"{SECRET}\nNEW_SECRET=swordfish\n")
    (repo / "src" / "app.py").write_text("visible = 1\n")
    (repo / "keys dir").mkdir()
    (repo / "keys dir" / "clé server.pem").write_text(PEM)  # quoted in diff headers: space and non-ASCII
    (repo / "notes.txt").write_text("to be renamed\n")
    (repo / "docs" / "guide.md").write_text("Guide v2.\n")
    git(repo, "add", "keys dir", "notes.txt", "docs/guide.md")
    git(repo, "commit", "-qm", "Add keys")
    git(repo, "mv", "notes.txt", "id.pem")  # a rename into a denied name
    git(repo, "commit", "-qm", "Rename the key")
    async with files_client() as client:
        unstaged = await call(client, "git_diff")
        assert "+visible = 1" in unstaged["diff"]
        assert "swordfish" not in unstaged["diff"] and "hunter2" not in unstaged["diff"]
        assert unstaged["withheld"] == 1 and "deny_paths" in unstaged["notice"] and "'**/.env'" in unstaged["notice"]
        assert [f["path"] for f in unstaged["files"]] == ["src/app.py"]
        added = await call(client, "git_show", revision="HEAD~1")
        assert "PRIVATE KEY" not in str(added) and "+Guide v2." in added["diff"]
        assert added["withheld"] == 1 and "'**/*.pem'" in added["notice"]
        assert [f["path"] for f in added["files"]] == ["docs/guide.md", "notes.txt"]
        renamed = await call(client, "git_show")
        assert renamed["withheld"] == 1 and renamed["files"] == [] and "notes.txt" not in renamed["diff"]
        between = await call(client, "git_diff", base="HEAD~3")
        assert "swordfish" not in str(between) and "PRIVATE KEY" not in str(between) and "+Guide v2." in str(between)
        prompt = await client.get_prompt("review_diff", {"base": "HEAD~3"})
        text = prompt.messages[0].content.text
        assert "+visible = 1" in text and "withheld" in text
        assert "swordfish" not in text and "PRIVATE KEY" not in text
        result = await client.call_tool("git_diff", {})
        assert "1 file section withheld" in result.content[0].text
        status = await call(client, "git_status")
        assert ".env" not in {e["path"] for e in status["entries"]} and status["hidden"] >= 1
        assert "deny_paths" in await fail(client, "git_blame", path=".env")
        assert "deny_paths" in await fail(client, "git_blame", path="id.pem", revision="HEAD")
        assert "deny_paths" in await fail(client, "git_log", path="keys dir/clé server.pem")
        assert "deny_paths" in await fail(client, "git_diff", path=".env")
        assert "deny_paths" in await fail(client, "git_show", path="id.pem")


async def test_blob_and_tree_ids_cannot_show_hidden_content(files_client, repo):
    """git diff <blob> <blob> and git show <blob> print content under no path: only commits are taken."""
    canary = "BLOB-CANARY-2c9e"
    (repo / ".env").write_text(f"TOKEN={canary}\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "key.txt").write_text(f"{canary}\n")
    git(repo, "add", "-f", ".env", "secrets")
    git(repo, "commit", "-q", "-m", "Secrets by mistake")
    env_blob = git(repo, "rev-parse", "HEAD:.env").strip()
    readme_blob = git(repo, "rev-parse", "HEAD:README.md").strip()
    secrets_tree = git(repo, "rev-parse", "HEAD:secrets").strip()
    empty_tree = git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
    git(repo, "tag", "env-tag", env_blob)
    texts = []
    async with files_client(deny_paths=["**/.env", "secrets/"]) as client:
        for tool, args in [
            ("git_diff", {"base": readme_blob, "target": env_blob}),
            ("git_diff", {"base": env_blob[:10], "target": readme_blob[:10]}),
            ("git_diff", {"base": empty_tree, "target": secrets_tree}),
            ("git_diff", {"base": "HEAD", "target": "env-tag"}),
            ("git_diff", {"base": env_blob}),
            ("git_show", {"revision": env_blob}),
            ("git_show", {"revision": "env-tag"}),
            ("git_show", {"revision": secrets_tree}),
        ]:
            message = await fail(client, tool, **args)
            assert "not a commit" in message, (tool, args, message)
            texts.append(message)
        try:
            texts.append(str(await client.get_prompt("review_diff", {"base": env_blob})))
        except Exception as exc:  # the prompt's refusal is a JSON-RPC error
            texts.append(str(exc))
        assert "not a commit" in texts[-1]
        shown = await call(client, "git_show", revision="HEAD")  # commits still work, hidden files withheld
        assert shown["withheld"] == 2
        texts.append(str(shown))
    assert not any(canary in text for text in texts)
