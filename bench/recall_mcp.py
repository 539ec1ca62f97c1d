"""A labeled recall set through a real `nexus serve`, as a client would run it: every memory stored with
`store_memory`, the supersedes links made with `link_memories`, then every query asked with `recall_memories`
straight after, no pause.

    .venv/bin/python bench/recall_mcp.py                                   # set A
    .venv/bin/python bench/recall_mcp.py --set bench/recall/recall_set_b.json

`nexus serve` starts from an empty home folder with no config (the default embedder and recipe), over stdio
through the relay to the shared server it starts, as a desktop client launches it. Unlike `recall_plugin.py`,
memories are stamped now, not with the set's dates (the tools take none), so the age penalty does not apply;
and the first recalls find memories whose sentence vectors the background writer has not yet written, which
they wait for. Prints recall@5 and MRR per half and kind, the recall latency (p50, p95, the first recall, the
slowest; then every query again), and how many memories still waited for their sentence vectors when the recalls began.
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
from recall_eval import KINDS, SET, TOP, Query, Result, first_rank, load_set, pick

from nexus_memory.store import Record

NEXUS = [sys.executable, "-m", "nexus_core"]


async def run(records: list[Record], queries: list[Query], supersedes: list[tuple[str, str]], env: dict) -> None:
    params = StdioServerParameters(command=NEXUS[0], args=[*NEXUS[1:], "serve"], env=env, cwd="/")
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        started, ids, stores = time.perf_counter(), {}, []
        for rec in records:
            args = {"content": rec.content, "context_name": rec.context, "tags": rec.tags}
            args["memory_type"] = rec.memory_type
            t = time.perf_counter()
            out = await s.call_tool("store_memory", args)
            stores.append(1000 * (time.perf_counter() - t))
            ids[rec.id] = out.structured_content["memory_id"]
        for source, target in supersedes:
            await s.call_tool(
                "link_memories", {"source_id": ids[source], "target_id": ids[target], "relation_type": "supersedes"}
            )
        stats = (await s.call_tool("get_stats", {})).structured_content
        stores.sort()
        print(
            f"stored {len(records)} memories in {time.perf_counter() - started:.1f} s "
            f"(p50 {stores[len(stores) // 2]:.1f}, p95 {stores[int(0.95 * len(stores))]:.1f} ms); "
            f"{stats.get('parts_pending', '?')} still wait for their sentence vectors",
            flush=True,
        )
        back = {v: k for k, v in ids.items()}
        ranks, times = {}, []
        for q in queries:
            t = time.perf_counter()
            out = await s.call_tool("recall_memories", recall_args(q))
            times.append(time.perf_counter() - t)
            got = [back[m["id"]] for m in out.structured_content["memories"]]
            ranks[q.id] = first_rank(got, q.relevant)
        again = [await timed(s, recall_args(q)) for q in queries]
    report(Result("nexus serve", ranks), queries, times, again)


async def timed(session: ClientSession, args: dict) -> float:
    started = time.perf_counter()
    await session.call_tool("recall_memories", args)
    return time.perf_counter() - started


def recall_args(q: Query) -> dict:
    args: dict = {"query": q.text, "limit": 20}
    for key, value in (("context_filter", q.context), ("tag_filter", q.tags), ("type_filter", q.memory_type)):
        if value:
            args[key] = value
    return args


def report(res: Result, queries: list[Query], times: list[float], again: list[float]) -> None:
    print(f"\n| half | R@{TOP} | MRR | " + " | ".join(KINDS) + " | n |\n|---|---|---|" + "---|" * len(KINDS) + "---|")
    for half, qs in (("test", pick(queries, "test")), ("dev", pick(queries, "dev")), ("all", queries)):
        kinds = " | ".join(f"{res.r5(pick(qs, kind=k)):.2f}" for k in KINDS)
        print(f"| {half} | **{res.r5(qs):.3f}** | {res.mrr(qs):.3f} | {kinds} | {len(qs)} |")
    for name, run in (("straight after the stores", times), ("every query again", again)):
        ms = sorted(1000 * t for t in run)
        print(
            f"\nrecall through MCP, {name}, ms: p50 {ms[len(ms) // 2]:.1f}, p95 {ms[int(0.95 * len(ms))]:.1f}, "
            f"first {1000 * run[0]:.1f}, slowest {ms[-1]:.1f} (load {os.getloadavg()[0]:.1f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", type=Path, default=SET, help="the labeled set (default: bench/recall/recall_set.json)")
    args = parser.parse_args()
    records, queries, _, supersedes = load_set(0, args.set)
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "XDG_RUNTIME_DIR": f"{home}/run", "ANONYMIZED_TELEMETRY": "False"}
        for var in ("NEXUS_CONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env.pop(var, None)
        os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
        try:
            asyncio.run(run(records, queries, supersedes, env))
        finally:
            subprocess.run([*NEXUS, "server", "stop"], env=env, cwd="/", capture_output=True, timeout=60)


if __name__ == "__main__":
    main()
