"""How recall scores a candidate: its similarity, lifted by exact terms, a named tag and its best sentence, lowered
by the penalties for being superseded and for age.

Rank by meaning, then lift memories that contain the query's exact terms.

Measured on the labeled set in ``bench/memory_recall_set.json`` (see
``bench/RESULTS.md``): an equal-weight rank fusion with BM25 buries good
semantic hits under keyword noise, so the semantic similarity stays the
ranking and only *exact terms* (error codes, identifiers, flags: things an
embedding model blurs) add a bounded boost: ``score = similarity + BOOST *
matched/total``. Plain words get nothing extra; the model already covers them.

Because the boost is bounded, the full-text lookup is often provably useless:
a memory the semantic search did not return is no more similar than the last
candidate it did return, so its score is at most that similarity + ``BOOST``.
When the top ``limit`` candidates already score at least that much, nothing
outside can displace them, and recall skips Chroma's full-text scan (the
costliest step: ~4 ms at 10k memories, ~30-50 ms at 100k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

BOOST = 0.15  # at most this much is added to a cosine similarity (chosen by the bench, see module doc)


# Semantic candidates fetched for a query with exact terms. Against 10 (the top 5 twice), 50 let recall skip the
# full-text scan for 83% of the bench's exact-term queries instead of 10% at 10k memories, for ~2 ms more.
CANDIDATES = 50

PER_TERM = 20  # memories the full-text lookup returns per exact term

# Over time (bench/RESULTS.md, issue 16). A memory another one supersedes loses 0.05: on the labeled set that put
# every successor above the memory it replaced, at no cost elsewhere. Age costs at most 0.02, half of it after a
# year without an update or a recall: more cost recall@5 quickly on a set where answers are as often old as new.
SUPERSEDED_PENALTY = 0.05

FRESHNESS_PENALTY = 0.02

HALF_LIFE_DAYS = 365.0

# Sentence vectors (the sentences recipe): a candidate whose best sentence is nearer the query than its whole
# text gains this share of the difference. Chosen on the labeled set's dev half among 0.25-1.0 (bench/
# recall_ideas.py), and again with clauses: recall@5 0.930 and MRR 0.816 at 0.25, 0.920 and 0.825 at 0.5; more
# cost paraphrases and symptoms recall@5.
PART_WEIGHT = 0.25

# Above the mirror's size, recall asks Chroma for this many sentence vectors nearest the query per candidate expected
# (a memory has ~2 on the labeled set), beside the candidates' query; a candidate none of them belongs to is read by
# id only when in doubt.
PARTS_PER_CANDIDATE = 3

PENALTY_MARGIN = 10  # extra candidates fetched without exact terms, for those the penalties may lift into the top

# With minilm+e5, a memory whose tag the query names as a word gains this: technical names (JWT, Android, Redis)
# survive in Japanese and Chinese queries where the embedders falter. Chosen on the labeled set's dev half among
# 0.02-0.15 (0.04: dev recall@5 0.86 -> 0.89; test 0.889 -> 0.899; bench/recall_tune.py). With MiniLM alone the
# dev half lost a query (0.75 -> 0.74), so the light mode has none (an embedder's ``tag_boost``, default 0).
TAG_BOOST = 0.04

# The memories with a tag the query names are looked for among this many nearest memories, fetched by the query
# for the candidates, when that many hold enough of them: a Chroma query filtered on tags cost 3x a plain one at
# 10k memories and 6x at 100k; fetching more records costs ~0.05 ms each.
MAX_TAG_WIDTH = 200

# A filtered query scans every record's metadata: in a small collection that costs less than fetching a wide
# list (200 memories: 8.7 against 11.1 ms a recall), at 100k about 10x the plain query (126 against 12.5 ms).
WIDEN_FROM = 20_000


def age_penalty(updated_at: str, last_recalled_at: str, now: datetime | None = None) -> float:
    """``FRESHNESS_PENALTY * (1 - 0.5 ** (days / HALF_LIFE_DAYS))``, days since the later of the two stamps."""
    stamps = [s for s in (updated_at, last_recalled_at) if s]
    if not stamps:
        return 0.0
    try:
        latest = max(datetime.fromisoformat(s) for s in stamps)
    except ValueError:
        return 0.0
    if latest.tzinfo is None:
        latest = latest.replace(tzinfo=UTC)
    days = max(0.0, ((now or datetime.now(UTC)) - latest).total_seconds() / 86400)
    return FRESHNESS_PENALTY * (1 - math.pow(0.5, days / HALF_LIFE_DAYS))


def tag_width(wanted: int, share: float, memories: int) -> int:
    """How many nearest memories one plain query fetches to hold ``wanted`` with tags ``share`` of the memories
    have (1.5 times the expected need); 0 when more than ``MAX_TAG_WIDTH`` would be needed, or the collection is
    smaller than ``WIDEN_FROM`` (then a filtered query)."""
    if memories < WIDEN_FROM:
        return 0
    width = math.ceil(1.5 * wanted / share) if share > 0 else MAX_TAG_WIDTH + 1
    return width if width <= MAX_TAG_WIDTH else 0


@dataclass
class Candidate:
    id: str
    similarity: float
    matched_terms: list[str]
    penalty: float = 0.0  # subtracted after the boost: superseded, old
    tag_boost: float = 0.0  # TAG_BOOST when the query names one of its tags
    part_lift: float = 0.0  # PART_WEIGHT x how much nearer its best sentence is than its whole text

    def score(self, n_terms: int, boost: float = BOOST) -> float:
        exact = boost * len(self.matched_terms) / n_terms if n_terms else 0.0
        return self.similarity + self.part_lift + exact + self.tag_boost - self.penalty


def rank(candidates: list[Candidate], n_terms: int, boost: float = BOOST) -> list[Candidate]:
    return sorted(candidates, key=lambda c: c.score(n_terms, boost), reverse=True)


def outsider_may_rank(
    ranked: list[Candidate], floor: float, limit: int, n_terms: int, boost: float = BOOST, gain: float = 0.0
) -> bool:
    """Whether a memory outside the semantic candidates could still reach the top ``limit``.

    ``floor`` is the similarity of the least similar candidate; an outsider is
    no more similar (up to the index's approximation), so it scores at most
    ``floor + boost`` with exact terms, plus ``gain`` for a tag the query names.
    (A sentence's lift is not counted: the bound holds for the ranking before it.)
    """
    if not n_terms and not gain:
        return False
    ceiling = floor + (boost if n_terms else 0.0) + gain
    return len(ranked) < limit or ranked[limit - 1].score(n_terms, boost) < ceiling
