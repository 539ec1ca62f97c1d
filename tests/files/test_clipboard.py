"""The clipboard (the skills design's v2 session state): clipboard_copy, clipboard_show, clipboard_paste.

Private to a session, gone with it, bounded; copy under the read grant, paste under the write grant
through the same checks and atomic write as write_file. In process, through the relay and over HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import nexus_files
from tests.conftest import HTTP_TOKEN, nexus_command, server_env, write_config
from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

APP = 'import os\n\n\ndef main():\n    print("Hello, world")\n    print(os.getcwd())\n    return 0\n'


@pytest.fixture
def clipboard_client(make_host: Callable[..., Any], files_config: dict[str, Any]):
    """In process, in the handshake era: there each client's connection is a session of its own."""

    @asynccontextmanager
    async def connect(**overrides: Any) -> AsyncIterator[tuple[Client, Client]]:
        host = make_host({"files": nexus_files}, {"plugins": {"files": files_config | overrides}})
        async with Client(host.server, mode="legacy") as one, Client(host.server, mode="legacy") as other:
            yield one, other

    return connect


async def test_copy_show_and_paste_lines(clipboard_client, repo: Path) -> None:
    async with clipboard_client(categories=["read", "write"]) as (client, _):
        empty = await call(client, "clipboard_show")
        assert empty == {"path": None, "start_line": 0, "end_line": 0, "lines": 0, "bytes": 0, "text": ""}
        copied = await call(client, "clipboard_copy", path="src/app.py", start_line=4, end_line=5)
        assert copied == {"path": "src/app.py", "start_line": 4, "end_line": 5, "lines": 2, "bytes": 38}
        shown = await call(client, "clipboard_show")
        assert shown["text"] == 'def main():\n    print("Hello, world")\n' and shown["path"] == "src/app.py"
        pasted = await call(client, "clipboard_paste", path="README.md", line=2)
        assert pasted == {"path": "README.md", "line": 2, "lines": 2, "size": 62, "created": False}
        assert (repo / "README.md").read_text() == '# Demo\ndef main():\n    print("Hello, world")\n\nA demo project.\n'
        (repo / "notes.txt").write_text("no newline at the end")
        await call(client, "clipboard_paste", path="notes.txt")  # after the last line, which gets its newline
        assert (repo / "notes.txt").read_text() == 'no newline at the end\ndef main():\n    print("Hello, world")\n'
        made = await call(client, "clipboard_paste", path="docs/new.py", line=1)
        assert made["created"] and (repo / "docs" / "new.py").read_text() == shown["text"]
        tail = await call(client, "clipboard_copy", path="src/app.py", start_line=7, end_line=99)
        assert (tail["start_line"], tail["end_line"], tail["lines"]) == (7, 7, 1)  # end_line past the end: the end
        await call(client, "clipboard_paste", path="docs/new.py", line=1)
        assert (repo / "docs" / "new.py").read_text().startswith("    return 0\ndef main():")
        assert "has 7 lines; start_line 8" in await fail(client, "clipboard_copy", path="src/app.py", start_line=8)
        assert "before start_line" in await fail(client, "clipboard_copy", path="src/app.py", start_line=3, end_line=2)
        past_the_end = await fail(client, "clipboard_paste", path="src/pkg/util.py", line=9)
        assert "has 5 lines; line must be 1 to 6" in past_the_end
    assert (repo / "src" / "app.py").read_text() == APP  # copying changes nothing


