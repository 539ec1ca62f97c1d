"""The MCP surface: tools, resources and the prompt, over ``MemoryService``.

Tools are async and run every blocking step (embedding, Chroma) in a worker
thread (``Runtime.run``), so other calls keep flowing while the model loads or
Chroma works.
"""

from __future__ import annotations

import importlib.metadata
import json
import uuid
from typing import Annotated, Any

import anyio
import anyio.lowlevel
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import Field

from nexus_core import ToolError
from nexus_memory.models import (
    DeletedMemory,
    Exploration,
    KnowledgeReport,
    LinkResult,
    Memory,
    MemoryLinks,
    MemoryList,
    MemoryType,
    MergedMemory,
    Pong,
    RecallResult,
    RelationType,
    Stats,
    StoredMemory,
    UnlinkResult,
    UpdatedMemory,
)
from nexus_memory.runtime import Runtime
from nexus_memory.service import NotFound

MemoryId = Annotated[str, Field(min_length=1, description="An id from store, recall or list.")]
ContextFilter = Annotated[str | None, Field(description="Only memories of this project (context_name).")]
TagFilter = Annotated[list[str] | None, Field(description="Only memories with at least one of these tags.")]
TypeFilter = Annotated[MemoryType | None, Field(description="Only memories of this type.")]
IncludeArchived = Annotated[bool, Field(description="Also archived memories (left out by default).")]


