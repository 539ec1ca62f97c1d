"""The tools that describe the store: its statistics, its health report, and whether the server answers."""

from __future__ import annotations

import importlib.metadata
from typing import Any

from nexus_memory.models import KnowledgeReport, Pong, Stats
from nexus_memory.runtime import Runtime


async def get_stats(rt: Runtime) -> Stats:
    """Totals: memories by type, contexts (projects), tags and the most used ones, links."""
    return await rt.run(lambda s: s.stats())


async def analyze_knowledge(rt: Runtime) -> KnowledgeReport:
    """A health score and issues (untagged, unlinked, stale memories, near-duplicate tags) with actions."""
    return await rt.run(lambda s: s.analyze())


async def ping(rt: Runtime) -> Pong:
    """Check that the memory server answers: status, version, and whether the store is ready."""
    return Pong(status="ok", version=importlib.metadata.version("nexus-stack-memory"), store=rt.state())


RO: dict[str, Any] = {"read_only": True, "idempotent": True}
STATS: tuple[Any, dict[str, Any]] = (get_stats, {"category": "read", "title": "Memory statistics", **RO})
ANALYZE: tuple[Any, dict[str, Any]] = (
    analyze_knowledge,
    {"category": "read", "title": "Analyse the knowledge base", **RO},
)
PING: tuple[Any, dict[str, Any]] = (ping, {"category": "read", "title": "Ping the memory server", **RO})
