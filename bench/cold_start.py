"""Cold first use: a fresh home folder, no server running, and a client that launches `nexus serve`.

    .venv/bin/python bench/cold_start.py [--runs 5]
    .venv/bin/python bench/cold_start.py --nexus before="$OTHER/.venv/bin/nexus serve" --nexus after="nexus serve"
    .venv/bin/python bench/cold_start.py --where      # only where the shared server's memory goes
    .venv/bin/python bench/cold_start.py --smoke      # one cold start and the memory table (what the test runs)

Each cold start gets a new home folder (every folder Nexus uses follows HOME: no shared server, store, log or
config exists), is launched in an empty folder and reads no config file: the defaults, every installed plugin,
the default embedder. The client speaks raw JSON-RPC over the pipes of `nexus serve` (bench/pipe_client.py): it
sends initialize, and as soon as the answer comes, notifications/initialized and one store_memory, then one
recall_memories. Times: spawn to the initialize reply; store_memory from its sending to its reply, and from
spawn; recall_memories. Then the shared server's resident memory, from its own `status`: at once, and after
--settle seconds (the warm-up's last steps and the sentence writer have run). Variants (--nexus NAME=COMMAND,
repeatable) are interleaved run by run; each figure is the median, with the lowest and highest.

The model cache (XDG_CACHE_HOME) stays the user's, as it does for the other benchmarks: a user's first start of
the day finds what the first start ever built there. --cold-cache gives each run an empty one too (the very first
start after installing).

Then, in a fresh interpreter of its own (`--where`), where the shared server's memory goes: what it loads, in the
order it loads it, each step with the resident memory after it (VmRSS, split into anonymous memory and pages of
files: a memory-mapped model counts only the pages read).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_start_bench import NOTE
from pipe_client import Server, home_env

QUERY = {"query": "bad gateway errors just after a deploy"}


def variant(text: str) -> tuple[str, list[str]]:
    name, sep, command = text.partition("=")
    if not sep or not command.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=COMMAND, e.g. after='nexus serve'; got {text!r}")
    argv = shlex.split(command)
    local = Path(sys.executable).parent / argv[0]
    if "/" not in argv[0] and local.exists():  # `nexus` means this environment's
        argv[0] = str(local)
    return name, argv


def nexus_of(serve: list[str]) -> list[str]:
    """The `nexus` command of a `... nexus serve` command line (to ask its shared server for its status)."""
    return serve[: serve.index("serve")]


def call(server: Server, tool: str, arguments: dict) -> dict:
    reply = server.request("tools/call", {"name": tool, "arguments": arguments})
    result = reply.get("result")
    if result is None or result.get("isError"):
        raise SystemExit(f"{tool} failed: {json.dumps(reply)[:500]}")
    return result


def status(nexus: list[str], env: dict[str, str], cwd: Path) -> dict:
    out = subprocess.run(
        [*nexus, "server", "status", "--json"], env=env, cwd=cwd, capture_output=True, timeout=60, check=False
    )
    return json.loads(out.stdout or b"null") or {}


def server_cpu(home: Path) -> float:
    """The CPU seconds (every thread) the shared server of ``home`` has used so far: less swayed by other jobs on
    the machine than wall time."""
    for lock in (home / ".local" / "state" / "nexus" / "run").glob("*.lock"):
        with contextlib.suppress(OSError, ValueError):
            fields = Path(f"/proc/{int(lock.read_text())}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return float("nan")


def cold_start(serve: list[str], settle: float, cold_cache: bool) -> dict[str, float]:
    """One cold start of ``serve``: its figures (seconds, and MB for memory)."""
    with tempfile.TemporaryDirectory(prefix="nx-cold-") as tmp:
        folder = Path(tmp)
        launch = folder / "project"
        launch.mkdir()
        env = home_env(folder / "home")
        if cold_cache:
            env["XDG_CACHE_HOME"] = str(folder / "cache")
        nexus = nexus_of(serve)
        started = time.perf_counter()
        server = Server(serve, env, cwd=launch)
        try:
            server.handshake()  # sends notifications/initialized right after the answer
            initialized = time.perf_counter()
            call(server, "store_memory", NOTE)
            stored = time.perf_counter()
            cpu = server_cpu(folder / "home")
            call(server, "recall_memories", QUERY)
            recalled = time.perf_counter()
            rss = status(nexus, env, launch).get("rss_mb") or float("nan")
            time.sleep(settle)
            settled = status(nexus, env, launch).get("rss_mb") or float("nan")
        finally:
            server.close()
            subprocess.run([*nexus, "server", "stop"], env=env, cwd=launch, capture_output=True, timeout=60)
    return {
        "initialize": initialized - started,
        "store": stored - initialized,
        "store from spawn": stored - started,
        "recall": recalled - stored,
        "cpu": cpu,
        "rss": rss,
        "rss settled": settled,
    }


ROWS = [
    ("spawn to the initialize reply (ms)", "initialize", 1000),
    ("first store_memory, sent after initialize (ms)", "store", 1000),
    ("spawn to the first store_memory reply (ms)", "store from spawn", 1000),
    ("shared server CPU when the first store is answered (ms)", "cpu", 1000),
    ("first recall_memories (ms)", "recall", 1000),
    ("shared server RSS after the store and the recall (MB)", "rss", 1),
    ("shared server RSS, settled (MB)", "rss settled", 1),
]


def cell(values: list[float], scale: float) -> str:
    values = [v * scale for v in values]
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def report(results: dict[str, list[dict[str, float]]], runs: int, settle: float) -> None:
    names = list(results)
    print(f"median of {runs} cold start(s) each (lowest-highest); settled: {settle:.0f} s after the recall")
    print()
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, key, scale in ROWS:
        print(f"| {label} | " + " | ".join(cell([r[key] for r in results[n]], scale) for n in names) + " |")


# -- where the memory goes ------------------------------------------------------------------------------------


def memory() -> tuple[float, float]:
    """This process's resident memory in MB: anonymous, and pages of files."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "RssShmem"):
            found[key] = int(value.split()[0]) / 1024
    return found.get("RssAnon", 0.0), found.get("RssFile", 0.0) + found.get("RssShmem", 0.0)


