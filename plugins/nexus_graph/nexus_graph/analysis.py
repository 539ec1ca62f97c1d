"""Walking and judging the graph: neighbourhoods, shortest paths, and the entropy report."""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass

from nexus_graph.graph import GraphIndex, touched_at
from nexus_graph.records import Relation

MAX_IDS = 50  # ids listed per finding; counts are always complete
DAY = 86400.0


@dataclass
class Step:
    relation: Relation
    forward: bool  # walked from src to dst


def _steps(index: GraphIndex, entity_id: str, rel: str | None, direction: str) -> list[tuple[str, Step]]:
    """(other end, step) for every relation of ``entity_id`` that the filters keep."""
    found: list[tuple[str, Step]] = []
    if direction in ("out", "both"):
        for i in index.outgoing.get(entity_id, ()):
            r = index.relations[i]
            if (rel is None or r.rel == rel) and r.dst in index.entities:
                found.append((r.dst, Step(r, True)))
    if direction in ("in", "both"):
        for i in index.incoming.get(entity_id, ()):
            r = index.relations[i]
            if (rel is None or r.rel == rel) and r.src in index.entities:
                found.append((r.src, Step(r, False)))
    return found


def neighbors(
    index: GraphIndex, start: str, depth: int, rel: str | None, direction: str, limit: int
) -> tuple[dict[str, int], list[Relation], bool]:
    """Breadth-first from ``start``: ({id: distance}, relations walked, truncated)."""
    distance = {start: 0}
    walked: dict[tuple[str, str, str], Relation] = {}
    queue = deque([start])
    truncated = False
    while queue:
        current = queue.popleft()
        if distance[current] >= depth:
            continue
        for other, step in _steps(index, current, rel, direction):
            if other not in distance:
                if len(distance) >= limit:
                    truncated = True
                    continue
                distance[other] = distance[current] + 1
                queue.append(other)
            walked[step.relation.key] = step.relation
    return distance, list(walked.values()), truncated


def shortest_path(index: GraphIndex, src: str, dst: str, max_depth: int) -> list[Step] | None:
    """The fewest hops from ``src`` to ``dst``, following relations either way; None if none within reach."""
    if src == dst:
        return []
    previous: dict[str, tuple[str, Step] | None] = {src: None}
    frontier = [src]
    for _ in range(max_depth):
        following: list[str] = []
        for current in frontier:
            for other, step in _steps(index, current, None, "both"):
                if other in previous:
                    continue
                previous[other] = (current, step)
                if other == dst:
                    return _unwind(previous, dst)
                following.append(other)
        if not following:
            return None
        frontier = following
    return None


def _unwind(previous: dict[str, tuple[str, Step] | None], node: str) -> list[Step]:
    steps: list[Step] = []
    while (link := previous[node]) is not None:
        node, step = link
        steps.append(step)
    return steps[::-1]


# -- entropy ------------------------------------------------------------------------


@dataclass
class Report:
    entities: int
    relations: int
    density: float
    orphans: list[str]
    stale: list[str]
    components: list[list[str]]  # largest first
    hubs: list[tuple[str, int, int]]  # (id, out degree, in degree)
    duplicates: list[tuple[list[str], float]]
    dangling: list[tuple[Relation, list[str]]]


def entropy(index: GraphIndex, stale_days: int, now: float | None = None, hubs: int = 10) -> Report:
    now = time.time() if now is None else now
    entities = index.entities
    live = [r for r in index.relations if r.src in entities and r.dst in entities]
    dangling = [
        (r, [end for end in (r.src, r.dst) if end not in entities])
        for r in index.relations
        if r.src not in entities or r.dst not in entities
    ]
    out_degree = Counter(r.src for r in live)
    in_degree = Counter(r.dst for r in live)
    orphans = sorted(i for i in entities if not out_degree[i] and not in_degree[i])
    cutoff = now - stale_days * DAY
    stale = sorted(i for i, e in entities.items() if touched_at(index, e) < cutoff)
    pairs = {(r.src, r.dst) for r in live}
    n = len(entities)
    density = len(pairs) / (n * (n - 1)) if n > 1 else 0.0
    degree = out_degree + in_degree
    top = sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:hubs]
    return Report(
        entities=n,
        relations=len(index.relations),
        density=density,
        orphans=orphans,
        stale=stale,
        components=components(list(entities), live),
        hubs=[(i, out_degree[i], in_degree[i]) for i, _ in top],
        duplicates=index.names.groups(),
        dangling=dangling,
    )


def components(ids: list[str], relations: list[Relation]) -> list[list[str]]:
    """Weakly connected components (union-find), largest first, members sorted."""
    parent = {i: i for i in ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in relations:
        a, b = find(r.src), find(r.dst)
        if a != b:
            parent[a] = b
    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(find(i), []).append(i)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
