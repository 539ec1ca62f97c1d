"""The models, loaded as the shared server's process starts (the core's ``nexus.preload`` entry point).

A cold start's first ``store_memory`` waits for the SDK's import and the host's build (~1.2 s, all of it holding
the GIL), then for Chroma and both models. Most of loading the models releases the GIL (onnxruntime building
MiniLM's session, hashing the model files, USE's arrays), so they load here, beside the SDK's import, on the core
it leaves idle; the warm-up (``runtime``) then finds them loaded. The cyclic garbage collector stays off meanwhile
(``nexus_core.hold_gc``). The models are process-wide (``embed``): any host
in the process shares them. Only the embedder the config names is loaded, and nothing when ``warm_up`` is off.
This module imports neither the SDK nor the plugin's tools.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from nexus_core import hold_gc
from nexus_memory.embed.base import USE_PAIR
from nexus_memory.threads import PRELOAD

_started: list[threading.Thread] = []


def start(table: Mapping[str, Any]) -> None:
    """Load the models of the embedder ``[plugins.memory]`` (``table``, as written) names, in a thread of its own."""
    if table.get("warm_up", True) is False:
        return
    # As MemoryConfig reads it: the config's embedder, else 002's EXOCORTEX_EMBEDDING_MODEL, else the default.
    name = table.get("embedder") or os.environ.get("EXOCORTEX_EMBEDDING_MODEL", "").strip() or USE_PAIR
    if not isinstance(name, str):
        return
    # Not a daemon: an interpreter that exits waits for it rather than unload onnxruntime under a session being built.
    thread = threading.Thread(target=_load, args=(name, hold_gc()), name=PRELOAD)
    _started.append(thread)
    thread.start()


def wait() -> None:
    """Until the models this process began loading here are loaded (or failed to): before anything else imports
    numpy (two threads importing it at once can see it half-initialised), and before the interpreter exits."""
    for thread in _started:
        thread.join()


def _load(name: str, release_gc: Callable[[], None]) -> None:
    try:
        import numpy.typing  # noqa: F401  # first, alone in this thread (see ``wait``)

        from nexus_memory.embed import configured

        with contextlib.suppress(Exception):  # the warm-up loads them again and reports what fails
            configured(name, warn=False).embed(["warm-up"])
    finally:
        release_gc()
