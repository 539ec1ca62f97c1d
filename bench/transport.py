"""Nexus's own cost per process and per call: a bare SDK server, `nexus serve --standalone` and the relay.

    .venv/bin/python bench/transport.py [--cold 10] [--calls 2000] [--clients 4]
    .venv/bin/python bench/transport.py --nexus main="/work/main/.venv/bin/nexus serve --standalone" \\
        --nexus mine="nexus serve --standalone"          # two builds side by side, instead of the defaults
    .venv/bin/python bench/transport.py --smoke        # tiny (what the test runs)

The variants are a bare SDK server with one `echo` tool and every --nexus NAME=COMMAND (default: standalone =
`nexus serve --standalone` and relay = `nexus serve`, which relays to a shared server). Each Nexus gets
`--config <file>` appended: every installed plugin, the audit log on, the same `echo` from a plugin folder, the
files plugin rooted at the bench's folder. They run with a home folder of the bench's own (Nexus's folders follow
HOME), so a shared server the user runs is never touched; the shared servers are stopped at the end. Servers may
write bytecode (PYTHONDONTWRITEBYTECODE is dropped), as after a `pip install`, and each starts once untimed.
A raw JSON-RPC client over pipes (bench/pipe_client.py) keeps the client's own cost out of the figures; runs are
interleaved (variant by variant, round by round) so machine noise hits all alike.

- cold start: spawn to the `tools/list` answer (a relay's shared server is already running);
- `echo` and `read_file` (10 KB) round trips, p50 and p95, and the server process's CPU per call (user + system
  time from /proc; for a relay that is the relay's alone, the shared server does the work);
- resident memory of --clients clients after one `recall_memories` each: that many standalone servers, each on
  its own store, against one shared server and as many relays (0 skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipe_client import ECHO_PLUGIN, Server, pct

BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("bare")
@mcp.tool()
def echo(text: str) -> str:
    return text
mcp.run()
"""
DEFAULT = [("standalone", "nexus serve --standalone"), ("relay", "nexus serve")]


def variant(text: str) -> tuple[str, str]:
    name, sep, command = text.partition("=")
    if not sep or not name or not command:
        raise argparse.ArgumentTypeError(f"expected NAME=COMMAND, e.g. relay='nexus serve'; got {text!r}")
    return name, command


