"""Where the pages of an export that were handed out ended, so that the next page starts where its previous one
ended though memories or links were deleted in between.

A page is asked for by its first line (``export_memories(offset=N)``, ``memory://export?offset=N``): line N of the
export as it is now. Chroma keeps records in the order they were added, and a memory deleted before line N moves every
later one a line up, so the next page would skip as many memories as were deleted before it (links likewise). So the
page that ended at N is remembered with the deletions counted by then, and the page asked for at N starts that many
lines earlier: a few lines come twice (an import skips them), none is skipped. What is added after its part of the
export was read is not in it, as with any export made while the store is written to.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

REORDERED = 1 << 40  # deletions counted when a reindex rewrites the collection in another order: pages start over
KEEP = 1024  # page ends remembered (a few per export being paged through)
SECONDS = 3600.0  # and for this long


@dataclass(frozen=True)
class Deletions:
    """What the store held and had deleted at one moment."""

    memories: int  # memories held
    deleted: int  # memories deleted so far (by this process)
    links_deleted: int


@dataclass(frozen=True)
class _Mark:
    then: Deletions
    at: float


class PageEnds:
    def __init__(self) -> None:
        self._ends: OrderedDict[int, list[_Mark]] = OrderedDict()
        self._lock = threading.Lock()

    def ended(self, end: int, then: Deletions) -> None:
        """A page handed out ended before line ``end``, read with the store as ``then`` (read before the page)."""
        with self._lock:
            self._ends.setdefault(end, []).append(_Mark(then, time.monotonic()))
            self._ends.move_to_end(end)
            while len(self._ends) > KEEP:
                self._ends.popitem(last=False)

    def start(self, offset: int, now: Deletions) -> int:
        """The line a page asked for at ``offset`` starts at: as many lines earlier as were deleted before it
        since a page ended there (the earliest, when several did); ``offset`` when none is remembered."""
        with self._lock:
            oldest = time.monotonic() - SECONDS
            marks = [m for m in self._ends.get(offset, []) if m.at >= oldest]
        return min((_moved(offset, m.then, now) for m in marks), default=offset)


def _moved(offset: int, then: Deletions, now: Deletions) -> int:
    if offset - 1 < then.memories:  # it ended among the memories (line n is memory n - 1)
        return max(1, offset - (now.deleted - then.deleted))
    link = max(0, offset - 1 - then.memories - (now.links_deleted - then.links_deleted))
    if now.deleted - then.deleted >= REORDERED:
        return 1
    return 1 + now.memories + link
