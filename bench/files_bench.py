"""Benchmark of the files plugin: grep and glob over a large tree, against ripgrep and git in the same run.

Generates (once) ~50k files / ~500 MB under /tmp/nexus-files-bench/tree, a git
repository, then times, each as the best of N runs:

- grep (literal, regex) through the MCP client in-process, ripgrep engine and pure-Python engine,
  against `rg` on the same tree with the same file-selection flags;
- glob '*.py' through the MCP client against `git ls-files '*.py'` and `rg --files`.

    .venv/bin/python bench/files_bench.py [--files 50000] [--runs 3]
    .venv/bin/python bench/files_bench.py --smoke     # 200 files in a temporary folder, one run (what the test runs)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client

import nexus_files
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager
from nexus_files.walk import RG_WALK_FLAGS, ripgrep

BASE = Path("/tmp/nexus-files-bench")
TREE = BASE / "tree"
LITERAL = "needle_token_42"
REGEX = r"fn_[a-z]+_\d{4}\("
LINES = 260  # ~10 KB per file


def generate(n_files: int) -> None:
    """LINES pseudo-code lines (~10 KB) per file; LITERAL in 1 file of 250, REGEX matches in 1 of 100."""
    marker = TREE / f".complete-{n_files}-{LINES}"
    if marker.exists():
        return
    shutil.rmtree(TREE, ignore_errors=True)
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "value", "result", "index", "buffer", "parse", "render"]

    def line() -> str:
        a, b, c, d = (rng.choice(words) for _ in range(4))
        return f"    {a}_{b} = {c}({rng.randint(0, 999)}, '{d}')\n"

    pool = [line() for _ in range(5000)]
    exts = [".py", ".js", ".md", ".txt", ".c"]
    for i in range(n_files):
        folder = TREE / f"pkg{i % 50:02d}" / f"mod{(i // 50) % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = rng.choices(pool, k=LINES)
        if i % 250 == 0:
            lines[rng.randrange(LINES)] = f"    call({LITERAL})\n"
        if i % 100 == 0:
            lines[rng.randrange(LINES)] = f"def fn_{rng.choice(words)}_{rng.randint(1000, 9999)}(x):\n"
        (folder / f"file{i:05d}{exts[i % len(exts)]}").write_text("".join(lines))
    (TREE / ".gitignore").write_text("*.tmp\n")
    env = os.environ | {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
                        "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    subprocess.run(["git", "init", "-q"], cwd=TREE, check=True)
    subprocess.run(["git", "add", "-A"], cwd=TREE, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "tree"], cwd=TREE, check=True, env=env)
    marker.write_text("ok")


def best(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return min(times), result


async def best_async(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = await fn()
        times.append(time.perf_counter() - started)
    return min(times), result


def client_for(engine: str) -> Client:
    pm = get_plugin_manager()
    pm.register(nexus_files, name="files")
    table = {"roots": [str(TREE)], "use_ripgrep": engine, "max_file_size": 10 * 1024 * 1024}
    host = build_host(parse_config({"server": {"data_dir": str(BASE / "data")}, "plugins": {"files": table}}), pm)
    return Client(host.server)


def tree_stats() -> tuple[int, int]:
    count = size = 0
    for folder, dirs, files in os.walk(TREE):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            count += 1
            size += os.stat(os.path.join(folder, name)).st_size
    return count, size


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="200 files in a temporary folder, one run")
    args = parser.parse_args()
    if args.smoke:
        global TREE
        args.files, args.runs = 200, 1
        with tempfile.TemporaryDirectory() as tmp:
            TREE = Path(tmp) / "tree"
            await run(args)
    else:
        await run(args)


async def run(args: argparse.Namespace) -> None:
    generate(args.files)
    rg = ripgrep("always", None)
    count, size = tree_stats()
    out = [f"tree: {count} files, {size / 1e6:.0f} MB at {TREE}; best of {args.runs} runs; {os.cpu_count()} CPUs"]

    def rg_cli(pattern: str, literal: bool) -> int:
        cmd = [rg, "-n", *RG_WALK_FLAGS, "--case-sensitive", *(["-F"] if literal else []), "-e", pattern, "."]
        proc = subprocess.run(cmd, cwd=TREE, capture_output=True, check=False)
        return proc.stdout.count(b"\n")

    # Warm the page cache so every contender reads from memory.
    rg_cli("warmup-xyz", True)
    for label, pattern, literal in (("literal", LITERAL, True), ("regex", REGEX, False)):
        rg_time, rg_lines = best(lambda p=pattern, lit=literal: rg_cli(p, lit), args.runs)
        row = [f"grep {label} {pattern!r}: rg CLI {rg_time:.3f} s ({rg_lines} lines)"]
        for engine, runs in (("always", args.runs), ("never", 1)):
            async with client_for(engine) as client:
                query = {"pattern": pattern, "literal": literal, "case": "sensitive", "max_results": 5000}
                seconds, result = await best_async(lambda c=client, q=query: c.call_tool("grep", q), runs)
                matches = result.structured_content["total_matches"]
                name = "grep tool (ripgrep)" if engine == "always" else "grep tool (pure Python)"
                row.append(f"{name} {seconds:.3f} s ({matches} matches, {seconds / rg_time:.2f}x rg)")
        out.append("; ".join(row))

    git_time, git_n = best(
        lambda: subprocess.run(["git", "ls-files", "*.py"], cwd=TREE, capture_output=True, check=True).stdout.count(
            b"\n"
        ),
        args.runs,
    )
    rgf_time, rgf_n = best(
        lambda: subprocess.run(
            [rg, "--files", *RG_WALK_FLAGS, "-g", "*.py", "."], cwd=TREE, capture_output=True, check=False
        ).stdout.count(b"\n"),
        args.runs,
    )
    row = [f"glob '*.py': git ls-files {git_time:.3f} s ({git_n}), rg --files {rgf_time:.3f} s ({rgf_n})"]
    for engine, runs in (("always", args.runs), ("never", 1)):
        async with client_for(engine) as client:
            seconds, result = await best_async(
                lambda c=client: c.call_tool("glob", {"pattern": "*.py", "limit": 10_000}), runs
            )
            total = result.structured_content["total"]
            name = "glob tool (ripgrep)" if engine == "always" else "glob tool (pure Python)"
            row.append(f"{name} {seconds:.3f} s ({total} files, {seconds / git_time:.2f}x git ls-files)")
    out.append("; ".join(row))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
