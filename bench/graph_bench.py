"""Benchmark of nexus-graph: search and the entropy report at 10k entities / 50k relations.

    .venv/bin/python bench/graph_bench.py [--entities 10000] [--relations 50000]
    .venv/bin/python bench/graph_bench.py --smoke     # 200 entities, 1,000 relations (what the test runs)

Builds a synthetic graph folder (JSONL written directly, as another process
would), then measures through the real MCP client in-process (tool-call
overhead included) and directly on the store:

* first call (index built from the files),
* search_knowledge p50/p95 over queries with typos and shuffled words (goal: p95 < 50 ms),
* get_entropy_report, computed fresh each time (goal: < 1 s),
* refresh after another writer appended 100 entities, and add_entity latency.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from mcp import Client

import nexus_graph
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager
from nexus_graph.graph import DEFAULT_CATEGORIES, GraphStore
from nexus_graph.search import tokens

WORD_TEXT = (
    "python rust go java kotlin swift async stream graph vector search index cache queue worker scheduler "
    "kernel compiler parser lexer router proxy gateway storage bucket ledger payment invoice account user "
    "session token auth oauth crypto hash signal metric trace log alert dashboard report model train "
    "infer embed batch shard replica cluster node pod deploy release build test lint format docs review"
)
WORDS = WORD_TEXT.split()
PREDICATES = ("uses", "depends_on", "part_of", "written_in", "related_to", "owned_by", "replaces", "documents")


def typo(word: str, rng: random.Random) -> str:
    if len(word) < 4:
        return word
    i = rng.randrange(len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]  # swap two letters


def build_folder(root: Path, n_entities: int, n_relations: int, seed: int = 7) -> list[tuple[str, str]]:
    """Write the JSONL files; return (id, name) of every entity."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    names: list[tuple[str, str]] = []
    files = {c: (root / c / "entities.jsonl") for c in DEFAULT_CATEGORIES}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    handles = {c: p.open("w", encoding="utf-8") for c, p in files.items()}
    twins = n_entities // 100  # 1% look-alikes of another entity, for the duplicate finder
    for i in range(n_entities):
        if i >= n_entities - twins:
            ident, name = names[i - (n_entities - twins)]
            words = tokens(name)
            words[0] = typo(words[0], rng)  # one typo, as a hurried second entry would have
            name = " ".join(w.capitalize() for w in words)
            ident = f"{ident}-twin"
        else:
            words = rng.sample(WORDS, rng.randint(2, 3))
            name = " ".join(w.capitalize() for w in words) + f" {i}"
            ident = "-".join(words) + f"-{i}"
        created = (now - timedelta(days=rng.randint(0, 400))).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = {
            "id": ident,
            "type": rng.choice(("library", "service", "concept", "person", "project")),
            "name": name,
            "desc": " ".join(rng.choices(WORDS, k=rng.randint(8, 20))),
            "tags": rng.sample(WORDS, 2),
            "created": created,
        }
        handles[rng.choice(DEFAULT_CATEGORIES)].write(json.dumps(record) + "\n")
        names.append((ident, name))
    for h in handles.values():
        h.close()
    by_month: dict[str, list[str]] = {}
    seen: set[tuple[str, str, str]] = set()
    while len(seen) < n_relations:
        a, b = rng.randrange(n_entities), rng.randrange(n_entities)
        if a == b:
            continue
        key = (names[a][0], rng.choice(PREDICATES), names[b][0])
        if key in seen:
            continue
        seen.add(key)
        created = (now - timedelta(days=rng.randint(0, 365))).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = json.dumps({"src": key[0], "rel": key[1], "dst": key[2], "context": "", "created": created})
        by_month.setdefault(created[:7], []).append(line)
    for month, lines in by_month.items():
        path = root / "relations" / month[:4] / f"{month[5:7]}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return names


