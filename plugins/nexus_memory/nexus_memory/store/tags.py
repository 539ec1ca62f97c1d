"""Which tags are in use, and which memories hold each: the index the store keeps beside Chroma, so recall
finds the tags a query names without scanning every memory."""

from __future__ import annotations

import re
from collections.abc import Iterable

_ALNUM = re.compile(r"[a-z0-9]+")


def tag_forms(tag: str) -> set[str]:
    """How a query may name ``tag``: as written, or with spaces for its hyphens (lower case)."""
    low = tag.lower()
    return {low, low.replace("-", " ")}


def names(query: str, form: str) -> bool:
    """Whether ``query`` (lower case) contains ``form`` as a whole word: no letter or digit on either side."""
    return re.search(rf"(?<![a-z0-9]){re.escape(form)}(?![a-z0-9])", query) is not None


class TagIndex:
    """The tags in use, indexed by their first word, so a query is checked only against the tags it may name; and
    which memories hold each tag, kept exact by every write."""

    def __init__(self, tags: set[str] | None = None) -> None:
        self.by_word: dict[str, set[str]] = {}
        self.other: set[str] = set()  # tags without a Latin letter or digit (e.g. Japanese ones)
        self.holders: dict[str, set[str]] = {}  # tag -> the memories that have it
        self._tags_of: dict[str, tuple[str, ...]] = {}  # memory -> its tags
        for tag in tags or ():
            self.add(tag)

    @property
    def memories(self) -> int:
        return len(self._tags_of)

    def hold(self, memory_id: str, tags: list[str]) -> None:
        """A memory written with these tags (they replace the ones it had)."""
        for tag in set(self._tags_of.get(memory_id, ())) - set(tags):
            self.holders[tag].discard(memory_id)
        for tag in tags:
            self.add(tag)
            self.holders.setdefault(tag, set()).add(memory_id)
        self._tags_of[memory_id] = tuple(tags)

    def drop(self, memory_ids: Iterable[str]) -> None:
        for memory_id in memory_ids:
            for tag in self._tags_of.pop(memory_id, ()):
                self.holders[tag].discard(memory_id)

    def holding(self, tags: list[str]) -> set[str]:
        """The memories with any of ``tags``."""
        return set().union(*(self.holders.get(t, ()) for t in tags))

    def share(self, tags: list[str]) -> float:
        """What fraction of the memories has any of ``tags``."""
        return len(self.holding(tags)) / self.memories if self.memories else 0.0

    def add(self, tag: str) -> None:
        words = _ALNUM.findall(tag.lower())
        if words:
            self.by_word.setdefault(words[0], set()).add(tag)
        else:
            self.other.add(tag)

    def named_in(self, query: str) -> list[str]:
        low = query.lower()
        maybe = {t for w in set(_ALNUM.findall(low)) for t in self.by_word.get(w, ())} | self.other
        return sorted(t for t in maybe if any(names(low, f) for f in tag_forms(t)))
