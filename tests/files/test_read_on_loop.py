"""read_file on the event loop for small plain local files, in a worker thread for everything else.

Which thread opened the file is seen through Python's audit hook on ``os.open``
(the server runs in the test's own event loop, on the main thread).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from nexus_core.fs import nonblocking
from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

_opened: list[tuple[str, bool]] | None = None  # (name opened, on the main thread) while a test listens


def _hook(event: str, args: tuple) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], str) and args[1] is None:  # os.open
        _opened.append((os.path.basename(args[0]), threading.current_thread() is threading.main_thread()))


sys.addaudithook(_hook)


@pytest.fixture
def opened():
    global _opened
    _opened = []
    yield lambda name: [main for seen, main in _opened or [] if seen == name]
    _opened = None


async def test_a_small_plain_local_file_is_read_on_the_event_loop(files_client, repo, opened):
    async with files_client() as client:
        got = await call(client, "read_file", path="src/app.py")
    assert got["total_lines"] == 7
    assert opened("app.py") == [True]


async def test_a_file_on_a_remote_file_system_is_read_in_a_worker_thread(files_client, repo, opened, monkeypatch):
    # The repository's src folder as an NFS mount (a line as Linux writes it), over the real root's type.
    table = repo.parent / "mountinfo"
    table.write_text(
        "29 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        f"112 29 0:49 / {repo / 'src'} rw,relatime shared:60 - nfs4 fileserver:/export rw,vers=4.2,hard\n"
    )
    monkeypatch.setattr(nonblocking, "MOUNTS", nonblocking.MountTable(str(table)))
    async with files_client() as client:
        remote = await call(client, "read_file", path="src/app.py")
        local = await call(client, "read_file", path="README.md")
    assert remote["total_lines"] == 7 and "Hello, world" in remote["content"]
    assert opened("app.py") == [False]  # not touched on the loop at all
    assert local["total_lines"] == 3 and opened("README.md") == [True]


async def test_symlinks_large_and_hard_linked_files_are_read_in_a_worker_thread(files_client, repo, opened):
    (repo / "large.txt").write_text(("x" * 99 + "\n") * 3000)  # 300 KB: above what is read on the loop
    os.link(repo / "docs" / "guide.md", repo / "guide_twin.md")
    async with files_client() as client:
        linked = await call(client, "read_file", path="link_to_readme")
        large = await call(client, "read_file", path="large.txt", limit=5)
        twin = await call(client, "read_file", path="guide_twin.md")
        escape = await fail(client, "read_file", path="escape")
    assert linked["content"] == "     1  # Demo\n     2  \n     3  A demo project.\n"
    assert opened("README.md") == [False]  # the symlink is resolved in the thread, which opens its target
    assert large["total_lines"] == 3000 and opened("large.txt") == [True, False]  # opened, sized, handed over
    assert twin["total_lines"] == 1 and opened("guide_twin.md") == [True, False]
    assert "outside the allowed roots" in escape  # the thread's resolution refuses it as before


async def test_a_path_with_dot_dot_is_resolved_in_a_worker_thread(files_client, repo, opened):
    async with files_client() as client:
        got = await call(client, "read_file", path="src/../src/pkg/util.py")
    assert got["total_lines"] == 5 and opened("util.py") == [False]


def test_read_on_the_loop_matches_the_thread_for_paths_that_stay(repo: Path):
    """The loop's plain path is what realpath gives for a path without symlinks or '..'."""
    for rel in ("src/app.py", "./src//pkg/util.py", "docs/guide.md"):
        lexical = os.path.normpath(f"{repo}/{rel}")
        assert nonblocking.plain_local(lexical) and lexical == os.path.realpath(repo / rel)
