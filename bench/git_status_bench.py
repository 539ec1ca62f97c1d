"""git_status in-process: libgit2 (the plugin's default) against the git process path, interleaved.

    .venv/bin/python bench/git_status_bench.py [--calls 400] [--block 20]

One host with the files plugin on peers.py's small repository; the tool is called
through ``host.server.call_tool`` (permission gate, audit log, validation), in
blocks that alternate the two bodies (``Git.library`` on and off), so machine
noise hits both alike. Also times the body alone: ``gitstatus.status`` (libgit2,
what the worker thread runs) and the same ``git status`` through ``gitrun``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from peers import git_repo

from nexus_core.config import parse_config
from nexus_core.host import build_host
from nexus_core.plugins import get_plugin_manager


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def main(calls: int, block: int) -> None:
    import nexus_files
    from nexus_files import gitstatus

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        git_repo(repo)
        data = {"server": {"data_dir": str(Path(tmp) / "data")}, "plugins": {"files": {"roots": [str(repo)]}}}
        pm = get_plugin_manager()
        pm.register(nexus_files, name="files")
        host = build_host(parse_config(data, source="bench.toml", base_dir=Path(tmp)), pm)
        git = next(c.cell_contents for c in _closure(host) if type(c.cell_contents).__name__ == "Git")
        args = {"repo": str(repo)}
        times: dict[str, list[float]] = {"libgit2": [], "git": []}
        first = {}
        for name, on in (("libgit2", True), ("git", False)):
            git.library = on
            first[name] = await host.server.call_tool("git_status", args)
        assert _structured(first["libgit2"]) == _structured(first["git"]), "the two answers differ"
        for _ in range(calls // block):
            for name, on in (("libgit2", True), ("git", False)):
                git.library = on
                for _ in range(block):
                    started = time.perf_counter()
                    await host.server.call_tool("git_status", args)
                    times[name].append(time.perf_counter() - started)
        known = await git.locate(str(repo))
        body: dict[str, list[float]] = {"libgit2 body": [], "git body": []}
        for _ in range(calls // block):
            for _ in range(block):
                started = time.perf_counter()
                assert gitstatus.status(known.top, known.git_dir, known.common_dir, known.settings) is not None
                body["libgit2 body"].append(time.perf_counter() - started)
            for _ in range(block):
                started = time.perf_counter()
                await git.run(known.top, list(known.overrides), nexus_files.git.STATUS_ARGS)
                body["git body"].append(time.perf_counter() - started)
    print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {calls} calls each, blocks of {block}")
    for name, values in {**times, **body}.items():
        mean = statistics.fmean(values) * 1000
        print(f"{name:>13}: p50 {pct(values, 0.5):.3f} ms  p95 {pct(values, 0.95):.3f} ms  mean {mean:.3f}")
    print(f"call ratio libgit2/git p50: {pct(times['libgit2'], 0.5) / pct(times['git'], 0.5):.2f}x")


def _closure(host):
    """The cells of the registered git_status tool (its ``git`` is the plugin's Git)."""
    tool = host.server._tool_manager.get_tool("git_status")
    fn = tool.fn
    while hasattr(fn, "__wrapped__") or hasattr(fn, "func"):
        fn = getattr(fn, "__wrapped__", None) or fn.func
    return fn.__closure__ or ()


def _structured(result) -> object:
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None) or result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--block", type=int, default=20)
    opts = parser.parse_args()
    sys.exit(asyncio.run(main(opts.calls, opts.block)))
