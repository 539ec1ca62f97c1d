"""Recall latency at N memories on a store built as a user builds it: every memory stored with ``store_memory``
(``MemoryService``, in process, no MCP layer), its sentence vectors written by the background writer, then set A.

    .venv/bin/python bench/recall_latency_built.py [--size 10000] [--keep DIR]

``recall_latency_paired.py`` fills its stores in bulk (the labeled set's vectors repeated with noise) to reach 100k
in minutes; this one embeds every memory (~5 min and ~3 min of sentence vectors at 10k). Prints recall p50 / p95
over set A's 199 queries, twice with their filters and once without, limit 5 (the tool's default). ``--keep DIR``
builds the store in DIR once and reuses it on later runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from memory_bench import generate, pct
from recall_eval import load_set

from nexus_memory.embedders import create
from nexus_memory.service import MemoryService
from nexus_memory.store import SENTENCES_RECIPE, ChromaStore, Record


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--keep", type=Path, help="build the store here once, and reuse it")
    args = parser.parse_args()
    records, queries, _, _ = load_set(0)
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        store = ChromaStore(where, "nexus_memories", create("minilm+use"), recipe=SENTENCES_RECIPE)
        service = MemoryService(store)
        service.touch_delay = 3600.0  # the recalled stamps are written later, in one batch
        if store.count() < args.size:
            build(service, [*generate(args.size, seed=11), *records])
        print(f"{store.count():,} memories in {where}", flush=True)
        for label, filtered in (("filtered as the set says", True), ("again", True), ("no filters", False)):
            ms = []
            for q in queries:
                how = (q.context, q.tags, q.memory_type) if filtered else (None, None, None)
                t0 = time.perf_counter()
                service.recall(q.text, 5, *how)
                ms.append((time.perf_counter() - t0) * 1000)
            print(f"recall, {label}: p50 {pct(ms, 50):.1f}, p95 {pct(ms, 95):.1f} ms (load {os.getloadavg()[0]:.1f})")
        service.close()
        store.close()


def build(service: MemoryService, records: list[Record]) -> None:
    started = time.perf_counter()
    for r in records:
        service.store_memory(r.content, r.context, r.tags, r.memory_type)
    print(f"stored {len(records):,} memories in {time.perf_counter() - started:.0f} s", flush=True)
    service.parts.drain(timeout=3600)
    print(f"their sentence vectors written after {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
