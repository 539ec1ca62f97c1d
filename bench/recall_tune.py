"""Ideas to lift the plugin's recall beyond the issue-16 default, chosen on the dev half only (issue 16, step 3).

    .venv/bin/python bench/recall_tune.py --cache /tmp/rc_tune

A brute-force replica of the plugin's ranking (``minilm+e5`` on tags+content, the Japanese/Chinese switch, the
exact-term boost, the supersedes and age penalties, the filters) over the labeled set's embeddings, so that many
variants can be scored in seconds. Its first row must agree with ``recall_plugin.py``'s ``minilm+e5`` row (the
replica is checked against the plugin itself that way). Each sweep prints its dev figures; the variant with the
best dev recall@5 (then MRR) is chosen, and only then are the test figures of the baseline and the choice
printed, side by side.

Variants:
- ``tag``: a memory whose tags the query names as whole words (``JWT 签名密钥…`` names ``jwt``; ``-`` in a tag
  also matches a space) gains ``w``: technical names survive translation, where the embedders falter.
- ``prf`` (on top of ``tag w 0.04``): pseudo-relevance feedback; each memory gains ``b`` x its mean pair
  similarity to the query's top ``k`` memories.
- MiniLM's share of an English query's similarity and the exact-term boost, re-swept with the tag boost.
- ``chunks``: a memory also scores the best of its sentences' e5 similarities (max-pooling), mixed in as
  ``max(whole, (1 - m) * whole + m * best sentence)``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from recall_eval import DEPTH, KINDS, TOP, Cache, Query, Result, first_rank, load_set, pick

from nexus_memory import retrieval
from nexus_memory.embedders import PAIR_MINILM_WEIGHT, E5Embedder, MiniLMEmbedder, is_cjk
from nexus_memory.store import SENTENCES_RECIPE, Record

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*|\n+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) >= 12] or [text]


def tag_hits(query: str, tags: list[str]) -> bool:
    """Whether the query names one of the tags (the plugin's own matching, ``retrieval.TagIndex``)."""
    return bool(retrieval.TagIndex(set(tags)).named_in(query))


def penalties(records: list[Record], supersedes: list[tuple[str, str]]) -> np.ndarray:
    """Each memory's penalty as recall applies it: its age (never recalled) and whether another supersedes it."""
    targets = {t for _, t in supersedes}
    now = datetime.now(UTC)
    return np.array(
        [
            retrieval.age_penalty(r.updated_at, "", now) + (retrieval.SUPERSEDED_PENALTY if r.id in targets else 0)
            for r in records
        ]
    )


def filters_allow(records: list[Record], queries: list[Query]) -> np.ndarray:
    """Whether each query's filters (context, type, tags) let each memory through (queries x memories)."""
    return np.array([[_allowed(q, r) for r in records] for q in queries])


def _allowed(q: Query, r: Record) -> bool:
    return (
        (not q.context or r.context == q.context)
        and (not q.memory_type or r.memory_type == q.memory_type)
        and (not q.tags or bool(set(q.tags) & set(r.tags)))
    )


def ranked(records: list[Record], queries: list[Query], allowed: np.ndarray, score: np.ndarray) -> Result:
    """Each query's rank of its first relevant memory, by ``score`` (queries x memories) among those allowed."""
    ids = [r.id for r in records]
    ranks = {}
    for i, q in enumerate(queries):
        s = np.where(allowed[i], score[i], -np.inf)
        order = np.argsort(-s, kind="stable")[:DEPTH]
        ranks[q.id] = first_rank([ids[j] for j in order if np.isfinite(s[j])], q.relevant)
    return Result("", ranks)


def exact_boosts(records: list[Record], queries: list[Query]) -> np.ndarray:
    """The exact-term boost of each memory for each query (queries x memories)."""
    boost = np.zeros((len(queries), len(records)))
    for i, q in enumerate(queries):
        terms = retrieval.exact_terms(q.text)
        if terms:
            boost[i] = [retrieval.BOOST * len(retrieval.matched(terms, r.content)) / len(terms) for r in records]
    return boost


class Replica:
    """The plugin's score for every (query, memory), and the variants on top of it."""

    def __init__(self, records: list[Record], queries: list[Query], supersedes: list[tuple[str, str]], cache: Cache):
        self.records, self.queries = records, queries
        mini, e5 = _Named(MiniLMEmbedder(), "minilm"), _Named(E5Embedder(), "e5")
        texts = [r.text(SENTENCES_RECIPE) for r in records]
        qtexts = [q.text for q in queries]
        m_doc, e_doc = cache.get(mini, texts, query=False), cache.get(e5, texts, query=False)
        m_q, e_q = cache.get(mini, qtexts, query=True), cache.get(e5, qtexts, query=True)
        a = PAIR_MINILM_WEIGHT
        self.e5_sims = e_q @ e_doc.T
        e_qp = cache.get(e5, qtexts, query=False)  # the queries with the passage: prefix (symmetric matching)
        self.e5_sims_sym = e_qp @ e_doc.T
        self.m_sims = m_q @ m_doc.T
        self.cjk = np.array([is_cjk(t) for t in qtexts])
        self.doc_sims = a * (m_doc @ m_doc.T) + (1 - a) * (e_doc @ e_doc.T)  # pair cosine between memories
        pair = a * (m_q @ m_doc.T) + (1 - a) * self.e5_sims
        cjk = np.array([is_cjk(t) for t in qtexts])
        self.sims = np.where(cjk[:, None], self.e5_sims, pair)
        self.allowed = filters_allow(records, queries)
        self.penalty, self.boost = penalties(records, supersedes), exact_boosts(records, queries)
        self.tags = np.array([[tag_hits(q.text, r.tags) for r in records] for q in queries], dtype=np.float32)
        self._cache, self._e5 = cache, e5
        self.chunk_sims: np.ndarray | None = None

    def chunks(self) -> np.ndarray:
        """Each memory's best sentence similarity (e5) for each query."""
        if self.chunk_sims is None:
            parts = [sentences(r.content) for r in self.records]
            flat = [s for p in parts for s in p]
            vecs = self._cache.get(self._e5, flat, query=False)
            qv = self._cache.get(self._e5, [q.text for q in self.queries], query=True)
            sims = qv @ vecs.T
            out, start = np.empty((len(self.queries), len(self.records))), 0
            for j, p in enumerate(parts):
                out[:, j] = sims[:, start : start + len(p)].max(axis=1)
                start += len(p)
            self.chunk_sims = out
        return self.chunk_sims

    def result(self, score: np.ndarray) -> Result:
        return ranked(self.records, self.queries, self.allowed, score)

    def base(self) -> np.ndarray:
        return self.sims + self.boost - self.penalty

    def symmetric(self, cjk_only: bool) -> np.ndarray:
        """The base score with e5 reading the queries as passages (for every query, or the CJK ones only)."""
        a = PAIR_MINILM_WEIGHT
        e5 = np.where(self.cjk[:, None], self.e5_sims_sym, self.e5_sims) if cjk_only else self.e5_sims_sym
        sims = np.where(self.cjk[:, None], e5, a * self.m_sims + (1 - a) * e5)
        return sims + self.boost - self.penalty

    def reweighed(self, a: float, boost: float) -> np.ndarray:
        """The base score with MiniLM's share ``a`` of an English query's similarity and exact-term boost ``boost``."""
        sims = np.where(self.cjk[:, None], self.e5_sims, a * self.m_sims + (1 - a) * self.e5_sims)
        return sims + self.boost * (boost / retrieval.BOOST) - self.penalty

    def prf(self, score: np.ndarray, k: int, beta: float) -> np.ndarray:
        """Pseudo-relevance feedback: each memory gains ``beta`` x its mean similarity to the query's top ``k``."""
        out = score.copy()
        for i in range(len(self.queries)):
            s = np.where(self.allowed[i], score[i], -np.inf)
            top = np.argsort(-s, kind="stable")[:k]
            out[i] = score[i] + beta * self.doc_sims[top].mean(axis=0)
        return out


class _Named:
    def __init__(self, model: object, name: str) -> None:
        self.model, self.name = model, name

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed(texts)  # type: ignore[attr-defined]

    def embed_query(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed_query(texts) if hasattr(self.model, "embed_query") else self.model.embed(texts)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=None)
    args = parser.parse_args()
    records, queries, _, supersedes = load_set(0)
    rep = Replica(records, queries, supersedes, Cache(args.cache))
    dev, test = pick(queries, "dev"), pick(queries, "test")

    def line(name: str, res: Result, qs: list[Query]) -> str:
        kinds = " | ".join(f"{res.r5(pick(qs, kind=k)):.2f}" for k in KINDS)
        return f"| {name} | **{res.r5(qs):.3f}** | {res.mrr(qs):.3f} | {kinds} |"

    head = f"| option | R@{TOP} | MRR | " + " | ".join(KINDS) + " |\n|---|---|---|" + "---|" * len(KINDS)
    variants: dict[str, Callable[[], np.ndarray]] = {"baseline (the plugin's default)": rep.base}
    for w in (0.02, 0.04, 0.06, 0.08, 0.1, 0.15):
        variants[f"tag w {w}"] = lambda w=w: rep.base() + w * rep.tags
    for k, beta in ((3, 0.05), (3, 0.1), (5, 0.1), (5, 0.2), (10, 0.2)):
        variants[f"prf k {k} b {beta}"] = lambda k=k, beta=beta: rep.prf(rep.base() + 0.04 * rep.tags, k, beta)
    for cjk_only in (False, True):
        variants[f"tag 0.04 + e5 symmetric, {'CJK queries' if cjk_only else 'all queries'}"] = lambda c=cjk_only: (
            rep.symmetric(c) + 0.04 * rep.tags
        )
    for a in (0.2, 0.3, 0.4, 0.5):
        for boost in (0.1, 0.15, 0.2):
            if (a, boost) != (PAIR_MINILM_WEIGHT, retrieval.BOOST):
                variants[f"tag 0.04, MiniLM share {a}, exact boost {boost}"] = lambda a=a, boost=boost: (
                    rep.reweighed(a, boost) + 0.04 * rep.tags
                )
    variants["tag w 0.04, CJK queries only"] = lambda: rep.base() + 0.04 * rep.tags * rep.cjk[:, None]
    for m in (0.3, 0.5, 0.7):
        variants[f"chunks m {m}"] = lambda m=m: rep.base() + np.maximum(0, m * (rep.chunks() - rep.e5_sims))
    results = {name: rep.result(fn()) for name, fn in variants.items()}
    print("\n### Dev half (the only figures used to choose)\n\n" + head)
    for name, res in results.items():
        print(line(name, res, dev))

    def best(prefix: str) -> str:
        return max(
            (n for n in results if n.startswith(prefix)), key=lambda n: (results[n].r5(dev), results[n].mrr(dev))
        )

    tag_best, share_best = best("tag w "), best("tag 0.04, MiniLM share")
    chunk_best = max(
        (n for n in results if n.startswith("chunks")), key=lambda n: (results[n].r5(dev), results[n].mrr(dev))
    )
    tw, cm = float(tag_best.split()[-1]), float(chunk_best.split()[-1])
    both = rep.result(rep.base() + tw * rep.tags + np.maximum(0, cm * (rep.chunks() - rep.e5_sims)))
    results[f"{tag_best} + {chunk_best}"] = both
    print(line(f"{tag_best} + {chunk_best}", both, dev))
    chosen = max(results, key=lambda n: (results[n].r5(dev), results[n].mrr(dev)))
    print(f"\nChosen on dev: {chosen}\n\n### Test half, baseline and the dev choices\n\n" + head)
    for name in dict.fromkeys(["baseline (the plugin's default)", tag_best, share_best, chunk_best, chosen]):
        print(line(name, results[name], test))
    print("\n### All 199\n\n" + head)
    for name in dict.fromkeys(["baseline (the plugin's default)", chosen]):
        print(line(name, results[name], queries))


if __name__ == "__main__":
    main()
