"""Freed memory handed back to the system soon after the calls that freed it.

A store or a recall embeds text (onnxruntime's activations, ~5-50 MB a call) and reads and writes Chroma; glibc
keeps what they free in its heap until ``release_freed`` hands it back, which the shared server does every 30 s.
Under steady calls (bench/soak.py --mixed) its resident memory was then 10-20 MB above what it used. So after
the plugin's calls, and after each batch of the sentence writer (12 sentences free ~15-20 MB), a thread hands it
back, at most once every ``EVERY`` seconds: one takes ~0.5 ms, and the pages it returns are the only ones the next
call faults in again.
"""

from __future__ import annotations

import threading

from nexus_core import release_freed
from nexus_memory.threads import RELEASE, Workers

EVERY = 1.0  # seconds at least between two hand-backs


class Releaser:
    """``after_call()`` after each call (or batch); one thread hands the freed memory back, at most once every
    ``every`` seconds."""

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.every = EVERY
        self._due = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def after_call(self) -> None:
        self._due.set()
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self.workers.stopped:
                    try:
                        self._thread = self.workers.thread(RELEASE, self._run, self._stopping, timeout=5.0)
                    except RuntimeError:  # the service is closing
                        return

    def _run(self) -> None:
        while True:
            self._due.wait()
            if self._stop.is_set():
                return
            self._due.clear()
            release_freed()
            if self._stop.wait(self.every):  # the calls of the next second are handed back together
                return

    def _stopping(self) -> None:
        self._stop.set()
        self._due.set()
