"""One recall, top to bottom: the steps of ``recall_memories`` in the order they apply.

1. ``Recall.__init__``: what the query asks: its exact terms (``terms``), the tags it names, the filters, and how
   many candidates each step needs.
2. ``candidates``: the memories nearest the query's vector (one Chroma query, or the in-process mirror); the
   sentence vectors nearest it are asked for at the same time, in a side thread.
3. ``by_tags``: the nearest memories with a tag the query names, wherever they rank otherwise.
4. ``by_terms``: memories that contain the query's exact terms (the full-text lookup), when one outside the
   candidates could still reach the top.
5. ``rerank`` (after each step that adds candidates): the tag boost, the penalties for being superseded and for
   age, then the score of ``scoring.Candidate``.
6. ``lifted``: each candidate lifted by its best sentence (the sentences recipe).
7. ``answer``: the top ``limit``, with the memories that supersede them.

``recall`` runs a pass, again when sentence vectors were written meanwhile, and queues ``last_recalled_at``.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor, Future
from datetime import UTC, datetime

from nexus_core import ToolError
from nexus_memory.embed import tag_boost
from nexus_memory.fields import clean_tags, list_item
from nexus_memory.models import RecalledMemory, RecallResult
from nexus_memory.recall import scoring
from nexus_memory.recall.scoring import Candidate, outsider_may_rank, rank
from nexus_memory.recall.terms import exact_terms, matched
from nexus_memory.store import ChromaStore, PartHits, Record, where_clause
from nexus_memory.store.writer import PartsWriter

PENDING_WAIT = 5.0  # seconds a recall waits for the sentence vectors of candidates just stored
PENDING_WAITED = 8  # candidates at most whose sentence vectors a recall waits for; more: the writer is behind
RECALL_TRIES = 3  # a recall during which sentence vectors were written is made again, up to this many times in all
ARCHIVED_DROPPED = 200  # up to this many archived memories, recall drops them itself instead of asking Chroma


def recall(
    store: ChromaStore,
    writer: PartsWriter,
    beside: Executor | None,
    query: str,
    limit: int,
    filters: tuple[str | None, list[str] | None, str | None, bool],
) -> tuple[RecallResult, list[Record]]:
    """The answer, and the memories in it as read. ``filters``: context, tags, type, include_archived.
    ``beside``: where the sentence vectors nearest the query are asked for beside the candidates (None: after)."""
    if not query.strip():
        raise ToolError("query is empty: describe the problem or name the error")
    vector, scale = store.embed_query(query)
    # The candidates and their sentence vectors are read one after the other: when sentence vectors were
    # written in between, a memory may have been shown as it was, lifted by its new sentences. Asked again.
    for _ in range(RECALL_TRIES):
        epoch = store.parts.epoch
        found = Recall(store, writer, beside, query, vector, scale, limit, filters).run()
        if epoch == store.parts.epoch and not epoch % 2:
            break
    return found


class Recall:
    """One pass: the candidates (``pool``, their records in ``records``) as each step finds and ranks them."""

    def __init__(
        self,
        store: ChromaStore,
        writer: PartsWriter,
        beside: Executor | None,
        query: str,
        vector: list[float],
        scale: float,
        limit: int,
        filters: tuple[str | None, list[str] | None, str | None, bool],
    ) -> None:
        """``vector`` and ``scale``: the query's, see ``ChromaStore.embed_query``."""
        context, tags, memory_type, include_archived = filters
        self.store, self.writer, self.beside = store, writer, beside
        self.vector, self.scale, self.limit = vector, scale, limit
        self.hidden = set() if include_archived else store.archived_ids()
        # Few archived memories are dropped from the candidates; many are filtered by Chroma (which costs more).
        by_chroma = len(self.hidden) > ARCHIVED_DROPPED
        contexts, tag_forms = store.variants(context, clean_tags(tags))  # filters match regardless of case
        self.where = where_clause(contexts, memory_type, tag_forms, include_archived or not by_chroma)
        self.extra = 0 if by_chroma else len(self.hidden)
        self.terms = exact_terms(query)
        self.gain = tag_boost(store.embedder)
        index = store.tag_index() if self.gain else None  # built (a scan of every record) only where it is used
        self.named = index.named_in(query) if index is not None else []
        # Without exact terms the ranking is the semantic order, moved only by the small penalties.
        self.n = max(scoring.CANDIDATES, 2 * limit) if self.terms else limit + scoring.PENALTY_MARGIN
        self.wanted = limit + scoring.PENALTY_MARGIN + self.extra  # of the memories with a named tag
        named_width = index is not None and self.named
        self.width = scoring.tag_width(self.wanted, index.share(self.named), index.memories) if named_width else 0
        self.pool: list[Candidate] = []
        self.records: dict[str, Record] = {}
        self.ranked: list[Candidate] = []

    def run(self) -> tuple[RecallResult, list[Record]]:
        early = self.early_parts()
        raw = self.candidates()
        self.by_tags(raw)
        self.by_terms(raw)
        self.lifted(early)
        return self.answer()

    # -- 2. the nearest memories --------------------------------------------------------------------------------

    def early_parts(self) -> tuple[Future[PartHits], int] | None:
        """The sentence vectors nearest the query, asked for beside the candidates' query: both need only the query's
        vector (``n`` candidates are expected; more make more of them read by id); and the store's ``parts.epoch``
        then. None when the mirror holds the sentence vectors, while they are being written, and on a Chroma server:
        the epoch counts this process's writes only, and other processes may write there."""
        st = self.store
        epoch = st.parts.epoch
        if not st.parts.kept or st.chroma_url or st.parts_mirror() is not None or epoch % 2 or self.beside is None:
            return None
        near = max(1, round(scoring.PARTS_PER_CANDIDATE * self.n))
        try:
            return self.beside.submit(st.parts.nearest_dots, self.vector, near), epoch
        except RuntimeError:  # the service is closing: asked after the candidates, as on a Chroma server
            return None

    def candidates(self) -> list[tuple[Record, float]]:
        """The ``n`` nearest memories the filters allow (fetched: enough for the named tags too); what was fetched."""
        fetched = max(self.n, self.width)
        raw = self.store.query(self.vector, fetched + self.extra, self.where)
        self.fetched, self.complete = fetched, len(raw) < self.n + self.extra  # complete: none is outside
        self.semantic = [(r, s / self.scale) for r, s in raw if r.id not in self.hidden][: self.n]
        self.records = {r.id: r for r, _ in self.semantic}
        self.pool = [Candidate(r.id, s, matched(self.terms, r.content)) for r, s in self.semantic]
        return raw

    def join(self, found: list[tuple[Record, float]]) -> None:
        """Add the memories found another way (tags, exact terms) that are not candidates yet."""
        for record, similarity in found:
            if record.id not in self.records:
                self.records[record.id] = record
                self.pool.append(Candidate(record.id, similarity, matched(self.terms, record.content)))

    # -- 3. the memories with a tag the query names -------------------------------------------------------------

    def by_tags(self, raw: list[tuple[Record, float]]) -> None:
        named, scale = set(self.named), self.scale
        tagged: list[tuple[Record, float]] = []
        if named:  # the nearest memories with a tag the query names, wherever they rank otherwise
            tagged = [(r, s / scale) for r, s in raw if named & set(r.tags) and r.id not in self.hidden][: self.wanted]
            self.join(tagged)
        self.rerank()
        # Too few tagged memories among those fetched: Chroma is asked for more (a filtered query, ~9 ms at 10k),
        # unless none of them, no more similar than the last one fetched, could reach the top even with the gain.
        if (
            named
            and len(tagged) < self.wanted
            and len(raw) == self.fetched + self.extra
            and outsider_may_rank(self.ranked, raw[-1][1] / scale, self.limit, len(self.terms), gain=self.gain)
        ):
            more = self.store.tagged(self.vector, self.wanted, self.where, self.named)
            self.join([(r, s / scale) for r, s in more if r.id not in self.hidden])
            self.rerank()

    # -- 4. the memories that contain the exact terms -----------------------------------------------------------

    def by_terms(self, raw: list[tuple[Record, float]]) -> None:
        floor = min((s for _, s in self.semantic), default=0.0)
        if self.complete or not outsider_may_rank(self.ranked, floor, self.limit, len(self.terms)):
            return
        import numpy as np

        query_vec = np.asarray(self.vector, dtype=np.float32)
        limit = scoring.PER_TERM * len(self.terms) + self.extra
        found = self.store.containing(self.terms, self.where, limit)
        self.join(
            [
                (r, float(np.dot(query_vec, np.asarray(v, dtype=np.float32))) / self.scale)
                for r, v in found
                if r.id not in self.hidden
            ]
        )
        self.rerank()

    # -- 5. boosts and penalties, then the score ----------------------------------------------------------------

    def rerank(self) -> None:
        """The candidates by score, after the tag boost and the penalties for being superseded and for age."""
        superseded = self.store.links.superseded_by(c.id for c in self.pool)
        stamp = datetime.now(UTC)
        for c in self.pool:
            r = self.records[c.id]
            c.tag_boost = self.gain if set(self.named) & set(r.tags) else 0.0
            c.penalty = scoring.age_penalty(r.updated_at, r.last_recalled_at, stamp)
            c.penalty += scoring.SUPERSEDED_PENALTY if c.id in superseded else 0.0
        self.ranked = rank(self.pool, len(self.terms))

    # -- 6. the lift of each candidate's best sentence ----------------------------------------------------------

    def lifted(self, early: tuple[Future[PartHits], int] | None) -> None:
        """The sentences recipe: a memory's best sentence may be nearer than its whole text. Unless the writer is
        behind (a bulk import): then the whole texts alone rank every candidate, rather than wait or favour some."""
        pending = [c.id for c in self.pool if self.records[c.id].parts_pending]
        if not self.store.parts.kept or len(pending) > PENDING_WAITED:
            return
        # A candidate stored moments ago may still wait for its sentence vectors: the writer is hurried to write
        # those first and waited for (``PENDING_WAIT`` at most), so a recall right after a store ranks it as later
        # ones will.
        if pending and self.writer.drain(pending, timeout=PENDING_WAIT):
            self.records.update(self.store.get(pending))
        self.lift(None if pending else early)

    def lift(self, early: tuple[Future[PartHits], int] | None) -> None:
        """Rank the candidates after each is lifted by its best sentence. Chroma is asked for the sentences nearest
        the query, then by id only for the candidates those leave in doubt: one without a sentence among them whose
        lift, at most what the farthest of them allows, could still take it into the top ``limit``. The top is the
        same as with every candidate's sentences read (a test compares them)."""
        pool, n_terms, parts = self.pool, len(self.terms), self.store.parts
        near = max(1, round(scoring.PARTS_PER_CANDIDATE * len(pool)))
        # What was asked for beside the candidates' query, unless sentence vectors were written since: compared
        # once it is answered (it may have run only now, after a write).
        found = early[0].result() if early is not None else None
        if early is not None and early[1] != parts.epoch:
            found = None
        best, floor = parts.nearest(self.vector, near, [c.id for c in pool], found)
        lift = self.lift_of
        unknown = [c for c in pool if c.id not in best]
        for c in pool:
            c.part_lift = lift(c, best[c.id]) if c.id in best else 0.0
        self.ranked = ranked = rank(pool, n_terms)
        bar = ranked[min(self.limit, len(ranked)) - 1].score(n_terms) if ranked else 0.0
        doubt = [c for c in unknown if lift(c, floor) > 0 and c.score(n_terms) + lift(c, floor) >= bar]
        if not doubt:
            return
        exact = parts.best(self.vector, [self.records[c.id] for c in doubt])
        for c in doubt:
            c.part_lift = lift(c, exact.get(c.id, -math.inf))
        self.ranked = rank(pool, n_terms)

    def lift_of(self, c: Candidate, dot: float) -> float:
        return scoring.PART_WEIGHT * max(0.0, dot / self.scale - c.similarity)

    # -- 7. the answer ------------------------------------------------------------------------------------------

    def answer(self) -> tuple[RecallResult, list[Record]]:
        top = self.ranked[: self.limit]
        superseded = self.store.links.superseded_by(c.id for c in top)
        n_terms, records = len(self.terms), self.records
        memories = [
            RecalledMemory(
                **list_item(records[c.id]).model_dump(),
                content=records[c.id].content,
                similarity=round(c.similarity, 4),
                score=round(c.score(n_terms), 4),
                matched_terms=c.matched_terms,
                superseded_by=superseded.get(c.id, []),
            )
            for c in top
        ]
        found = RecallResult(memories=memories, total_found=len(memories), exact_terms=self.terms)
        return found, [records[c.id] for c in top]
