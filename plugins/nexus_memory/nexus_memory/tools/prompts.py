"""The prompt: how to record a fix well."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field


def record_fix(
    problem: Annotated[str, Field(description="The problem that was just solved.")],
    project: Annotated[str, Field(description="The project it happened in.")] = "",
) -> str:
    """Help the assistant record a fix well: symptom, cause, solution, context and tags."""
    where = f" in the project '{project}'" if project else ""
    return (
        f"We just solved this problem{where}: {problem}\n\n"
        "Record it with the memory tools so it can be found the next time it happens:\n"
        "1. First call recall_memories with the symptom. If one of the returned memories already covers it, "
        "call update_memory on its id instead of storing a copy.\n"
        "2. Otherwise call store_memory with memory_type 'success' (or 'failure' for an approach that did "
        "not work), context_name set to the project, and content in Markdown with these sections:\n"
        "   - **Symptom**: what was seen, quoting exact error messages, codes and function names verbatim "
        "(they are matched literally later).\n"
        "   - **Cause**: why it happened.\n"
        "   - **Solution**: what fixed it, with the command or code.\n"
        "   - **Context**: versions, environment, and anything that limits when the fix applies.\n"
        "3. tags: 3-6 short lowercase tags (language, library, component, error family), reusing existing "
        "spellings (get_stats lists the tags in use).\n"
        "4. Read the response. suggested_links lists similar memories with a suggested_relation and a reason: "
        "link those that really relate with link_memories(source_id=memory_id, target_id, relation_type, "
        "reason). Act on each of the insights by its type: success_after_failure (this fix may resolve a "
        "failure recorded earlier, maybe in another project: link it with relation_type 'supersedes'), "
        "potential_duplicate (update the existing memory and delete the new one), potential_contradiction "
        "(decide which one still holds). Each insight's suggested_action says how."
    )
