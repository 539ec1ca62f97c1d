"""Soak: several clients write through one shared server for a while; nothing lost, no memory kept.

    .venv/bin/python bench/soak.py [--seconds 60] [--clients 5]
    .venv/bin/python bench/soak.py --mixed --seconds 600   # every plugin, the default embedder, mixed calls
    .venv/bin/python bench/soak.py --smoke          # a few seconds (what the test runs)

The clients are the official MCP client: all but one over stdio (`nexus serve`, each a relay to the one shared
server), one over Streamable HTTP (`nexus serve --transport http`, served by that same shared server). Each
appends numbered lines to a file of its own with `append_file` as fast as its answers come back. At the end the
lines on disk are counted against the acknowledged calls: any acknowledged line missing is a lost write. The
shared server's resident memory (its own `status`) is taken after a warm-up round and at the end. The bench
runs in a home folder of its own (Nexus's folders follow HOME) and stops the shared server it started.
Exit status 1 when a write was lost or the memory grew more than 10 %.

With --mixed every first-party plugin is served (the memory plugin with its default embedder) and each client
makes an append_file every fifth call, a store_memory every 25th, and recall_memories, read_file and
search_knowledge in turn between them, its memories and queries made of words drawn at random, so the models
meet ever new text; only the appends are counted for lost writes. The memory figures then include the models,
loaded by the warm-up round, and the memories stored (the store keeps each one's vectors in process).

    .venv/bin/python bench/soak.py --where 600     # where a stored memory's resident memory goes

--where N runs, in a fresh process and home folder, what the shared server runs (every plugin the soak serves,
the default embedder): N stores like the soak's, each followed by five recalls, through the memory plugin's
service; then the resident memory they added (freed memory handed back), split into Chroma's index (measured by
adding as many vectors to a collection of its own), the Python objects and numpy arrays (tracemalloc; the
mirror's vectors among them) and the rest, in KB a memory stored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pipe_client import NEXUS, home_env, stop_shared

TOKEN = "soak-token-" + "0" * 32
WORDS = (
    "deploy",
    "nginx",
    "gateway",
    "timeout",
    "postgres",
    "index",
    "migration",
    "cache",
    "redis",
    "queue",
    "worker",
    "retry",
    "backoff",
    "token",
    "expired",
    "certificate",
    "renewal",
    "docker",
    "image",
    "layer",
    "build",
    "pipeline",
    "flaky",
    "test",
    "race",
    "condition",
    "lock",
    "deadlock",
    "memory",
    "leak",
    "heap",
    "profile",
    "latency",
    "spike",
    "rollback",
    "release",
    "branch",
    "merge",
    "conflict",
    "schema",
    "column",
    "vacuum",
    "replica",
    "lag",
    "failover",
    "kubernetes",
    "pod",
    "readiness",
    "probe",
    "liveness",
    "restart",
    "crash",
    "loop",
    "config",
    "map",
    "secret",
    "volume",
    "mount",
    "permission",
    "denied",
    "データベース",
    "接続",
    "タイムアウト",
    "部署",
    "缓存",
    "失败",
    "重试",
    "证书",
    "过期",
    "内存",
    "泄漏",
)


STORE_EVERY = 25  # calls: a user stores now and then and recalls, reads and searches much more


def config_for(folder: Path, mixed: bool = False) -> Path:
    config = folder / "nexus.toml"
    off = ("bridge",) if mixed else ("memory", "graph", "manual", "bridge")
    disabled = "".join(f"[plugins.{name}]\nenabled = false\n" for name in off)
    config.write_text(
        f'[server]\ndata_dir = "{folder / "data"}"\n[server.http]\ntoken = {{ env = "SOAK_TOKEN" }}\n{disabled}'
        f'[plugins.files]\nroots = ["{folder / "work"}"]\ncategories = ["read", "write"]\n'
    )
    return config


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def status(config: Path, env: dict[str, str]) -> dict:
    out = subprocess.run(
        [*NEXUS, "server", "status", "--json", "--config", str(config)], env=env, capture_output=True, timeout=60
    )
    return json.loads(out.stdout or b"null") or {}


class Writer:
    """One client's appends: how many were acknowledged, and to which file (with ``mixed``, other calls between)."""

    def __init__(self, name: str, work: Path, mixed: bool = False, store_every: int = STORE_EVERY) -> None:
        self.name, self.path = name, work / f"{name}.log"
        self.acked: list[int] = []
        self.errors = self.sent = self.calls = 0
        self.mixed, self.rng, self.stores, self.store_every = mixed, random.Random(name), 0, store_every

    async def run(self, session: ClientSession | Client, until: float) -> None:
        while time.monotonic() < until:
            if self.mixed and self.calls % 5:
                await self.other(session, self.calls)
                continue
            self.calls += 1
            n, self.sent = self.sent, self.sent + 1  # numbered across the warm-up and the soak: each line unique
            result = await session.call_tool("append_file", {"path": str(self.path), "content": f"{self.name} {n}\n"})
            if result.is_error:
                self.errors += 1
            else:
                self.acked.append(n)

    async def other(self, session: ClientSession | Client, call: int) -> None:
        """One of the calls besides the appends: a store every STORE_EVERY calls, else a read, in turn."""
        self.calls += 1
        rng, kind = self.rng, 1 if self.store_every and call % self.store_every == 1 else 2 + call % 3
        if kind == 1:
            content = f"{words(rng, 12)}. {words(rng, 10)}, so {words(rng, 8)}."
            tool, args = "store_memory", {"content": content, "context_name": self.name, "tags": [rng.choice(WORDS)]}
            self.stores += 1
        elif kind == 2:
            tool, args = "recall_memories", {"query": words(rng, 5)}
        elif kind == 3:
            tool, args = "read_file", {"path": str(self.path)}
        else:
            tool, args = "search_knowledge", {"query": words(rng, 2)}
        if (await session.call_tool(tool, args)).is_error:
            self.errors += 1

    def stored(self) -> set[int]:
        if not self.path.exists():
            return set()
        return {int(line.split()[1]) for line in self.path.read_text().splitlines() if line.startswith(self.name)}


