"""The relay to the shared server against a standalone server, measured in one run.

    .venv/bin/python bench/relay_bench.py [--cold 10] [--calls 2000] [--clients 4]

Three figures, each Nexus-through-the-relay against `nexus serve --standalone`
on the same config (every installed plugin, the audit log on, an `echo` tool
from a plugin folder), runs interleaved so machine noise hits both alike:

- cold start: spawn to the `tools/list` answer, with the shared server already
  running (what every client launch after the first costs); goal <= 0.3x;
- call latency: a trivial tools/call round trip, p50 and p95; goal: the relay
  adds <= 0.2 ms at p50;
- memory: resident memory of N clients after one memory call each (recall,
  which loads the embedder and Chroma): the shared server plus N relays, against
  N standalone servers; goal <= 0.4x.

It uses its own runtime, state and data folders, so it never touches a shared
server the user runs. A raw JSON-RPC client over pipes keeps the client's own
cost out of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipe_client import ECHO_PLUGIN, Server, call_latencies, pct

NEXUS = [sys.executable, "-m", "nexus_core"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cold_start(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    server = Server(command, env)
    server.handshake()
    server.request("tools/list")
    elapsed = time.perf_counter() - started
    server.close()
    return elapsed


def interleaved_latency(relay: Server, standalone: Server, calls: int) -> tuple[list[float], list[float]]:
    relay_times: list[float] = []
    alone_times: list[float] = []
    block = 100
    for _ in range(max(1, calls // block)):
        relay_times += call_latencies(relay, block)
        alone_times += call_latencies(standalone, block)
    return relay_times, alone_times


def memory_call(server: Server) -> None:
    reply = server.request("tools/call", {"name": "recall_memories", "arguments": {"query": "why did the build fail"}})
    assert "result" in reply and not reply["result"].get("isError"), reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", type=int, default=10, help="cold starts per variant")
    parser.add_argument("--calls", type=int, default=2000, help="tools/call round trips per variant")
    parser.add_argument("--clients", type=int, default=4, help="clients for the memory figure")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nexus-relay-bench-"))
    (work / "plugins").mkdir()
    (work / "plugins" / "bench_echo.py").write_text(ECHO_PLUGIN)
    config = work / "nexus.toml"
    config.write_text(f'[server]\ndata_dir = "{work / "data"}"\nplugin_dirs = ["{work / "plugins"}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"HOME": str(work), "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")}
    relay_cmd = [*NEXUS, "serve", "--config", str(config)]
    alone_cmd = [*relay_cmd, "--standalone"]

    subprocess.run([*NEXUS, "server", "start", "--config", str(config)], env=env, check=True, capture_output=True)
    cold_start(alone_cmd, env)  # bytecode written, caches warm, for both
    relay_cold, alone_cold = [], []
    for _ in range(args.cold):
        relay_cold.append(cold_start(relay_cmd, env))
        alone_cold.append(cold_start(alone_cmd, env))

    relay, standalone = Server(relay_cmd, env), Server(alone_cmd, env)
    relay.handshake()
    standalone.handshake()
    call_latencies(relay, 200)  # warm both paths
    call_latencies(standalone, 200)
    relay_times, alone_times = interleaved_latency(relay, standalone, args.calls)
    relay.close()
    standalone.close()

    # Each standalone server on its own store: embedded Chroma serves one process (a second one is refused).
    alone_servers = [
        Server([*alone_cmd, "--set", f'plugins.memory.data_dir="{work / f"memory-{i}"}"'], env)
        for i in range(args.clients)
    ]
    for server in alone_servers:
        server.handshake()
        memory_call(server)
    alone_rss = sum(rss_mb(s.proc.pid) for s in alone_servers)
    for server in alone_servers:
        server.close()
    relays = [Server(relay_cmd, env) for _ in range(args.clients)]
    for server in relays:
        server.handshake()
        memory_call(server)
    status = json.loads(
        subprocess.run(
            [*NEXUS, "server", "status", "--json", "--config", str(config)], env=env, capture_output=True, check=True
        ).stdout
    )
    shared_rss = rss_mb(status["pid"]) + sum(rss_mb(s.proc.pid) for s in relays)
    relay_only = statistics.mean(rss_mb(s.proc.pid) for s in relays)
    for server in relays:
        server.close()
    subprocess.run([*NEXUS, "server", "stop", "--config", str(config)], env=env, capture_output=True)

    ms, us = 1000.0, 1_000_000.0
    rows = [
        ("cold start to tools/list p50 (ms)", pct(relay_cold, 0.5) * ms, pct(alone_cold, 0.5) * ms),
        ("cold start to tools/list p95 (ms)", pct(relay_cold, 0.95) * ms, pct(alone_cold, 0.95) * ms),
        ("tools/call round trip p50 (us)", pct(relay_times, 0.5) * us, pct(alone_times, 0.5) * us),
        ("tools/call round trip p95 (us)", pct(relay_times, 0.95) * us, pct(alone_times, 0.95) * us),
        (f"resident memory, {args.clients} clients (MB)", shared_rss, alone_rss),
    ]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; shared server pid {status['pid']}")
    print(f"plugins: {', '.join(p['name'] for p in status['plugins'])}\n")
    print(f"{'':44}{'relay':>10}{'standalone':>12}{'ratio':>8}")
    for name, relay_value, alone_value in rows:
        print(f"{name:44}{relay_value:10.1f}{alone_value:12.1f}{relay_value / alone_value:8.2f}")
    added = (pct(relay_times, 0.5) - pct(alone_times, 0.5)) * ms
    print(f"\nthe relay adds {added:.3f} ms per call at p50; one relay process is {relay_only:.1f} MB resident")
    print(f"n: {args.cold} cold starts, {len(relay_times)} calls per variant, {args.clients} clients for memory")
    print("goals: cold start ratio <= 0.3, added latency p50 <= 0.2 ms, memory ratio <= 0.4")


if __name__ == "__main__":
    main()
