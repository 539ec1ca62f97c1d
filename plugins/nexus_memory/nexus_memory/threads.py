"""Every background thread of the plugin: started, named and stopped here.

One service's threads (``Workers``), each started on first need and stopped by ``Workers.stop``, in the order
they were started:

- ``nexus-memory-warm-up``: opens the store and loads the models as the server starts (``runtime``);
- ``nexus-memory-models``: loads the configured embedder's models meanwhile, beside Chroma's import (``runtime``);
- ``nexus-memory-recall``: two threads that ask for the sentence vectors nearest a query beside the candidates'
  query (``recall.pipeline``);
- ``nexus-memory-touch``: writes ``last_recalled_at`` in one batch per ``touch_delay`` (``touches``);
- ``nexus-memory-parts``: embeds and writes the sentence vectors of new memories (``store.writer``);
- ``nexus-memory-reindex``: one per ``reindex_memories`` call, below the calls being served (``tools.reindex``);
- ``nexus-memory-release``: hands the memory the calls freed back to the system (``released``).

And ``nexus-memory-preload``, once per process, which loads the configured embedder's models as the shared
server's process starts (``preload``); and one per process for each model a pair or trio runs beside another
(``nexus-minilm``, ``nexus-mpnet``): ``beside``. The calls of every host in the process queue there rather than
crowd the two cores; they live as long as the process (``concurrent.futures`` joins them at exit).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

PRELOAD = "nexus-memory-preload"
WARM_UP = "nexus-memory-warm-up"
MODELS = "nexus-memory-models"
RECALL = "nexus-memory-recall"
TOUCH = "nexus-memory-touch"
PARTS = "nexus-memory-parts"
REINDEX = "nexus-memory-reindex"
RELEASE = "nexus-memory-release"


@dataclass
class _Started:
    name: str
    join: Callable[[], None]  # signals it to stop (its owner's events), then waits for it


class Workers:
    """The background threads of one service (and its runtime)."""

    def __init__(self) -> None:
        self._started: list[_Started] = []
        self._lock = threading.Lock()
        self.stopped = False  # then nothing new starts

    def _keep(self, started: _Started) -> None:
        with self._lock:
            if self.stopped:
                raise RuntimeError(f"{started.name}: the service is closing")
            self._started.append(started)

    def thread(
        self,
        name: str,
        target: Callable[[], None],
        stop: Callable[[], None],
        timeout: float | None = None,
        niceness: int = 0,
    ) -> threading.Thread:
        """Start ``target`` in a daemon thread; ``stop()`` asks it to end, then ``Workers.stop`` waits ``timeout``
        for it. ``niceness``: below the calls being served (Linux applies it per thread). A ``RuntimeError`` once
        stopped."""

        def run() -> None:
            if niceness and sys.platform == "linux":
                with suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
            target()

        started = threading.Thread(target=run, name=name, daemon=True)

        def join() -> None:
            stop()
            started.join(timeout)

        self._keep(_Started(name, join))  # raises once stopped
        started.start()
        return started

    def pool(self, name: str, workers: int) -> ThreadPoolExecutor:
        """A pool of ``workers`` threads; ``Workers.stop`` waits for the jobs it was given."""
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._keep(_Started(name, lambda: pool.shutdown(wait=True)))
        return pool

    def stop(self) -> None:
        """Stop every thread started here, oldest first (the warm-up before what it may have started); none starts
        after."""
        while True:
            with self._lock:
                self.stopped = True
                if not self._started:
                    return
                first = self._started.pop(0)
            first.join()


# -- the models' side threads, one per model and process ------------------------------------------------------

_thread = threading.local()
_sides: dict[str, ThreadPoolExecutor] = {}
_sides_lock = threading.Lock()


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
