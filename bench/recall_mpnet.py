"""all-mpnet-base-v2 beside the default (issue 16, eighth round): its weight chosen on the pooled dev halves.

    .venv/bin/python bench/recall_mpnet.py --cache /tmp/rc              # both sets' dev halves, then the choice on test
    .venv/bin/python bench/recall_mpnet.py --cache /tmp/rc --dev-only

The replica of the default (``recall_ideas.Replica.knobs``: MiniLM and USE 0.5 each, USE alone for a Japanese or
Chinese query, the clause pieces' lift 0.25, the exact-term and tag boosts, the penalties, the filters) with
all-mpnet-base-v2 (``nexus_memory.embedders.MPNetEmbedder``, the int8 model the plugin builds) mixed in for English
queries: ``(1 - w) * pair + w * mpnet``, for whole texts and pieces alike. Each variant is scored on the dev halves
of set A and set B together; the best (recall@5, then MRR) is then printed on the test halves with the default.
The default changes only for a gain of at least 2 dev queries (set B's protocol, bench/recall/README.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from recall_eval import KINDS, SET, TOP, Cache, Query, Result, load_set, pick
from recall_ideas import A, Replica

from nexus_memory.embedders import TRIO_MPNET_WEIGHT, MPNetEmbedder
from nexus_memory.store import SENTENCES_RECIPE

WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6)
DEFAULT = "the default (minilm+use, sentences)"


class MPNet:
    name = "mpnet-int8"  # the cache key: the plugin's int8 model, not the full-precision one

    def __init__(self) -> None:
        self.model = MPNetEmbedder()

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed(texts)

    embed_query = embed


class WithMPNet:
    """One set's replica and its all-mpnet-base-v2 cosines, whole texts and pieces."""

    def __init__(self, rep: Replica, model: MPNet) -> None:
        self.rep = rep
        q = rep.cache.get(model, rep.qtexts, True)
        self.whole = q @ rep.cache.get(model, [r.text(SENTENCES_RECIPE) for r in rep.records], False).T
        flat, self.owner = rep._pieces()
        self.pieces = q @ rep.cache.get(model, flat, False).T
        self.m_pieces = rep.m_q @ rep.cache.get(rep.mini, flat, False).T
        self.u_pieces = rep.u_q @ rep.cache.get(rep.use, flat, False).T

    def score(self, w: float) -> np.ndarray:
        """The default with ``w`` of all-mpnet-base-v2 for English queries (a CJK query keeps USE alone)."""
        rep = self.rep

        def mix(m: np.ndarray, u: np.ndarray, p: np.ndarray) -> np.ndarray:
            return np.where(rep.cjk, u, (1 - w) * (A * m + (1 - A) * u) + w * p)

        whole = mix(rep.m, rep.u, self.whole)
        piece = mix(self.m_pieces, self.u_pieces, self.pieces)
        best = np.full(whole.shape, -np.inf)
        np.maximum.at(best.T, self.owner, piece.T)
        return whole + 0.25 * np.maximum(0.0, best - whole) + rep.extra()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=None)
    parser.add_argument("--dev-only", action="store_true")
    args = parser.parse_args()
    cache, model = Cache(args.cache), MPNet()
    sets = []
    for path in (SET, SET.parent / "recall_set_b.json"):
        records, queries, _, supersedes = load_set(0, path)
        sets.append(WithMPNet(Replica(records, queries, supersedes, cache), model))
    variants: dict[str, Callable[[WithMPNet], np.ndarray]] = {DEFAULT: lambda s: s.rep.knobs()}
    variants |= {f"+ mpnet w {w}": lambda s, w=w: s.score(w) for w in WEIGHTS}
    results = {name: Result(name, {}) for name in variants}
    for s in sets:
        for name, score in variants.items():
            results[name].ranks.update(s.rep.result(score(s)).ranks)
    queries: list[Query] = [q for s in sets for q in s.rep.queries]
    dev, test = pick(queries, "dev"), pick(queries, "test")
    head = f"| variant | R@{TOP} | MRR | " + " | ".join(KINDS) + " |\n|---|---|---|" + "---|" * len(KINDS)

    def line(name: str, qs: list[Query]) -> str:
        res = results[name]
        kinds = " | ".join(f"{res.r5(pick(qs, kind=k)):.2f}" for k in KINDS)
        return f"| {name} | **{res.r5(qs):.3f}** | {res.mrr(qs):.3f} | {kinds} |"

    print(f"\n### Dev halves of sets A and B, {len(dev)} queries (the only figures used to choose)\n\n{head}")
    for name in results:
        print(line(name, dev))
    chosen = max(results, key=lambda n: (results[n].r5(dev), results[n].mrr(dev)))
    gain = round((results[chosen].r5(dev) - results[DEFAULT].r5(dev)) * len(dev))
    print(f"\nChosen on dev: {chosen} ({gain:+d} dev queries against the default)")
    if args.dev_only:
        return
    shipped = f"+ mpnet w {TRIO_MPNET_WEIGHT}"  # the plugin's weight, chosen at full precision (bench/RESULTS.md)
    for half, qs in (("Test halves", test), (f"All {len(queries)}", queries)):
        print(f"\n### {half}: the default, the dev choice and the plugin's weight\n\n{head}")
        for name in dict.fromkeys([DEFAULT, chosen, shipped]):
            print(line(name, qs))


if __name__ == "__main__":
    main()
