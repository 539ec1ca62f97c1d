"""The sentence vectors of new and changed memories, embedded and written in the background.

With the sentences recipe a memory of several sentences has one vector per sentence (see the store). Embedding
and writing them in the call doubled a store's time (p50/p95 at 10k: ~26/45 -> ~55/110 ms), so a store writes
the memory with a mark (``PENDING`` in its metadata) and hands its id here; one thread embeds the sentences
outside the write lock, then, holding it, writes those of the memories still pending with the same sentences and
clears their marks. Until then a memory simply gets no lift from its sentences. The mark is durable: a process
stopped or killed first leaves it, and the next one queues the marked memories when it opens the store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext

from nexus_core import release_freed
from nexus_memory.store.chroma import ChromaStore
from nexus_memory.store.records import one_line
from nexus_memory.threads import PARTS, Workers, in_background

log = logging.getLogger("nexus.memory")

DELAY = 1.0  # seconds: a wake-up waits this long, so the writes of the next moments share one batch
BATCH = 4  # memories per embedding and write: the writer looks for a pause in the calls between two batches
NICENESS = 10  # below the calls being served (Linux applies it per thread)
# The writer embeds only once no store or recall has been served for QUIET seconds: a batch beside a call takes
# its CPU and, for its two Chroma writes (~40 ms at 10k), the write lock (store p95 at 10k, back to back: ~40 ->
# 80-110 ms while it writes). Under calls without a pause it writes one batch every PATIENCE seconds, so a bulk
# import keeps its pace and the rest waits for the pause after it (a recall whose candidates are still pending
# has them written first: see MemoryService).
QUIET = 0.25
PATIENCE = 10.0


class PartsWriter:
    """A queue of memory ids and the one thread that writes their sentence vectors."""

    def __init__(
        self, store: ChromaStore, workers: Workers | None = None, freed: Callable[[], object] = release_freed
    ) -> None:
        """``freed``: called after each batch, to hand back what its embedding freed (the service's ``Releaser``)."""
        self.store = store
        self.freed = freed
        self.workers = workers or Workers()
        self.delay = DELAY
        self._queue: dict[str, None] = {}  # insertion-ordered, without duplicates
        self._lock = threading.Condition()
        self._writing: set[str] = set()  # the batch being embedded and written
        self._wake = threading.Event()
        self._hurry = threading.Event()  # skip the delay: drain() waits, the stop stops
        self._hurried = 0  # drain() calls waiting
        self._since = 0.0  # when the queue last went from empty to not, or a batch was forced (time.monotonic)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._resumed = False
        self.quiet, self.patience = QUIET, PATIENCE
        self._serving = 0  # calls being served now
        self._last_call = 0.0  # when the last one ended (time.monotonic)

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Mark a call being served: the writer waits for a pause in them (``QUIET``), leaving them the cores."""
        with self._lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1
                self._last_call = time.monotonic()

    def put(self, ids: Iterable[str]) -> None:
        with self._lock:
            if not self._queue:
                self._since = time.monotonic()
            self._queue.update(dict.fromkeys(ids))
            if not self._queue or self._stop.is_set() or self.workers.stopped:
                return
            if self._thread is None:
                self._thread = self.workers.thread(PARTS, self._run, self._stopping, timeout=10.0, niceness=NICENESS)
        self._wake.set()

    def resume(self) -> None:
        """Queue the memories a process that stopped first left pending (once; the warm-up or the first call)."""
        if self._resumed:
            return
        try:
            pending = self.store.parts.pending()
        except Exception as exc:  # tried again at the next call
            log.warning("memory: cannot look for pending sentence vectors: %s", one_line(exc))
            return
        self._resumed = True
        if pending:
            log.info("memory: %d memories' sentence vectors still to write", len(pending))
            self.put(pending)

    def drain(self, ids: Iterable[str] | None = None, timeout: float | None = None) -> bool:
        """Wait until the queue is written, or only ``ids``, which go first (now, not after the delay); False if
        ``timeout`` passed first. A recall waits for its candidates, not for a bulk import queued before them."""
        with self._lock:
            if ids is None:
                wanted = None
            else:
                wanted = {i for i in ids if i in self._queue or i in self._writing}
                self._queue = {**dict.fromkeys(i for i in self._queue if i in wanted), **self._queue}
            self._hurried += 1
            self._hurry.set()
        self._wake.set()

        def written() -> bool:
            if wanted is None:
                return not self._queue and not self._writing
            return wanted.isdisjoint(self._queue) and wanted.isdisjoint(self._writing)

        try:
            with self._lock:
                return self._lock.wait_for(written, timeout)
        finally:
            with self._lock:
                self._hurried -= 1
                if not self._hurried and not self._stop.is_set():
                    self._hurry.clear()

    def _stopping(self) -> None:
        """Stop after the batch being written (``Workers.stop`` waits for it); what is queued stays marked for the
        next start."""
        self._stop.set()
        self._hurry.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._hurry.wait(self.delay)
            self._wake.clear()
            while not self._stop.is_set():
                forced = self._await_pause()
                if not self._write_batch():
                    break
                # What the batch's embedding freed (12 sentences: ~15-20 MB, which glibc keeps otherwise), handed
                # back after the batch rather than after the whole queue: a bulk import's would pile up.
                self.freed()
                if forced:  # the next batch waits for a pause, or for another ``patience``
                    with self._lock:
                        self._since = time.monotonic()

    def _await_pause(self) -> bool:
        """Wait until no call has been served for ``quiet`` seconds (not when hurried), ``patience`` at most since
        the queue filled or the last batch written without a pause; whether that time ran out."""
        while not self._hurry.is_set():
            with self._lock:
                now, give_up = time.monotonic(), self._since + self.patience
                left = self.quiet if self._serving else self._last_call + self.quiet - now
            if left <= 0:
                return False
            if now >= give_up:
                return True
            self._hurry.wait(min(left, give_up - now))
        return False

    def _write_batch(self) -> bool:
        """Write the next batch of the queue; False when it is empty."""
        with self._lock:
            batch = list(self._queue)[:BATCH]
            for mid in batch:
                del self._queue[mid]
            self._writing = set(batch)
            if not batch:
                self._lock.notify_all()
                return False
        try:
            self._write(batch)
        except Exception as exc:  # they stay marked: the next start writes them
            log.warning("memory: sentence vectors not written (%d memories): %s", len(batch), one_line(exc))
        finally:
            with self._lock:
                self._writing = set()
                self._lock.notify_all()
        return True

    def _write(self, ids: list[str]) -> None:
        store = self.store
        texts = {i: r.parts(store.recipe) for i, r in store.get(ids).items() if r.parts_pending}
        unique = list(dict.fromkeys(t for parts in texts.values() for t in parts))
        if not unique:
            return
        with nullcontext() if self._hurry.is_set() else in_background():  # a recall waiting: both cores are its
            vectors = dict(zip(unique, store.embedder.embed(unique), strict=True))  # the slow part, unlocked
        embedded = {i: (parts, [vectors[t] for t in parts]) for i, parts in texts.items() if parts}
        with store.write_lock, store.atomic():
            written = store.parts.write(embedded)
        log.debug("memory: sentence vectors of %d memories written", len(written))