async def test_the_clipboard_is_bounded_and_checked_like_reads_and_writes(clipboard_client, repo: Path) -> None:
    (repo / "long.txt").write_text("".join(f"line {i:04d} {'x' * 40}\n" for i in range(100)))
    async with clipboard_client(max_output_bytes=1000) as (client, _):
        await call(client, "clipboard_copy", path="long.txt", start_line=1, end_line=10)
        too_big = await fail(client, "clipboard_copy", path="long.txt", start_line=1, end_line=30)
        assert "above the clipboard's limit of 1000 bytes (max_output_bytes)" in too_big
        assert (await call(client, "clipboard_show"))["end_line"] == 10  # a refused copy keeps what it held
        assert "deny_paths" in await fail(client, "clipboard_copy", path=".env")
        assert "binary" in await fail(client, "clipboard_copy", path="image.bin")
        assert "outside" in await fail(client, "clipboard_copy", path="../outside/secret.txt")
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"clipboard_copy", "clipboard_show"} <= names and "clipboard_paste" not in names  # write is off
        assert "not granted" in await fail(client, "clipboard_paste", path="README.md")
    async with clipboard_client(categories=["read", "write"]) as (client, _):
        assert "the clipboard is empty" in await fail(client, "clipboard_paste", path="README.md")
        await call(client, "clipboard_copy", path="README.md", end_line=1)
        assert "runs code later" in await fail(client, "clipboard_paste", path=".vscode/tasks.json")
        assert "git directory" in await fail(client, "clipboard_paste", path=".git/config")
    assert not (repo / ".vscode").exists()


async def test_each_session_has_its_own_clipboard(clipboard_client) -> None:
    async with clipboard_client() as (one, other):
        await call(one, "clipboard_copy", path="README.md", start_line=1, end_line=1)
        assert (await call(other, "clipboard_show"))["path"] is None
        await call(other, "clipboard_copy", path="src/pkg/util.py", start_line=1, end_line=2)
        assert (await call(one, "clipboard_show"))["text"] == "# Demo\n"
        assert (await call(other, "clipboard_show"))["text"] == "def helper(x):\n    return x * 2\n"


def shared_config(tmp_path: Path, repo: Path) -> Path:
    others = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("memory", "graph", "manual", "hello", "bridge"))
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n{others}[plugins.files]\nroots = ["{repo}"]\n'
        'categories = ["read", "write"]\n',
    )


async def test_through_the_relay_sessions_keep_their_own_until_they_end(tmp_path: Path, repo: Path) -> None:
    command = nexus_command("serve", "--config", str(shared_config(tmp_path, repo)))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=tmp_path)
    async with Client(params, mode="legacy") as one, Client(params, mode="2026-07-28") as other:
        await call(one, "clipboard_copy", path="README.md", start_line=1, end_line=1)
        assert (await call(other, "clipboard_show"))["path"] is None  # one shared server, two sessions
        await call(other, "clipboard_copy", path="src/app.py", start_line=1, end_line=1)
        assert (await call(one, "clipboard_show"))["text"] == "# Demo\n"
        assert (await call(other, "clipboard_show"))["text"] == "import os\n"  # a 2026 client on its own pipes
        await call(one, "clipboard_paste", path="docs/guide.md", line=1)
        assert (repo / "docs" / "guide.md").read_text() == "# Demo\nUse helper() to double.\n"
    async with Client(params, mode="legacy") as again:
        assert (await call(again, "clipboard_show"))["path"] is None  # gone with the sessions


async def test_over_http_a_session_keeps_it_and_a_lone_request_is_told_why_not(
    tmp_path: Path, repo: Path, http_server: Any
) -> None:
    url = http_server("--config", str(shared_config(tmp_path, repo)))
    for mode in ("legacy", "auto"):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=60)
        async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            if mode == "legacy":
                await call(client, "clipboard_copy", path="README.md", start_line=1, end_line=1)
                assert (await call(client, "clipboard_show"))["text"] == "# Demo\n"
                pasted = await call(client, "clipboard_paste", path="docs/new.md")
                assert pasted["created"] and (repo / "docs" / "new.md").read_text() == "# Demo\n"
            else:  # each 2026-07-28 request over HTTP stands alone: there is no session to keep it in
                reason = await fail(client, "clipboard_copy", path="README.md")
                assert "no session" in reason and "initialize handshake" in reason