def nexus_argv(command: str, config: Path) -> list[str]:
    argv = shlex.split(command)
    local = Path(sys.executable).parent / argv[0]
    if "/" not in argv[0] and local.exists():  # `nexus` means this environment's
        argv[0] = str(local)
    return [*argv, "--config", str(config)]


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks (1/100 s)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cold_start(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    server = Server(argv, env)
    server.handshake()
    server.request("tools/list")
    elapsed = time.perf_counter() - started
    server.close()
    return elapsed


def timed_calls(server: Server, tool: str, arguments: dict, n: int) -> tuple[list[float], int]:
    """``n`` round trips of ``tool`` (after a few untimed ones), and the server's CPU ticks over them."""
    for _ in range(5):  # warm this server up again after the others ran
        server.request("tools/call", {"name": tool, "arguments": arguments})
    before, out = cpu_ticks(server.proc.pid), []
    for _ in range(n):
        started = time.perf_counter()
        reply = server.request("tools/call", {"name": tool, "arguments": arguments})
        out.append(time.perf_counter() - started)
        assert "result" in reply and not reply["result"].get("isError"), reply
    return out, cpu_ticks(server.proc.pid) - before


def recall(server: Server) -> None:
    reply = server.request("tools/call", {"name": "recall_memories", "arguments": {"query": "why did the build fail"}})
    assert "result" in reply and not reply["result"].get("isError"), reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nexus", type=variant, action="append", metavar="NAME=COMMAND", help="a Nexus to measure")
    parser.add_argument("--cold", type=int, default=10, help="cold starts per variant")
    parser.add_argument("--calls", type=int, default=2000, help="round trips per tool and variant")
    parser.add_argument("--clients", type=int, default=4, help="clients for the memory figure (0: skip it)")
    parser.add_argument("--smoke", action="store_true", help="1 cold start (no untimed one first), 20 calls, 1 client")
    args = parser.parse_args()
    if args.smoke:
        args.cold, args.calls, args.clients = 1, 20, 1
    variants = args.nexus or DEFAULT
    rounds = max(1, min(10, args.calls // 10))
    block = max(1, args.calls // rounds)

    work = Path(tempfile.mkdtemp(prefix="nexus-transport-"))
    (work / "plugins").mkdir()
    (work / "plugins" / "bench_echo.py").write_text(ECHO_PLUGIN)
    (work / "bare.py").write_text(BARE_SERVER)
    (work / "files").mkdir()
    ten_k = work / "files" / "read-10000.txt"
    rng = random.Random(10_000)
    ten_k.write_text("".join(f"    value_{rng.randrange(1000)} = parse({i})\n" for i in range(400))[:9_999] + "\n")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "XDG_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    # A home of the bench's own; the built model cache stays the user's.
    env |= {
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
    }
    env["ANONYMIZED_TELEMETRY"] = "False"

    argvs = {"bare": [sys.executable, str(work / "bare.py")]}
    configs: dict[str, Path] = {}
    for name, command in variants:
        config = configs[name] = work / f"nexus-{name}.toml"
        config.write_text(
            f'[server]\ndata_dir = "{work / ("data-" + name)}"\nplugin_dirs = ["{work / "plugins"}"]\n'
            f'roots = ["{work / "files"}"]\n'
        )
        argvs[name] = nexus_argv(command, config)
    relays = {name for name, command in variants if "--standalone" not in shlex.split(command)}
    servers: list[Server] = []
    try:
        for argv in [] if args.smoke else argvs.values():
            cold_start(argv, env)  # bytecode written, caches warm; a relay starts its shared server
        cold: dict[str, list[float]] = {name: [] for name in argvs}
        for _ in range(args.cold):
            for name, argv in argvs.items():
                cold[name].append(cold_start(argv, env))

        live = {name: Server(argv, env) for name, argv in argvs.items()}
        servers += live.values()
        for name, server in live.items():
            server.handshake()
            if name != "bare":
                server.wait_for_tool("read_file")
                recall(server)  # waits for the memory plugin's loading, which would compete with the calls
        tools = {"echo": lambda i: {"text": f"ping {i}"}, "read_file": lambda i: {"path": str(ten_k)}}
        calls = {(tool, name): [] for tool in tools for name in live}
        ticks = dict.fromkeys(calls, 0)
        for tool, arguments in tools.items():
            for r in range(rounds):
                for name, server in live.items():
                    if tool == "read_file" and name == "bare":
                        continue
                    times, used = timed_calls(server, tool, arguments(r), block)
                    calls[tool, name] += times
                    ticks[tool, name] += used

        memory: dict[str, float] = {}
        if args.clients:
            for name, argv in argvs.items():
                if name == "bare":
                    continue
                clients = [live[name]]
                for i in range(1, args.clients):
                    # Embedded Chroma serves one process: each standalone server gets a store of its own.
                    extra = (
                        [] if name in relays else ["--set", f'plugins.memory.data_dir="{work / f"memory-{name}-{i}"}"']
                    )
                    clients.append(Server([*argv, *extra], env))
                    servers.append(clients[-1])
                    clients[-1].handshake()
                    recall(clients[-1])
                memory[name] = sum(rss_mb(c.proc.pid) for c in clients)
                if name in relays:
                    status = subprocess.run(
                        [*argv[: argv.index("serve")], "server", "status", "--json", "--config", str(configs[name])],
                        env=env, capture_output=True, text=True, check=True, timeout=60,
                    )  # fmt: skip
                    memory[name] += rss_mb(json.loads(status.stdout)["pid"])
    finally:
        for server in servers:
            server.close()
        for name in relays:  # each relay's shared server, stopped by its own build
            argv = argvs[name]
            stop = [*argv[: argv.index("serve")], "server", "stop", "--config", str(configs[name])]
            subprocess.run(stop, env=env, capture_output=True, check=False, timeout=60)

    names = [name for name, _ in variants]
    ms, us = 1000.0, 1_000_000.0
    rows: list[tuple[str, dict[str, float]]] = [
        ("cold start to tools/list p50 (ms)", {n: pct(v, 0.5) * ms for n, v in cold.items()}),
        ("cold start to tools/list p95 (ms)", {n: pct(v, 0.95) * ms for n, v in cold.items()}),
    ]
    for tool in tools:
        done = [n for n in argvs if calls[tool, n]]
        rows += [
            (f"{tool} round trip p50 (us)", {n: pct(calls[tool, n], 0.5) * us for n in done}),
            (f"{tool} round trip p95 (us)", {n: pct(calls[tool, n], 0.95) * us for n in done}),
            (f"{tool} server CPU per call (us)", {n: ticks[tool, n] * 1e4 / len(calls[tool, n]) for n in done}),
        ]
    if memory:
        rows.append((f"resident memory, {args.clients} clients (MB)", memory))

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for name, command in variants:
        print(f"nexus variant {name}: {command}" + (" (relay: CPU is the relay's only)" if name in relays else ""))
    ratios = [(n, "bare") for n in names] + [(n, names[0]) for n in names[1:]]
    print("\n| figure | bare | " + " | ".join(names) + " | " + " | ".join(f"{a} / {b}" for a, b in ratios) + " |")
    print("|---|---|" + "---|" * (len(names) + len(ratios)))
    for label, values in rows:
        cells = [f"{values[n]:.1f}" if n in values else "-" for n in ["bare", *names]]
        for a, b in ratios:
            ok = a in values and values.get(b)
            cells.append(f"{values[a] / values[b]:.2f}" if ok else "-")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\nn: {args.cold} cold starts, {rounds * block} calls per tool and variant, {args.clients} clients")
    print("goals: standalone / bare: cold start <= 1.5, echo p50 <= 1.2; relay / standalone: cold start <= 0.3,")
    print("       echo p50 + 0.2 ms at most, memory of 4 clients <= 0.4")


if __name__ == "__main__":
    main()
