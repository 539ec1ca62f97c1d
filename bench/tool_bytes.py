"""Bytes of tool definitions a client receives from tools/list, per plugin and per profile.

Starts ``nexus serve --standalone`` with every installed plugin but the example (``examples/nexus_hello``,
not part of a Nexus install): with each plugin's default grants,
with every category granted, and with each built-in profile. It reads the raw tools/list reply off
the pipe and splits each tool's bytes (compact JSON, as sent) into description, input schema and
output schema (the rest is name, title, annotations and _meta). ``model`` is what a model reads
of each tool: name, description and input schema (the figure issue 35 sets goals for); the tool
search run is default grants with ``[server] tool_search = true`` (docs/tool_search.md).

    .venv/bin/python bench/tool_bytes.py
    .venv/bin/python bench/tool_bytes.py --smoke     # default grants and one profile (what the test runs)

Servers run with a home folder of the bench's own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from pipe_client import NEXUS, Server, home_env

from nexus_core.assembly import build_host
from nexus_core.config.model import BUILTIN_PROFILES, parse_config

SEARCH = ("find_tools", "call_tool")  # registered only when tool search is on
EXAMPLE = "hello"  # the example plugin: installed in the development environment only
COLUMNS = ("tools", "bytes", "desc", "in", "out", "model")


def size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def measure(config: Path, plugin_of: dict[str, str], *args: str) -> tuple[int, dict[str, dict[str, int]]]:
    command = [*NEXUS, "serve", "--standalone", "--config", str(config), *args]
    server = Server(command, env=None)
    try:
        server.handshake()
        assert server.proc.stdin is not None and server.proc.stdout is not None
        server.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}})
        raw = server.proc.stdout.readline()
    finally:
        server.close()
    rows: dict[str, dict[str, int]] = {}
    for tool in json.loads(raw)["result"]["tools"]:
        row = rows.setdefault(plugin_of.get(tool["name"], "?"), dict.fromkeys(COLUMNS, 0))
        row["tools"] += 1
        row["bytes"] += size(tool)
        row["desc"] += size(tool.get("description", ""))
        row["in"] += size(tool.get("inputSchema", {}))
        row["out"] += size(tool.get("outputSchema", {}))
        row["model"] += size(tool["name"]) + size(tool.get("description", "")) + size(tool.get("inputSchema", {}))
    return len(raw), rows


def print_table(title: str, total: int, rows: dict[str, dict[str, int]]) -> None:
    print(f"\n{title}: tools/list reply {total:,} bytes")
    print(f"{'plugin':<11} {'tools':>5} {'bytes':>8} {'description':>12} {'input':>8} {'output':>8} {'model':>8}")
    total_row = {key: sum(row[key] for row in rows.values()) for key in COLUMNS}
    for name, row in [*sorted(rows.items()), ("total", total_row)]:
        print(
            f"{name:<11} {row['tools']:>5} {row['bytes']:>8,} {row['desc']:>12,} {row['in']:>8,} {row['out']:>8,}"
            f" {row['model']:>8,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="default grants and one profile")
    smoke = parser.parse_args().smoke
    work = Path(tempfile.mkdtemp(prefix="nexus-tool-bytes-"))
    os.environ.update(home_env(work / "home"))  # for the servers and the host built here
    files = work / "files"  # a root beside the home folder, not above it (a broad root is refused)
    files.mkdir()
    base = f'[server]\ndata_dir = "{work / "data"}"\nroots = ["{files}"]\n'
    host = build_host(parse_config({"server": {"data_dir": str(work / "data"), "roots": [str(files)]}}))
    if EXAMPLE in host.plugins:
        base += f"[plugins.{EXAMPLE}]\nenabled = false\n"
    plugin_of = {name: entry.plugin for name, entry in host.tools.items()} | dict.fromkeys(SEARCH, "tool_search")
    every = "".join(
        f"[plugins.{state.name}]\ncategories = {json.dumps(sorted(state.categories))}\n"
        for state in host.plugins.values()
        if state.categories and state.name != EXAMPLE
    )
    search = base.replace("[server]\n", "[server]\ntool_search = true\n")
    runs = {
        "default grants": (base, ()),
        "tool search": (search, ()),
        "every category granted": (base + every, ()),
    }
    runs |= {
        f"profile {name}": (base, ("--profile", name)) for name in sorted(BUILTIN_PROFILES)[: 1 if smoke else None]
    }
    if smoke:
        del runs["every category granted"]
    print(f"python {sys.version.split()[0]}; plugins: {', '.join(sorted(set(plugin_of.values())))}")
    totals = []
    for title, (text, args) in runs.items():
        config = work / "nexus.toml"
        config.write_text(text)
        total, rows = measure(config, plugin_of, *args)
        totals.append((title, sum(r["tools"] for r in rows.values()), total, sum(r["model"] for r in rows.values())))
        if not args:
            print_table(title, total, rows)
    print(f"\n{'run':<24} {'tools':>5} {'reply bytes':>12} {'model bytes':>12}")
    for title, tools, total, model in totals:
        print(f"{title:<24} {tools:>5} {total:>12,} {model:>12,}")


if __name__ == "__main__":
    main()
