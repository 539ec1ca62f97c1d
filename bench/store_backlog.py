"""Store latency at 10k memories while the sentence writer has a backlog, as during a bulk import (issue 16).

    .venv/bin/python bench/store_backlog.py [--size 10000] [--rounds 2]

One embedded store of the default embedder with sentence vectors, filled in bulk as ``recall_latency_paired.py``
fills it, then, through the plugin's ``MemoryService`` (no MCP layer), per round: 400 generated memories stored
back to back with the writer held (``idle``); then 250 more queued and left to the writer, which is told they have
waited its patience already, and 400 stored back to back meanwhile: with the writer's defaults (``paced``: one
batch every ``PATIENCE`` seconds until the calls pause) and with a patience of 0 (``unpaced``: batch after batch
beside the calls, as the writer did before). Prints store p50 / p95 and how many memories the writer left queued.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from memory_bench import generate, pct
from recall_eval import Cache
from recall_latency_paired import WITH_SENTENCES, base_vectors, filled

from nexus_memory import parts_writer
from nexus_memory.service import MemoryService


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", default=None)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    base = base_vectors(Cache(args.cache), {"minilm+use"})["minilm+use"]
    with tempfile.TemporaryDirectory() as tmp:
        service = filled(Path(tmp), WITH_SENTENCES, base, args.size)
        fresh = iter(generate(args.rounds * 3 * 1100, seed=77))
        print(f"\n| {args.size:,} memories | store p50 / p95 ms | left queued |\n|---|---|---|")
        hold(service)
        stores(service, fresh, 20)  # warm-up
        for _ in range(args.rounds):
            for name, patience in (("idle", None), ("paced", parts_writer.PATIENCE), ("unpaced", 0.0)):
                hold(service)
                if patience is not None:
                    stores(service, fresh, 250)  # the backlog
                    release(service, patience)
                ms = stores(service, fresh, 400)
                print(f"| {name} | {pct(ms, 50):.1f} / {pct(ms, 95):.1f} | {len(service.parts._queue)} |", flush=True)
                hold(service)
                service.parts._queue.clear()  # left pending: the next round starts without a backlog
        service.close()
        service.store.close()
    print(f"load average at the end: {os.getloadavg()}")


def stores(service: MemoryService, fresh, n: int) -> list[float]:
    out = []
    for _ in range(n):
        r = next(fresh)
        started = time.perf_counter()
        service.store_memory(r.content, r.context, r.tags, r.memory_type)
        out.append((time.perf_counter() - started) * 1000)
    return out


def hold(service: MemoryService) -> None:
    """The writer waits: no pause is quiet enough and its patience never runs out."""
    service.parts.quiet, service.parts.patience = 1e9, 1e9
    time.sleep(0.5)  # a batch under way ends


def release(service: MemoryService, patience: float) -> None:
    """The writer's defaults (``patience`` aside), its queue having waited that long already."""
    writer = service.parts
    writer.quiet, writer.patience = parts_writer.QUIET, patience
    with writer._lock:
        writer._since = time.monotonic() - patience - 1
    writer._hurry.set()  # wakes it from its wait for a pause, which it then measures again
    writer._hurry.clear()
    time.sleep(0.3)


if __name__ == "__main__":
    main()
