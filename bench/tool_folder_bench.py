"""The tool folder: what polling costs, and how soon an edit is served, against OS file events (watchfiles).

    .venv/bin/python bench/tool_folder_bench.py [--edits 20]
    .venv/bin/python bench/tool_folder_bench.py --smoke    # 3 edits (what the test runs)

1. One look at a folder of N tool files (``tool_folder.stamps``: a scandir and a
   stat per file), the median of many, and the share of one core it costs at the
   default poll interval of 0.5 s.
2. Edit to served: a host with the tool folder plugin, an in-process MCP client;
   each edit rewrites a tool file, and the time until the client has received
   ``notifications/tools/list_changed`` for it is measured (p50, p95).
3. For comparison, when ``watchfiles`` is importable (it is not a dependency):
   the time from the same kind of write until its ``awatch`` reports the change,
   with its default settings.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from nexus_core.assembly import build_host
from nexus_core.builtin.tool_folder import ToolFolderPlugin, stamps
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager

INTERVAL = 0.5


def tool_source(version: int) -> str:
    return f'def probe() -> str:\n    """Version {version}."""\n    return "v{version}"\n\nTOOLS = [probe]\n'


def scan_cost(files: int, repeat: int) -> float:
    """Median seconds of one look at a folder of ``files`` tool files."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(files):
            (folder / f"tool_{i}.py").write_text(tool_source(i))
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            found = stamps([folder])
            times.append(time.perf_counter() - started)
            assert len(found) == files
        return statistics.median(times)


async def edit_to_served(edits: int) -> list[float]:
    """Seconds from rewriting a tool file until the client is told the tool list changed."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tools"
        folder.mkdir()
        probe = folder / "probe.py"
        probe.write_text(tool_source(0))
        changes: list[float] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changes.append(time.perf_counter())

        pm = get_plugin_manager()
        pm.register(ToolFolderPlugin([folder]), name="tools")
        config = parse_config({"server": {"data_dir": str(Path(tmp) / "data")}})
        host = build_host(config, pm)
        latencies = []
        async with Client(host.server, message_handler=on_message, mode="legacy") as client:
            await client.list_tools()  # the first load is done
            for version in range(1, edits + 1):
                await anyio.sleep(INTERVAL * (version % 3) / 3)  # edits land anywhere in the poll cycle
                seen = len(changes)
                written = time.perf_counter()
                probe.write_text(tool_source(version))
                with anyio.fail_after(10):
                    while len(changes) == seen:
                        await anyio.sleep(0.001)
                latencies.append(changes[-1] - written)
        return latencies


async def watchfiles_latency(edits: int) -> list[float] | None:
    try:
        import watchfiles
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        probe = folder / "probe.py"
        probe.write_text(tool_source(0))
        latencies = []
        stop = anyio.Event()
        seen = anyio.Event()

        async def watch() -> None:
            async for _changes in watchfiles.awatch(folder, stop_event=stop):
                seen.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.sleep(0.5)  # the watcher is set up
            for version in range(1, edits + 1):
                seen = anyio.Event()
                written = time.perf_counter()
                probe.write_text(tool_source(version))
                with anyio.fail_after(10):
                    await seen.wait()
                latencies.append(time.perf_counter() - written)
                await anyio.sleep(0.1)
            stop.set()
        return latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="3 edits")
    args = parser.parse_args()
    if args.smoke:
        args.edits = 3
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, poll interval {INTERVAL} s\n")
    print("one look at the folder          median (us)   share of a core at 0.5 s")
    for files in (10, 100, 1000):
        cost = scan_cost(files, repeat=200 if files < 1000 else 50)
        print(f"  {files:5d} files                  {cost * 1e6:11.1f}   {cost / INTERVAL:.4%}")

    polled = anyio.run(edit_to_served, args.edits)
    events = anyio.run(watchfiles_latency, args.edits)
    print(f"\nedit to served ({args.edits} edits)        p50 (ms)   p95 (ms)")
    print(f"  polling (Nexus)                {pct(polled, 0.5) * 1e3:8.1f}   {pct(polled, 0.95) * 1e3:8.1f}")
    if events is None:
        print("  watchfiles                     (not installed)")
    else:
        print(f"  watchfiles (change seen only)  {pct(events, 0.5) * 1e3:8.1f}   {pct(events, 0.95) * 1e3:8.1f}")
        ratio = pct(polled, 0.5) / pct(events, 0.5)
        print(f"  ratio polling / watchfiles p50 {ratio:8.2f}")


if __name__ == "__main__":
    main()
