"""Recall and store latency of the light mode and the default, interleaved call by call (issue 16).

    .venv/bin/python bench/recall_latency_paired.py --cache /tmp/rc --size 10000 [--sequential-pair] [--filtered-tags]

On a shared machine whose load changes from minute to minute, timing one configuration after the other
compares two different machines. Here both stores are filled first (the bulk method of ``recall_latency.py``:
real vectors of the labeled set and generated memories, repeated with noise), then every query is recalled
by the light mode and by the default in turn, and every store alternates the same way, through the plugin's
``MemoryService`` (no MCP layer). Both therefore see the same load; the ratio is the cost of the pair.
``--use`` adds the default ``minilm+use`` as a third, interleaved the same way.

``--sentences`` times only ``minilm+use`` with ``sentences = true`` (sentence vectors: the bulk memories get noisy
copies of the base vectors as their sentences', as many as their text has sentences) against ``minilm+use`` on
the default recipe (``tags+content``), interleaved the same way.

``--trio`` times only ``minilm+use+mpnet`` (the default plus all-mpnet-base-v2) against the default, both with
sentence vectors, interleaved the same way.

``--side-query`` times only ``minilm+use`` with sentence vectors, asking for the sentence vectors nearest the query
beside the candidates' query (the plugin) and after it (as before), switched call by call on one store.

``--sequential-pair`` adds a row: the default's store and service with the pair embedding MiniLM then e5 one
after the other (as before they ran side by side), swapped in call by call. ``--filtered-tags`` adds one where
recall asks Chroma for the memories with a named tag by a filtered query every time (``MAX_TAG_WIDTH = 0``, as
before it looked for them among the nearest memories first).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from memory_bench import generate, pct
from recall_eval import Cache, load_set
from recall_latency import bulk_vectors

from nexus_memory import retrieval
from nexus_memory.embedders import (
    E5Embedder,
    MiniLMEmbedder,
    MPNetEmbedder,
    PairEmbedder,
    TrioEmbedder,
    UseEmbedder,
    UsePairEmbedder,
    create,
    is_cjk,
)
from nexus_memory.service import MemoryService
from nexus_memory.store import SENTENCES_RECIPE, TAGS_RECIPE, ChromaStore

SEQUENTIAL = "minilm+e5 sequential"
WITH_SENTENCES = "minilm+use, sentences"
FILTERED = "minilm+e5 filtered tags"
AFTER = "minilm+use, sentences, asked after the candidates"
TRIO_SENTENCES = "minilm+use+mpnet, sentences"


def filled(root: Path, name: str, base: np.ndarray, size: int) -> MemoryService:
    recipe = SENTENCES_RECIPE if name in (WITH_SENTENCES, TRIO_SENTENCES) else TAGS_RECIPE
    folder = root / "".join(ch if ch.isalnum() else "_" for ch in name)
    store = ChromaStore(folder, "paired", create(name.split(",")[0]), recipe=recipe)
    records, vectors = generate(size, seed=23), bulk_vectors(base, size)
    store.open()
    for start in range(0, size, 5000):
        store._add(records[start : start + 5000], vectors[start : start + 5000].tolist(), with_parts=False)
    # The sentence vectors, in bulk as the memories' (embedding 10k texts would take long).
    if recipe == SENTENCES_RECIPE:
        ids = [f"{r.id}#{n}" for r in records for n in range(len(r.parts(recipe)))]
        parts = bulk_vectors(base, len(ids) + len(base), seed=31)[len(base) :]
        for start in range(0, len(ids), 5000):
            store.parts.add(ids=ids[start : start + 5000], embeddings=parts[start : start + 5000].tolist())
    service = MemoryService(store)
    service.touch_delay = 3600.0  # as in a server: the stamps are written in one batch, later
    return service


def base_vectors(cache: Cache, names: set[str]) -> dict[str, np.ndarray]:
    """The vectors a bulk fill repeats, for each of ``names`` (``minilm``, ``minilm+e5``, ``minilm+use``): the
    labeled set's memories and 690 generated ones, embedded as the plugin embeds them."""
    labeled = load_set(0)[0]
    texts = [r.text(SENTENCES_RECIPE) for r in labeled] + [r.text(SENTENCES_RECIPE) for r in generate(690, seed=29)]
    m = cache.get(_Named(MiniLMEmbedder(), "minilm"), texts, query=False)
    out: dict[str, np.ndarray] = {"minilm": m} if "minilm" in names else {}
    for name, model, embedder, pair in (
        ("minilm+e5", E5Embedder, "e5", PairEmbedder),
        ("minilm+use", UseEmbedder, "use-m3", UsePairEmbedder),
    ):
        if name in names:
            other, weights = cache.get(_Named(model(), embedder), texts, query=False), pair()
            out[name] = np.hstack([weights.a * m, weights.b * other]).astype(np.float32)
    if "minilm+use+mpnet" in names:
        trio, pair = TrioEmbedder(), out["minilm+use"]
        mpnet = cache.get(_Named(MPNetEmbedder(), "mpnet"), texts, query=False)
        out["minilm+use+mpnet"] = np.hstack([trio.a * pair, trio.b * mpnet]).astype(np.float32)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--cache", default=None)
    parser.add_argument("--use", action="store_true", help="also the default minilm+use (bench/recall_models.py)")
    parser.add_argument("--sentences", action="store_true", help="only minilm+use with and without sentence vectors")
    parser.add_argument("--trio", action="store_true", help="only the default against minilm+use+mpnet")
    parser.add_argument("--side-query", action="store_true", help="only sentences, their query beside or after")
    parser.add_argument("--sequential-pair", action="store_true", help="also time the pair run one model at a time")
    parser.add_argument("--filtered-tags", action="store_true", help="also time a filtered query for named tags")
    args = parser.parse_args()
    sentences = args.sentences or args.side_query or args.trio  # stores with sentence vectors
    print(f"load average at start: {os.getloadavg()}", flush=True)
    labeled, queries, _, _ = load_set(0)
    names = (set() if sentences else {"minilm", "minilm+e5"}) | ({"minilm+use"} if args.use or sentences else set())
    bases = base_vectors(Cache(args.cache), names | ({"minilm+use+mpnet"} if args.trio else set()))
    if sentences:
        bases[WITH_SENTENCES] = bases["minilm+use"]
    if args.trio:
        bases = {WITH_SENTENCES: bases[WITH_SENTENCES], TRIO_SENTENCES: bases["minilm+use+mpnet"]}
    if args.side_query:
        del bases["minilm+use"]
    with tempfile.TemporaryDirectory() as tmp:
        services = {n: filled(Path(tmp), n, b, args.size) for n, b in bases.items()}
        embedders = {n: s.store.embedder for n, s in services.items()}
        widths = dict.fromkeys(services, retrieval.MAX_TAG_WIDTH)
        if args.sequential_pair:
            services[SEQUENTIAL], embedders[SEQUENTIAL] = services["minilm+e5"], _SequentialPair()
            widths[SEQUENTIAL] = retrieval.MAX_TAG_WIDTH
        if args.filtered_tags:
            services[FILTERED], embedders[FILTERED], widths[FILTERED] = services["minilm+e5"], embedders["minilm+e5"], 0
        early = {n: s._early_parts for n, s in services.items()}
        if args.side_query:
            services[AFTER], embedders[AFTER] = services[WITH_SENTENCES], embedders[WITH_SENTENCES]
            widths[AFTER], early[AFTER] = retrieval.MAX_TAG_WIDTH, lambda vector, n: None

        def use(name: str) -> MemoryService:
            services[name].store.embedder, retrieval.MAX_TAG_WIDTH = embedders[name], widths[name]
            services[name]._early_parts = early[name]  # type: ignore[method-assign]
            return services[name]

        times: dict[str, dict[str, list[float]]] = {n: {"recall": [], "store": []} for n in services}
        for q in queries[:5]:
            for n in services:
                use(n).recall(q.text, 5, None, None, None)
        for q in queries:
            for n in services:
                s = use(n)
                t0 = time.perf_counter()
                s.recall(q.text, 5, None, None, None)
                times[n]["recall"].append((time.perf_counter() - t0) * 1000)
        for i, q in enumerate(queries[:100]):
            # A memory of the labeled set (two to four sentences, as memories are) or, before sentence vectors,
            # the query as a one-sentence note: the figures of earlier runs.
            text = f"{labeled[i].content} (bench {i})" if sentences else f"Bench note {i}: {q.text} was fixed."
            for n in services:
                s = use(n)
                t0 = time.perf_counter()
                s.store_memory(text, "bench", labeled[i].tags if sentences else [], "note")
                times[n]["store"].append((time.perf_counter() - t0) * 1000)
        for s in set(services.values()):
            s.close()
            s.store.close()
    print(f"\n| {args.size:,} memories | recall p50 / p95 ms | store p50 / p95 ms |\n|---|---|---|")
    for n, t in times.items():
        r, st = t["recall"], t["store"]
        print(f"| {n} | {pct(r, 50):.1f} / {pct(r, 95):.1f} | {pct(st, 50):.1f} / {pct(st, 95):.1f} |")
    pairs = [(n, "minilm") for n in ("minilm+e5", "minilm+use") if n in times and "minilm" in times] + [
        ("minilm+e5", n) for n in (SEQUENTIAL, FILTERED) if n in times
    ]
    if WITH_SENTENCES in times and "minilm+use" in times:
        pairs.append((WITH_SENTENCES, "minilm+use"))
    if AFTER in times:
        pairs.append((WITH_SENTENCES, AFTER))
    if TRIO_SENTENCES in times:
        pairs.append((TRIO_SENTENCES, WITH_SENTENCES))
    for top, bottom in pairs:
        b, a = times[top], times[bottom]
        for k in ("recall", "store"):
            print(
                f"{k}: {top} / {bottom} p50 {pct(b[k], 50) / pct(a[k], 50):.2f}x, "
                f"p95 {pct(b[k], 95) / pct(a[k], 95):.2f}x"
            )
    print(f"load average at the end: {os.getloadavg()}")


class _SequentialPair(PairEmbedder):
    """The pair as it was: MiniLM, then e5, in the caller's thread (the same vectors)."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._join(self.minilm.embed(texts), self.e5.embed(texts))

    def embed_query(self, texts: list[str]) -> list[list[float]]:
        english = [i for i, t in enumerate(texts) if not is_cjk(t)]
        mini = dict(zip(english, self.minilm.embed([texts[i] for i in english]), strict=True)) if english else {}
        e5 = self.e5.embed_query(texts)
        zero = [0.0] * MiniLMEmbedder.dimension
        return [
            [self.a * x for x in mini[i]] + [self.b * x for x in e5[i]] if i in mini else zero + e5[i]
            for i in range(len(texts))
        ]


class _Named:
    def __init__(self, model: object, name: str) -> None:
        self.model, self.name = model, name

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed(texts)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
