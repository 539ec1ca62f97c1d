"""A write that fails says why in one line and leaves nothing behind, so a retry makes no duplicate.

The full disk is real: the server's file size limit (RLIMIT_FSIZE, set from outside with prlimit) makes
Chroma's writes fail the way ENOSPC does, with Chroma's own error.
"""

from __future__ import annotations

import json
import resource
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.memory.conftest import holder_pid, memory_config, served, service_in
from tests.memory.helpers import PG_FIX, call, store

pytestmark = pytest.mark.anyio


def note(n: int) -> dict[str, object]:
    return {"content": f"Incident {n}: " + "the disk filled up with logs; rotate them. " * 60, "context_name": "ops"}


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="prlimit (another process's limits) is Linux-only")
async def test_a_store_that_fails_on_a_full_disk_says_why_and_leaves_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with served(memory_config(tmp_path), standalone=False) as session:  # through the shared server
        first = await session.call_tool("store_memory", {**note(0), "tags": ["ops"]})
        assert not first.is_error, first.content
        pid = holder_pid(data)
        size = (data / "memory" / "chroma" / "chroma.sqlite3").stat().st_size
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (size + 12288, resource.RLIM_INFINITY))
        stored, error = 1, None
        with anyio.fail_after(120):  # a wedged store would hang here; fail instead
            for n in range(1, 40):
                result = await session.call_tool("store_memory", {**note(n), "tags": ["ops"]})
                if result.is_error:
                    failed, error = n, result.content[0].text
                    break
                stored += 1
        assert error is not None, "the file size limit never made a write fail"
        assert error.startswith("Error executing tool store_memory: the memory store failed: ") and "\n" not in error
        assert "InternalError" in error  # Chroma's reason, not a bare "Error executing tool"

        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        with anyio.fail_after(120):
            listed = await session.call_tool("list_memories", {"limit": 100})
            assert not listed.is_error, listed.content
            assert listed.structured_content["total_count"] == stored  # the failed one is not there
            retried = await session.call_tool("store_memory", {**note(failed), "tags": ["ops"]})
            assert not retried.is_error, retried.content
            found = await session.call_tool("list_memories", {"limit": 100})
        summaries = [m["summary"] for m in found.structured_content["memories"]]
        assert sum(s.startswith(f"Incident {failed}:") for s in summaries) == 1 and len(summaries) == stored + 1


async def test_a_cancelled_store_leaves_nothing(memory_host, data_dir: Path) -> None:
    """The client gives up on a slow store (and will retry): the memory it stored meanwhile is removed."""
    host = memory_host()
    async with Client(host.server) as client:
        await call(client, "ping")
        write_lock, held = service_in(host).store.write_lock, threading.Event()

        def hold_the_store() -> None:  # another writer, busy for a while: the store waits for it
            with write_lock:
                held.set()
                time.sleep(2)

        threading.Thread(target=hold_the_store).start()
        held.wait()
        with anyio.move_on_after(0.5):
            await client.call_tool(
                "store_memory", {"content": PG_FIX, "context_name": "api", "tags": [], "memory_type": "success"}
            )
        audit = data_dir / "audit.jsonl"
        with anyio.fail_after(30):
            while '"outcome": "cancelled"' not in (audit.read_text() if audit.exists() else ""):
                await anyio.sleep(0.05)
        (record,) = [r for r in map(json.loads, audit.read_text().splitlines()) if r["tool"] == "store_memory"]
        assert record["outcome"] == "cancelled"
        assert (await call(client, "list_memories"))["total_count"] == 0
        again = await store(client, PG_FIX, "api", [], "success")
        assert [m["id"] for m in (await call(client, "list_memories"))["memories"]] == [again]
