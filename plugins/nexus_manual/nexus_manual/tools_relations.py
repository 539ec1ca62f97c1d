"""The relation tools: find, create, delete and garbage-collect the front matter's relations."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from nexus_core import ToolRegistrar
from nexus_manual import graph
from nexus_manual.library import Libraries
from nexus_manual.models import GarbageResult, RelationsChanged, RelationsResult
from nexus_manual.tool_args import EdgeList, LibraryName, bound


def create_relations(libs: Libraries, library_name: LibraryName, relations: EdgeList) -> RelationsChanged:
    """Add relations to the 'from' entities' front matter. Both ends must exist; existing ones are left as is."""
    return graph.create_relations(libs.get(library_name), relations)


def delete_relations(libs: Libraries, library_name: LibraryName, relations: EdgeList) -> RelationsChanged:
    """Remove relations from the 'from' entities' front matter. All must exist, or nothing changes."""
    return graph.delete_relations(libs.get(library_name), relations)


def find_relations(
    libs: Libraries,
    library_name: LibraryName,
    to_entity: str | None = None,
    relation_type: str | None = None,
) -> RelationsResult:
    """Relations between entities, by target or type."""
    return graph.find_relations(libs.get(library_name), to_entity, relation_type)


def garbage_collect_relations(
    libs: Libraries,
    library_name: LibraryName,
    remove: Annotated[bool, Field(description="Remove them (true) or only list them (false).")] = False,
) -> GarbageResult:
    """List, or remove, relations pointing to entities that no longer exist."""
    return graph.garbage_collect(libs.get(library_name), remove)


def register(register: ToolRegistrar, libs: Libraries) -> None:
    read = {"category": "read", "read_only": True, "idempotent": True}
    register(
        bound(find_relations, libs),
        title="Find relations",
        keywords="backlinks, which library pages point to a page",
        **read,
    )
    write = {"category": "write", "idempotent": True}
    for fn, title, destructive, keywords in (
        (create_relations, "Create relations", False, "link or relate two library pages"),
        (delete_relations, "Delete relations", True, "unlink library pages"),
        (
            garbage_collect_relations,
            "Garbage-collect relations",
            True,
            "broken links, links to deleted library pages, cleanup",
        ),
    ):
        register(bound(fn, libs), title=title, destructive=destructive, keywords=keywords, **write)
