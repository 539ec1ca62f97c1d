"""Soak: several clients write through one shared server for a while; nothing lost, no memory kept.

    .venv/bin/python bench/soak.py [--seconds 60] [--clients 5]
    .venv/bin/python bench/soak.py --smoke          # a few seconds (what the test runs)

The clients are the official MCP client: all but one over stdio (`nexus serve`, each a relay to the one shared
server), one over Streamable HTTP (`nexus serve --transport http`, served by that same shared server). Each
appends numbered lines to a file of its own with `append_file` as fast as its answers come back. At the end the
lines on disk are counted against the acknowledged calls: any acknowledged line missing is a lost write. The
shared server's resident memory (its own `status`) is taken after a warm-up round and at the end. The bench
runs in a home folder of its own (Nexus's folders follow HOME) and stops the shared server it started.
Exit status 1 when a write was lost or the memory grew more than 10 %.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def config_for(folder: Path) -> Path:
    config = folder / "nexus.toml"
    disabled = "".join(f"[plugins.{name}]\nenabled = false\n" for name in ("memory", "graph", "manual", "bridge"))
    config.write_text(
        f'[server]\ndata_dir = "{folder / "data"}"\n[server.http]\ntoken = {{ env = "SOAK_TOKEN" }}\n{disabled}'
        f'[plugins.files]\nroots = ["{folder / "work"}"]\ncategories = ["read", "write"]\n'
    )
    return config


def status(config: Path, env: dict[str, str]) -> dict:
    out = subprocess.run(
        [*NEXUS, "server", "status", "--json", "--config", str(config)], env=env, capture_output=True, timeout=60
    )
    return json.loads(out.stdout or b"null") or {}


class Writer:
    """One client's appends: how many were acknowledged, and to which file."""

    def __init__(self, name: str, work: Path) -> None:
        self.name, self.path = name, work / f"{name}.log"
        self.acked: list[int] = []
        self.errors = self.sent = 0

    async def run(self, session: ClientSession | Client, until: float) -> None:
        while time.monotonic() < until:
            n, self.sent = self.sent, self.sent + 1  # numbered across the warm-up and the soak: each line unique
            result = await session.call_tool("append_file", {"path": str(self.path), "content": f"{self.name} {n}\n"})
            if result.is_error:
                self.errors += 1
            else:
                self.acked.append(n)

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


async def soak(folder: Path, seconds: float, clients: int, *, memory_limit: float = 10.0) -> int:
    env = home_env(folder / "home") | {"SOAK_TOKEN": TOKEN}
    config = config_for(folder)
    (folder / "work").mkdir()
    writers = [Writer(f"client{i}", folder / "work") for i in range(clients)]
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
    acked = sum(len(w.acked) for w in writers)
    stored = sum(len(w.stored()) for w in writers)
    lost = sum(len(set(w.acked) - w.stored()) for w in writers)
    errors = sum(w.errors for w in writers)
    growth = (after - before) / before * 100 if before and after else float("inf")
    print(f"soak: {len(writers)} clients ({len(writers) - 1} stdio relays, 1 HTTP), {seconds:.0f} s of append_file")
    print(f"acknowledged writes  {acked}")
    print(f"stored writes        {stored}")
    print(f"lost writes          {lost}")
    print(f"error answers        {errors}")
    print(f"calls per second     {acked / max(seconds + 1, 1):.0f}")
    print(f"server RSS before    {before} MB")
    print(f"server RSS after     {after} MB ({growth:+.1f} %)")
    return 1 if lost or errors or not growth <= limit else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a few seconds (what the test runs)")
    args = parser.parse_args()
    seconds = 3.0 if args.smoke else args.seconds
    with tempfile.TemporaryDirectory(prefix="nx-soak-") as folder:
        # Seconds are too few for the memory to settle: the smoke run checks only that nothing is lost.
        limit = float("inf") if args.smoke else 10.0
        return asyncio.run(soak(Path(folder), seconds, max(args.clients, 2), memory_limit=limit))


if __name__ == "__main__":
    sys.exit(main())
