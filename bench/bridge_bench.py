"""nexus-bridge: latency a proxied tools/call adds over calling the upstream server directly (stdio).

    .venv/bin/python bench/bridge_bench.py [--calls 2000]
    .venv/bin/python bench/bridge_bench.py --smoke      # 50 calls per path (what the test runs)

One upstream script, a bare SDK server with a plain `echo` tool (no annotations),
is called two ways in one run: directly over stdio, and through `nexus serve`
with the bridge mounting that same script over stdio (tool `up_echo`, cache_ttl
left at 0 so every call reaches the upstream). For context the same Nexus also
serves a native `echo` from a plugin folder, which separates the host's own cost
from the bridge's extra hop. Runs are interleaved in blocks (direct, bridge,
native, ...) so machine noise hits all alike; a raw JSON-RPC client over pipes
keeps the client's own cost out of the figures.

Servers may write bytecode (PYTHONDONTWRITEBYTECODE is dropped from their
environment), as after a `pip install`; it changes start-up only, not calls.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from pipe_client import ECHO_PLUGIN, NEXUS, Server, call_latencies, home_env, pct, stop_shared

UPSTREAM = """
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("upstream")
@mcp.tool()
def echo(text: str) -> str:
    return text
mcp.run()
"""

CONFIG = """
[server]
data_dir = "{work}/data"
roots = ["{work}/files"]
plugin_dirs = ["{work}/plugins"]
[plugins.files]
enabled = false
[plugins.memory]
enabled = false
[plugins.graph]
enabled = false
[plugins.manual]
enabled = false
[plugins.hello]
enabled = false
[plugins.bridge.servers.up]
type = "stdio"
command = "{python}"
args = ["{work}/upstream.py"]
"""

BLOCKS = 10  # interleaved blocks per path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="tools/call round trips per path")
    parser.add_argument("--smoke", action="store_true", help="50 calls per path")
    args = parser.parse_args()
    if args.smoke:
        args.calls = 50

    load_at_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="nexus-bridge-bench-"))
    (work / "plugins").mkdir()
    (work / "files").mkdir()  # the root: beside the home folder, not above it (a broad root is refused)
    (work / "plugins" / "bench_echo.py").write_text(ECHO_PLUGIN)
    (work / "upstream.py").write_text(UPSTREAM)
    (work / "nexus.toml").write_text(CONFIG.format(work=work, python=sys.executable))
    env = home_env(work / "home")

    direct = Server([sys.executable, str(work / "upstream.py")], env)
    nexus = Server([*NEXUS, "serve", "--config", str(work / "nexus.toml")], env)
    try:
        direct.handshake()
        nexus.handshake()
        listed = nexus.wait_for_tool("up_echo")
        paths = {"direct": (direct, "echo"), "bridge": (nexus, "up_echo"), "native": (nexus, "echo")}
        for server, tool in paths.values():
            call_latencies(server, 100, tool)  # warm up
        calls: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(BLOCKS):
            for name, (server, tool) in paths.items():
                calls[name] += call_latencies(server, args.calls // BLOCKS, tool)
    finally:
        nexus.close()
        direct.close()
        stop_shared(work / "nexus.toml", env)  # `nexus serve` relays to a shared server it started

    load = f"load average {load_at_start:.2f} at start, {os.getloadavg()[0]:.2f} at end"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {load}")
    print(f"nexus lists {listed} tools (up_echo via the bridge, cache_ttl 0; echo native)")
    print()
    print(f"{'':34}{'direct':>10}{'bridge':>10}{'native':>10}{'bridge/direct':>15}")
    for q in (0.5, 0.95):
        d, b, n = (pct(calls[name], q) * 1e6 for name in paths)
        print(f"{f'tools/call round trip p{q * 100:.0f} (us)':34}{d:>10.1f}{b:>10.1f}{n:>10.1f}{b / d:>15.2f}")
    print()
    for q in (0.5, 0.95):
        d, b, n = (pct(calls[name], q) * 1e3 for name in paths)
        print(f"added p{q * 100:.0f}: {b - d:.2f} ms via the bridge (host {n - d:.2f} ms, bridge hop {b - n:.2f} ms)")
    print()
    print(f"n: {args.calls // BLOCKS * BLOCKS} calls per path in {BLOCKS} interleaved blocks, after 100 warm-up calls")
    print("goal: under 2 ms p50 added on stdio (bridge - direct)")


if __name__ == "__main__":
    main()
