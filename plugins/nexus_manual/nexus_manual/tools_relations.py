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
    to_entity: Annotated[str | None, Field(description="Only relations pointing to this entity.")] = None,
    relation_type: Annotated[str | None, Field(description="Only relations of this type.")] = None,
) -> RelationsResult:
    """Find relations (and so the 'from' entities) by target and/or type; without filters, every relation."""
    return graph.find_relations(libs.get(library_name), to_entity, relation_type)


def garbage_collect_relations(
    libs: Libraries,
    library_name: LibraryName,
    remove: Annotated[bool, Field(description="Remove them (true) or only list them (false).")] = False,
) -> GarbageResult:
    """List, or remove, relations pointing to entities that no longer exist."""
    return graph.garbage_collect(libs.get(library_name), remove)


def register(register: ToolRegistrar, libs: Libraries) -> None:
    register(bound(find_relations, libs), category="read", title="Find relations", read_only=True, idempotent=True)
    write = {"category": "write", "idempotent": True}
    register(bound(create_relations, libs), title="Create relations", destructive=False, **write)
    register(bound(delete_relations, libs), title="Delete relations", destructive=True, **write)
    register(bound(garbage_collect_relations, libs), title="Garbage-collect relations", destructive=True, **write)
