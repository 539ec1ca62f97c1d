"""Hybrid recall: rank by meaning, then lift memories that contain the query's exact terms.

Measured on the labeled set in ``bench/memory_recall_set.json`` (see
``bench/results_memory.md``): an equal-weight rank fusion with BM25 buries good
semantic hits under keyword noise, so the semantic similarity stays the
ranking and only *exact terms* (error codes, identifiers, flags: things an
embedding model blurs) add a bounded boost: ``score = similarity + BOOST *
matched/total``. Plain words get nothing extra; the model already covers them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

BOOST = 0.15  # at most this much is added to a cosine similarity (chosen by the bench, see module doc)
MAX_TERMS = 6

_TOKEN = re.compile(r"[^\s,;\"'`<>\[\]{}]+")
_EDGE = ".,:;!?()'\""


def exact_terms(query: str) -> list[str]:
    """The query's code-like terms, as they must appear literally in a memory.

    Code-like: has a digit next to letters (``E11000``, ``TS2345``), a long
    number (``5432``), an underscore (``ERR_SSL``), camelCase (``useEffect``),
    a dotted name (``os.replace``), a call (``fetch()``), ``::``, a flag
    (``--no-cache``) or is an all-caps word of 4+ letters (``ECONNREFUSED``).
    """
    terms: list[str] = []
    for raw in _TOKEN.findall(query):
        token = raw.strip(_EDGE) if not raw.startswith("--") else raw.rstrip(_EDGE)
        if token.endswith("()"):
            token = token[:-2]
        token = token.strip(_EDGE) if not token.startswith("--") else token
        if len(token) >= 3 and _code_like(token) and token not in terms:
            terms.append(token)
    return terms[:MAX_TERMS]


def _code_like(token: str) -> bool:
    return bool(
        (re.search(r"\d", token) and re.search(r"[A-Za-z]", token))
        or re.fullmatch(r"\d{3,}", token)
        or "_" in token.strip("_")
        or re.search(r"[a-z][A-Z]", token)
        or re.search(r"\w\.\w", token)
        or "::" in token
        or token.startswith("--")
        or re.fullmatch(r"[A-Z]{4,}", token)
    )


def matched(terms: list[str], content: str) -> list[str]:
    return [t for t in terms if t in content]


@dataclass
class Candidate:
    id: str
    similarity: float
    matched_terms: list[str]

    def score(self, n_terms: int, boost: float = BOOST) -> float:
        return self.similarity + (boost * len(self.matched_terms) / n_terms if n_terms else 0.0)


def fuse(
    semantic: list[tuple[str, float, str]],
    lexical_ids: list[str],
    terms: list[str],
    fetch: Callable[[list[str]], dict[str, tuple[float, str]]],
    boost: float = BOOST,
) -> list[Candidate]:
    """Rank candidates: the semantic hits ``(id, similarity, content)`` plus memories found by exact terms.

    ``fetch(ids)`` returns ``{id: (similarity, content)}`` for lexical hits the
    semantic search did not return, so every candidate is scored the same way.
    """
    pool = {i: Candidate(i, sim, matched(terms, text)) for i, sim, text in semantic}
    missing = [i for i in dict.fromkeys(lexical_ids) if i not in pool]
    for i, (sim, text) in fetch(missing).items() if missing else ():
        pool[i] = Candidate(i, sim, matched(terms, text))
    return sorted(pool.values(), key=lambda c: c.score(len(terms), boost), reverse=True)
