"""What the memory calls free is handed back to the system after them, at most once every ``EVERY`` seconds."""

from __future__ import annotations

import itertools
import time

import anyio
import pytest
from mcp import Client

from nexus_memory import released as module
from tests.memory.helpers import call, store


@pytest.mark.anyio
async def test_what_the_calls_free_is_handed_back_after_them_at_most_once_a_period(
    memory_host, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = 0.4
    monkeypatch.setattr(module, "EVERY", every)
    handed: list[float] = []
    real = module.release_freed
    monkeypatch.setattr(module, "release_freed", lambda: handed.append(time.monotonic()) or real())
    async with Client(memory_host().server) as client:
        await store(client, "Redis evicted the session keys under memory pressure.", "api", ["redis"])
        for _ in range(8):  # calls faster than the period: their freed memory is handed back together
            await call(client, "recall_memories", query="redis eviction", limit=3)
        last = time.monotonic()
        deadline = last + 10
        while not (handed and handed[-1] >= last) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
    assert handed and handed[-1] >= last  # after the last call too
    assert all(b - a >= every * 0.9 for a, b in itertools.pairwise(handed))
    assert len(handed) < 9
