"""Benchmark of the memory plugin in process: store and recall latency at 1k/10k/100k memories, server memory, start.

    .venv/bin/python bench/memory_bench.py                # 1k, 10k and 100k
    .venv/bin/python bench/memory_bench.py --sizes 10000  # the size the memory plugin's latency goals name
    .venv/bin/python bench/memory_bench.py --smoke        # 50 memories, 10 queries (what the test runs)

Everything goes through the MCP client (in-process ``mcp.Client(host.server)``)
with the real MiniLM model and an embedded Chroma. Bulk data is embedded once
per size in batches with the plugin's own embedder and inserted with
``collection.add``; the timed calls are ``recall_memories`` and ``store_memory``.
The bench also counts how many recalls needed Chroma's full-text lookup (the
others were settled by the semantic candidates alone, see ``recall/scoring.py``).
The queries are the 72 of ``tests/memory/memory_recall_set.json`` (the labeled
set the plugin's tests use), then generated ones. Servers it starts run with a
home folder of their own. Recall quality: ``recall_plugin.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters, stdio_client

import nexus_memory
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager
from nexus_memory.embed import create
from nexus_memory.store import LOCK_FILE, Record

HERE = Path(__file__).parent
LABELED = HERE.parent / "tests" / "memory" / "memory_recall_set.json"

TECH = [
    "postgres",
    "redis",
    "kafka",
    "nginx",
    "docker",
    "kubernetes",
    "react",
    "django",
    "fastapi",
    "celery",
    "terraform",
    "grpc",
    "graphql",
    "mongodb",
    "elasticsearch",
    "webpack",
    "pytest",
    "rust",
    "go",
    "node",
]
PART = [
    "auth service",
    "billing worker",
    "search indexer",
    "admin UI",
    "mobile API",
    "report job",
    "gateway",
    "image pipeline",
    "email sender",
    "cache layer",
    "scheduler",
    "payment webhook",
    "CLI",
    "ETL loader",
]
SYMPTOM = [
    "timed out after {n}s",
    "returned HTTP {code}",
    "leaked memory until OOM",
    "deadlocked under load",
    "dropped messages",
    "crashed with {err}",
    "was {n}x slower after the upgrade",
    "logged {err} on startup",
    "produced duplicate rows",
    "failed only in CI",
    "ignored the config value",
    "hung on shutdown",
]
CAUSE = [
    "a missing index on {col}",
    "a connection pool of {n}",
    "an unbounded retry loop",
    "clock skew",
    "a stale lock file",
    "the default timeout",
    "a race in {fn}()",
    "a wrong environment variable",
    "an N+1 query in {fn}()",
    "a DNS cache",
    "an old TLS version",
    "a full disk on the runner",
]
FIX = [
    "added the index",
    "raised the pool to {n}",
    "capped retries with jitter",
    "enabled NTP",
    "removed the lock at start",
    "set an explicit timeout",
    "guarded {fn}() with a lock",
    "fixed the variable",
    "batched the query",
    "lowered the DNS TTL",
    "pinned TLS 1.2+",
    "cleaned the cache in CI",
]
ERRS = ["ECONNRESET", "ETIMEDOUT", "E11000", "OOMKilled", "SIGSEGV", "ENOSPC", "EPIPE", "ERR_TLS_CERT", "TS2322"]
TYPES = ["insight", "success", "failure", "decision", "note"]


def generate(n: int, seed: int = 7) -> list[Record]:
    """``n`` varied, plausible developer memories."""
    rng = random.Random(seed)
    out: list[Record] = []
    for i in range(n):
        fill = {
            "n": rng.randint(2, 90),
            "code": rng.choice([400, 401, 403, 404, 409, 429, 500, 502, 503, 504]),
            "err": rng.choice(ERRS),
            "col": rng.choice(["user_id", "created_at", "email", "tenant_id"]),
            "fn": rng.choice(["load_config", "sync_users", "render_page", "flush_queue", "parse_row"]) + str(i % 97),
        }
        tech, part = rng.choice(TECH), rng.choice(PART)
        k = rng.randrange(len(CAUSE))
        text = (
            f"The {part} on {tech} {rng.choice(SYMPTOM).format(**fill)}. Cause: {CAUSE[k].format(**fill)}. "
            f"Fix: {FIX[k].format(**fill)}."
        )
        tags = rng.sample(TECH, 2) if rng.random() < 0.9 else []
        stamp = f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}T12:00:00+00:00"
        out.append(
            Record(
                f"00000000-0000-4000-8000-{i:012d}",
                text,
                rng.choice(TYPES),
                f"proj-{i % 40}",
                [tech, *[t for t in tags if t != tech]],
                stamp,
                stamp,
            )
        )
    return out


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def host_for(data_dir: Path) -> Any:
    pm = get_plugin_manager()
    pm.register(nexus_memory, name="memory")
    config = {
        "server": {"data_dir": str(data_dir), "audit": {"enabled": False}},
        "plugins": {"memory": {"categories": ["read", "write", "delete"]}},
    }
    return build_host(parse_config(config), pm)


def store_of(host: Any) -> Any:
    return nexus_memory.service_of(host.plugins["memory"].ctx).store


def count_calls(obj: Any, name: str) -> list[int]:
    """Count the calls of ``obj.name`` (an instance attribute shadows the method); returns the live counter."""
    counter = [0]
    method = getattr(obj, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        return method(*args, **kwargs)

    setattr(obj, name, counted)
    return counter


def bulk_load(store: Any, records: list[Record]) -> tuple[float, float]:
    t0 = time.perf_counter()
    vectors = store.embed_records(records)  # what the plugin embeds for a memory (its recipe: tags, then content)
    t_embed = time.perf_counter() - t0
    t0 = time.perf_counter()
    for start in range(0, len(records), 5000):
        store.add(records[start : start + 5000], vectors[start : start + 5000])
    return t_embed, time.perf_counter() - t0


def server_params(config: Path, home: Path) -> StdioServerParameters:
    """`nexus serve --standalone` on ``config``, with ``home`` as its home folder (Nexus's folders follow HOME)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "XDG_"))}
    env |= {"HOME": str(home), "ANONYMIZED_TELEMETRY": "False"}
    args = ["-m", "nexus_core", "serve", "--standalone", "--config", str(config)]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children() -> set[int]:
    out: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            out |= {int(p) for p in (task / "children").read_text().split()}
        except FileNotFoundError:  # the thread ended between listing and reading
            continue
    return out


async def server_rss(data_dir: Path, queries: list[str]) -> float:
    """Resident memory of a real `nexus serve` (stdio) on this store, after recalls and stores."""
    config = data_dir / "nexus.toml"
    config.write_text(f'[server]\ndata_dir = "{data_dir}"\n[server.audit]\nenabled = false\n')
    before = children()
    async with stdio_client(server_params(config, data_dir / "home")) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for i, q in enumerate(queries):
            await s.call_tool("recall_memories", {"query": q})
            if i % 3 == 0:
                await s.call_tool(
                    "store_memory", {"content": f"RSS probe {i}: {q}", "context_name": "bench", "tags": []}
                )
        (pid,) = children() - before
        return rss_mb(pid)


# -- latency -------------------------------------------------------------------------


async def latency(size: int, queries: list[str], report: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        host = host_for(Path(tmp))
        async with Client(host.server) as client:
            await client.call_tool("get_stats", {})  # opens Chroma, loads nothing else
            store = store_of(host)
            records = generate(size)
            t_embed, t_add = bulk_load(store, records)
            del records
            gc.collect()
            for q in queries[:5]:  # warm-up
                await client.call_tool("recall_memories", {"query": q})
            full_text = count_calls(store, "containing")
            rec: list[float] = []
            for q in queries:
                t0 = time.perf_counter()
                r = await client.call_tool("recall_memories", {"query": q, "limit": 5})
                rec.append((time.perf_counter() - t0) * 1000)
                assert not r.is_error, r.content
            vecs = [store.embed_query(q)[0] for q in queries]  # as recall embeds a query
            bare: list[float] = []
            for v in vecs:
                t0 = time.perf_counter()
                store.memories.query(query_embeddings=[v], n_results=5, include=["documents", "metadatas", "distances"])
                bare.append((time.perf_counter() - t0) * 1000)
            sto: list[float] = []
            for i, q in enumerate(queries[:100]):
                t0 = time.perf_counter()
                r = await client.call_tool(
                    "store_memory",
                    {"content": f"Bench note {i}: {q} was fixed.", "context_name": "bench", "tags": ["bench"]},
                )
                sto.append((time.perf_counter() - t0) * 1000)
                assert not r.is_error, r.content
        store.close()
        # Embedded Chroma serves one process, and this one keeps its lock: the server gets a copy.
        served = Path(tmp) / "served"
        shutil.copytree(Path(tmp) / "memory", served / "memory", ignore=shutil.ignore_patterns(LOCK_FILE))
        rss = await server_rss(served, queries[:30])
    row = {
        "size": size,
        "embed_s": t_embed,
        "add_s": t_add,
        "recall_p50": pct(rec, 50),
        "recall_p95": pct(rec, 95),
        "bare_p50": pct(bare, 50),
        "bare_p95": pct(bare, 95),
        "store_p50": pct(sto, 50),
        "store_p95": pct(sto, 95),
        "rss_mb": rss,
        "full_text": full_text[0],
    }
    line = (
        f"| {size:>7,} | {t_embed:7.1f} s | {t_add:6.1f} s | {row['recall_p50']:6.1f} / {row['recall_p95']:6.1f} | "
        f"{row['bare_p50']:5.2f} / {row['bare_p95']:5.2f} | {row['recall_p50'] / row['bare_p50']:5.1f}x | "
        f"{full_text[0]:3d} / {len(queries)} | {row['store_p50']:6.1f} / {row['store_p95']:6.1f} | {rss:6.0f} |"
    )
    print(line, flush=True)
    report.append(line)
    return row


# -- server start ----------------------------------------------------------------------


async def first_list(config: Path) -> float:
    params = server_params(config, config.parent / "home")
    t0 = time.perf_counter()
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        await s.list_tools()
        return (time.perf_counter() - t0) * 1000


async def start_time(runs: int, report: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        on, off = Path(tmp) / "on.toml", Path(tmp) / "off.toml"
        base = f'[server]\ndata_dir = "{tmp}"\n'
        on.write_text(base)
        off.write_text(base + "[plugins.memory]\nenabled = false\n")
        with_p = [await first_list(on) for _ in range(runs)]
        without = [await first_list(off) for _ in range(runs)]
    a, b = statistics.median(with_p), statistics.median(without)
    line = (
        f"Server start to first tools/list (median of {runs}): {a:.0f} ms with the plugin, "
        f"{b:.0f} ms without ({a - b:+.0f} ms)."
    )
    print(line, flush=True)
    report.append(line)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5, help="server starts with and without the plugin")
    parser.add_argument("--smoke", action="store_true", help="50 memories, 10 queries, one start each")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.queries, args.starts = [50], 10, 1
    create("minilm").embed(["warm up"])
    labeled = [q["query"] for q in json.loads(LABELED.read_text())["queries"]]
    rng = random.Random(3)
    generated = [
        f"{rng.choice(PART)} {rng.choice(SYMPTOM).split(' ')[0]} {rng.choice(TECH)} {rng.choice(ERRS)}"
        for _ in range(args.queries)
    ]
    queries = (labeled + generated)[: args.queries]
    report: list[str] = []
    header = (
        "| memories | embed (bulk) | add | recall p50 / p95 ms | bare Chroma p50 / p95 ms | recall / bare (p50) "
        "| full-text lookups | store p50 / p95 ms | server RSS MB |"
    )
    if args.sizes:
        print(header)
        report += [header, "|---|---|---|---|---|---|---|---|---|"]
    for size in args.sizes:
        await latency(size, queries, report)
    await start_time(args.starts, report)


if __name__ == "__main__":
    asyncio.run(main())
