"""The links between memories: ``<collection>_links``, one record per link (with a constant 1-d vector, since
Chroma requires one), and which memories supersede which, read once and kept up to date by every write."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from nexus_memory.store.records import LinkRecord

LINK_VECTOR = [1.0]
PAGE = 1000  # links per Chroma get when reading them all


class Owner(Protocol):
    """What the links need of the store that owns them (``ChromaStore``)."""

    @property
    def links_collection(self) -> Any: ...

    def will_undo(self, inverse: Callable[[], None]) -> None: ...


class Links:
    """A store's links; every write is undone with the store's ``atomic()`` block it runs in."""

    def __init__(self, store: Owner) -> None:
        self.store = store
        self._superseded: dict[str, set[str]] | None = None  # target -> the memories that supersede it
        self.deleted = 0  # links deleted by this process (``paging``)

    @property
    def collection(self) -> Any:
        return self.store.links_collection

    def forget(self) -> None:
        """Read the links again on next use (a failed write may have undone changes)."""
        self._superseded = None

    def superseded_by(self, ids: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``ids`` that another memory supersedes, those memories."""
        if self._superseded is None:
            found: dict[str, set[str]] = {}
            for lk in self.all():
                if lk.relation_type == "supersedes":
                    found.setdefault(lk.target_id, set()).add(lk.source_id)
            self._superseded = found
        return {i: sorted(self._superseded[i]) for i in ids if self._superseded.get(i)}

    def _note(self, links: Iterable[LinkRecord], present: bool) -> None:
        if self._superseded is None:
            return
        for lk in links:
            if lk.relation_type == "supersedes":
                sources = self._superseded.setdefault(lk.target_id, set())
                (sources.add if present else sources.discard)(lk.source_id)

    def put(self, link: LinkRecord) -> bool:
        """Add or refresh a link; True when it is new."""
        old = self.collection.get(ids=[link.id], include=["metadatas"])["metadatas"]
        if old:
            before = LinkRecord.from_meta(old[0])
            self.store.will_undo(lambda: self._upsert([before]))
        else:
            self.store.will_undo(lambda: self.collection.delete(ids=[link.id]))
        self._upsert([link])
        self._note([link], present=True)
        return not old

    def _upsert(self, links: list[LinkRecord]) -> None:
        self.collection.upsert(
            ids=[lk.id for lk in links],
            embeddings=[LINK_VECTOR] * len(links),
            metadatas=[lk.metadata() for lk in links],
            documents=[""] * len(links),
        )

    def of(self, memory_id: str) -> list[LinkRecord]:
        """The links from or to a memory, oldest first."""
        where = {"$or": [{"source_id": memory_id}, {"target_id": memory_id}]}
        got = self.collection.get(where=where, include=["metadatas"])
        return sorted((LinkRecord.from_meta(m) for m in got["metadatas"]), key=lambda lk: lk.created_at)

    def remove(self, links: Iterable[LinkRecord]) -> int:
        gone, collection = list(links), self.collection
        if gone:
            self.store.will_undo(lambda: self._upsert(gone))
            collection.delete(ids=[lk.id for lk in gone])
            self.deleted += len(gone)
            self._note(gone, present=False)
        return len(gone)

    def all(self) -> list[LinkRecord]:
        out: list[LinkRecord] = []
        offset = 0
        while True:
            got = self.collection.get(limit=PAGE, offset=offset, include=["metadatas"])
            out += [LinkRecord.from_meta(m) for m in got["metadatas"]]
            if len(got["ids"]) < PAGE:
                return out
            offset += PAGE

    def count(self) -> int:
        return int(self.collection.count())