async def stdio_writer(writer: Writer, config: Path, env: dict[str, str], start: asyncio.Event, until: list[float]):
    params = StdioServerParameters(command=NEXUS[0], args=[*NEXUS[1:], "serve", "--config", str(config)], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await writer.run(session, time.monotonic() + 1)  # warm-up round, counted like the rest
        await start.wait()
        await writer.run(session, until[0])


async def http_writer(writer: Writer, url: str, start: asyncio.Event, until: list[float]) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    async with Client(streamable_http_client(url, http_client=http)) as client:
        await writer.run(client, time.monotonic() + 1)
        await start.wait()
        await writer.run(client, until[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(config: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [*NEXUS, "serve", "--transport", "http", "--port", str(port), "--config", str(config)]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the HTTP server did not listen")


async def soak(
    folder: Path, seconds: float, clients: int, *, memory_limit: float = 10.0, mixed: bool = False, store_every: int = 0
) -> int:
    env = home_env(folder / "home") | {"SOAK_TOKEN": TOKEN}
    config = config_for(folder, mixed)
    (folder / "work").mkdir()
    writers = [Writer(f"client{i}", folder / "work", mixed, store_every) for i in range(clients)]
    start, until = asyncio.Event(), [0.0]
    tasks = [asyncio.create_task(stdio_writer(w, config, env, start, until)) for w in writers[:-1]]
    await asyncio.sleep(5)  # the first relay has started the shared server
    http, url = start_http(config, env)
    try:
        tasks.append(asyncio.create_task(http_writer(writers[-1], url, start, until)))
        while any(not w.acked for w in writers):  # every client has made its warm-up calls
            await asyncio.sleep(0.2)
            if done := [t for t in tasks if t.done() and t.exception()]:
                raise done[0].exception()  # type: ignore[misc]
        await asyncio.sleep(1.5)
        before = status(config, env).get("rss_mb")
        until[0] = time.monotonic() + seconds
        start.set()
        await asyncio.gather(*tasks)
        after = status(config, env).get("rss_mb")
    finally:
        http.terminate()
        http.wait(timeout=30)
        stop_shared(config, env)
    return report(writers, seconds, before, after, memory_limit)


def report(writers: list[Writer], seconds: float, before: float | None, after: float | None, limit: float) -> int:
    mixed = writers[0].mixed
    acked = sum(len(w.acked) for w in writers)
    stored = sum(len(w.stored()) for w in writers)
    lost = sum(len(set(w.acked) - w.stored()) for w in writers)
    errors = sum(w.errors for w in writers)
    growth = (after - before) / before * 100 if before and after else float("inf")
    calls = "mixed calls (every fifth an append_file)" if mixed else "append_file"
    print(f"soak: {len(writers)} clients ({len(writers) - 1} stdio relays, 1 HTTP), {seconds:.0f} s of {calls}")
    print(f"acknowledged writes  {acked}")
    print(f"stored writes        {stored}")
    print(f"lost writes          {lost}")
    print(f"error answers        {errors}")
    print(f"calls per second     {sum(w.calls or len(w.acked) for w in writers) / max(seconds + 1, 1):.0f}")
    if mixed:
        stores = sum(w.stores for w in writers)
        each = f" ({(after - before) * 1024 / stores:.0f} KB a memory)" if before and after and stores else ""
        print(f"memories stored      {stores}{each}")
    print(f"server RSS before    {before} MB")
    print(f"server RSS after     {after} MB ({growth:+.1f} %)")
    return 1 if lost or errors or not growth <= limit else 0


# -- where a stored memory's resident memory goes ---------------------------------------------------------------


def resident() -> tuple[float, float]:
    """This process's resident memory in MB: anonymous, and pages of files."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        found[key] = value
    kb = [int(found.get(k, "0 kB").split()[0]) for k in ("RssAnon", "RssFile", "RssShmem")]
    return kb[0] / 1024, (kb[1] + kb[2]) / 1024


def where(folder: Path, count: int) -> None:
    """``count`` stores like the soak's, each followed by five recalls, through the memory plugin of a host built
    as the shared server builds it; then where the memory they added went, in KB a memory."""
    import gc
    import tracemalloc

    from nexus_core import release_freed
    from nexus_core.assembly import build_for_serving
    from nexus_core.config.effective import load
    from nexus_core.host import heap
    from nexus_memory import service_of

    heap.limit_arenas()
    (folder / "work").mkdir()
    host = build_for_serving(load(str(config_for(folder, mixed=True)), ("plugins.memory.warm_up=false",), False))
    service = service_of(host.plugins["memory"].ctx)
    store, rng = service.store, random.Random(1)

    def stores(n: int) -> None:
        for i in range(n):
            content = f"{words(rng, 12)}. {words(rng, 10)}, so {words(rng, 8)}."
            service.store_memory(content, f"client{i % 5}", [rng.choice(WORDS)], "note")
            for _ in range(5):
                service.recall(words(rng, 5), 10, None, None, None)
        service.parts.drain(timeout=600)
        service.flush_touches()
        gc.collect()
        release_freed()

    stores(min(20, count))  # the models, the mirror, the caches: what the first few memories start
    (anon, files), vectors = resident(), store.count() + store.parts.collection.count()
    mirror = store.mirror()
    array, held = mirror._vectors, len(mirror)
    tracemalloc.start()
    stores(count)
    traced = tracemalloc.get_traced_memory()[0] / 1024  # KB
    tracemalloc.stop()
    release_freed()  # tracemalloc's own tables, freed
    (anon2, files2), vectors2 = resident(), store.count() + store.parts.collection.count()
    # The mirror's array grows by doubling (zeroed pages stay unread): its rows are what is resident.
    rows = (len(mirror) - held) * array.shape[1] * array.itemsize / 1024
    grown = (mirror._vectors.nbytes + mirror._scales.nbytes) / 1024 if mirror._vectors is not array else 0.0
    added = vectors2 - vectors
    chroma = chroma_cost(folder / "alone", added, int(store.embedder.dimension)) * 1024  # KB
    figures = [
        ("Chroma's index (every vector, measured alone)", chroma),
        ("the mirror's vectors", rows),
        ("other Python objects (texts, metadata, ids, tag index; tracemalloc)", traced - grown),
        ("the rest (malloc's heaps, SQLite, onnxruntime)", (anon2 - anon) * 1024 - chroma - rows - traced + grown),
        ("total, anonymous (freed memory handed back)", (anon2 - anon) * 1024),
        ("pages of files", (files2 - files) * 1024),
    ]
    print(f"where the memory {count} stores added goes ({added / count:.1f} vectors a memory), KB a memory")
    print()
    print("| where | KB a memory |")
    print("|---|---:|")
    for label, total in figures:
        print(f"| {label} | {total / count:.1f} |")
    service.close()
    os._exit(0)  # Chroma's and the plugins' threads need no orderly end here


def where_in_fresh_process(count: int) -> int:
    with tempfile.TemporaryDirectory(prefix="nx-soak-where-") as folder:
        command = [sys.executable, __file__, "--where-here", str(count)]
        out = subprocess.run(command, env=home_env(Path(folder) / "home"), cwd=folder, timeout=3600, check=False)
    return out.returncode


def chroma_cost(folder: Path, vectors: int, dimension: int) -> float:
    """The resident memory (MB) ``vectors`` unit vectors add to a collection of their own, with the store's index
    settings, added one memory's worth (four) at a time after a first hundred."""
    import numpy as np
    from chromadb import PersistentClient
    from chromadb.config import Settings

    from nexus_core import release_freed
    from nexus_memory.store import HNSW

    client = PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    collection = client.create_collection("alone", embedding_function=None, configuration={"hnsw": HNSW})
    rng = np.random.default_rng(0)

    def add(n: int, at: int) -> None:
        for start in range(at, at + n, 4):
            rows = rng.standard_normal((min(4, at + n - start), dimension)).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            collection.add(ids=[f"v{start + i}" for i in range(len(rows))], embeddings=rows)

    add(100, 0)
    release_freed()
    before = resident()[0]
    add(vectors, 100)
    release_freed()
    return resident()[0] - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--mixed", action="store_true", help="every plugin, mixed calls (memory, graph, files)")
    parser.add_argument("--store-every", type=int, default=STORE_EVERY, help="with --mixed: calls per store (0: none)")
    parser.add_argument("--smoke", action="store_true", help="a few seconds (what the test runs)")
    parser.add_argument("--where", type=int, metavar="N", help="only where N stored memories' memory goes")
    parser.add_argument("--where-here", type=int, help=argparse.SUPPRESS)  # --where's own process
    args = parser.parse_args()
    if args.where_here:
        where(Path.cwd(), args.where_here)
    if args.where:
        return where_in_fresh_process(5 if args.smoke else args.where)
    seconds = 3.0 if args.smoke else args.seconds
    with tempfile.TemporaryDirectory(prefix="nx-soak-") as folder:
        # Seconds are too few for the memory to settle: the smoke run checks only that nothing is lost.
        # Stored memories are data the server keeps (their vectors, in Chroma's index and in process): with stores the
        # growth per memory is printed, not judged.
        limit = float("inf") if args.smoke or (args.mixed and args.store_every) else 10.0
        run = soak(Path(folder), seconds, max(args.clients, 2), memory_limit=limit, mixed=args.mixed,
                   store_every=args.store_every)  # fmt: skip
        return asyncio.run(run)


if __name__ == "__main__":
    sys.exit(main())
