"""Embedded Chroma serves one process: a second process on the same folder (two standalone servers; the
shared server avoids this) gets a clear error naming the process that holds it, and never opens a copy of
its own; once the holder exits, it takes the store over."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from nexus_memory.transfer import memory_cli
from tests.memory.conftest import holder_pid, memory_config, served

pytestmark = pytest.mark.anyio

NOTE = {"content": "Nginx 502 after deploys: add readiness checks.", "context_name": "web", "tags": ["nginx"]}


async def test_a_second_process_is_told_which_pid_holds_the_store(tmp_path: Path) -> None:
    config, data = memory_config(tmp_path), tmp_path / "data"
    holding, release, released = anyio.Event(), anyio.Event(), anyio.Event()
    first: dict[str, Any] = {}

    async def first_server() -> None:
        async with served(config) as session:
            first["stored"] = await session.call_tool("store_memory", NOTE)
            holding.set()
            await release.wait()
        released.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(first_server)
        await holding.wait()
        assert not first["stored"].is_error, first["stored"].content
        pid = holder_pid(data)
        assert pid != os.getpid()
        async with served(config) as second:
            for tool, args in (("store_memory", NOTE), ("list_memories", {}), ("get_stats", {})):
                result = await second.call_tool(tool, args)
                assert result.is_error, result.structured_content
                error = result.content[0].text
                assert f"is in use by process {pid}" in error and "chroma_url" in error and "\n" not in error
            pong = (await second.call_tool("ping", {})).structured_content
            assert pong["status"] == "ok" and f"process {pid}" in pong["store"]

            out = tmp_path / "out.jsonl"
            export = CliRunner().invoke(memory_cli, ["--config", str(config), "--standalone", "export", str(out)])
            assert export.exit_code == 1 and f"in use by process {pid}" in export.output and not out.exists()
            assert holder_pid(data) == pid  # the refused ones changed nothing

            release.set()
            await released.wait()
            listed = await second.call_tool("list_memories", {})
            assert not listed.is_error, listed.content
            assert [m["id"] for m in listed.structured_content["memories"]] == [
                first["stored"].structured_content["memory_id"]
            ]
            assert holder_pid(data) not in (pid, os.getpid())
