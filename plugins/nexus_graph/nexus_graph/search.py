"""Fuzzy search over name, id, tags and description, kept up to date as entities are appended.

Two sources of candidates, both cheap at 10k entities:

* a token index: every distinct word is matched against the query's words
  with ``rapidfuzz`` (typos) and by prefix (``async`` -> ``asyncio``); an
  entity scores the mean, over the query's words, of its best match weighted
  by the field it is in (name > id > tags > description). Word order does not
  matter by construction.
* a whole-name comparison (spaces and word order ignored) for what tokens miss, such as
  ``java script`` against ``JavaScript``.
"""

from __future__ import annotations

import bisect
import heapq
import re
from dataclasses import dataclass
from operator import itemgetter

from nexus_graph.records import Entity

FIELDS = ("name", "id", "tags", "desc")
WEIGHTS = (1.0, 0.95, 0.9, 0.8)
TOKEN_RE = re.compile(r"[^\W_]+")
MIN_SCORE = 40.0


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text.casefold())


def normalize(text: str) -> str:
    return " ".join(tokens(text))


@dataclass(slots=True)
class Hit:
    id: str
    score: float
    field: str
    matched: str  # the word or text that matched
    pos: int = 0


class SearchIndex:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.names: list[str] = []  # normalized
        self.compact_names: list[str] = []  # words sorted and joined, for the whole-name comparison
        self.postings: dict[str, tuple[list[int], ...]] = {}  # word -> entity positions, one list per field
        self.vocab: list[str] = []
        self._sorted_vocab: list[str] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, entity: Entity) -> None:
        pos = len(self.ids)
        self.ids.append(entity.id)
        self.names.append(normalize(entity.name))
        self.compact_names.append("".join(sorted(tokens(entity.name))))
        texts = (entity.name, entity.id, " ".join(entity.tags), entity.desc)
        for field_index, text in enumerate(texts):
            for word in set(tokens(text)):
                posting = self.postings.get(word)
                if posting is None:
                    posting = self.postings[word] = ([], [], [], [])
                    self.vocab.append(word)
                    self._sorted_vocab = None
                posting[field_index].append(pos)

    def search(self, query: str, limit: int) -> list[Hit]:
        words = list(dict.fromkeys(tokens(query)))
        if not words or not self.ids:
            return []
        # Per query word, each entity's best (value, field, word). Filling dicts lowest value first with
        # dict.update(dict.fromkeys(...)) lets higher values overwrite at C speed: common words have
        # thousands of postings, and a Python loop over them would dominate the time.
        per_word: list[dict[int, tuple[float, int, str]]] = []
        for word in words:
            scored = [
                (similarity * WEIGHTS[f], f, vocab_word)
                for vocab_word, similarity in self._similar_words(word).items()
                for f in range(len(FIELDS))
                if self.postings[vocab_word][f]
            ]
            scored.sort()
            best: dict[int, tuple[float, int, str]] = {}
            for value, f, vocab_word in scored:
                best.update(dict.fromkeys(self.postings[vocab_word][f], (value, f, vocab_word)))
            per_word.append(best)
        totals: dict[int, float] = {}
        for best in per_word:
            for pos, (value, _, _) in best.items():
                totals[pos] = totals.get(pos, 0.0) + value
        n = len(words)
        top = heapq.nlargest(max(limit * 3, 30), totals.items(), key=itemgetter(1))
        hits: dict[int, Hit] = {}
        for pos, total in top:
            value, f, vocab_word = max((b[pos] for b in per_word if pos in b), key=lambda v: v[0])
            hits[pos] = Hit(self.ids[pos], total / n, FIELDS[f], vocab_word, pos)
        self._whole_names(normalize(query), limit, hits)
        ranked = sorted(
            (h for h in hits.values() if h.score >= MIN_SCORE),
            key=lambda h: (-h.score, h.field != "name", len(self.names[h.pos]), h.id),
        )
        return ranked[:limit]

    def _similar_words(self, word: str) -> dict[str, float]:
        """Indexed words close to ``word``, with a similarity out of 100."""
        from rapidfuzz import fuzz, process

        found: dict[str, float] = {}
        if word in self.postings:
            found[word] = 100.0
        if len(word) >= 4:
            cutoff = 75  # one transposed pair in a four-letter word ("urst") still matches
            for match, score, _ in process.extract(word, self.vocab, scorer=fuzz.ratio, score_cutoff=cutoff, limit=25):
                found[match] = max(found.get(match, 0.0), score)
        if len(word) >= 3:
            for match in self._prefixed(word, 50):
                prefix_score = min(99.0, 85.0 + 15.0 * len(word) / len(match))
                found[match] = max(found.get(match, 0.0), prefix_score)
        return found

    def _prefixed(self, prefix: str, limit: int) -> list[str]:
        if self._sorted_vocab is None:
            self._sorted_vocab = sorted(self.vocab)
        vocab = self._sorted_vocab
        out: list[str] = []
        for i in range(bisect.bisect_left(vocab, prefix), len(vocab)):
            if not vocab[i].startswith(prefix) or len(out) >= limit:
                break
            if vocab[i] != prefix:
                out.append(vocab[i])
        return out

    def _whole_names(self, query: str, limit: int, hits: dict[int, Hit]) -> None:
        """Raise scores where the whole name is close to the whole query, ignoring spaces and word order:
        this catches words split or joined differently (``java script`` / ``JavaScript``)."""
        from rapidfuzz import fuzz, process

        compact = "".join(sorted(query.split()))
        if len(compact) < 4:
            return
        for _, score, pos in process.extract(
            compact, self.compact_names, scorer=fuzz.ratio, processor=None, score_cutoff=80, limit=max(limit, 10)
        ):
            score *= 0.95
            hit = hits.get(pos)
            if hit is None or score > hit.score:
                hits[pos] = Hit(self.ids[pos], score, "name", self.names[pos], pos)
