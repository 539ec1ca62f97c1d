"""git_status in-process: libgit2 (the plugin's default) against the git process path, interleaved.

    .venv/bin/python bench/git_status_bench.py [--calls 400] [--block 20] [--files N]
    .venv/bin/python bench/git_status_bench.py --smoke    # 20 calls (what the test runs)

One host with the files plugin on peers.py's small repository; the tool is called
through ``host.server.call_tool`` (permission gate, audit log, validation), in
blocks that alternate the two bodies (``Git.library`` on and off), so machine
noise hits both alike. Also times the body alone: ``gitstatus.status`` (libgit2,
what the worker thread runs) and the same ``git status`` through ``gitrun``.
``--files N`` adds N committed files (100 per folder) to the repository.
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

from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def add_files(repo: Path, n: int) -> None:
    import subprocess

    for i in range(n):
        folder = repo / f"pkg{i // 100:04d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:06d}.py").write_text(f"value = {i}\n")
    env = os.environ | {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
                        "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    for args in (["add", "--", *(p.name for p in repo.glob("pkg*"))], ["commit", "-qm", "more"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    time.sleep(1.1)  # then an index written after every file: no racily clean entries, which both would rehash
    subprocess.run(["git", "update-index", "-q", "--really-refresh"], cwd=repo, env=env, capture_output=True)


async def main(calls: int, block: int, files: int) -> None:
    import nexus_files
    from nexus_files import gitstatus

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        git_repo(repo)
        if files:
            add_files(repo, files)
        time.sleep(2.1)  # gitcache keeps what rev-parse and the config said only for files 2 s old
        data = {"server": {"data_dir": str(Path(tmp) / "data")}, "plugins": {"files": {"roots": [str(repo)]}}}
        pm = get_plugin_manager()
        pm.register(nexus_files, name="files")
        host = build_host(parse_config(data, source="bench.toml", base_dir=Path(tmp)), pm)
        git = nexus_files.git.git_of(host.plugins["files"].ctx)
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
    load = os.getloadavg()
    print(f"load {load[0]:.2f} {load[1]:.2f}; {files} files added; {calls} calls each, blocks of {block}")
    for name, values in {**times, **body}.items():
        mean = statistics.fmean(values) * 1000
        print(f"{name:>13}: p50 {pct(values, 0.5):.3f} ms  p95 {pct(values, 0.95):.3f} ms  mean {mean:.3f}")
    print(f"call ratio libgit2/git p50: {pct(times['libgit2'], 0.5) / pct(times['git'], 0.5):.2f}x")


def _structured(result) -> object:
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None) or result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--files", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="20 calls in blocks of 5")
    opts = parser.parse_args()
    if opts.smoke:
        opts.calls, opts.block = 20, 5
    sys.exit(asyncio.run(main(opts.calls, opts.block, opts.files)))