def where() -> None:
    """Load what the shared server loads, in its order, one step at a time, and print the memory after each."""
    rows: list[tuple[str, float, float, float]] = []
    last = [0.0]
    import nexus_core

    release = getattr(nexus_core, "release_freed", None)  # an older build has none: its figures are gross

    def step(label: str) -> None:
        if release is not None:  # what each step freed is handed back (the server does it after loading)
            release()
        anon, files = memory()
        rows.append((label, anon + files - last[0], anon, files))
        last[0] = anon + files
        print(f"  {label}", file=sys.stderr, flush=True)

    heap = _optional("nexus_core.host.heap")
    if heap is not None:
        heap.limit_arenas()  # as the shared server does first
    step("Python")
    import mcp.server.mcpserver
    import mcp.server.runner  # noqa: F401

    step("the MCP SDK and pydantic")
    from nexus_core.assembly import build_for_serving
    from nexus_core.config.effective import load

    config = load(None, ("plugins.memory.warm_up=false",), 0)
    host = build_for_serving(config)
    step("Nexus and every first-party plugin, the host built")
    import numpy  # noqa: F401

    step("numpy")
    import chromadb  # noqa: F401

    step("Chroma (imported)")
    from nexus_memory import service_of

    service = service_of(host.plugins["memory"].ctx)
    store = service.store
    store.open()
    step("the store opened (Chroma's client, two collections)")
    import onnxruntime  # noqa: F401

    step("onnxruntime (imported)")
    embedder = store.embedder
    parts = [getattr(embedder, "minilm", None), getattr(embedder, "other", None)]
    for model in filter(None, parts):
        model.embed(["warm-up"])
        step(f"model {model.name} loaded, one text embedded")
    if not any(parts):
        embedder.embed(["warm-up"])
        step(f"model {embedder.name} loaded, one text embedded")
    store.mirror()
    step("the mirror (the collection's copy in process, empty; Chroma's first read)")
    service.store_memory(NOTE["content"], NOTE["context_name"], NOTE["tags"], NOTE["memory_type"])
    service.recall(QUERY["query"], 5, None, None, None)
    service.parts.drain(timeout=30)
    step("one store_memory and one recall_memories")
    print(f"where the shared server's memory goes (default embedder: {embedder.name}), MB")
    print()
    print("| step | added | total | anonymous | files |")
    print("|---|---:|---:|---:|---:|")
    for label, added, anon, files in rows:
        print(f"| {label} | {added:+.1f} | {anon + files:.1f} | {anon:.1f} | {files:.1f} |")
    service.close()
    os._exit(0)  # the plugin's threads and Chroma's need no orderly end here


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:  # an older build
        return None


def where_in_fresh_process() -> str:
    with tempfile.TemporaryDirectory(prefix="nx-where-") as tmp:
        env = home_env(Path(tmp) / "home")
        out = subprocess.run(
            [sys.executable, __file__, "--where"], env=env, cwd=tmp, capture_output=True, text=True, timeout=600
        )
    if out.returncode != 0:
        raise SystemExit(f"--where failed:\n{out.stderr[-3000:]}")
    return out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before the settled memory figure")
    parser.add_argument("--nexus", type=variant, action="append", metavar="NAME=COMMAND",
                        help="a `nexus serve` to measure (repeatable; default: this environment's)")  # fmt: skip
    parser.add_argument("--cold-cache", action="store_true", help="an empty model cache too, every run")
    parser.add_argument("--where", action="store_true", help="only where the memory goes, in this process")
    parser.add_argument("--no-where", action="store_true", help="only the cold starts")
    parser.add_argument("--smoke", action="store_true", help="one cold start, no settling (what the test runs)")
    args = parser.parse_args()
    if args.where:
        where()
        return
    if args.smoke:
        args.runs, args.settle = 1, 0.0
    variants = args.nexus or [variant("nexus=nexus serve")]
    load = os.getloadavg()[0]
    if not args.smoke:
        for _, serve in variants:  # compile bytecode once, as an installed package has it
            cold_start(serve, 0.0, args.cold_cache)
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in variants}
    for _ in range(args.runs):
        for name, serve in variants:
            results[name].append(cold_start(serve, args.settle, args.cold_cache))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end")  # fmt: skip
    for name, serve in variants:
        print(f"{name}: {shlex.join(serve)}")
    report(results, args.runs, args.settle)
    if not args.no_where:
        print()
        print(where_in_fresh_process())


if __name__ == "__main__":
    main()
