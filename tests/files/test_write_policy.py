"""Issue 37: with ``write`` alone, a client may not plant code that runs later (git directories, hooks, tasks)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

WRITE = ["read", "write"]


async def test_a_git_directory_cannot_be_assembled_step_by_step(files_client, repo: Path, tmp_path: Path):
    marker = tmp_path / "planted"
    config = f"[core]\n\trepositoryformatversion = 0\n\tworktree = ..\n\tfsmonitor = touch {marker}\n"
    async with files_client(categories=WRITE) as client:
        await call(client, "write_file", path="trap/config", content=config)
        await call(client, "write_file", path="trap/objects/keep", content="")
        await call(client, "write_file", path="trap/refs/heads/keep", content="")
        assert "git directory" in await fail(client, "write_file", path="trap/HEAD", content="ref: refs/heads/main\n")
        # the other orders: HEAD first through a rename or a copy, then the folders beside it
        await call(client, "write_file", path="staging/head.txt", content="ref: refs/heads/main\n")
        assert "git directory" in await fail(client, "rename", source="staging/head.txt", destination="trap/HEAD")
        assert "git directory" in await fail(client, "copy_file", source="staging/head.txt", destination="t2/HEAD")
        assert "git directory" in await fail(client, "mkdir", path="t3/HEAD")
    (repo / "t4").mkdir()
    (repo / "t4" / "HEAD").write_text("ref: refs/heads/main\n")  # the user's own file named HEAD
    async with files_client(categories=WRITE) as client:
        assert "beside a 'HEAD'" in await fail(client, "mkdir", path="t4/objects")
        assert "beside a 'HEAD'" in await fail(client, "write_file", path="t4/refs/heads/x", content="")
        assert "beside a 'HEAD'" in await fail(client, "rename", source="trap/objects", destination="t4/objects")
    assert not (repo / "trap" / "HEAD").exists() and not (repo / "t4" / "objects").exists()
    run = subprocess.run(["git", "status"], cwd=repo / "trap", capture_output=True, text=True, check=False)
    assert not marker.exists(), run.stderr


@pytest.mark.parametrize("name", [".githooks", ".husky", "node_modules", "site-packages", ".direnv", ".run"])
async def test_folders_cannot_be_renamed_or_made_into_run_later_names(files_client, repo: Path, name: str):
    (repo / "hooks").mkdir()
    (repo / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/x\n")
    async with files_client(categories=WRITE) as client:
        assert "runs code later" in await fail(client, "rename", source="hooks", destination=name)
        assert "runs code later" in await fail(client, "mkdir", path=f"sub/{name}")
    assert not (repo / name).exists() and (repo / "hooks" / "pre-commit").exists()


async def test_a_folder_holding_run_later_entries_cannot_be_moved(files_client, repo: Path):
    (repo / "bundle" / ".husky").mkdir(parents=True)
    (repo / "bundle" / ".husky" / "pre-commit").write_text("#!/bin/sh\n")
    (repo / "other").mkdir()
    async with files_client(categories=WRITE) as client:
        assert "holds '.husky'" in await fail(client, "rename", source="bundle", destination="other/bundle")
    assert (repo / "bundle" / ".husky" / "pre-commit").exists() and not (repo / "other" / "bundle").exists()


@pytest.mark.parametrize(
    "path", [".vscode/tasks.json", ".vscode/launch.json", ".idea/runConfigurations/x.xml", ".envrc",
             ".pre-commit-config.yaml", "sub/.gitconfig", ".devcontainer/devcontainer.json"],
)  # fmt: skip
async def test_editor_tasks_and_hook_configs_are_not_writable(files_client, repo: Path, path: str):
    async with files_client(categories=WRITE) as client:
        assert "runs code later" in await fail(client, "write_file", path=path, content="{}")
        await call(client, "write_file", path="plain.json", content="{}")
        assert "runs code later" in await fail(client, "rename", source="plain.json", destination=path)
    assert not (repo / path).exists()
