"""One tool call, several Nexus builds, interleaved in one run: p50/p95 and the server's CPU per call.

    .venv/bin/python bench/callpath_ab.py --calls 500 --rounds 8 --tool read_file \\
        main="/work/main/.venv/bin/nexus serve --standalone" mine=".venv/bin/nexus serve --standalone"

Each variant is a server started with `--config <file>` appended (all plugins, the audit log on, the
10 KB file of bench/peers.py as the file read). Rounds go variant by variant, so machine noise hits
every build alike. CPU per call is the server process's user and system time (/proc/<pid>/stat) over
the measured calls: for a standalone server that is all the work; for a relay it is only the relay's
(0), the shared server does the work. Ratios are against the first variant.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import peers
from pipe_client import ECHO_PLUGIN, Server, pct


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks (1/100 s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help="NAME=COMMAND")
    parser.add_argument("--calls", type=int, default=500, help="calls per variant per round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--tool", choices=["read_file", "echo"], default="read_file")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nexus-callpath-"))
    files = work / "files"
    files.mkdir()
    ten_k = files / "read-10000.txt"
    peers.text_file(ten_k, 10_000)
    (work / "plugins").mkdir()
    (work / "plugins" / "bench_echo.py").write_text(ECHO_PLUGIN)
    env = peers.nexus_home_env(work / "home")
    servers: dict[str, tuple[Server, Path, str]] = {}
    for spec in args.variants:
        name, _, command = spec.partition("=")
        config = peers.nexus_config(work, name, [files], work / "graph", work / "memory")
        argv = peers.nexus_command(command, config)
        server = Server(argv, env)
        server.handshake()
        server.wait_for_tool("read_file")
        server.request("tools/call", {"name": "recall_memories", "arguments": {"query": "warm-up"}})
        servers[name] = (server, config, argv[0])
    time.sleep(3)  # the memory plugin's background loading
    arguments = (lambda i: {"path": str(ten_k)}) if args.tool == "read_file" else (lambda i: {"text": f"ping {i}"})
    latencies: dict[str, list[float]] = {name: [] for name in servers}
    ticks = dict.fromkeys(servers, 0)
    print(f"load average {Path('/proc/loadavg').read_text().split()[:3]} at start", flush=True)
    try:
        for _ in range(args.rounds):
            for name, (server, _config, _exe) in servers.items():
                for i in range(20):  # warm this server up again after the others ran
                    server.request("tools/call", {"name": args.tool, "arguments": arguments(i)})
                before = cpu_ticks(server.proc.pid)
                for i in range(args.calls):
                    started = time.perf_counter()
                    reply = server.request("tools/call", {"name": args.tool, "arguments": arguments(i)})
                    latencies[name].append(time.perf_counter() - started)
                    assert not reply["result"].get("isError"), reply
                ticks[name] += cpu_ticks(server.proc.pid) - before
        print(f"load average {Path('/proc/loadavg').read_text().split()[:3]} at end")
        base = None
        for name, values in latencies.items():
            p50 = pct(values, 0.5) * 1e3
            base = base or p50
            cpu = ticks[name] * 1e4 / len(values)
            p95 = pct(values, 0.95) * 1e3
            print(f"{name:16s} p50 {p50:.3f} ms  p95 {p95:.3f} ms  {p50 / base:.2f}x  cpu {cpu:.0f} us/call")
    finally:
        for server, config, exe in servers.values():
            server.close()
            # A relay variant's shared server, stopped by its own build (another build's key differs).
            stop = [str(Path(exe).parent / "nexus"), "server", "stop", "--config", str(config)]
            subprocess.run(stop, env=env, capture_output=True, check=False, timeout=60)


if __name__ == "__main__":
    main()
