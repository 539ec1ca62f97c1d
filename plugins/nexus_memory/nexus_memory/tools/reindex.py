"""``reindex_memories``: ``nexus memory reindex`` in the running server, without stopping it (``nexus_memory.reindex``).

It is its own category, off by default: it changes no memory (ids, content, times and links stay), so ``delete`` would
be the wrong grant, but it is minutes of CPU in the server every client shares, which the user should decide on.
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import suppress
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from nexus_core import ToolError
from nexus_memory.embed import configured
from nexus_memory.models import Reindexed
from nexus_memory.reindex import reindex_in_server
from nexus_memory.runtime import Runtime
from nexus_memory.service import MemoryService
from nexus_memory.store import recipe_for
from nexus_memory.threads import REINDEX

NICENESS = 10  # below the calls being served, as the sentence writer (Linux applies it per thread)
STOP_WAIT = 30.0  # seconds the server's stop waits for it: it stops at its next batch (about a second)


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
    stop, finished, loop = threading.Event(), anyio.Event(), anyio.lowlevel.current_token()
    outcome: list[Any] = []
    call = contextvars.copy_context()  # the call's: its progress reaches its client, its session's grants apply

    def work() -> None:
        try:
            outcome.append(call.run(rt.run_sync, lambda service: reindexed(service, rt, force, stop)))
        except BaseException as exc:
            outcome.append(exc)
        finally:
            with suppress(Exception):  # the server stopped: nobody waits
                anyio.from_thread.run_sync(finished.set, token=loop)

    try:  # a thread of the service's: the server's stop stops it (at its next batch) before the store closes
        rt.workers.thread(REINDEX, work, stop.set, timeout=STOP_WAIT, niceness=NICENESS)
    except RuntimeError:
        raise ToolError("the memory plugin is stopping: reindex when it has started again") from None
    try:
        await finished.wait()
    except anyio.get_cancelled_exc_class():  # the client cancelled: it stops at its next batch, deletes what it made
        stop.set()
        raise
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]  # type: ignore[no-any-return]


TOOLS: list[tuple[Any, dict[str, Any]]] = [
    (
        reindex_memories,
        {"category": "reindex", "title": "Reindex memories", "destructive": False, "idempotent": True}
        | {"keywords": "re-embed, change the embedding model, rebuild vectors"},
    ),
]
