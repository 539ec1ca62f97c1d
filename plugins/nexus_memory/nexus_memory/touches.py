"""``last_recalled_at``, written in the background: recall stays read-mostly.

An embedded Chroma update costs 20-30 ms, which a recall would otherwise wait for (at 3k memories: recall p50 17 ->
48 ms), and one per recall in the background still slowed the recalls beside it. So a worker thread writes the
stamps in one batch per ``delay`` seconds; day resolution is all the age penalty needs.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict

from nexus_memory.fields import now
from nexus_memory.store import ChromaStore, Record
from nexus_memory.threads import TOUCH, Workers

log = logging.getLogger("nexus.memory")

TOUCH_DELAY = 30.0  # seconds between the batched writes of last_recalled_at


class Touches:
    """The stamps queued for the memories recalled, and the thread that writes them."""

    def __init__(self, store: ChromaStore, workers: Workers) -> None:
        self.store = store
        self.workers = workers
        self.delay = TOUCH_DELAY
        self._touches: dict[str, str] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._stop = threading.Event()

    def queue(self, records: list[Record]) -> None:
        """Queue ``last_recalled_at`` for the recalled memories, at most once a day each."""
        stamp = now()
        stale = [r.id for r in records if r.last_recalled_at[:10] != stamp[:10]]
        if not stale or self._closing or self.workers.stopped:
            return
        with self._lock:
            self._touches.update(dict.fromkeys(stale, stamp))
            if self._thread is None:
                try:
                    self._thread = self.workers.thread(TOUCH, self._loop, self._stopping, timeout=10)
                except RuntimeError:  # the service is closing
                    return
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._stop.wait(self.delay)  # gather the recalls of the next seconds into one write
            self._wake.clear()
            self.flush()
            if self._closing:
                return

    def _stopping(self) -> None:
        """Write what is queued, then end (``Workers.stop`` waits for it)."""
        self._closing = True
        self._stop.set()
        self._wake.set()

    def flush(self) -> None:
        """Write the queued ``last_recalled_at`` stamps (a memory deleted meanwhile is skipped, never recreated)."""
        with self._lock:
            pending, self._touches = self._touches, {}
        by_stamp: dict[str, list[str]] = defaultdict(list)
        for mid, stamp in pending.items():
            by_stamp[stamp].append(mid)
        try:
            with self.store.write_lock:
                for stamp, ids in by_stamp.items():
                    self.store.touch(list(self.store.get(ids)), stamp)
        except Exception as exc:  # a freshness stamp is not worth failing anything for
            log.warning("could not record when memories were recalled: %s", exc)
