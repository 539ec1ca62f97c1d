"""What the plugin notices on its own: at store time (duplicates, contradictions,
a success after a failure) and across the whole knowledge base (health issues)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from nexus_memory.models import Insight, Issue, KnowledgeReport, KnowledgeStats, SuggestedLink
from nexus_memory.store import LinkRecord, Record

DUPLICATE = 0.90  # above this, the new memory is probably the same as an old one
RELATED = 0.55  # MiniLM similarities above this are usually the same topic
RESOLVES = 0.60  # a success this close to a failure is usually about the same problem (fix/failure pairs: 0.7-0.85)
CONTRADICTION = 0.70
_NEGATION = re.compile(r"\b(not|never|no longer|don't|doesn't|do not|does not|avoid|instead of|stop|stopped)\b", re.I)


def summarize(content: str, limit: int = 200) -> str:
    """The first ``limit`` characters of the content, as 002 defines the summary."""
    return content[:limit]


@dataclass
class NewMemory:
    id: str
    memory_type: str
    context: str
    content: str


def store_analysis(new: NewMemory, neighbours: list[tuple[Record, float]]) -> tuple[list[SuggestedLink], list[Insight]]:
    """Suggested links and insights for a memory being stored, from its nearest neighbours (best first).

    For a success, ``neighbours`` should include the nearest failures of every project: a fix found in one
    project for a failure recorded in another is the case worth telling.
    """
    links: list[SuggestedLink] = []
    insights: list[Insight] = []
    seen: set[str] = set()
    for old, sim in sorted(neighbours, key=lambda rs: -rs[1]):
        sim = round(sim, 4)
        if sim < RELATED or old.id in seen or old.id == new.id:
            continue
        seen.add(old.id)
        relation, reason = _relation(new, old, sim)
        links.append(
            SuggestedLink(
                target_id=old.id,
                target_summary=summarize(old.content),
                similarity=sim,
                suggested_relation=relation,
                reason=reason,
            )
        )
        if insight := _insight(new, old, sim):
            insights.append(insight)
    return links, insights


def link_suggestion_message(links: list[SuggestedLink]) -> str:
    if not links:
        return "No closely related memories found."
    n = len(links)
    return f"Found {n} related {'memory' if n == 1 else 'memories'}. Consider linking them with link_memories."


def _where(context: str, new: NewMemory) -> str:
    return "in this project" if context == new.context else f"recorded in project '{context}'"


def _resolves(new: NewMemory, old: Record, sim: float) -> bool:
    """A success that may be the fix of an earlier failure, in any project."""
    return new.memory_type == "success" and old.memory_type == "failure" and sim >= RESOLVES


def _contradicts(new: NewMemory, old: Record, sim: float) -> bool:
    """Same topic, opposite stance: one says not/never/avoid where the other does not."""
    stance = bool(_NEGATION.search(new.content)) != bool(_NEGATION.search(old.content))
    return sim >= CONTRADICTION and stance and not _resolves(new, old, sim)


def _relation(new: NewMemory, old: Record, sim: float) -> tuple[str, str]:
    if _resolves(new, old, sim):
        return "supersedes", f"may be the fix for this failure {_where(old.context, new)}"
    if _contradicts(new, old, sim):
        return "contradicts", "same topic, opposite stance"
    if sim >= DUPLICATE:
        return "related", f"nearly identical to an existing {old.memory_type} (similarity {sim:.2f})"
    if old.context == new.context:
        return "extends", f"same project ({old.context}) and topic (similarity {sim:.2f})"
    return "related", f"same topic in another project ({old.context}, similarity {sim:.2f})"


def _insight(new: NewMemory, old: Record, sim: float) -> Insight | None:
    if _resolves(new, old, sim):
        return Insight(
            type="success_after_failure",
            message=f"This success may resolve failure {old.id} {_where(old.context, new)} "
            f"(similarity {sim:.0%}): {summarize(old.content, 80)}",
            related_memory_id=old.id,
            confidence=sim,
            suggested_action=f"If it is the fix, link them: link_memories(source_id='{new.id}', "
            f"target_id='{old.id}', relation_type='supersedes'), so the fix is found from the failure",
        )
    if _contradicts(new, old, sim):
        return Insight(
            type="potential_contradiction",
            message=f"This memory may contradict {old.memory_type} {old.id} {_where(old.context, new)} "
            f"(similarity {sim:.0%})",
            related_memory_id=old.id,
            confidence=sim,
            suggested_action="Check which one still holds: update_memory or delete_memory the outdated one, "
            "or link them as 'contradicts' or 'supersedes'",
        )
    if sim >= DUPLICATE:
        return Insight(
            type="potential_duplicate",
            message=f"This memory is very similar ({sim:.0%}) to an existing one: {old.id}",
            related_memory_id=old.id,
            confidence=sim,
            suggested_action=f"Use update_memory on {old.id} instead, and delete_memory '{new.id}' if it adds nothing",
        )
    return None


# -- the whole knowledge base ------------------------------------------------------


def knowledge_report(
    records: list[Record], links: list[LinkRecord], stale_days: int, now: datetime | None = None
) -> KnowledgeReport:
    now = now or datetime.now(UTC)
    total = len(records)
    linked = {lk.source_id for lk in links} | {lk.target_id for lk in links}
    unlinked = [r.id for r in records if r.id not in linked]
    stats = KnowledgeStats(
        unlinked_memories=len(unlinked), memories_per_context=dict(Counter(r.context for r in records).most_common())
    )
    issues, penalty = _issues(records, unlinked, stale_days, now) if total else ([], 0.0)
    superseded = {lk.target_id for lk in links if lk.relation_type == "supersedes"}
    issues += _archive_candidates(records, superseded, stale_days, now)
    return KnowledgeReport(
        total_memories=total,
        health_score=round(max(0.0, 100.0 - penalty), 1),
        issues=issues,
        suggestions=_suggestions(records, issues),
        stats=stats,
    )


def _issues(records: list[Record], unlinked: list[str], stale_days: int, now: datetime) -> tuple[list[Issue], float]:
    total = len(records)
    issues: list[Issue] = []
    penalty = 0.0

    untagged = [r.id for r in records if not r.tags]
    if untagged:
        share = len(untagged) / total
        penalty += 30 * share
        issues.append(
            Issue(
                type="orphan_memories",
                severity=_severity(share),
                message=f"{len(untagged)} of {total} memories have no tags, so filtering or exploring by tag "
                "cannot reach them",
                affected_memory_ids=untagged,
                suggested_action="Add tags using update_memory(memory_id, tags=[...])",
            )
        )

    share = len(unlinked) / total
    if total > 1 and share > 0.5:
        penalty += 25 * share
        issues.append(
            Issue(
                type="low_connectivity",
                severity=_severity(share),
                message=f"{share:.0%} of memories have no explicit links ({len(unlinked)} of {total})",
                affected_memory_ids=unlinked,
                suggested_action="Use explore_related and link_memories to record real relations; "
                "store_memory's suggested_links are good candidates",
            )
        )

    cutoff = now - timedelta(days=stale_days)
    stale = [r.id for r in records if _parse(r.updated_at) < cutoff]
    if stale:
        share = len(stale) / total
        penalty += 20 * share
        issues.append(
            Issue(
                type="stale_memories",
                severity=_severity(share),
                message=f"{len(stale)} memories were not updated in {stale_days} days",
                affected_memory_ids=stale,
                suggested_action="Review them: update_memory what still holds, delete_memory what no longer does",
            )
        )

    groups = similar_tag_groups(r.tags for r in records)
    if groups:
        affected = sorted({r.id for r in records for g in groups if set(r.tags) & set(g)})
        penalty += min(15, 5 * len(groups))
        issues.append(
            Issue(
                type="similar_tags",
                severity="low" if len(groups) < 3 else "medium",
                message=f"{len(groups)} groups of tags look like spellings of one tag"
                if len(groups) > 1
                else "1 group of tags looks like spellings of one tag",
                affected_memory_ids=affected,
                suggested_action="Pick one spelling per group (the first is the most used) and "
                "update_memory the affected memories' tags",
                details=[", ".join(g) for g in groups],
            )
        )
    return issues, penalty


def _archive_candidates(records: list[Record], superseded: set[str], stale_days: int, now: datetime) -> list[Issue]:
    """Memories another one supersedes, or neither updated nor recalled for ``stale_days``, not archived yet.

    Informational (no health penalty): archiving is the user's call, and recall already ranks them lower.
    """
    cutoff = now - timedelta(days=stale_days)
    unused = {r.id for r in records if _parse(max(r.updated_at, r.last_recalled_at)) < cutoff}
    found = [r.id for r in records if not r.archived and (r.id in superseded or r.id in unused)]
    if not found:
        return []
    return [
        Issue(
            type="archive_candidates",
            severity="low",
            message=f"{len(found)} memories are superseded by another or were neither updated nor recalled in "
            f"{stale_days} days",
            affected_memory_ids=found,
            suggested_action="Archive what no longer helps with update_memory(memory_id, archived=true): recall "
            "and list_memories then leave it out (include_archived=true still finds it)",
        )
    ]


def _suggestions(records: list[Record], issues: list[Issue]) -> list[str]:
    if not records:
        return ["Store what you learn with store_memory: fixes, failures, decisions and insights"]
    types = {r.memory_type for r in records}
    out = ["Address the issues listed to improve discoverability"] if issues else []
    if "failure" not in types:
        out.append("Don't forget to record failures too!")
    if "decision" not in types:
        out.append("Record technical decisions with their reasons (memory_type 'decision')")
    return out


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
