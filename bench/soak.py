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
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--mixed", action="store_true", help="every plugin, mixed calls (memory, graph, files)")
    parser.add_argument("--store-every", type=int, default=STORE_EVERY, help="with --mixed: calls per store (0: none)")
    parser.add_argument("--smoke", action="store_true", help="a few seconds (what the test runs)")
    args = parser.parse_args()
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
