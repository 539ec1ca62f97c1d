"""What every embedder shares: the protocol, the query helpers, the built-in names and weights."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger("nexus.memory")

BATCH = 32
PAIR = "minilm+e5"
USE_PAIR = "minilm+use"
TRIO = "minilm+use+mpnet"
TRIO_MPNET_WEIGHT = 0.4  # chosen on the pooled dev halves of both labeled sets among 0.2-0.6 (bench/RESULTS.md)
USE_PAIR_MINILM_WEIGHT = 0.5  # chosen on the dev half of the labeled set (bench/recall_models.py: 0.5 and 0.6 tie)
PAIR_MINILM_WEIGHT = 0.3  # chosen on the dev half of the labeled set (0.2-0.6 tie on recall; 0.3 wins on MRR)
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


class EmbedderError(Exception):
    """An embedder that cannot be found, loaded or that disagrees with a collection."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def like_lengths(texts: Sequence[str]) -> Iterator[list[int]]:
    """The indexes of ``texts`` in batches of ``BATCH``, shortest first. A batch is padded to its longest text,
    so texts of like length together compute far less (tool search's 344 short and long texts: 16 s -> 6 s on this
    machine); the vectors are the same, bit for bit."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), BATCH):
        yield order[start : start + BATCH]


def embed_query(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Query vectors: ``embed_query`` where the embedder has one, ``embed`` otherwise."""
    method = getattr(embedder, "embed_query", None)
    return method(texts) if callable(method) else embedder.embed(texts)


def query_scale(embedder: Embedder, text: str) -> float:
    """What the similarities of this query's vector are divided by, so that they stay cosines (1 elsewhere)."""
    method = getattr(embedder, "query_scale", None)
    return float(method(text)) if callable(method) else 1.0


def tag_boost(embedder: Embedder) -> float:
    """What a memory gains when the query names one of its tags, for this embedder (``recall.scoring.TAG_BOOST``)."""
    return float(getattr(embedder, "tag_boost", 0.0))


def is_cjk(text: str) -> bool:
    """A Japanese or Chinese text: two or more kana, hanzi or kanji."""
    return len(_CJK_CHAR.findall(text)) >= 2


class _OneModel:
    """A model loaded once per process (each subclass has its own ``_lock``), on first use or by the warm-up."""

    name: str
    _lock: threading.Lock
    _model: Any = None

    @classmethod
    def _make(cls) -> Any:
        raise NotImplementedError

    @classmethod
    def _load(cls) -> Any:
        with cls._lock:
            if cls._model is None:
                started = time.perf_counter()
                cls._model = cls._make()
                log.debug("loaded the %s model in %.2f s", cls.name, time.perf_counter() - started)
            return cls._model
