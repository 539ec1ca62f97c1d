"""The server's heap: freed memory handed back to the system, few malloc arenas (glibc on Linux)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nexus_core.host import heap

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")


def resident_mb() -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_freed_memory_is_handed_back() -> None:
    """Blocks freed below one still in use stay in glibc's heap (it trims only its top) until release_freed."""
    blocks = [bytearray(64 << 10) for _ in range(1600)]  # 100 MB in blocks small enough for the heap
    for block in blocks:
        block[::4096] = b"x" * len(block[::4096])  # every page touched: resident
    kept = bytearray(64 << 10)
    del blocks
    before = resident_mb()
    assert heap.release_freed()
    assert before - resident_mb() > 50
    del kept


def test_arenas_can_be_limited() -> None:
    assert heap.limit_arenas(heap.ARENAS)


@pytest.mark.anyio
async def test_the_shared_server_hands_freed_memory_back_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from nexus_core.serve import shared

    calls: list[bool] = []
    monkeypatch.setattr(heap, "release_freed", lambda: calls.append(True) or True)
    with anyio.move_on_after(0.5):
        await shared.release_freed_memory(0.05)
    assert len(calls) >= 3
