"""The plugin's state in one host: the service, its warm-up, and how failures reach the client.

Right after start a worker thread opens the store and loads the model (the
warm-up), so neither the handshake nor the first call pays for it; a call that
arrives during the warm-up waits for it to end instead of loading a second
time. Every call runs in a worker thread; whatever fails in it reaches the
client as a tool error with the reason on one line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from nexus_core import PluginContext, ToolError, hold_gc, release_freed
from nexus_memory import preload
from nexus_memory.config import MemoryConfig
from nexus_memory.embed import Embedder, EmbedderError, configured, tag_boost
from nexus_memory.service import MemoryService
from nexus_memory.store import ChromaStore, StoreError, one_line, recipe_for
from nexus_memory.threads import MODELS, WARM_UP, Workers

T = TypeVar("T")

log = logging.getLogger("nexus.memory")

WARM_UP_NICENESS = 10


def _load_models(embedder: Embedder) -> None:
    """Load ``embedder``'s models (process-wide, once); a failure is the warm-up's to report, when it embeds."""
    with contextlib.suppress(Exception):
        embedder.embed(["warm-up"])


def data_dir(ctx: PluginContext) -> Path:
    """Where the store lives: [plugins.memory] data_dir, else 002's EXOCORTEX_DATA_DIR, else the host's default."""
    given = os.environ.get("EXOCORTEX_DATA_DIR", "").strip()
    if ctx.data_dir_configured or not given:
        return ctx.data_dir
    path = Path(given).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def apply_log_level(ctx: PluginContext) -> None:
    """002's EXOCORTEX_LOG_LEVEL sets the memory plugin's own log level (DEBUG, INFO, WARNING or ERROR)."""
    level = os.environ.get("EXOCORTEX_LOG_LEVEL", "").strip().upper()
    if level:
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            ctx.log.warning("EXOCORTEX_LOG_LEVEL = '%s' is not one of DEBUG, INFO, WARNING, ERROR: ignored", level)
            return
        ctx.log.setLevel(level)


class Runtime:
    """The plugin's state for one host: the service, built on first use or by the warm-up."""

    def __init__(self, ctx: PluginContext) -> None:
        self.ctx = ctx
        self.config: MemoryConfig = ctx.config
        apply_log_level(ctx)
        self._service: MemoryService | None = None
        self._lock = threading.Lock()
        self._warm_up: threading.Thread | None = None
        self._warm_error: str | None = None
        self._stopping = threading.Event()
        self.workers = Workers()  # the warm-up's thread, and the service's
        self.reindexing = threading.Lock()  # held by the reindex_memories call under way: one at a time

    def service(self) -> MemoryService:
        with self._lock:
            if self._service is None:
                embedder = configured(self.config.embedder)
                recipe = recipe_for(self.config.sentences)
                store = ChromaStore(
                    data_dir(self.ctx), self.config.collection, embedder, self.config.chroma_url, recipe=recipe
                )
                self._service = MemoryService(store, self.config.stale_days, workers=self.workers)
            return self._service

    def start_warm_up(self) -> None:
        """Open the store and load the models in worker threads, so the first call waits as little as it can
        (once: a server prepares the plugin, then starts it)."""
        if self._warm_up is not None:
            return
        # The cyclic garbage collector stays off until the warm-up ends: it would walk, again and again, the
        # hundreds of thousands of objects the imports and the models build, which all live as long as the process.
        release_gc = hold_gc()
        warm = partial(self._warm, release_gc)
        try:
            # On a busy machine the handshake goes first (nice applies per thread on Linux).
            self._warm_up = self.workers.thread(WARM_UP, warm, self._stopping.set, niceness=WARM_UP_NICENESS)
        except BaseException:
            release_gc()
            raise

    def _warm(self, release_gc: Callable[[], None]) -> None:
        try:
            self._warm_store()
        finally:
            release_gc()

    def _warm_store(self) -> None:
        started = time.perf_counter()
        try:
            preload.wait()  # the models the process began loading as it started (then numpy is imported)
            # numpy first, alone: two threads importing it at once can see it half-initialised (ImportError).
            import numpy.typing  # noqa: F401

            store = self.service().store
            # The configured embedder's models load beside Chroma's import and the store's opening: much of either
            # runs outside the GIL. (A collection made with another embedder adopts it at open: loaded below.)
            models = self.workers.thread(MODELS, partial(_load_models, store.embedder), lambda: None)
            store.open()
            models.join()
            if self._stopping.is_set():  # the server stops already: do not load the model for nothing
                return
            store.embed(["warm-up"])
            store.embed_query("warm-up")
            store.archived_ids()
            store.mirror()  # the collection's copy in this process, read before the first recall
            self.service().parts.resume()  # sentence vectors a stopped process left to write
            if tag_boost(store.embedder):
                store.tag_index()  # a scan of every memory's tags: not on the first recall
            release_freed()  # loading the models freed far more than they keep (~70 MB)
        except Exception as exc:  # the tools report it on every call; the server serves on
            if self._stopping.is_set():  # stopped before it began (its service refused to start threads)
                return
            self._warm_error = str(exc) if isinstance(exc, EmbedderError | StoreError) else one_line(exc)
            log.warning("memory store not ready: %s", self._warm_error)
            return
        log.info("memory store ready: warmed up in the background in %.2f s", time.perf_counter() - started)

    def state(self) -> str:
        """What ``ping`` reports, without waiting for anything."""
        if self._warm_up is not None and self._warm_up.is_alive():
            return "warming up"
        if self._service is not None and self._service.store.is_open:
            return "ready"
        return f"unavailable: {self._warm_error}" if self._warm_error else "not loaded"

    def run_sync(self, fn: Callable[[MemoryService], T]) -> T:
        if self._warm_up is not None:
            # Wait for the warm-up rather than race it: two threads importing numpy at once can see it
            # half-initialised (ImportError), and the model must load once.
            self._warm_up.join()
        try:
            result = fn(self.service())
            self.service().parts.resume()  # without a warm-up: at the first call
            return result
        except ToolError:
            raise
        except (EmbedderError, StoreError) as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # Chroma or the disk failed: say why, and reopen the store at the next call
            log.exception("memory store failure")
            if self._service is not None:
                self._service.store.close()
            raise ToolError(f"the memory store failed: {one_line(exc)}") from exc
        finally:
            if self._service is not None:
                self._service.released.after_call()

    async def run(self, fn: Callable[[MemoryService], T]) -> T:
        return await anyio.to_thread.run_sync(partial(self.run_sync, fn))

    def close(self) -> None:
        # The warm-up first (never leave it loading into an interpreter that exits), then the service's threads.
        self.workers.stop()
        preload.wait()
        self.workers = Workers()  # a call after the close builds a service again, with threads of its own
        if self._service is not None:
            self._service.store.close()
            self._service = None
