"""What store_memory notices, on real stored memories: a success that may resolve a failure of any project,
duplicates and contradictions."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.memory.helpers import PG_FIX, call, store

pytestmark = pytest.mark.anyio

# A failure whose wording is negative ("could not", "did not"), as failures usually are: a success on the
# same problem states the opposite, and must still be read as its fix, not as a contradiction.
PG_DOWN = (
    "The API could not reach Postgres: every connection failed with ECONNREFUSED 127.0.0.1:5432. "
    "The docker-compose port mapping did not match the port the API uses."
)
WEBPACK = "The webpack production build runs out of memory (JavaScript heap out of memory) in CI."


async def stored(client: Client, content: str, context: str, memory_type: str, tags: list[str]) -> dict:
    return await call(client, "store_memory", content=content, context_name=context, tags=tags, memory_type=memory_type)


async def test_a_fix_in_one_project_resolves_a_failure_recorded_in_another(client: Client) -> None:
    failure = await store(client, PG_DOWN, "billing", ["postgres"], "failure")
    await store(client, WEBPACK, "dashboard", ["webpack"], "failure")  # another failure, on another topic
    fix = await stored(client, PG_FIX, "gateway", "success", ["postgres", "docker"])

    assert [i["type"] for i in fix["insights"]] == ["success_after_failure"]  # not a contradiction
    (insight,) = fix["insights"]
    assert insight["related_memory_id"] == failure and 0.6 <= insight["confidence"] <= 1
    assert "recorded in project 'billing'" in insight["message"]
    assert f"source_id='{fix['memory_id']}'" in insight["suggested_action"]
    assert f"target_id='{failure}'" in insight["suggested_action"] and "supersedes" in insight["suggested_action"]
    (link,) = fix["suggested_links"]
    assert link["target_id"] == failure and link["suggested_relation"] == "supersedes"
    assert link["similarity"] == insight["confidence"] and "billing" in link["reason"]
    assert fix["link_suggestion_message"] == "Found 1 related memory. Consider linking them with link_memories."


async def test_a_fix_in_the_same_project_and_no_fix_for_unrelated_failures(client: Client) -> None:
    failure = await store(client, PG_DOWN, "billing", ["postgres"], "failure")
    same = await stored(client, PG_FIX, "billing", "success", ["postgres"])
    assert [(i["type"], i["related_memory_id"]) for i in same["insights"]] == [("success_after_failure", failure)]
    assert "in this project" in same["insights"][0]["message"]
    unrelated = await stored(client, "Switched the nightly report to UTC timestamps.", "ops", "success", ["time"])
    assert unrelated["insights"] == [] and unrelated["suggested_links"] == []
    assert unrelated["link_suggestion_message"] == "No closely related memories found."
    # A failure stored after a success is not that success's fix.
    later = await stored(client, PG_DOWN + " Again on staging.", "staging", "failure", ["postgres"])
    assert "success_after_failure" not in {i["type"] for i in later["insights"]}


async def test_the_failure_is_found_beyond_the_nearest_memories(client: Client) -> None:
    """Five successes closer to the new one than the failure: the failure is still compared, in any project."""
    failure = await store(client, PG_DOWN, "billing", ["postgres"], "failure")
    for n in range(5):
        await store(client, f"{PG_FIX} Same fix applied to service number {n}.", f"svc-{n}", ["postgres"], "success")
    fix = await stored(client, PG_FIX, "gateway", "success", ["postgres"])
    nearest = [link["target_id"] for link in fix["suggested_links"]]
    assert nearest.index(failure) == 5  # the sixth most similar: outside the 5 nearest neighbours
    resolved = [i for i in fix["insights"] if i["type"] == "success_after_failure"]
    assert [i["related_memory_id"] for i in resolved] == [failure]
    assert {i["type"] for i in fix["insights"]} == {"success_after_failure", "potential_duplicate"}


async def test_duplicates_and_contradictions(client: Client) -> None:
    original = await store(client, PG_FIX, "billing", ["postgres"], "insight")
    dup = await stored(client, PG_FIX + " Documented in the README.", "other", "insight", ["postgres"])
    (insight,) = dup["insights"]
    assert insight["type"] == "potential_duplicate" and insight["related_memory_id"] == original
    assert insight["confidence"] > 0.9 and "update_memory" in insight["suggested_action"]
    assert insight["message"].startswith("This memory is very similar (")

    decision = await store(
        client, "Decision: we use Redis for the session cache of the user service.", "users", ["redis"], "decision"
    )
    reverse = await stored(
        client,
        "Decision: we do not use Redis for the session cache of the user service anymore.",
        "users",
        "decision",
        ["redis"],
    )
    kinds = {i["type"]: i for i in reverse["insights"]}
    assert kinds["potential_contradiction"]["related_memory_id"] == decision
    links = {link["target_id"]: link["suggested_relation"] for link in reverse["suggested_links"]}
    assert links[decision] == "contradicts"
