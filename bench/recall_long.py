"""Long memories (issue 16): is a note found by a question about one part of a long memory?

    .venv/bin/python bench/recall_long.py

The labeled set's memories (``bench/recall/``) are short. Here every five memories of one project are joined
into one long memory (``MAX_PARTS`` and MiniLM's 256-token window matter only for such ones), and each unfiltered
dev query must find the long memory that holds its answer. Stored and recalled through the plugin's own
``ChromaStore`` and ``MemoryService`` with ``minilm+use``: one vector per memory (``sentences = false``), then the
sentence vectors with the cap on pieces per memory at 8, 16 and 32. Dev queries only: it chose ``MAX_PARTS``.
"""

from __future__ import annotations

import random
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recall_eval import Result, first_rank, load_set, pick

from nexus_memory import store as store_module
from nexus_memory.embedders import create
from nexus_memory.service import MemoryService
from nexus_memory.store import SENTENCES_RECIPE, TAGS_RECIPE, ChromaStore, Record

GROUP = 5


def joined(records: list[Record]) -> tuple[list[Record], dict[str, str]]:
    """Every ``GROUP`` memories of a project (shuffled, seed 7) as one, and which long memory holds each."""
    by_project: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_project[r.context].append(r)
    rng, out, owner = random.Random(7), [], {}
    for project, members in sorted(by_project.items()):
        rng.shuffle(members)
        for start in range(0, len(members), GROUP):
            group, gid = members[start : start + GROUP], f"long-{project}-{start}"
            tags = list(dict.fromkeys(t for r in group for t in r.tags))[:6]
            first = group[0]
            text = "\n".join(r.content for r in group)
            out.append(Record(gid, text, "note", project, tags, first.created_at, first.updated_at))
            owner.update(dict.fromkeys((r.id for r in group), gid))
    return out, owner


def main() -> None:
    records, queries, _, _ = load_set(0)
    long, owner = joined(records)
    dev = [q for q in pick(queries, "dev") if not (q.context or q.tags or q.memory_type)]
    print(f"{len(long)} long memories of {GROUP} notes; {len(dev)} unfiltered dev queries\n")
    print("| vectors | per memory at most | recall@5 | MRR |\n|---|---|---|---|")
    for recipe, cap in ((TAGS_RECIPE, 0), (SENTENCES_RECIPE, 8), (SENTENCES_RECIPE, 16), (SENTENCES_RECIPE, 32)):
        store_module.MAX_PARTS = cap or store_module.MAX_PARTS
        with tempfile.TemporaryDirectory() as tmp:
            store = ChromaStore(Path(tmp), "long", create("minilm+use"), recipe=recipe)
            store.add(long, store.embed_records(long))
            service = MemoryService(store)
            service._touch = lambda records: None  # type: ignore[method-assign]  # every query sees the same store
            ranks = {}
            for q in dev:
                found = [m.id for m in service.recall(q.text, 20, None, None, None).memories]
                ranks[q.id] = first_rank(found, {owner[i] for i in q.relevant})
            res, pieces = Result("", ranks), sum(len(r.parts(recipe)) for r in long)
            label = "one per memory" if not cap else f"whole + {pieces} pieces"
            print(f"| {label} | {cap or 1} | {res.r5(dev):.3f} | {res.mrr(dev):.3f} |", flush=True)
            service.close()
            store.close()


if __name__ == "__main__":
    main()
