"""An embedded collection, held in this process and searched exactly, so recall asks Chroma nothing.

Each call into embedded Chroma costs ~0.7 ms before any work (a ``count()`` does), and fetching 15 records'
documents and metadata with a query ~1.4 ms more: at 200 memories the two queries of a recall with a named tag
cost 3.6 ms, half of the recall, while scoring 200 vectors with numpy takes ~0.05 ms. At 10k memories numpy scores
every vector in ~1.3 ms, where Chroma's query takes ~3.9 ms, and ~8 ms when it is asked among the memories with a
tag (the tag index's ids) rather than 0.3 ms. Up to ``MIRROR_MAX`` memories the store keeps every record and its
vector here (~5 KB a memory with the default embedder), in Chroma's order, and answers ``query`` and ``containing``
with Chroma's semantics: cosine similarity on normalised vectors (exact, where Chroma's HNSW index is approximate:
see ``HNSW`` in the store), case-sensitive substring for ``$contains``, records in insertion order for a ``get``
with a limit. Up to ``PARTS_MIRROR_MAX`` memories the sentence vectors of the sentences recipe are kept too, by
memory, so ``best_parts`` reads no ``<collection>_parts`` either (Chroma's get by id: ~3.5 ms for 15 candidates
against 0.2), in a file (``rows``), not in the process: Chroma's index holds them in memory already; above, they
are ~4 a memory, and Chroma's index finds the nearest of them.

Only the process that holds an embedded store's lock writes to it, and every write goes through the store,
which updates the mirror after Chroma accepted the write; a failed write closes the store, which drops the
mirror. A store on a Chroma server has none: other processes may write to it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_memory.store.rows import RowFile

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("nexus.memory")

MIRROR_MAX = 20_000  # memories; above, a recall asks Chroma (its index, not a scan of every vector)
PARTS_MIRROR_MAX = 2_000  # memories whose sentence vectors are mirrored too


class Unsupported(Exception):
    """A ``where`` this module does not evaluate: the store asks Chroma instead."""


def allowed(where: dict[str, Any], metas: Sequence[dict[str, Any]]) -> np.ndarray:
    """Which records' metadata satisfies a Chroma ``where`` (the operators the plugin writes), as a mask."""
    import numpy as np  # here, not at import: a server that never recalls never loads numpy

    if len(where) != 1:  # Chroma reads several keys as $and
        return np.logical_and.reduce([allowed({k: v}, metas) for k, v in where.items()])
    key, cond = next(iter(where.items()))
    if key == "$and" and cond:  # each part checks only the records the parts before it allowed
        mask = np.ones(len(metas), dtype=bool)
        for part in cond:
            rows = np.flatnonzero(mask)
            mask[rows] = allowed(part, [metas[i] for i in rows.tolist()])
        return mask
    if key == "$or" and cond:
        return np.logical_or.reduce([allowed(part, metas) for part in cond])
    if key.startswith("$"):
        raise Unsupported(key)
    op, operand = next(iter(cond.items())) if isinstance(cond, dict) and len(cond) == 1 else ("$eq", cond)
    if isinstance(operand, dict):
        raise Unsupported(f"{key}: {cond}")
    if op == "$eq":
        hits = [(v := m.get(key)) is not None and v == operand for m in metas]
    elif op == "$ne":
        hits = [m.get(key) != operand for m in metas]
    elif op == "$contains":
        hits = [isinstance(v := m.get(key), list) and operand in v for m in metas]
    else:
        raise Unsupported(op)
    return np.array(hits, dtype=bool)


