"""Nexus against a bare SDK server over stdio: cold start and tools/call latency, measured in one run.

    .venv/bin/python bench/host_bench.py [--cold 10] [--calls 2000]

Both servers serve the same one-line `echo` tool. Nexus runs with every installed
plugin, the audit log on, and the echo tool from a plugin folder. Runs are
interleaved (Nexus, bare, Nexus, ...) so machine noise hits both alike. A raw
JSON-RPC client over pipes keeps the client's own cost out of the figures.

Servers may write bytecode (PYTHONDONTWRITEBYTECODE is dropped from their
environment) and each starts once before timing: a `pip install` compiles
bytecode, while an editable checkout would otherwise recompile every Nexus
and plugin module at every start, which no installed user pays.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipe_client import ECHO_PLUGIN, Server, call_latencies, pct

BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("bare")
@mcp.tool()
def echo(text: str) -> str:
    return text
mcp.run()
"""


def cold_start(command: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Spawn, initialize, tools/list: seconds until the list arrives, and how many tools it had."""
    started = time.perf_counter()
    server = Server(command, env)
    server.handshake()
    tools = server.request("tools/list")["result"]["tools"]
    elapsed = time.perf_counter() - started
    server.close()
    return elapsed, len(tools)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", type=int, default=10, help="cold starts per server")
    parser.add_argument("--calls", type=int, default=2000, help="tools/call round trips per server")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nexus-bench-"))
    (work / "plugins").mkdir()
    (work / "plugins" / "bench_echo.py").write_text(ECHO_PLUGIN)
    (work / "bare.py").write_text(BARE_SERVER)
    (work / "nexus.toml").write_text(f'[server]\ndata_dir = "{work / "data"}"\nplugin_dirs = ["{work / "plugins"}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_") and k != "PYTHONDONTWRITEBYTECODE"}
    nexus = [sys.executable, "-m", "nexus_core", "serve", "--config", str(work / "nexus.toml")]
    bare = [sys.executable, str(work / "bare.py")]

    cold: dict[str, list[float]] = {"nexus": [], "bare": []}
    tool_counts = {name: cold_start(command, env)[1] for name, command in (("nexus", nexus), ("bare", bare))}
    for _ in range(args.cold):
        for name, command in (("nexus", nexus), ("bare", bare)):
            seconds, tool_counts[name] = cold_start(command, env)
            cold[name].append(seconds)

    servers = {"nexus": Server(nexus, env), "bare": Server(bare, env)}
    for server in servers.values():
        server.handshake()
        call_latencies(server, 100)  # warm up
    calls: dict[str, list[float]] = {"nexus": [], "bare": []}
    for _ in range(10):
        for name, server in servers.items():
            calls[name] += call_latencies(server, args.calls // 10)
    for server in servers.values():
        server.close()

    plugins = subprocess.run(
        [*nexus[:-3], "plugins", "--config", str(work / "nexus.toml")], capture_output=True, text=True, env=env
    ).stdout.split("\n")[1:]
    names = ", ".join(p.split()[0] for p in plugins if p)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; plugins: {names}")
    print(f"tools listed: nexus {tool_counts['nexus']}, bare {tool_counts['bare']}")
    print()
    print(f"{'':40}{'nexus':>10}{'bare':>10}{'ratio':>8}")
    for label, values, q, scale, unit in (
        ("cold start, spawn to tools/list p50", cold, 0.5, 1000, "ms"),
        ("cold start, spawn to tools/list p95", cold, 0.95, 1000, "ms"),
        ("tools/call round trip p50", calls, 0.5, 1e6, "us"),
        ("tools/call round trip p95", calls, 0.95, 1e6, "us"),
    ):
        a, b = pct(values["nexus"], q) * scale, pct(values["bare"], q) * scale
        print(f"{label + f' ({unit})':40}{a:>10.1f}{b:>10.1f}{a / b:>8.2f}")
    print()
    print(f"n: {args.cold} cold starts and {args.calls} calls per server")
    print("goals: cold start ratio <= 1.5, tools/call p50 ratio <= 1.2")


if __name__ == "__main__":
    main()
