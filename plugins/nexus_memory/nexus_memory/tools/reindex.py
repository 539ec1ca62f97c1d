"""``reindex_memories``: ``nexus memory reindex`` in the running server, without stopping it (``nexus_memory.reindex``).

It is its own category, off by default: it changes no memory (ids, content, times and links stay), so ``delete`` would
be the wrong grant, but it is minutes of CPU in the server every client shares, which the user should decide on.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from nexus_core import ToolError
from nexus_memory.embed import configured
from nexus_memory.models import Reindexed
from nexus_memory.reindex import reindex_in_server
from nexus_memory.runtime import Runtime
from nexus_memory.service import MemoryService
from nexus_memory.store import recipe_for


def reindexed(service: MemoryService, rt: Runtime, force: bool, stop: threading.Event) -> Reindexed:
    if not rt.reindexing.acquire(blocking=False):
        raise ToolError("a reindex is already running in this server: wait for its answer")
    try:
        started = time.monotonic()
        store = service.store
        store.open()
        before = store.embedder.name
        target, recipe = configured(rt.config.embedder), recipe_for(rt.config.sentences)
        memories, done = reindex_in_server(store, target, recipe, force, stop)
        return Reindexed(
            memories=memories,
            re_embedded=done,
            seconds=round(time.monotonic() - started, 2),
            embedder=store.embedder.name,
            embedded_text=store.recipe,
            previous_embedder=before,
        )
    finally:
        rt.reindexing.release()


async def reindex_memories(rt: Runtime, force: bool = False) -> Reindexed:
    """Re-embed every memory with the configured embedder and text recipe (after changing embedder or sentences),
    in this server: recall keeps using the old vectors until the new ones are complete. Heavy: minutes on a large
    store. force: re-embed even when the collection already uses them."""
    stop = threading.Event()
    work = partial(rt.run_sync, lambda service: reindexed(service, rt, force, stop))
    try:
        # abandoned on cancel: the call answers at once, the worker stops at its next batch and deletes what it made
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        stop.set()
        raise


TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (
        reindex_memories,
        {"category": "reindex", "title": "Reindex memories", "destructive": False, "idempotent": True}
        | {"keywords": "re-embed, change the embedding model, rebuild vectors"},
    ),
]
