"""The server's heap (glibc): fewer malloc arenas, and freed memory handed back to the system after loading.

glibc gives each thread that allocates an arena of its own, up to eight per core, and memory freed in one arena is
reused only there: a server whose worker threads (anyio's, a plugin's, onnxruntime's) each load or serve a little
keeps the high-water mark of every arena resident. Two arenas, set before any thread starts, keep that bounded.
Loading a model frees far more than it keeps (onnxruntime's graph optimisation: ~70 MB for MiniLM), and glibc
keeps most of that in its heap until ``malloc_trim`` returns it. Elsewhere (macOS, musl) both do nothing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import sys

M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)
ARENAS = 2

log = logging.getLogger("nexus")


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if sys.platform != "linux":
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim  # noqa: B018 (glibc only: musl has no malloc_trim)
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` malloc arenas in this process; call it before threads start. Whether it applied."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1)


def release_freed() -> bool:
    """Hand the memory freed so far back to the system (after a model loaded, or a large batch)."""
    libc = _glibc()
    return bool(libc is not None and libc.malloc_trim(0))
