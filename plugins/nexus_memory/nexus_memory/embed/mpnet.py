"""all-mpnet-base-v2 as an embedder (English, 768-d); ``mpnet_model`` builds and runs the model."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from nexus_memory.embed.base import BATCH, EmbedderError, _OneModel
from nexus_memory.embed.mpnet_model import INSTALL, ModelMissing, MPNet, cache_folder, installed

__all__ = ["INSTALL", "MPNetEmbedder", "mpnet_available"]


def mpnet_available() -> bool:
    """Whether the five packages that carry all-mpnet-base-v2 are installed (``mpnet.INSTALL``)."""
    return installed()


class MPNetEmbedder(_OneModel):
    """all-mpnet-base-v2 (English, 768-d, int8 on onnxruntime, one thread; ``mpnet_model``); queries and memories
    alike."""

    name = "mpnet"
    dimension = 768
    _lock = threading.Lock()

    @classmethod
    def _make(cls) -> Any:
        try:
            return MPNet(threads=1)
        except ModelMissing as exc:
            raise EmbedderError(f"embedder 'mpnet': {exc}") from None
        except OSError as exc:  # a full disk or an unwritable cache folder while building it
            raise EmbedderError(
                f"embedder 'mpnet': could not build its model in {cache_folder()}: {exc.strerror or exc}"
            ) from None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._model if self._model is not None else self._load()
        return [
            row
            for start in range(0, len(texts), BATCH)
            for row in model.embed(list(texts[start : start + BATCH])).astype("float32").tolist()
        ]