def queries(names: list[tuple[str, str]], n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = tokens(rng.choice(names)[1])[:-1]  # drop the number
        rng.shuffle(words)
        kind = rng.random()
        if kind < 0.4:
            words = [typo(w, rng) for w in words]
        elif kind < 0.6:
            words = words[:1]
        out.append(" ".join(words))
    return out


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def line(label: str, samples: list[float]) -> str:
    return (
        f"{label:<44} n={len(samples):<4} p50={statistics.median(samples):8.2f} ms  "
        f"p95={pct(samples, 95):8.2f} ms  max={max(samples):8.2f} ms"
    )


async def run(args: argparse.Namespace) -> None:
    print(
        f"load average at start (1/5/15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}, cpus: {os.cpu_count()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "graph"
        t0 = time.perf_counter()
        names = build_folder(root, args.entities, args.relations)
        size = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
        print(
            f"graph: {args.entities} entities, {args.relations} relations, {size / 1e6:.1f} MB of JSONL "
            f"(written in {time.perf_counter() - t0:.1f} s)"
        )
        pm = get_plugin_manager()
        pm.register(nexus_graph, name="graph")
        config = {
            "server": {"data_dir": str(Path(tmp) / "data"), "audit": {"enabled": False}},
            "plugins": {"graph": {"graph_dir": str(root), "categories": ["read", "write"]}},
        }
        host = build_host(parse_config(config), pm)
        qs = queries(names, args.queries)
        async with Client(host.server) as client:
            t = time.perf_counter()
            first = await client.call_tool("search_knowledge", {"query": qs[0]})
            cold = (time.perf_counter() - t) * 1000
            assert not first.is_error, first
            print(f"{'first call (builds the index from files)':<44} {cold:8.0f} ms")

            search_ms, hits_found = [], 0
            for q in qs:
                t = time.perf_counter()
                result = await client.call_tool("search_knowledge", {"query": q, "limit": 10})
                search_ms.append((time.perf_counter() - t) * 1000)
                hits_found += bool(result.structured_content["hits"])
            print(line("search_knowledge via MCP client", search_ms))
            print(f"{'queries with at least one hit':<44} {hits_found}/{len(qs)}")

            entropy_ms = []
            for _ in range(args.entropy_runs):
                t = time.perf_counter()
                result = await client.call_tool("get_entropy_report", {})
                entropy_ms.append((time.perf_counter() - t) * 1000)
            report = result.structured_content
            print(line("get_entropy_report via MCP client", entropy_ms))
            print(
                f"{'':<44} orphans={report['orphans']['count']} stale={report['stale']['count']} "
                f"components={report['components']['count']} duplicates={report['duplicates']['count']}"
            )

            # another process appends: the next call reads only the new tail
            other = GraphStore(root, DEFAULT_CATEGORIES)
            for i in range(100):
                other.add_entity("concepts", f"appended-{i}", "concept", f"Appended {i}")
            t = time.perf_counter()
            await client.call_tool("search_knowledge", {"query": "appended 42"})
            refresh = (time.perf_counter() - t) * 1000
            print(f"{'search after 100 appends by another writer':<44} {refresh:8.2f} ms")

            add_ms = []
            for i in range(50):
                t = time.perf_counter()
                r = await client.call_tool(
                    "add_entity",
                    {"category": "concepts", "id": f"bench-{i}", "type": "concept", "name": f"Bench {i}", "desc": ""},
                )
                add_ms.append((time.perf_counter() - t) * 1000)
                assert not r.is_error
            print(line("add_entity via MCP client (with fsync)", add_ms))

        store = GraphStore(root, DEFAULT_CATEGORIES)
        with store.reading() as index:
            direct = []
            for q in qs:
                t = time.perf_counter()
                index.search.search(q, 10)
                direct.append((time.perf_counter() - t) * 1000)
        print(line("search, store only (no MCP)", direct))
        s95, e95 = pct(search_ms, 95), pct(entropy_ms, 95)
        print(f"goal search p95 < 50 ms:   {s95:.2f} ms ({s95 / 50:.2f} of budget)")
        print(f"goal entropy < 1000 ms:    {e95:.0f} ms ({e95 / 1000:.2f} of budget)")
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--entropy-runs", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="200 entities, 1,000 relations, 20 queries, 1 run")
    args = parser.parse_args()
    if args.smoke:
        args.entities, args.relations, args.queries, args.entropy_runs = 200, 1000, 20, 1
    anyio.run(run, args)


if __name__ == "__main__":
    main()
