"""Top-3 accuracy of tool search (``find_tools``'s ranker) against a plain BM25 anchor, side by side.

The tools: every Nexus tool with every category granted (built here, as served), plus the tool
lists of three reference MCP servers (``bench/tool_search/server-*.json``, captured from the npm
``@modelcontextprotocol/server-memory``, ``server-filesystem`` and ``server-everything``), prefixed
``memory_``, ``filesystem_`` and ``everything_`` as a bridge mount would. The requests
(``bench/tool_search/requests.json``) were written before any tuning; only the ``tune`` half was
looked at while tuning, the ``held_out`` half is the figure that counts. The ``dev`` rows
(``dev_requests.json``) were written while tuning, and looked at. ``held_out_2`` (``held_out_2.json``) is a
second held-out set, written after ``held_out`` had been printed often but before the next round of tuning;
neither held-out set's misses are ever printed.

    .venv/bin/python bench/tool_search.py
    .venv/bin/python bench/tool_search.py --smoke      # 12 requests (what the test runs)
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nexus_core.assembly import build_host
from nexus_core.builtin.tool_ranking import BM25, Ranker, embedder, tool_text
from nexus_core.config.model import parse_config

HERE = Path(__file__).parent / "tool_search"
MOUNTS = {"server-memory": "memory", "server-filesystem": "filesystem", "server-everything": "everything"}


def nexus_tools(work: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every Nexus tool, every category granted, as tools/list shows it; and their keywords, by name."""
    (work / "files").mkdir(exist_ok=True)  # a root beside the home folder, not above it
    base = {"data_dir": str(work / "data"), "roots": [str(work / "files")]}
    host = build_host(parse_config({"server": base}))
    every = {s.name: {"categories": sorted(s.categories)} for s in host.plugins.values() if s.categories}
    host = build_host(parse_config({"server": base, "plugins": every}))
    listed = asyncio.run(host.server.list_tools())
    keywords = {name: entry.spec.keywords for name, entry in host.tools.items() if entry.spec.keywords}
    return [t.model_dump(by_alias=True, exclude_none=True, include={"name", "title", "description", "input_schema"})
            for t in listed], keywords  # fmt: skip


def mounted_tools() -> list[dict[str, Any]]:
    tools = []
    for server, prefix in MOUNTS.items():
        for tool in json.loads((HERE / f"{server}.json").read_text())["tools"]:
            tools.append({**tool, "name": f"{prefix}_{tool['name']}"})
    return tools


def top3(rank: Any, tools: list[dict[str, Any]], rows: list[dict[str, Any]]) -> tuple[int, list[str]]:
    hits, misses = 0, []
    for row in rows:
        best = [t["name"] for t in rank(row["request"], tools)[:3]]
        if set(best) & set(row["expect"]):
            hits += 1
        else:
            misses.append(f"  {row['request']!r}: want {'/'.join(row['expect'])}, got {', '.join(best)}")
    return hits, misses


def bm25_only(keywords: dict[str, str]) -> Any:
    """Plain BM25 over the text find_tools reads (keywords included), without synonyms or meaning."""

    def rank(query: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        scores = BM25([tool_text(t, keywords.get(t["name"], "")) for t in tools]).scores(query, expand=False)
        return [tools[i] for i in sorted(range(len(tools)), key=lambda i: -scores[i])]

    return rank


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="12 requests")
    parser.add_argument("--misses", action="store_true", help="print the requests missed (tune and dev only)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nexus-tool-search-"))
    os.environ["HOME"] = str(work / "home")  # no user config or tool folder of the machine's
    native, keywords = nexus_tools(work)
    tools = native + mounted_tools()
    rows = json.loads((HERE / "requests.json").read_text())["requests"]
    more = [r for f in ("dev_requests.json", "held_out_2.json") for r in json.loads((HERE / f).read_text())["requests"]]
    rows = rows[:12] if args.smoke else rows + more
    names = {t["name"] for t in tools}
    unknown = sorted({n for r in rows for n in r["expect"]} - names)
    assert not unknown, f"labels name tools that are not served: {unknown}"
    started = time.perf_counter()
    embed = embedder()
    ranker = Ranker(embed)
    loaded = time.perf_counter() - started
    model = "MiniLM (nexus_memory)" if embed else "none"
    print(f"python {sys.version.split()[0]}; {len(tools)} tools, {len(rows)} requests")
    print(f"embedder: {model} (loaded in {loaded:.1f} s)")
    print(f"\n{'split':<10} {'requests':>8} {'BM25 top-3':>11} {'find_tools top-3':>17}")
    for split in ("tune", "held_out", "held_out_2", "dev"):
        part = [r for r in rows if r["split"] == split]
        if not part:
            continue
        plain, _ = top3(bm25_only(keywords), tools, part)
        ours, misses = top3(functools.partial(ranker.rank, keywords=keywords), tools, part)
        print(f"{split:<10} {len(part):>8} {plain / len(part):>10.1%} {ours / len(part):>16.1%}")
        if args.misses and not split.startswith("held_out"):  # the held-out sets are never looked at
            print("\n".join(misses))
    timed = time.perf_counter()
    for row in rows[:10]:
        ranker.rank(row["request"], tools, keywords)
    print(f"\none find_tools ranking over {len(tools)} tools: {(time.perf_counter() - timed) / 10 * 1000:.1f} ms")


if __name__ == "__main__":
    main()
