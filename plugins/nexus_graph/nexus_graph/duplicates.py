"""Near-identical entity names, found without comparing every pair.

Each name is filed under two kinds of key: its words sorted and joined (so
"Asyncio Python" meets "python asyncio"), and its words joined in order
together with every variant of that with one character deleted (a deletion
neighbourhood: "Pyhton" and "Python" both yield "Pyton"). Only names filed
together are compared, and a pair counts when its keys are at most one edit
apart (two for names of ten characters or more, a swap of neighbours being
one edit). Filing happens as entities are indexed, so a report only looks at
the few buckets holding more than one name.
"""

from __future__ import annotations

import re

from nexus_graph.search import tokens

DIGITS_RE = re.compile(r"\d+")
MAX_BUCKET = 100  # a variant shared by more names than this is a naming pattern, not a duplicate


def name_keys(name: str) -> tuple[str, str]:
    """(words joined in order, words sorted and joined)."""
    words = tokens(name)
    return "".join(words), "".join(sorted(words))


class DuplicateIndex:
    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, str]] = {}  # entity id -> name_keys()
        self.buckets: dict[str, list[str]] = {}
        self.shared: set[str] = set()  # variants filed by two or more entities

    def add(self, entity_id: str, name: str) -> None:
        ordered, unordered = self.keys[entity_id] = name_keys(name)
        if not ordered:
            return
        variants = {"=" + unordered, ordered}
        if 5 <= len(ordered) <= 40:  # short names: exact keys only; long ones: costly, and rarely mistyped alike
            variants.update(ordered[:i] + ordered[i + 1 :] for i in range(len(ordered)))
        for variant in variants:
            bucket = self.buckets.setdefault(variant, [])
            bucket.append(entity_id)
            if len(bucket) == 2:
                self.shared.add(variant)

    def groups(self) -> list[tuple[list[str], float]]:
        """Groups of ids with near-identical names, each with the lowest similarity (0-100) that links it.

        Names whose numbers differ ("Python 3.11" and "Python 3.12") are different things, never paired.
        """
        from rapidfuzz.distance import OSA

        parent: dict[str, str] = {}

        def find(x: str) -> str:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        links: list[tuple[str, float]] = []
        for variant in self.shared:
            members = self.buckets[variant]
            if len(members) > MAX_BUCKET:
                continue
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    score = _similarity(self.keys[a], self.keys[b], OSA)
                    if score is not None:
                        ra, rb = find(a), find(b)
                        if ra != rb:
                            parent[ra] = rb
                        links.append((a, score))
        lowest: dict[str, float] = {}
        for a, score in links:
            root = find(a)
            lowest[root] = min(score, lowest.get(root, 100.0))
        groups: dict[str, list[str]] = {}
        for member in parent:
            groups.setdefault(find(member), []).append(member)
        result = [(sorted(m), round(lowest[root], 1)) for root, m in groups.items() if len(m) > 1]
        return sorted(result, key=lambda g: g[0][0])


def _similarity(a: tuple[str, str], b: tuple[str, str], osa) -> float | None:
    """How alike two names' keys are (0-100), or None when they are not near-identical."""
    if DIGITS_RE.findall(a[0]) != DIGITS_RE.findall(b[0]):
        return None
    if a[1] == b[1]:
        return 100.0
    allowed = 1 if max(len(a[0]), len(b[0])) < 10 else 2
    if osa.distance(a[0], b[0], score_cutoff=allowed) > allowed:
        return None
    return osa.normalized_similarity(a[0], b[0]) * 100
