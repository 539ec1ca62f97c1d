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
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nexus_graph.records import Entity

if TYPE_CHECKING:
    import numpy as np  # imported on first search: a server that never searches never loads numpy

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


class ByLength:
    """Strings grouped by length, for ``fuzz.ratio`` with a cutoff: only lengths that can reach it are compared.

    ``fuzz.ratio`` is at most ``200 * min(a, b) / (a + b)`` for lengths a and b, so a cutoff of 75 only
    compares words of 0.6x to 1.67x the query's length. And a text of digits only shares no character with
    a query without digits (ratio 0): the thousands of numbers in a vocabulary are skipped for words.
    """

    def __init__(self) -> None:
        # (length, digits only) -> (texts, their insertion places)
        self.buckets: dict[tuple[int, bool], tuple[list[str], list[int]]] = {}
        self._joined: dict[tuple[int, int, bool], tuple[list[str], list[int]]] = {}  # the buckets joined

    def add(self, text: str, place: int) -> None:
        texts, places = self.buckets.setdefault((len(text), text.isdigit()), ([], []))
        texts.append(text)
        places.append(place)
        self._joined.clear()

    def extract(self, query: str, cutoff: float, limit: int) -> list[tuple[str, float, int]]:
        """What ``process.extract(query, all texts, scorer=fuzz.ratio, score_cutoff=cutoff, limit=limit)``
        returns, places instead of indexes: best first, ties in insertion order."""
        from rapidfuzz import fuzz, process

        n = len(query)
        lo, hi = math.floor(n * cutoff / (200 - cutoff)), math.ceil(n * (200 - cutoff) / cutoff)
        digits = any(c.isdigit() for c in query)
        joined = self._joined.get((lo, hi, digits))
        if joined is None:
            texts: list[str] = []
            places: list[int] = []
            for length in range(lo, hi + 1):
                for bucket in (self.buckets.get((length, False)), self.buckets.get((length, True)) if digits else None):
                    if bucket:
                        texts += bucket[0]
                        places += bucket[1]
            joined = self._joined[(lo, hi, digits)] = (texts, places)
        texts, places = joined
        found = [
            (text, score, places[i])
            for text, score, i in process.extract(
                query, texts, scorer=fuzz.ratio, processor=None, score_cutoff=cutoff, limit=None
            )
        ]
        found.sort(key=lambda r: (-r[1], r[2]))
        return found[:limit]


class SearchIndex:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.names: list[str] = []  # normalized
        self.compact_names: list[str] = []  # words sorted and joined, for the whole-name comparison
        self.postings: dict[str, tuple[list[int], ...]] = {}  # word -> entity positions, one list per field
        self.vocab: list[str] = []
        self._sorted_vocab: list[str] | None = None
        self._arrays: dict[str, list[np.ndarray | None]] = {}  # postings as arrays, one per field, made on use
        self._lengths: np.ndarray | None = None  # len of each normalized name, for ties at the cut
        self._vocab_by_length = ByLength()
        self._names_by_length = ByLength()

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, entity: Entity) -> None:
        pos = len(self.ids)
        self.ids.append(entity.id)
        self.names.append(normalize(entity.name))
        self.compact_names.append("".join(sorted(tokens(entity.name))))
        self._names_by_length.add(self.compact_names[-1], pos)
        texts = (entity.name, entity.id, " ".join(entity.tags), entity.desc)
        for field_index, text in enumerate(texts):
            for word in set(tokens(text)):
                posting = self.postings.get(word)
                if posting is None:
                    posting = self.postings[word] = ([], [], [], [])
                    self._vocab_by_length.add(word, len(self.vocab))
                    self.vocab.append(word)
                    self._sorted_vocab = None
                posting[field_index].append(pos)
                self._arrays.pop(word, None)

    def search(self, query: str, limit: int) -> list[Hit]:
        import numpy as np

        words = list(dict.fromkeys(tokens(query)))
        if not words or not self.ids:
            return []
        # Per query word, each entity's best match: the value in ``values`` and, in ``choice``, its place in
        # that word's ``scored`` list. Assigning the postings lowest value first lets higher values overwrite,
        # a few numpy assignments per word where common words have thousands of postings.
        values = np.zeros((len(words), len(self.ids)))
        choice = np.zeros((len(words), len(self.ids)), dtype=np.int32)
        per_word: list[list[tuple[float, int, str]]] = []
        for row, word in enumerate(words):
            scored = sorted(
                (similarity * WEIGHTS[f], f, vocab_word)
                for vocab_word, similarity in self._similar_words(word).items()
                for f in range(len(FIELDS))
                if self.postings[vocab_word][f]
            )
            best, picked = values[row], choice[row]
            for place, (value, f, vocab_word) in enumerate(scored):
                at = self._posting_array(vocab_word, f)
                best[at] = value
                picked[at] = place
            per_word.append(scored)
        totals = values.sum(axis=0)  # added word by word, as floats: the same sums as one at a time
        hits: dict[int, Hit] = {}
        n = len(words)
        top = self._top(totals, max(limit * 3, 30))
        if top:  # per position, the first word with the best value: one numpy call for all, not one each
            rows = values[:, top].argmax(axis=0).tolist()
            for pos, row, place, total in zip(top, rows, choice[rows, top].tolist(), totals[top].tolist(), strict=True):
                _, f, vocab_word = per_word[row][place]
                hits[pos] = Hit(self.ids[pos], total / n, FIELDS[f], vocab_word, pos)
        self._whole_names(normalize(query), limit, hits)
        ranked = sorted(
            (h for h in hits.values() if h.score >= MIN_SCORE),
            key=lambda h: (-h.score, h.field != "name", len(self.names[h.pos]), h.id),
        )
        return ranked[:limit]

    def _top(self, totals: np.ndarray, k: int) -> list[int]:
        """Positions of the ``k`` largest totals above zero; among equal totals at the cut, shorter names first."""
        import numpy as np

        matched = np.flatnonzero(totals)
        if len(matched) <= k:
            return matched.tolist()
        scores = totals[matched]
        kth = np.partition(scores, len(matched) - k)[len(matched) - k]
        above, tied = matched[scores > kth], matched[scores == kth]
        tied = tied[np.lexsort((tied, self._name_lengths()[tied]))[: k - len(above)]]
        return above.tolist() + tied.tolist()

    def _name_lengths(self) -> np.ndarray:
        import numpy as np

        if self._lengths is None or len(self._lengths) != len(self.names):
            self._lengths = np.array([len(n) for n in self.names], dtype=np.int32)
        return self._lengths

    def _posting_array(self, word: str, f: int) -> np.ndarray:
        import numpy as np

        arrays = self._arrays.get(word)
        if arrays is None:
            arrays = self._arrays[word] = [None] * len(FIELDS)
        at = arrays[f]
        if at is None:
            at = arrays[f] = np.array(self.postings[word][f], dtype=np.intp)
        return at

    def _similar_words(self, word: str) -> dict[str, float]:
        """Indexed words close to ``word``, with a similarity out of 100."""
        found: dict[str, float] = {}
        if word in self.postings:
            found[word] = 100.0
        if len(word) >= 4:
            cutoff = 75  # one transposed pair in a four-letter word ("urst") still matches
            for match, score, _ in self._vocab_by_length.extract(word, cutoff, 25):
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
        compact = "".join(sorted(query.split()))
        if len(compact) < 4:
            return
        for _, score, pos in self._names_by_length.extract(compact, 80, max(limit, 10)):
            score *= 0.95
            hit = hits.get(pos)
            if hit is None or score > hit.score:
                hits[pos] = Hit(self.ids[pos], score, "name", self.names[pos], pos)
