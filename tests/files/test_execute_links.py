"""Issue 37: a hard link to a secret is refused by the allowlisted commands as by the read tools."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

ALLOWED = ["cat", "grep", "head", "sort", "wc", "ls", "find"]
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"


@pytest.fixture
def linked(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``~/.ssh/id_ed25519`` (in a throwaway HOME) linked into the repository as ``notes/today.txt``."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY)
    monkeypatch.setenv("HOME", str(home))
    (repo / "notes").mkdir()
    os.link(home / ".ssh" / "id_ed25519", repo / "notes" / "today.txt")
    return repo / "notes" / "today.txt"


COMMANDS = [
    ("cat notes/today.txt", "."),
    ("head -n 1 notes/today.txt", "."),
    ("sort notes/today.txt", "."),
    ("grep -h KEY notes/today.txt", "."),
    ("cat today.txt", "notes"),
    ("cat notes/*.txt", "."),
    ("grep -r KEY notes", "."),
    ("wc < notes/today.txt", "."),
    ("bash_safe:cat notes/today.txt", "."),
]


@pytest.mark.parametrize(("command", "cwd"), COMMANDS, ids=[c[0] for c in COMMANDS])
async def test_a_hard_link_to_a_secret_is_not_read_through_commands(files_client, linked, command, cwd):
    tool, _, line = command.rpartition(":")
    async with files_client(categories=["read", "execute"], allowed_commands=ALLOWED) as client:
        assert "hard link" in await fail(client, "read_file", path="notes/today.txt")  # the read tools' refusal
        message = await fail(client, tool or "run_command", command=line, cwd=cwd)
    assert "hard link" in message and "PRIVATE KEY" not in message, message


async def test_ordinary_files_with_one_name_still_run(files_client, linked):
    (linked.parent / "plain.txt").write_text("b\na\n")
    async with files_client(categories=["read", "execute"], allowed_commands=ALLOWED) as client:
        out = await call(client, "run_command", command="sort notes/plain.txt")
    assert out["stdout"] == "a\nb\n"
