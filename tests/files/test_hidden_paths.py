"""What the files plugin never shows: deny_paths matches in any walk, and a hard link to another user's file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

NOBODY = 65534
# Names outside the built-in secret list: only deny_paths can hide them.
DENY = ["vault/", "*.classified"]


@pytest.mark.parametrize("engine", ["always", "never"])  # ripgrep, pure Python
async def test_walks_hide_deny_paths_matches(files_client, repo: Path, engine: str) -> None:
    (repo / "vault").mkdir()
    (repo / "vault" / "plan.txt").write_text("helper in the vault\n")
    (repo / "src" / "orders.classified").write_text("helper orders\n")
    async with files_client(deny_paths=DENY, use_ripgrep=engine) as client:
        walks = {
            "list_directory": await call(client, "list_directory", path=".", depth=5),
            "directory_tree": await call(client, "directory_tree", path=".", depth=5),
            "glob": await call(client, "glob", pattern="*", limit=1000),
            "grep": await call(client, "grep", pattern="helper", literal=True),
        }
        assert "src/pkg/util.py" in walks["glob"]["files"]  # the walks themselves work
        assert "deny_paths" in await fail(client, "read_file", path="vault/plan.txt")
    for tool, result in walks.items():
        shown = json.dumps(result)
        assert "vault" not in shown and "classified" not in shown, f"{tool} showed a deny_paths match: {shown}"


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to create another user's file and link it")
async def test_a_hard_link_to_another_users_file_is_refused(files_client, repo: Path, outside: Path) -> None:
    theirs = outside / "their-notes.txt"
    theirs.write_text("another user's notes\n")  # plain words: neither key material nor a deny-listed name
    os.chown(theirs, NOBODY, NOBODY)
    os.link(theirs, repo / "notes.txt")
    shutil.copy(theirs, repo / "copy.txt")  # the same words with one name, as this user: served
    async with files_client() as client:
        assert "another user's notes" in (await call(client, "read_file", path="copy.txt"))["content"]
        refused = await fail(client, "read_file", path="notes.txt")
        assert "belongs to another user" in refused and "another user's notes" not in refused
