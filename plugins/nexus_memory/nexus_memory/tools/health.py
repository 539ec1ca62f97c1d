"""The tools that describe the store: its statistics, its health report, and whether the server answers."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from nexus_memory.models import KnowledgeReport, Pong, Stats
from nexus_memory.runtime import Runtime


async def get_stats(rt: Runtime) -> Stats:
    """Memory totals by type, project and tag."""
    return await rt.run(lambda s: s.stats())


async def analyze_knowledge(rt: Runtime) -> KnowledgeReport:
    """Health report of the memory store, with what to fix."""
    return await rt.run(lambda s: s.analyze())


async def ping(rt: Runtime) -> Pong:
    """Check that the memory store is ready."""
    return Pong(status="ok", version=importlib.metadata.version("nexus-stack-memory"), store=rt.state())


RO: dict[str, Any] = {"read_only": True, "idempotent": True}
STATS: tuple[Any, dict[str, Any]] = (
    get_stats,
    {"category": "read", "title": "Memory statistics", **RO, "keywords": "counts, how many notes, overview"},
)
ANALYZE: tuple[Any, dict[str, Any]] = (
    analyze_knowledge,
    {"category": "read", "title": "Analyse the knowledge base", **RO}
    | {"keywords": "health check: untagged, unlinked, stale notes, near-duplicate tags, cleanup"},
)
PING: tuple[Any, dict[str, Any]] = (
    ping,
    {"category": "read", "title": "Ping the memory server", **RO, "keywords": "alive, is it up, reachable"},
)
