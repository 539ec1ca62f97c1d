"""MiniLM and a multilingual model in one vector: ``minilm+e5`` and ``minilm+use`` (the default)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from nexus_memory.embed.base import (
    PAIR,
    PAIR_MINILM_WEIGHT,
    USE_PAIR,
    USE_PAIR_MINILM_WEIGHT,
    Embedder,
    embed_query,
    is_cjk,
)
from nexus_memory.embed.e5 import E5Embedder
from nexus_memory.embed.minilm import MiniLMEmbedder
from nexus_memory.embed.use import UseEmbedder
from nexus_memory.threads import beside


class PairEmbedder:
    """MiniLM and a multilingual model in one vector: ``[sqrt(w) * minilm, sqrt(1 - w) * other]`` (see the module
    doc); a Japanese or Chinese query is ``[0, other]``. e5 by default.

    MiniLM runs in a side thread while the other model runs in the caller's: both release the GIL, so a call
    costs about the slower model's time instead of the sum (the vectors are the same as one after the other)."""

    name = PAIR
    dimension = MiniLMEmbedder.dimension + E5Embedder.dimension
    tag_boost = 0.04  # chosen on the labeled set's dev half (see recall.scoring.TAG_BOOST)

    def __init__(self, minilm_weight: float = PAIR_MINILM_WEIGHT) -> None:
        self.minilm, self.other = MiniLMEmbedder(), self._other()
        self.a, self.b = math.sqrt(minilm_weight), math.sqrt(1.0 - minilm_weight)

    def _other(self) -> Embedder:
        return E5Embedder()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        mini = beside("minilm", self.minilm.embed, texts)
        other = self.other.embed(texts)
        return self._join(mini.result(), other)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        english = [i for i, t in enumerate(texts) if not is_cjk(t)]
        pending = beside("minilm", self.minilm.embed, [texts[i] for i in english]) if english else None
        other = embed_query(self.other, texts)
        mini = dict(zip(english, pending.result(), strict=True)) if pending else {}
        zero = [0.0] * MiniLMEmbedder.dimension
        return [
            [self.a * x for x in mini[i]] + [self.b * x for x in other[i]] if i in mini else zero + other[i]
            for i in range(len(texts))
        ]

    def query_scale(self, text: str) -> float:
        # A CJK query's vector is [0, other]: its cosine with a stored pair vector is sqrt(1 - w) * cos_other.
        return self.b if is_cjk(text) else 1.0

    def _join(self, mini: list[list[float]], other: list[list[float]]) -> list[list[float]]:
        return [[self.a * x for x in m] + [self.b * x for x in o] for m, o in zip(mini, other, strict=True)]


class UsePairEmbedder(PairEmbedder):
    """MiniLM and USE, 0.5 each (896-d), for every platform: on the labeled set it matched ``minilm+e5``'s
    recall at a fraction of its CPU time (``bench/recall_models.py``). The default."""

    name = USE_PAIR
    dimension = MiniLMEmbedder.dimension + UseEmbedder.dimension
    tag_boost = 0.04  # the pair's, with which the weight was chosen

    def __init__(self, minilm_weight: float = USE_PAIR_MINILM_WEIGHT) -> None:
        super().__init__(minilm_weight)

    def _other(self) -> Embedder:
        return UseEmbedder()
