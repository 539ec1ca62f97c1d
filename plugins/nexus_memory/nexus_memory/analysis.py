"""What the plugin notices on its own: at store time (duplicates, contradictions,
a success after a failure) and across the whole knowledge base (health issues)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from nexus_memory.models import Insight, Issue, KnowledgeReport, SuggestedLink
from nexus_memory.store import LinkRecord, Record

DUPLICATE = 0.90  # above this, the new memory is probably the same as an old one
RELATED = 0.55  # MiniLM similarities above this are usually the same topic
CONTRADICTION = 0.70
_NEGATION = re.compile(r"\b(not|never|no longer|don't|doesn't|do not|does not|avoid|instead of|stop|stopped)\b", re.I)


def summarize(content: str, limit: int = 200) -> str:
    """The first ~``limit`` characters, whitespace collapsed, cut at a word."""
    text = " ".join(content.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,.;:") + "…"


def store_analysis(
    new_type: str, new_context: str, new_content: str, neighbours: list[tuple[Record, float]]
) -> tuple[list[SuggestedLink], list[Insight]]:
    """Suggested links and insights for a memory about to be stored, from its nearest neighbours."""
    links: list[SuggestedLink] = []
    insights: list[Insight] = []
    for old, sim in neighbours:
        sim = round(sim, 4)
        if sim < RELATED:
            continue
        relation, reason = _relation(new_type, new_context, new_content, old, sim)
        links.append(
            SuggestedLink(
                memory_id=old.id, summary=summarize(old.content), similarity=sim, relation_type=relation, reason=reason
            )
        )
        insight = _insight(new_type, new_context, new_content, old, sim)
        if insight:
            insights.append(insight)
    return links, insights


def _relation(new_type: str, new_context: str, new_content: str, old: Record, sim: float) -> tuple[str, str]:
    if _resolves(new_type, new_context, old):
        return "supersedes", "a success on the same problem as an earlier failure in this project"
    if _contradicts(new_type, new_content, old, sim):
        return "contradicts", "same topic, opposite outcome or stance"
    if sim >= DUPLICATE:
        return "related", f"nearly identical to an existing {old.memory_type} (similarity {sim:.2f})"
    if old.context == new_context:
        return "extends", f"same project ({old.context}) and topic (similarity {sim:.2f})"
    return "related", f"same topic in another project ({old.context}, similarity {sim:.2f})"


def _resolves(new_type: str, new_context: str, old: Record) -> bool:
    return new_type == "success" and old.memory_type == "failure" and old.context == new_context


def _contradicts(new_type: str, new_content: str, old: Record, sim: float) -> bool:
    if sim < CONTRADICTION:
        return False
    opposite = {new_type, old.memory_type} == {"success", "failure"}
    stance = bool(_NEGATION.search(new_content)) != bool(_NEGATION.search(old.content))
    return opposite or (stance and "decision" in (new_type, old.memory_type))


def _insight(new_type: str, new_context: str, new_content: str, old: Record, sim: float) -> Insight | None:
    if _resolves(new_type, new_context, old):
        return Insight(
            kind="success_after_failure",
            memory_id=old.id,
            similarity=sim,
            message=f"this success resembles failure {old.id} in '{old.context}': link them with "
            "link_memories (relation 'supersedes') so the fix is found from the failure",
        )
    if _contradicts(new_type, new_content, old, sim):
        return Insight(
            kind="potential_contradiction",
            memory_id=old.id,
            similarity=sim,
            message=f"may contradict memory {old.id} ({old.memory_type}): check which one still "
            "holds, then update_memory or link them as 'contradicts'/'supersedes'",
        )
    if sim >= DUPLICATE:
        return Insight(
            kind="potential_duplicate",
            memory_id=old.id,
            similarity=sim,
            message=f"very similar to memory {old.id} (similarity {sim:.2f}): "
            "use update_memory instead to refine it rather than keeping two copies",
        )
    return None


# -- the whole knowledge base ------------------------------------------------------


def knowledge_report(
    records: list[Record], links: list[LinkRecord], stale_days: int, now: datetime | None = None
) -> KnowledgeReport:
    now = now or datetime.now(UTC)
    total = len(records)
    if not total:
        return KnowledgeReport(health_score=100, total_memories=0, issues=[])
    linked = {lk.source_id for lk in links} | {lk.target_id for lk in links}
    issues: list[Issue] = []
    penalty = 0.0

    untagged = [r.id for r in records if not r.tags]
    if untagged:
        share = len(untagged) / total
        penalty += 30 * share
        issues.append(
            Issue(
                kind="orphan_memories",
                severity=_severity(share),
                affected_ids=untagged,
                description=f"{len(untagged)} of {total} memories have no tags, so tag filters "
                "and explore_related cannot reach them",
                suggested_action="add tags with update_memory(memory_id, tags=[...])",
            )
        )

    unlinked = [r.id for r in records if r.id not in linked]
    share = len(unlinked) / total
    if total > 1 and share > 0.5:
        penalty += 25 * share
        issues.append(
            Issue(
                kind="low_connectivity",
                severity=_severity(share),
                affected_ids=unlinked,
                description=f"{len(unlinked)} of {total} memories are linked to nothing",
                suggested_action="run explore_related on them and record real relations with "
                "link_memories; store_memory's suggested_links are good candidates",
            )
        )

    cutoff = now - timedelta(days=stale_days)
    stale = [r.id for r in records if _parse(r.updated_at) < cutoff]
    if stale:
        share = len(stale) / total
        penalty += 20 * share
        issues.append(
            Issue(
                kind="stale_memories",
                severity=_severity(share),
                affected_ids=stale,
                description=f"{len(stale)} memories were not updated in {stale_days} days",
                suggested_action="review them: update_memory what still holds, delete_memory what no longer does",
            )
        )

    groups = similar_tag_groups(r.tags for r in records)
    if groups:
        affected = sorted({r.id for r in records for g in groups if set(r.tags) & set(g)})
        penalty += min(15, 5 * len(groups))
        issues.append(
            Issue(
                kind="similar_tags",
                severity="low" if len(groups) < 3 else "medium",
                affected_ids=affected,
                details=[", ".join(g) for g in groups],
                description=f"{len(groups)} groups of tags look like spellings of one tag",
                suggested_action="pick one spelling per group (the first is the most used) and "
                "update_memory the affected memories' tags",
            )
        )
    return KnowledgeReport(health_score=max(0, round(100 - penalty)), total_memories=total, issues=issues)


def _severity(share: float) -> str:
    return "high" if share > 0.5 else "medium" if share > 0.2 else "low"


def _parse(stamp: str) -> datetime:
    try:
        value = datetime.fromisoformat(stamp)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def tag_key(tag: str) -> str:
    """Tags that differ only in case, separators or a plural 's' share a key."""
    key = re.sub(r"[\s_\-./]+", "", tag.lower())
    return key[:-1] if len(key) > 3 and key.endswith("s") and not key.endswith("ss") else key


def similar_tag_groups(tag_lists) -> list[list[str]]:
    """Groups of 2+ distinct tags with the same key, most used spelling first."""
    counts: dict[str, int] = defaultdict(int)
    for tags in tag_lists:
        for t in tags:
            counts[t] += 1
    by_key: dict[str, list[str]] = defaultdict(list)
    for tag in counts:
        by_key[tag_key(tag)].append(tag)
    return [sorted(g, key=lambda t: (-counts[t], t)) for g in by_key.values() if len(g) > 1]
