"""The write category: atomic writes, exact edits, moves, and refusals that change nothing."""

from __future__ import annotations

import os
import stat

import pytest

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

WRITE = ["read", "write"]


def snapshot(root):
    """Every file under root (outside .git) with its bytes, to prove a refusal changed nothing."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path) and name != "big.dat":
                with open(path, "rb") as f:
                    out[os.path.relpath(path, root)] = f.read()
    return out


async def test_write_category_is_off_by_default(files_client, repo):
    async with files_client() as client:
        assert "write_file" not in {t.name for t in (await client.list_tools()).tools}
        assert "'write' category" in await fail(client, "write_file", path="new.txt", content="x")
    assert not (repo / "new.txt").exists()


async def test_write_file_creates_and_overwrites_keeping_mode(files_client, repo):
    target = repo / "scripts" / "run.sh"
    async with files_client(categories=WRITE) as client:
        created = await call(client, "write_file", path="scripts/run.sh", content="#!/bin/sh\necho one\n")
        assert created["created"] and created["bytes_written"] == 19
        os.chmod(target, 0o750)
        again = await call(client, "write_file", path="scripts/run.sh", content="#!/bin/sh\necho two\n")
        assert not again["created"]
        assert "exists" in await fail(client, "write_file", path="scripts/run.sh", content="x", overwrite=False)
    assert target.read_text() == "#!/bin/sh\necho two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


async def test_edit_file_replaces_exact_text_and_diffs(files_client, repo):
    app = repo / "src" / "app.py"
    before = app.read_text()
    async with files_client(categories=WRITE) as client:
        preview = await call(
            client, "edit_file", path="src/app.py",
            edits=[{"old_text": "Hello, world", "new_text": "Hi"}], dry_run=True,
        )  # fmt: skip
        assert '-    print("Hello, world")' in preview["diff"] and '+    print("Hi")' in preview["diff"]
        assert app.read_text() == before
        done = await call(
            client, "edit_file", path="src/app.py",
            edits=[{"old_text": "Hello, world", "new_text": "Hi"}, {"old_text": "return 0", "new_text": "return 1"}],
        )  # fmt: skip
        assert done["edits"] == 2 and not done["dry_run"]
    assert app.read_text() == before.replace("Hello, world", "Hi").replace("return 0", "return 1")


async def test_failed_edit_names_the_count_and_changes_nothing(files_client, repo):
    app = repo / "src" / "app.py"
    before = app.read_text()
    async with files_client(categories=WRITE) as client:
        ambiguous = await fail(
            client, "edit_file", path="src/app.py",
            edits=[{"old_text": "return 0", "new_text": "return 2"}, {"old_text": "print", "new_text": "log"}],
        )  # fmt: skip
        assert "edit 2 of 2" in ambiguous and "occurs 2 times" in ambiguous
        missing = await fail(client, "edit_file", path="src/app.py", edits=[{"old_text": "nope", "new_text": "x"}])
        assert "does not occur" in missing
    assert app.read_text() == before


async def test_append_mkdir_copy_rename_delete(files_client, repo):
    async with files_client(categories=WRITE) as client:
        appended = await call(client, "append_file", path="README.md", content="More.\n")
        assert appended["bytes_appended"] == 6
        assert (repo / "README.md").read_text().endswith("project.\nMore.\n")
        made = await call(client, "mkdir", path="a/b/c")
        assert made["changed"] and (repo / "a" / "b" / "c").is_dir()
        assert not (await call(client, "mkdir", path="a/b/c"))["changed"]
        await call(client, "copy_file", source="README.md", destination="a/README.copy")
        assert (repo / "a" / "README.copy").read_text() == (repo / "README.md").read_text()
        assert "exists" in await fail(client, "copy_file", source="README.md", destination="a/README.copy")
        await call(client, "rename", source="a/README.copy", destination="a/b/moved.md")
        assert (repo / "a" / "b" / "moved.md").exists() and not (repo / "a" / "README.copy").exists()
        await call(client, "rename", source="a", destination="docs/a")
        assert (repo / "docs" / "a" / "b" / "moved.md").exists()
        await call(client, "delete_file", path="docs/a/b/moved.md")
        assert not (repo / "docs" / "a" / "b" / "moved.md").exists()
        assert "folder" in await fail(client, "delete_file", path="docs/a")


async def test_copy_file_keeps_the_mode(files_client, repo):
    (repo / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(repo / "tool.sh", 0o751)
    async with files_client(categories=WRITE) as client:
        copied = await call(client, "copy_file", source="tool.sh", destination="copy.sh")
    assert copied["action"] == "copied"
    assert stat.S_IMODE(os.stat(repo / "copy.sh").st_mode) == 0o751
    assert (repo / "copy.sh").read_text() == "#!/bin/sh\necho hi\n"


async def test_delete_file_removes_a_link_not_its_target(files_client, repo):
    async with files_client(categories=WRITE) as client:
        await call(client, "delete_file", path="link_to_readme")
    assert not (repo / "link_to_readme").is_symlink()
    assert (repo / "README.md").exists()


async def test_write_refusals_change_nothing(files_client, repo, outside):
    before = snapshot(repo)
    outside_before = snapshot(outside)
    (repo / "vault").mkdir()
    (repo / "vault" / "key.pem").write_text("PRIVATE\n")
    before = snapshot(repo)
    async with files_client(categories=WRITE) as client:
        assert "outside the allowed roots" in await fail(client, "write_file", path=str(outside / "x.txt"), content="x")
        assert "outside the allowed roots" in await fail(client, "write_file", path="../outside/x.txt", content="x")
        assert "symlink" in await fail(client, "write_file", path="escape", content="overwritten")
        assert "symlink" in await fail(client, "write_file", path="escape_dir/new.txt", content="x")
        assert "deny_paths" in await fail(client, "write_file", path="config/.env", content="X=1")
        assert "deny_paths" in await fail(client, "edit_file", path=".env", edits=[{"old_text": "A", "new_text": "B"}])
        assert ".git" in await fail(client, "write_file", path=".git/config", content="[core]\n")
        assert ".git" in await fail(client, "delete_file", path=".git/HEAD")
        assert ".git" in await fail(client, "rename", source=".git", destination="git-dir")
        assert "deny_paths" in await fail(client, "rename", source=".env", destination="env.txt")
        assert "hidden by deny_paths" in await fail(client, "rename", source="vault", destination="open")
        assert "deny_paths" in await fail(client, "copy_file", source="vault/key.pem", destination="key.txt")
        assert "symlink" in await fail(client, "copy_file", source="escape", destination="stolen.txt")
        assert "max_file_size" in await fail(client, "copy_file", source="big.dat", destination="big2.dat")
        assert "root" in await fail(client, "delete_file", path=".")
    assert snapshot(repo) == before
    assert snapshot(outside) == outside_before


async def test_rename_keeps_an_existing_destination_unless_overwrite(files_client, repo):
    (repo / "notes.txt").write_text("the notes\n")
    readme = (repo / "README.md").read_text()
    async with files_client(categories=WRITE) as client:
        refused = await fail(client, "rename", source="notes.txt", destination="README.md")
        assert "'README.md' exists; pass overwrite=true" in refused
        assert (repo / "README.md").read_text() == readme and (repo / "notes.txt").exists()  # nothing moved
        await call(client, "rename", source="notes.txt", destination="README.md", overwrite=True)
    assert (repo / "README.md").read_text() == "the notes\n" and not (repo / "notes.txt").exists()


async def test_no_entry_named_git_can_be_created(files_client, repo):
    """A .git of one's own (a folder, or a file saying "gitdir: ...") would make git run its hooks and filters."""
    before = snapshot(repo)
    async with files_client(categories=WRITE) as client:
        for path in ("src/.git", "docs/.git/config"):
            assert "writes there are refused" in await fail(client, "write_file", path=path, content="gitdir: /x\n")
        assert "writes there are refused" in await fail(client, "mkdir", path="src/.git")
        assert "writes there are refused" in await fail(client, "mkdir", path="docs/.git/hooks")
        assert "writes there are refused" in await fail(client, "rename", source="README.md", destination="src/.git")
        assert "writes there are refused" in await fail(client, "rename", source="docs", destination="src/.git")
        # In any case: on a case-insensitive disk (macOS, Windows) .GIT is .git.
        assert "writes there are refused" in await fail(client, "rename", source="README.md", destination="src/.GIT")
        assert "writes there are refused" in await fail(client, "mkdir", path="src/.Git")
    assert not [p for p in (repo / "src").iterdir() if p.name.casefold() == ".git"]
    assert not (repo / "docs" / ".git").exists()
    assert snapshot(repo) == before
