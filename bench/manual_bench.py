"""Benchmark of the manual plugin, through the MCP client in-process (protocol included).

1. rename_entity across a 10,000-file library (500 files link to the renamed entity).
2. read_entities_sections of one section in a 5 MB file: the first (cold) read, then p50/p95 of warm reads.
3. list_entities of the 10,000-file library, and add_entities in it: with content, and without (the skeleton is
   learned from entities of its type: a common type stops after MAX_SAMPLES of them, a rare one reads every file).

Goals: rename under 2 s; section read p95 under 20 ms.

    .venv/bin/python bench/manual_bench.py
    .venv/bin/python bench/manual_bench.py --smoke    # 200 files, 50 sections (what the test runs)
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

import nexus_manual
from nexus_core import PathPolicy
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager
from nexus_manual.library import Library
from nexus_manual.skeleton import MAX_SAMPLES

FILES = 10_000
LINKING = 500
SECTIONS = 2_000
READS = 200


def make_library(folder: Path) -> None:
    filler = "Some words about this note, with *emphasis* and a [link](https://example.org).\n" * 10
    (folder / "target.md").write_text("---\nentity_type: topic\n---\n# Target\n\n" + filler, encoding="utf-8")
    for i in range(FILES - 1):
        links = i % (FILES // LINKING) == 0
        rel = "- type: about\n  to: target\n" if links else f"- type: next\n  to: n{i + 1}\n"
        body = f"# Note {i}\n\n{filler}" + ("See [[target]] and [[target|it]].\n" if links else "")
        text = f"---\nentity_type: note\nrelations:\n{rel}date modified: 2024-01-01\n---\n{body}"
        (folder / f"n{i}.md").write_text(text, encoding="utf-8")


def make_big_file(path: Path) -> int:
    para = "A paragraph of prose with `code`, *emphasis* and [[links]] to keep the parser honest.\n" * 28
    parts = ["---\nentity_type: book\n---\n"]
    for i in range(SECTIONS):
        parts.append(f"## Chapter {i}\n\n{para}\n```python\n# not a heading {i}\nprint({i})\n```\n\n")
    text = "".join(parts)
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


async def run(base: Path) -> None:
    lib, big = base / "lib", base / "big"
    lib.mkdir()
    big.mkdir()
    t0 = time.perf_counter()
    make_library(lib)
    size = make_big_file(big / "book.md")
    setup = time.perf_counter() - t0
    config = {
        "server": {"data_dir": str(base / "data")},
        "plugins": {
            "manual": {
                "roots": [str(base)],
                "categories": ["read", "write"],
                "libraries": {"lib": str(lib), "big": str(big)},
            }
        },
    }
    pm = get_plugin_manager()
    pm.register(nexus_manual, name="manual")
    host = build_host(parse_config(config), pm)
    async with Client(host.server) as client:
        renames = []
        names = ["target", "renamed", "target", "renamed", "target"]
        for old, new in itertools.pairwise(names):
            t = time.perf_counter()
            result = await client.call_tool("rename_entity", {"library_name": "lib", "old_name": old, "new_name": new})
            renames.append(time.perf_counter() - t)
            assert not result.is_error, result.content[0].text
            assert len(result.structured_content["files_updated"]) == LINKING
        updated = len(result.structured_content["files_updated"])

        t = time.perf_counter()
        result = await client.call_tool("list_entities", {"library_name": "lib"})
        listing = time.perf_counter() - t
        assert result.structured_content["count"] == FILES

        creations = {}
        for label, made in [
            ("content", {"name": "c0", "entity_type": "note", "content": "# C0\n"}),
            ("common", {"name": "c1", "entity_type": "note"}),
            ("rare", {"name": "c2", "entity_type": "topic"}),
        ]:
            t = time.perf_counter()
            result = await client.call_tool("add_entities", {"library_name": "lib", "entities": [made]})
            creations[label] = time.perf_counter() - t
            assert not result.is_error, result.content[0].text

        args = {
            "library_name": "big",
            "entity_names": ["book"],
            "section_globs": [f"Chapter {min(1234, SECTIONS - 1)}"],
        }
        t = time.perf_counter()
        result = await client.call_tool("read_entities_sections", args)
        cold = time.perf_counter() - t
        first = result.structured_content["entities"][0]["sections"][0]
        assert not result.is_error and f"print({min(1234, SECTIONS - 1)})" in first["content"]
        reads = []
        for i in range(READS):
            args["section_globs"] = [f"Chapter {(i * 7) % SECTIONS}"]
            t = time.perf_counter()
            result = await client.call_tool("read_entities_sections", args)
            reads.append(time.perf_counter() - t)
            assert not result.is_error
        toc_t = time.perf_counter()
        await client.call_tool("get_entities_toc", {"library_name": "big", "entity_names": ["book"]})
        toc = time.perf_counter() - toc_t

    listing_cost = {}  # Library.names() alone, without the protocol: with and without the built-in secret list
    for secrets in (True, False):
        names_lib = Library("lib", str(lib), PathPolicy([base], deny_secrets=secrets))
        t = time.perf_counter()
        assert len(names_lib.names()) == FILES + 3
        listing_cost[secrets] = time.perf_counter() - t

    reads.sort()
    p50, p95 = statistics.median(reads), reads[int(0.95 * len(reads)) - 1]
    rename_med, rename_max = statistics.median(renames), max(renames)
    out = [
        f"setup: {FILES} files + one {size / 1e6:.2f} MB file in {setup:.1f} s",
        f"rename_entity, {FILES} files, {updated} files rewritten: median {rename_med * 1000:.0f} ms, "
        f"max {rename_max * 1000:.0f} ms over {len(renames)} renames (goal < 2000 ms: "
        f"{rename_max / 2:.2f}x of the budget)",
        f"read_entities_sections, {size / 1e6:.2f} MB file, {SECTIONS} sections: cold (parse) {cold * 1000:.0f} ms; "
        f"warm p50 {p50 * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms over {READS} reads "
        f"(goal p95 < 20 ms: {p95 / 0.020:.2f}x of the budget)",
        f"get_entities_toc on the same file (warm): {toc * 1000:.2f} ms",
        f"list_entities of the {FILES}-file library: {listing * 1000:.0f} ms; Library.names() alone "
        f"{listing_cost[True] * 1000:.0f} ms with the built-in secret list, {listing_cost[False] * 1000:.0f} ms "
        f"without ({listing_cost[True] / listing_cost[False]:.0f}x)",
        f"add_entities in the {FILES}-file library: with content {creations['content'] * 1000:.0f} ms; "
        f"skeleton of a common type ({MAX_SAMPLES} sampled) {creations['common'] * 1000:.0f} ms "
        f"({creations['common'] / creations['content']:.1f}x); of a rare type (every file read) "
        f"{creations['rare'] * 1000:.0f} ms ({creations['rare'] / creations['content']:.1f}x)",
    ]
    sys.stderr.write("\n".join(out) + "\n")
    sys.stdout.write("\n".join(out) + "\n")


def main() -> None:
    global FILES, LINKING, SECTIONS, READS
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="200 files, 50 sections, 20 reads")
    if parser.parse_args().smoke:
        FILES, LINKING, SECTIONS, READS = 200, 10, 50, 20
    with tempfile.TemporaryDirectory(prefix="manual-bench-") as tmp:
        anyio.run(run, Path(tmp))


if __name__ == "__main__":
    main()