class Mirror:
    """Ids, documents, metadata and vectors of every memory, in Chroma's order; thread-safe."""

    def __init__(self, dimension: int, parts: bool = True, folder: Path | None = None) -> None:
        """``folder``: where the sentence vectors' file is made (the store's; None: the system's temporary folder)."""
        import numpy as np

        self._lock = threading.Lock()
        self.ids: list[str] = []
        self.documents: list[str] = []
        self.metas: list[dict[str, Any]] = []
        self._at: dict[str, int] = {}
        self._vectors = np.zeros((0, dimension), dtype=np.float32)  # as written (``containing`` returns them)
        self._scales = np.zeros(0, dtype=np.float32)  # 1 / each vector's norm: Chroma compares unit vectors
        # memory id -> its sentence vectors' slots in ``_rows`` by part number (the id's "#n"), in the order
        # written; None: not mirrored (Chroma's index is asked)
        self._parts: dict[str, dict[str, int]] | None = {} if parts else None
        self._folder = folder
        self._rows: RowFile | None = None  # made with the first sentence vector

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def holds_parts(self) -> bool:
        return self._parts is not None

    def forget_parts(self) -> None:
        """Stop mirroring sentence vectors (the collection grew past ``PARTS_MIRROR_MAX``, or their file failed)."""
        with self._lock:
            self._forget_parts()

    def _forget_parts(self) -> None:
        self._parts = None
        if self._rows is not None:
            self._rows.close()
            self._rows = None

    def put(self, ids: Sequence[str], documents: Sequence[str], metas: Sequence[dict[str, Any]], vectors: Any) -> None:
        """Add new records at the end, or replace existing ones where they are (as Chroma's upsert does)."""
        import numpy as np

        rows = np.array(vectors, dtype=np.float32, ndmin=2)
        scales = _inverse_norms(rows)
        with self._lock:
            fresh = [i for i, mid in enumerate(ids) if mid not in self._at]
            if fresh:
                self._grow(len(self.ids) + len(fresh))
            for i, mid in enumerate(ids):
                at = self._at.get(mid)
                if at is None:
                    at = self._at[mid] = len(self.ids)
                    self.ids.append(mid)
                    self.documents.append(documents[i])
                    self.metas.append(dict(metas[i]))
                else:
                    self.documents[at], self.metas[at] = documents[i], dict(metas[i])
                self._vectors[at], self._scales[at] = rows[i], scales[i]

    def merge_meta(self, ids: Sequence[str], meta: dict[str, Any]) -> None:
        """Merge ``meta`` into these records' metadata (Chroma's ``update`` with metadata only)."""
        with self._lock:
            for mid in ids:
                at = self._at.get(mid)
                if at is not None:
                    self.metas[at] = {**self.metas[at], **meta}

    def put_parts(self, ids: Sequence[str], vectors: Any) -> None:
        """Add or replace sentence vectors (ids ``<memory id>#<n>``), as Chroma's add does. A file that cannot be
        written stops their mirroring: Chroma holds them."""
        import numpy as np

        rows = np.array(vectors, dtype=np.float32, ndmin=2)
        at = {pid: i for i, pid in enumerate(ids)}  # one row an id: the last given, as in a sequence of writes
        with self._lock:
            if self._parts is None:
                return
            try:
                self._put_parts(self._parts, list(at), rows[list(at.values())])
            except OSError as exc:
                log.warning("memory mirror: sentence vectors no longer mirrored: %s", exc)
                self._forget_parts()

    def _put_parts(self, parts: dict[str, dict[str, int]], ids: list[str], rows: np.ndarray) -> None:
        if self._rows is None:
            self._rows = RowFile(rows.shape[1], self._folder)
        keys = [pid.rpartition("#")[::2] for pid in ids]  # (memory id, part number)
        held = [parts.get(mid, {}).get(n) for mid, n in keys]
        old = [i for i, slot in enumerate(held) if slot is not None]
        if old:  # rewritten where they are
            self._rows.write([held[i] for i in old], rows[old])
        new = [i for i, slot in enumerate(held) if slot is None]
        if new:
            for i, slot in zip(new, self._rows.put(rows[new]), strict=True):
                mid, n = keys[i]
                parts.setdefault(mid, {})[n] = slot

    def drop_parts(self, ids: Sequence[str]) -> None:
        """Forget every sentence vector of these memories."""
        with self._lock:
            self._drop_parts(ids)

    def _drop_parts(self, ids: Iterable[str]) -> None:
        parts = self._parts or {}
        slots = [slot for mid in ids for slot in parts.pop(mid, {}).values()]
        if slots and self._rows is not None:
            self._rows.free(slots)

    def best_parts(self, vector: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """As ``ChromaStore.best_parts``: for each memory with sentence vectors, the best dot product (``OSError``:
        their file could not be read)."""
        with self._lock:
            parts = self._parts or {}
            owners = [(mid, slot) for mid in dict.fromkeys(ids) for slot in parts.get(mid, {}).values()]
            if not owners or self._rows is None:
                return {}
            rows = self._rows.read([slot for _, slot in owners])  # read holding the lock: no slot is reused
        return best_per_memory([mid for mid, _ in owners], rows, vector)

    def drop(self, ids: Sequence[str]) -> None:
        gone = set(ids)
        with self._lock:
            self._drop_parts(gone)
            keep = [i for i, mid in enumerate(self.ids) if mid not in gone]
            if len(keep) == len(self.ids):
                return
            self.ids = [self.ids[i] for i in keep]
            self.documents = [self.documents[i] for i in keep]
            self.metas = [self.metas[i] for i in keep]
            self._vectors, self._scales = self._vectors[keep], self._scales[keep]
            self._at = {mid: i for i, mid in enumerate(self.ids)}

    def nearest(
        self, vector: Sequence[float], n: int, where: dict[str, Any] | None, among: Iterable[str] | None = None
    ) -> list[tuple[str, str, dict[str, Any], float]]:
        """The ``n`` records nearest ``vector`` allowed by ``where`` (and among these ids), with Chroma's cosine
        similarity; ties in insertion order."""
        import numpy as np

        query = np.array(vector, dtype=np.float32)
        query *= _inverse_norms(query[None, :])[0]
        with self._lock:
            if among is None:  # every row: a view, not a copy of the vectors
                rows, count = np.arange(len(self.ids)), len(self.ids)
                dots = (self._vectors[:count] @ query) * self._scales[:count]
            else:
                rows = np.fromiter((self._at[i] for i in among if i in self._at), dtype=np.intp)
                dots = (self._vectors[rows] @ query) * self._scales[rows]
            if where:
                mask = allowed(where, [self.metas[i] for i in rows.tolist()])
                rows, dots = rows[mask], dots[mask]
            # As Chroma: its distance is 1 - dot in float32, and the store reads 1 - distance.
            distances = np.float32(1.0) - dots
            if 0 < n < len(rows):  # the n nearest and any tied with the last, then in order
                bound = np.partition(distances, n - 1)[n - 1]
                near = distances <= bound
                rows, distances = rows[near], distances[near]
            order = np.lexsort((rows, distances))[:n]
            return [
                (self.ids[i], self.documents[i], self.metas[i], 1.0 - float(d))
                for i, d in zip(rows[order].tolist(), distances[order].tolist(), strict=True)
            ]

    def containing(
        self, terms: Sequence[str], where: dict[str, Any] | None, limit: int
    ) -> list[tuple[str, str, dict[str, Any], np.ndarray]]:
        """The first ``limit`` records (in Chroma's order) whose document contains any of ``terms``."""
        with self._lock:
            mask = allowed(where, self.metas) if where else None
            found = [i for i, doc in enumerate(self.documents) if any(t in doc for t in terms)]
            rows = [i for i in found if mask is None or mask[i]][:limit]
            return [(self.ids[i], self.documents[i], self.metas[i], self._vectors[i].copy()) for i in rows]

    def _grow(self, rows: int) -> None:
        import numpy as np

        if rows > len(self._vectors):
            bigger = np.zeros((max(rows, 2 * len(self._vectors), 64), self._vectors.shape[1]), dtype=np.float32)
            bigger[: len(self.ids)] = self._vectors[: len(self.ids)]
            scales = np.zeros(len(bigger), dtype=np.float32)
            scales[: len(self.ids)] = self._scales[: len(self.ids)]
            self._vectors, self._scales = bigger, scales


def best_per_memory(owners: Sequence[str], rows: Any, vector: Sequence[float]) -> dict[str, float]:
    """The best dot product with ``vector`` of each memory's sentence vectors (``rows[i]`` belongs to ``owners[i]``)."""
    import numpy as np

    dots = np.asarray(rows, dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
    best: dict[str, float] = {}
    for mid, dot in zip(owners, dots.tolist(), strict=True):
        best[mid] = max(dot, best.get(mid, -2.0))
    return best


def _inverse_norms(rows: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(rows, axis=1)
    return (1.0 / np.where(norms > 0, norms, 1.0)).astype(np.float32)