def register_tools(register: Any, rt: Runtime) -> None:
    async def store_memory(
        content: Annotated[str, Field(min_length=1, description="What was learned, in Markdown.")],
        context_name: Annotated[str, Field(min_length=1, max_length=200, description="The project's name.")],
        tags: Annotated[list[str], Field(description="Keywords: technology, error family, component ([] for none).")],
        memory_type: Annotated[MemoryType, Field(description="What kind of memory this is.")] = "insight",
    ) -> StoredMemory:
        """Remember something learned for a project. Returns its memory_id, suggested_links to similar memories,
        insights: a likely duplicate (use update_memory), a contradiction, a success that may resolve an
        earlier failure in any project, and suggested_tags that similar memories use.
        """
        memory_id = str(uuid.uuid4())
        try:
            stored = await rt.run(lambda s: s.store_memory(content, context_name, tags, memory_type, memory_id))
            await anyio.lowlevel.checkpoint()  # raises if the client cancelled while the worker thread stored
            return stored
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the client gave up and may retry: leave no copy behind
                await rt.run(lambda s: s.forget(memory_id))
            raise

    async def recall_memories(
        query: Annotated[str, Field(min_length=1, description="The problem, question or error, in any words.")],
        limit: Annotated[int, Field(ge=1, le=20, description="How many memories (1-20).")] = 5,
        context_filter: ContextFilter = None,
        tag_filter: TagFilter = None,
        type_filter: TypeFilter = None,
        include_archived: IncludeArchived = False,
    ) -> RecallResult:
        """Recall memories by meaning, in any language, lifting those that contain the query's exact terms (error
        codes, names). Superseded memories rank a little lower; archived ones are left out unless asked."""
        return await rt.run(lambda s: s.recall(query, limit, context_filter, tag_filter, type_filter, include_archived))

    async def list_memories(
        limit: Annotated[int, Field(ge=1, le=100, description="Page size (1-100).")] = 20,
        offset: Annotated[int, Field(ge=0, description="How many to skip.")] = 0,
        context_filter: ContextFilter = None,
        tag_filter: TagFilter = None,
        type_filter: TypeFilter = None,
        include_archived: IncludeArchived = False,
    ) -> MemoryList:
        """List memories, newest first, with total_count and has_more for paging."""
        return await rt.run(
            lambda s: s.list_memories(limit, offset, context_filter, tag_filter, type_filter, include_archived)
        )

    async def get_memory(memory_id: MemoryId) -> Memory:
        """One memory in full."""
        return await rt.run(lambda s: s.get_memory(memory_id))

    async def update_memory(
        memory_id: MemoryId,
        content: Annotated[str | None, Field(description="New content (re-embedded).")] = None,
        tags: Annotated[list[str] | None, Field(description="The new tags (replace the old ones).")] = None,
        memory_type: Annotated[MemoryType | None, Field(description="The new type.")] = None,
        archived: Annotated[
            bool | None, Field(description="true archives it (recall and list skip it), false restores it.")
        ] = None,
    ) -> UpdatedMemory:
        """Change a memory's content, tags, type or archived state; `changes` lists what changed."""
        return await rt.run(lambda s: s.update(memory_id, content, tags, memory_type, archived))

    async def delete_memory(memory_id: MemoryId) -> DeletedMemory:
        """Delete a memory and every link to or from it. Irreversible."""
        return await rt.run(lambda s: s.delete(memory_id))

    async def get_stats() -> Stats:
        """Totals: memories by type, contexts (projects), tags and the most used ones, links."""
        return await rt.run(lambda s: s.stats())

    async def link_memories(
        source_id: MemoryId,
        target_id: MemoryId,
        relation_type: Annotated[
            RelationType,
            Field(
                description="How source relates to target: related, supersedes (replaces or fixes it), "
                "contradicts, extends, depends_on."
            ),
        ],
        reason: Annotated[str, Field(max_length=1000, description="Why they are linked.")] = "",
    ) -> LinkResult:
        """Link two memories (source --relation--> target); linking again refreshes the reason."""
        return await rt.run(lambda s: s.link(source_id, target_id, relation_type, reason))

    async def unlink_memories(
        source_id: MemoryId,
        target_id: MemoryId,
        relation_type: Annotated[RelationType | None, Field(description="Only this relation (default: all).")] = None,
    ) -> UnlinkResult:
        """Remove the links from source to target."""
        return await rt.run(lambda s: s.unlink(source_id, target_id, relation_type))

    async def get_memory_links(memory_id: MemoryId) -> MemoryLinks:
        """A memory's outgoing links (`links`), and the links to it (`incoming`)."""
        return await rt.run(lambda s: s.links(memory_id))

    async def explore_related(
        memory_id: MemoryId,
        include_tag_siblings: Annotated[bool, Field(description="Also memories sharing tags.")] = True,
        include_context_siblings: Annotated[bool, Field(description="Also memories of the same project.")] = True,
    ) -> Exploration:
        """What surrounds a memory: its links, memories sharing its tags, and its project's other memories."""
        return await rt.run(lambda s: s.explore(memory_id, include_tag_siblings, include_context_siblings))

    async def analyze_knowledge() -> KnowledgeReport:
        """A health score and issues (untagged, unlinked, stale memories, near-duplicate tags) with actions."""
        return await rt.run(lambda s: s.analyze())

    async def merge_memories(
        target_id: Annotated[str, Field(min_length=1, description="The memory that remains (keeps its id).")],
        source_ids: Annotated[list[str], Field(min_length=1, description="Memories folded into it, then deleted.")],
        content: Annotated[str | None, Field(description="The merged content (default: all joined).")] = None,
    ) -> MergedMemory:
        """Fold similar memories into one: content joined (or given), tags united, links moved; sources deleted."""
        return await rt.run(lambda s: s.merge(target_id, source_ids, content))

    async def ping() -> Pong:
        """Check that the memory server answers: status, version, and whether the store is ready."""
        return Pong(status="ok", version=importlib.metadata.version("nexus-stack-memory"), store=rt.state())

    ro = {"read_only": True, "idempotent": True}
    register(store_memory, category="write", title="Store a memory", destructive=False)
    register(recall_memories, category="read", title="Recall memories", **ro)
    register(list_memories, category="read", title="List memories", **ro)
    register(get_memory, category="read", title="Get a memory", **ro)
    register(update_memory, category="write", title="Update a memory", destructive=True, idempotent=True)
    register(delete_memory, category="delete", title="Delete a memory", destructive=True, idempotent=False)
    register(get_stats, category="read", title="Memory statistics", **ro)
    register(link_memories, category="write", title="Link memories", destructive=False, idempotent=True)
    register(unlink_memories, category="write", title="Unlink memories", destructive=True, idempotent=False)
    register(get_memory_links, category="read", title="Memory links", **ro)
    register(explore_related, category="read", title="Explore related memories", **ro)
    register(analyze_knowledge, category="read", title="Analyse the knowledge base", **ro)
    register(merge_memories, category="delete", title="Merge memories", destructive=True, idempotent=False)
    register(ping, category="read", title="Ping the memory server", **ro)


def register_resources(register: Any, rt: Runtime) -> None:
    def memory(id: str) -> str:
        try:
            m = rt.run_sync(lambda s: s.get_memory(id))
        except NotFound as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        tags = ", ".join(m.tags) or "(none)"
        return (
            f"# {m.type}: {m.context}\n\n- id: {m.id}\n- type: {m.type}\n- context: {m.context}\n- tags: {tags}\n"
            f"- created_at: {m.created_at}\n- updated_at: {m.updated_at}\n\n{m.content}\n"
        )

    def stats() -> str:
        try:
            return json.dumps(rt.run_sync(lambda s: s.stats()).model_dump(), indent=2)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None

    register(
        memory,
        "memory://{id}",
        name="memory",
        title="A memory",
        description="One memory as Markdown: its type, context, tags and times, then its content.",
        mime_type="text/markdown",
        category="read",
    )
    register(
        stats,
        "memory://stats",
        name="memory_stats",
        title="Memory statistics",
        description="What get_stats returns, as JSON.",
        mime_type="application/json",
        category="read",
    )


def register_prompts(register: Any) -> None:
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

    register(record_fix, title="Record a fix", category="write")
