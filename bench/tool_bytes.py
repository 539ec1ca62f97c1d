"""Bytes of tool definitions a client receives from tools/list, per plugin, before the user says a word.

Starts ``nexus serve --standalone`` with every installed plugin, once with each plugin's default
grants and once with every category granted, reads the raw tools/list reply off the pipe, and
splits each tool's bytes (compact JSON, as sent) into description, input schema, output schema
and the rest (name, title, annotations, execution).

    .venv/bin/python bench/tool_bytes.py [--json]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from pipe_client import Server

from nexus_core.config import parse_config
from nexus_core.host import build_host


def size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def measure(config: Path, plugin_of: dict[str, str]) -> tuple[int, dict[str, dict[str, int]]]:
    server = Server([sys.executable, "-m", "nexus_core", "serve", "--standalone", "--config", str(config)], env=None)
    try:
        server.handshake()
        assert server.proc.stdin is not None and server.proc.stdout is not None
        server.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}})
        raw = server.proc.stdout.readline()
    finally:
        server.close()
    rows: dict[str, dict[str, int]] = {}
    for tool in json.loads(raw)["result"]["tools"]:
        row = rows.setdefault(
            plugin_of.get(tool["name"], "?"), dict.fromkeys(("tools", "bytes", "desc", "in", "out"), 0)
        )
        row["tools"] += 1
        row["bytes"] += size(tool)
        row["desc"] += size(tool.get("description", ""))
        row["in"] += size(tool.get("inputSchema", {}))
        row["out"] += size(tool.get("outputSchema", {}))
    return len(raw), rows


def print_table(title: str, total: int, rows: dict[str, dict[str, int]]) -> None:
    print(f"\n{title}: tools/list reply {total:,} bytes")
    print(f"{'plugin':<8} {'tools':>5} {'bytes':>8} {'description':>12} {'input':>8} {'output':>8}")
    for name, row in [*sorted(rows.items()), ("total", {k: sum(r[k] for r in rows.values()) for k in rows["files"]})]:
        print(f"{name:<8} {row['tools']:>5} {row['bytes']:>8,} {row['desc']:>12,} {row['in']:>8,} {row['out']:>8,}")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="nexus-tool-bytes-"))
    base = f'[server]\ndata_dir = "{work / "data"}"\nroots = ["{work}"]\n'
    host = build_host(parse_config({"server": {"data_dir": str(work / "data"), "roots": [str(work)]}}))
    plugin_of = {name: entry.plugin for name, entry in host.tools.items()}
    every = "".join(
        f"[plugins.{state.name}]\ncategories = {json.dumps(sorted(state.categories))}\n"
        for state in host.plugins.values()
        if state.categories
    )
    results = {}
    for title, text in (("default grants", base), ("every category granted", base + every)):
        config = work / f"{title.split()[0]}.toml"
        config.write_text(text)
        results[title] = measure(config, plugin_of)
    if "--json" in sys.argv:
        print(json.dumps({title: {"total": total, "plugins": rows} for title, (total, rows) in results.items()}))
        return
    print(f"python {sys.version.split()[0]}; plugins: {', '.join(sorted(set(plugin_of.values())))}")
    for title, (total, rows) in results.items():
        print_table(title, total, rows)


if __name__ == "__main__":
    main()
