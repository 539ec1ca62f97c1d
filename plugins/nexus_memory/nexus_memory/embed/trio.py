"""The default's vector and all-mpnet-base-v2's: ``minilm+use+mpnet``."""

from __future__ import annotations

import math
from collections.abc import Sequence

from nexus_memory.embed.base import TRIO, TRIO_MPNET_WEIGHT, is_cjk
from nexus_memory.embed.mpnet import MPNetEmbedder
from nexus_memory.embed.pair import UsePairEmbedder
from nexus_memory.threads import beside


class TrioEmbedder:
    """The default's vector and all-mpnet-base-v2's: ``[sqrt(1 - w) * minilm+use, sqrt(w) * mpnet]`` (1664-d),
    ``w`` 0.4. A Japanese or Chinese query is ``[0, use, 0]``, as in the pair (all-mpnet-base-v2 is English). mpnet
    runs in a side thread of its own beside the pair, so a query costs about the slower model's time."""

    name = TRIO
    dimension = UsePairEmbedder.dimension + MPNetEmbedder.dimension
    tag_boost = 0.04  # the pair's, with which the weight was chosen

    def __init__(self, mpnet_weight: float = TRIO_MPNET_WEIGHT) -> None:
        self.pair, self.mpnet = UsePairEmbedder(), MPNetEmbedder()
        self.a, self.b = math.sqrt(1.0 - mpnet_weight), math.sqrt(mpnet_weight)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        pending = beside("mpnet", self.mpnet.embed, texts)
        pair = self.pair.embed(texts)
        return self._join(pair, pending.result())

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        english = [i for i, t in enumerate(texts) if not is_cjk(t)]
        pending = beside("mpnet", self.mpnet.embed, [texts[i] for i in english]) if english else None
        pair = self.pair.embed_query(texts)
        mpnet = dict(zip(english, pending.result(), strict=True)) if pending else {}
        zero = [0.0] * MPNetEmbedder.dimension
        return [
            [self.a * x for x in pair[i]] + ([self.b * x for x in mpnet[i]] if i in mpnet else zero)
            for i in range(len(texts))
        ]

    def query_scale(self, text: str) -> float:
        # A CJK query's vector is [0, use, 0]: its cosine with a stored vector is a * pair's scale * cos_use.
        return self.a * self.pair.query_scale(text) if is_cjk(text) else 1.0

    def _join(self, pair: list[list[float]], mpnet: list[list[float]]) -> list[list[float]]:
        return [[self.a * x for x in p] + [self.b * x for x in m] for p, m in zip(pair, mpnet, strict=True)]
