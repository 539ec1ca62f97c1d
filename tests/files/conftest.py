"""Fixtures for the files plugin: a real git repository with the awkward cases, and an MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import nexus_files
from tests.files.helpers import git

JAN = "2024-01-10T12:00:00"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


@pytest.fixture
def repo(tmp_path: Path, outside: Path) -> Path:
    """A repository with history, a .gitignore, a deny-listed .env, a binary, a 50 MB file and an escaping symlink."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "build").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "README.md").write_text("# Demo\n\nA demo project.\n")
    (root / "src" / "app.py").write_text('import os\n\n\ndef main():\n    print("Hello, world")\n    return 0\n')
    (root / "src" / "pkg" / "util.py").write_text("def helper(x):\n    return x * 2\n\n\nHELPER_NAME = 'helper'\n")
    (root / "docs" / "guide.md").write_text("Use helper() to double.\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(
        root,
        "commit",
        "-q",
        "-m",
        "Initial commit",
        env={"GIT_AUTHOR_DATE": "2024-01-10T12:00:00", "GIT_COMMITTER_DATE": "2024-01-10T12:00:00"},
    )
    (root / "src" / "app.py").write_text(
        'import os\n\n\ndef main():\n    print("Hello, world")\n    print(os.getcwd())\n    return 0\n'
    )
    git(root, "commit", "-q", "-am", "Print the cwd", env={"GIT_AUTHOR_NAME": "Grace Hopper"})
    git(root, "branch", "feature")
    # Untracked and ignored files, written after the commits.
    (root / ".env").write_text("API_KEY=hunter2 helper\n")
    (root / "src" / ".env").write_text("NESTED=helper\n")
    (root / "build" / "out.py").write_text("helper = 'built'\n")
    (root / "debug.log").write_text("helper log line\n")
    (root / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00helper\x00" * 10)
    with open(root / "big.dat", "wb") as f:
        f.truncate(60 * 1024 * 1024)  # sparse: 60 MB on paper (over the 50 MB max_file_size), instant to create
    (root / "escape").symlink_to(outside / "secret.txt")
    (root / "escape_dir").symlink_to(outside)
    (root / "link_to_readme").symlink_to(root / "README.md")
    return root


@pytest.fixture
def files_config(repo: Path) -> dict[str, Any]:
    return {"roots": [str(repo)], "deny_paths": ["**/.env", "**/*.pem"]}


@pytest.fixture
def files_client(make_host: Callable[..., Any], files_config: dict[str, Any]):
    """``async with files_client(categories=[...], **keys) as client`` on a fresh host."""

    @asynccontextmanager
    async def connect(**overrides: Any) -> AsyncIterator[Client]:
        table = files_config | overrides
        host = make_host({"files": nexus_files}, {"plugins": {"files": table}})
        async with Client(host.server) as client:
            yield client

    return connect
