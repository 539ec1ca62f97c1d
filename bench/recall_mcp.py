"""A labeled recall set through a real `nexus serve`, as a client would run it: every memory stored with
`store_memory`, the supersedes links made with `link_memories`, then every query asked with `recall_memories`
straight after, no pause.

    .venv/bin/python bench/recall_mcp.py                                   # set A
    .venv/bin/python bench/recall_mcp.py --set bench/recall/recall_set_b.json
    .venv/bin/python bench/recall_mcp.py --distractors 10000                # set A among 10,000 other memories
    .venv/bin/python bench/recall_mcp.py --smoke                            # 10 queries (what the test runs)

`nexus serve` starts from an empty home folder with no config (the default embedder and recipe), over stdio
through the relay to the shared server it starts, as a desktop client launches it. Unlike `recall_plugin.py`,
memories are stamped now, not with the set's dates (the tools take none), so the age penalty does not apply;
and the first recalls find memories whose sentence vectors the background writer has not yet written, which
they wait for. Prints recall@5 and MRR per half, kind and language pair, the store and recall latency (p50, p95,
the first recall, the slowest; then, once the writer has caught up, every query again, with limit 20 and with the
default 5), and how many memories still waited for their sentence vectors when the recalls began.

``--distractors N`` first stores N generated memories (``memory_bench.generate``) the same way, one call at a
time, and waits until the background writer has written their sentence vectors: the latency goals' sizes
reached as a user reaches them, through the tools, with the store's own stamps, sentence vectors and index.
Their store times are printed per thousand, so a store at 10k is told from one at 1k.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from memory_bench import generate, pct
from recall_plugin import SET, Query, Result, first_rank, load_set, report, smoke_subset

from nexus_memory.store import Record

NEXUS = [sys.executable, "-m", "nexus_core"]


async def run(
    records: list[Record], queries: list[Query], supersedes: list[tuple[str, str]], env: dict, distractors: int
) -> None:
    params = StdioServerParameters(command=NEXUS[0], args=[*NEXUS[1:], "serve"], env=env, cwd="/")
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        if distractors:
            await fill(s, distractors)
        started, ids, stores = time.perf_counter(), {}, []
        for rec in records:
            args = {"content": rec.content, "context_name": rec.context, "tags": rec.tags}
            ms, out = await timed(s, "store_memory", {**args, "memory_type": rec.memory_type})
            stores.append(ms)
            ids[rec.id] = out["memory_id"]
        for source, target in supersedes:
            await s.call_tool(
                "link_memories", {"source_id": ids[source], "target_id": ids[target], "relation_type": "supersedes"}
            )
        stats = (await s.call_tool("get_stats", {})).structured_content
        print(
            f"stored {len(records)} memories in {time.perf_counter() - started:.1f} s "
            f"(p50 {pct(stores, 50):.1f}, p95 {pct(stores, 95):.1f} ms); "
            f"{stats.get('parts_pending', '?')} still wait for their sentence vectors",
            flush=True,
        )
        back = {v: k for k, v in ids.items()}
        ranks, times = {}, {"straight after the stores": [], "every query again": [], "again, limit 5": []}
        for q in queries:
            ms, out = await timed(s, "recall_memories", recall_args(q))
            times["straight after the stores"].append(ms)
            ranks[q.id] = first_rank([back.get(m["id"], "") for m in out["memories"]], q.relevant)
        await written(s)  # then the latency of a store whose writer has caught up
        for q in queries:
            times["every query again"].append((await timed(s, "recall_memories", recall_args(q)))[0])
        for q in queries:  # the tool's default limit, as the latency goals count
            times["again, limit 5"].append((await timed(s, "recall_memories", {**recall_args(q), "limit": 5}))[0])
    report({"nexus serve": Result("nexus serve", ranks)}, queries)
    for name, ms in times.items():
        print(
            f"\nrecall through MCP, {name}, ms: p50 {pct(ms, 50):.1f}, p95 {pct(ms, 95):.1f}, first {ms[0]:.1f}, "
            f"slowest {max(ms):.1f} (load {os.getloadavg()[0]:.1f})"
        )


async def fill(session: ClientSession, n: int) -> None:
    """Store ``n`` generated memories one call at a time, then wait for their sentence vectors."""
    started, ms = time.perf_counter(), []
    for i, rec in enumerate(generate(n, seed=11), 1):
        args = {"content": rec.content, "context_name": rec.context, "tags": rec.tags, "memory_type": rec.memory_type}
        ms.append((await timed(session, "store_memory", args))[0])
        if i % 1000 == 0 or i == n:
            last = ms[-1000:]
            print(
                f"  {i:,} stored: the last {len(last)} p50 {pct(last, 50):.1f}, p95 {pct(last, 95):.1f} ms "
                f"({time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    await written(session)
    print(f"{n:,} distractors stored and written in {time.perf_counter() - started:.0f} s", flush=True)


async def written(session: ClientSession) -> None:
    """Wait until the background writer has written every memory's sentence vectors (it writes in the pauses)."""
    while (pending := (await session.call_tool("get_stats", {})).structured_content["parts_pending"]) > 0:
        print(f"  {pending:,} memories wait for their sentence vectors", flush=True)
        await asyncio.sleep(1)


async def timed(session: ClientSession, tool: str, args: dict) -> tuple[float, dict]:
    """The call's time in ms, and its structured result."""
    started = time.perf_counter()
    out = await session.call_tool(tool, args)
    return 1000 * (time.perf_counter() - started), out.structured_content


def recall_args(q: Query) -> dict:
    args: dict = {"query": q.text, "limit": 20}
    for key, value in (("context_filter", q.context), ("tag_filter", q.tags), ("type_filter", q.memory_type)):
        if value:
            args[key] = value
    return args


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", type=Path, default=SET, help="the labeled set (default: bench/recall/recall_set.json)")
    parser.add_argument("--distractors", type=int, default=0, help="generated memories stored first")
    parser.add_argument("--smoke", action="store_true", help="10 queries of the set and the memories they need")
    args = parser.parse_args()
    records, queries, supersedes = load_set(args.set)
    if args.smoke:
        records, queries, supersedes = smoke_subset(records, queries, supersedes)
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "ANONYMIZED_TELEMETRY": "False"}
        for var in ("NEXUS_CONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env.pop(var, None)
        try:
            asyncio.run(run(records, queries, supersedes, env, args.distractors))
        finally:
            subprocess.run([*NEXUS, "server", "stop"], env=env, cwd="/", capture_output=True, timeout=60)


if __name__ == "__main__":
    main()
