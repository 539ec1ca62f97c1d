"""The cyclic garbage collector, held off while a server starts.

Starting builds a few hundred thousand objects that live as long as the server: the SDK's, numpy's and Chroma's
modules, the tools' schemas, the models. Each full collection walks all of them and finds next to nothing: with the
collector running, a cold start spent ~0.2 s more CPU (~9%) before its first store could be answered
(bench/RESULTS.md). So what builds a host (``assembly``), the shared server's process from its start
(``serve.shared_main``) and a plugin's start-up work (the memory plugin's early loading and warm-up) each hold it
off; once the last hold is let go, what was built is frozen out of it (``gc.freeze``: never walked again) and it
runs again. What starting left as garbage (cycles, 1-2 MB) would then stay frozen for good: ``TIDY_AFTER`` seconds
later, once, it is collected (a full collection, ~0.1 s, off the first calls' path) and the rest frozen again.
Holds still kept after ``LIMIT`` seconds (a warm-up stuck on a slow disk) are let go then, so garbage cannot pile
up for good; a collector someone else turned off is left alone.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

LIMIT = 120.0  # seconds
TIDY_AFTER = 10.0  # seconds

_lock = threading.Lock()
_holds = 0
_round = 0  # one per time the collector was held off: a late release of an expired round counts for nothing
_timer: threading.Timer | None = None


def hold_gc() -> Callable[[], None]:
    """Hold the cyclic garbage collector off until the function returned is called (once; again does nothing)."""
    global _holds, _timer
    with _lock:
        if _holds == 0:
            if not gc.isenabled():
                return lambda: None
            gc.disable()
            if _timer is not None:  # the last round's tidying: this round's will do
                _timer.cancel()
            _timer = threading.Timer(LIMIT, _expire, args=(_round,))
            _timer.daemon = True
            _timer.start()
        _holds += 1
        held = _round
    released = threading.Event()

    def release() -> None:
        global _holds
        with _lock:
            if released.is_set() or held != _round:
                return
            released.set()
            _holds -= 1
            if _holds == 0:
                _resume()

    return release


def _expire(held: int) -> None:
    global _holds
    with _lock:
        if held == _round and _holds:
            _holds = 0
            _resume()


def _resume() -> None:
    """With ``_lock`` held: freeze what was built, then collect again; tidy up later."""
    global _round, _timer
    if _timer is not None:
        _timer.cancel()
    _round += 1
    gc.freeze()
    gc.enable()
    _timer = threading.Timer(TIDY_AFTER, _tidy, args=(_round,))
    _timer.daemon = True
    _timer.start()


def _tidy(done: int) -> None:
    """Collect the garbage starting left (frozen with the rest), then freeze what lives on."""
    with _lock:
        if done != _round or _holds or not gc.isenabled():
            return
    gc.unfreeze()
    gc.collect()
    gc.freeze()
