"""Concurrent edits and appends lose nothing: in one server (one client sending in parallel) and across two servers.

Every edit marks its own slot and every append adds its own line, all on one
file, so what is there can be counted against what was written.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.conftest import server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio

SLOTS = 200


def board(repo: Path) -> Path:
    path = repo / "board.txt"
    path.write_text("".join(f"slot-{i:03d}: open\n" for i in range(SLOTS)))
    return path


def config(tmp_path: Path, repo: Path, name: str) -> Path:
    return write_config(
        tmp_path / f"{name}.toml",
        f"""
[server]
data_dir = "{tmp_path / name}"

[plugins.files]
roots = ["{repo}"]
categories = ["read", "write"]
""",
    )


async def change(session, slots: range, tag: str) -> list[str]:
    """Edit each slot and append one line per slot, all at once; the error texts of calls that failed."""
    errors: list[str] = []

    async def call(tool: str, args: dict) -> None:
        result = await session.call_tool(tool, args)
        if result.is_error:
            errors.append(result.content[0].text)

    async with anyio.create_task_group() as tg:
        for i in slots:
            edit = {"old_text": f"slot-{i:03d}: open", "new_text": f"slot-{i:03d}: done by {tag}"}
            tg.start_soon(call, "edit_file", {"path": "board.txt", "edits": [edit]})
            tg.start_soon(call, "append_file", {"path": "board.txt", "content": f"append-{i:03d} by {tag}\n"})
    return errors


def count(path: Path) -> tuple[int, int]:
    lines = path.read_text().splitlines()
    return sum(": done by " in line for line in lines), sum(line.startswith("append-") for line in lines)


async def two_servers_change(tmp_path, repo, envs=(None, None)) -> dict[str, list[str]]:
    """Two standalone servers, "a" and "b" (each in its environment), make half the changes each at once;
    each one's errors."""
    half = SLOTS // 2
    async with (
        stdio_session("--standalone", "--config", str(config(tmp_path, repo, "a")), env=envs[0]) as a,
        stdio_session("--standalone", "--config", str(config(tmp_path, repo, "b")), env=envs[1]) as b,
    ):
        results: dict[str, list[str]] = {}

        async def run(session, slots: range, tag: str) -> None:
            results[tag] = await change(session, slots, tag)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, a, range(half), "a")
            tg.start_soon(run, b, range(half, SLOTS), "b")
    return results


async def test_one_client_sending_in_parallel_loses_no_edit_or_append(tmp_path, repo):
    path = board(repo)
    async with stdio_session("--standalone", "--config", str(config(tmp_path, repo, "one"))) as session:
        errors = await change(session, range(SLOTS), "one")
    assert errors == []
    assert count(path) == (SLOTS, SLOTS)  # 200 edits and 200 appends, every one of them there


async def test_two_servers_editing_one_file_lose_nothing(tmp_path, repo):
    path = board(repo)
    half = SLOTS // 2
    assert await two_servers_change(tmp_path, repo) == {"a": [], "b": []}
    lines = path.read_text().splitlines()
    assert count(path) == (SLOTS, SLOTS)
    assert sum(line.endswith("done by a") for line in lines) == half
    assert sum(line.endswith("by b") and line.startswith("append-") for line in lines) == half


async def test_two_servers_with_different_runtime_variables_lose_nothing(tmp_path, repo):
    """Clients launch Nexus with whatever environment they have: one passes XDG_RUNTIME_DIR, another another one.
    The locks must follow HOME alone, or the two servers would lock in two folders and lose changes."""
    path = board(repo)
    runtimes = [tmp_path / "xdg-a", tmp_path / "xdg-b"]
    for folder in runtimes:
        folder.mkdir(mode=0o700)
    envs = [server_env(XDG_RUNTIME_DIR=str(folder)) for folder in runtimes]
    assert await two_servers_change(tmp_path, repo, envs) == {"a": [], "b": []}
    assert count(path) == (SLOTS, SLOTS)  # N + N edits and N + N appends: none lost
    assert not any(any(folder.iterdir()) for folder in runtimes)  # neither kept its locks there
