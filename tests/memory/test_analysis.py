"""The knowledge base's health report and store-time insights on fixed input: exact scores, issues and links."""

from __future__ import annotations

from datetime import UTC, datetime

from nexus_memory.analysis import NewMemory, knowledge_report, store_analysis
from nexus_memory.store import LinkRecord, Record

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def record(id: str, tags: list[str], updated_at: str, content: str = "Cache the parsed config.") -> Record:
    return Record(id, content, "insight", "api", tags, "2026-01-01T00:00:00+00:00", updated_at)


def test_the_health_report_scores_untagged_stale_and_similar_tags_exactly() -> None:
    records = [
        record("a", ["test", "Docker"], "2026-05-30T00:00:00+00:00"),
        record("b", ["tests", "docker"], "2026-01-01T00:00:00+00:00"),  # stale
        record("c", [], "2026-05-31T00:00:00+00:00"),  # untagged
        record("d", ["api"], "2026-02-01T00:00:00"),  # stale; no zone means UTC
    ]
    links = [LinkRecord("a", "b", "related", "", "2026-05-30T00:00:00+00:00")]
    report = knowledge_report(records, links, stale_days=30, now=NOW)
    issues = {issue.type: issue for issue in report.issues}
    # 2 of 4 unlinked: not > half, so no low_connectivity; archive candidates cost no points
    assert list(issues) == ["orphan_memories", "stale_memories", "similar_tags", "archive_candidates"]
    assert issues["orphan_memories"].affected_memory_ids == ["c"] and issues["orphan_memories"].severity == "medium"
    assert issues["stale_memories"].affected_memory_ids == ["b", "d"]
    assert issues["stale_memories"].message == "2 memories were not updated in 30 days"
    assert issues["similar_tags"].details == ["test, tests", "Docker, docker"]  # a plural, and a case
    assert issues["similar_tags"].affected_memory_ids == ["a", "b"]
    assert issues["archive_candidates"].affected_memory_ids == ["b", "d"]  # neither updated nor recalled
    # 100 - 30 * 1/4 (untagged) - 20 * 2/4 (stale) - 5 * 2 (tag groups)
    assert report.health_score == 72.5
    assert report.stats.unlinked_memories == 2


def test_a_knowledge_base_without_links_loses_points_for_connectivity() -> None:
    records = [record(id, [id], "2026-05-30T00:00:00+00:00") for id in ("a", "b", "c")]
    report = knowledge_report(records, [], stale_days=30, now=NOW)
    (issue,) = report.issues
    assert issue.type == "low_connectivity" and issue.affected_memory_ids == ["a", "b", "c"]
    assert report.health_score == 75.0  # 100 - 25 * 3/3


def test_a_duplicate_is_a_neighbour_at_0_90_or_more() -> None:
    new = NewMemory("new", "insight", "web", "Cache the parsed config.")
    old = record("old", ["config"], "2026-05-30T00:00:00+00:00")
    links, insights = store_analysis(new, [(old, 0.9)])
    (insight,) = insights
    assert (insight.type, insight.related_memory_id, insight.confidence) == ("potential_duplicate", "old", 0.9)
    assert links[0].reason == "nearly identical to an existing insight (similarity 0.90)"
    links, insights = store_analysis(new, [(old, 0.8999)])
    assert insights == []
    assert (links[0].suggested_relation, links[0].reason) == (
        "related",
        "same topic in another project (api, similarity 0.90)",
    )


def test_a_contradiction_is_an_opposite_stance_at_0_70_or_more() -> None:
    new = NewMemory("new", "decision", "api", "We do not cache the parsed config.")
    old = record("old", ["config"], "2026-05-30T00:00:00+00:00")  # "Cache the parsed config.", no negation
    links, insights = store_analysis(new, [(old, 0.7)])
    assert [(i.type, i.confidence) for i in insights] == [("potential_contradiction", 0.7)]
    assert (links[0].suggested_relation, links[0].reason) == ("contradicts", "same topic, opposite stance")
    links, insights = store_analysis(new, [(old, 0.6999)])
    assert insights == [] and links[0].suggested_relation == "extends"  # same project, same topic
