"""The MCP tools: schemas and annotations here, the work in entities / graph / manual."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from nexus_core import PluginContext, ToolRegistrar
from nexus_manual import entities as ent
from nexus_manual import graph, manual
from nexus_manual.library import Libraries
from nexus_manual.models import (
    Changed,
    Edge,
    EntitiesSections,
    EntitiesText,
    EntitiesToc,
    EntityList,
    GarbageResult,
    ManualText,
    MergeResult,
    NewEntity,
    RelationsChanged,
    RelationsResult,
    RenameResult,
)

LibraryName = Annotated[str, Field(min_length=1, description="A configured library's name.")]
EntityName = Annotated[str, Field(min_length=1, description="An entity's name (its file name without '.md').")]
EntityNames = Annotated[list[str], Field(min_length=1, description="Entity names (file names without '.md').")]
InSection = Annotated[
    str | None,
    Field(description="Limit the edit to this section (heading text, '#'s and case ignored). Default: the whole body."),
]
Toc = Annotated[
    str, Field(min_length=1, description="The manual section's heading, e.g. 'Conventions' or '## Conventions'.")
]
EdgeList = Annotated[list[Edge], Field(min_length=1, description="Relations as {from, to, type}.")]


def register_tools(register: ToolRegistrar, ctx: PluginContext, libs: Libraries) -> None:
    _register_reading(register, libs)
    _register_editing(register, libs)
    _register_graph(register, libs)
    _register_manual(register, libs)


def _register_reading(register: ToolRegistrar, libs: Libraries) -> None:
    def list_entities(
        library_name: LibraryName,
        entity_glob: Annotated[str, Field(description="fnmatch-style glob over names, case-insensitive.")] = "*",
    ) -> EntityList:
        """List the entities of a library whose names match a glob. An empty list means none exist."""
        return ent.list_entities(libs.get(library_name), entity_glob)

    def read_entities(library_name: LibraryName, entity_names: EntityNames) -> EntitiesText:
        """Read whole entity files, front matter included. Big files: get_entities_toc, then read_entities_sections."""
        return ent.read_entities(libs.get(library_name), entity_names)

    def get_entities_toc(library_name: LibraryName, entity_names: EntityNames) -> EntitiesToc:
        """The table of contents of entities: first 'frontmatter' (level 0), then every heading with its level."""
        return ent.get_toc(libs.get(library_name), entity_names)

    def read_entities_sections(
        library_name: LibraryName,
        entity_names: EntityNames,
        section_globs: Annotated[
            list[str],
            Field(
                min_length=1,
                description="fnmatch-style, case-insensitive globs over heading text; 'frontmatter' for it.",
            ),
        ],
    ) -> EntitiesSections:
        """Read only the sections whose headings match; each runs to the next heading of the same or higher level."""
        return ent.read_sections(libs.get(library_name), entity_names, section_globs)

    hints = {"category": "read", "read_only": True, "idempotent": True}
    register(list_entities, title="List entities", **hints)
    register(read_entities, title="Read entities", **hints)
    register(get_entities_toc, title="Entities' tables of contents", **hints)
    register(read_entities_sections, title="Read sections of entities", **hints)


def _register_editing(register: ToolRegistrar, libs: Libraries) -> None:
    def add_entities(
        library_name: LibraryName,
        entities: Annotated[list[NewEntity], Field(min_length=1, description="The entities to create.")],
    ) -> Changed:
        """Create entities (one Markdown file each, with front matter). Refuses a name that already exists."""
        return ent.add_entities(libs.get(library_name), entities)

    def delete_entities(library_name: LibraryName, entity_names: EntityNames) -> Changed:
        """Delete entities. All names must exist, or nothing is deleted."""
        return ent.delete_entities(libs.get(library_name), entity_names)

    def add_entity_content(
        library_name: LibraryName,
        entity_name: EntityName,
        *,  # keyword-only, so the schema keeps the design's order with a default before a required parameter
        in_section: InSection = None,
        new_content: Annotated[str, Field(min_length=1, description="Markdown to add.")],
        after: Annotated[
            str | None,
            Field(description="Insert right after this exact text (must occur exactly once). Default: at the end."),
        ] = None,
    ) -> Changed:
        """Add Markdown to an entity: at the end of a section (before its subsections), at the end of the file, or
        right after an exact piece of text."""
        return ent.add_content(libs.get(library_name), entity_name, new_content, in_section, after)

    def delete_entity_content(
        library_name: LibraryName,
        entity_name: EntityName,
        content_to_delete: Annotated[
            str, Field(min_length=1, description="The exact text to delete (must occur exactly once).")
        ],
        in_section: InSection = None,
    ) -> Changed:
        """Delete an exact piece of text from an entity. Zero or several matches fail and change nothing."""
        return ent.delete_content(libs.get(library_name), entity_name, content_to_delete, in_section)

    def replace_entity_content(
        library_name: LibraryName,
        entity_name: EntityName,
        old_content: Annotated[str, Field(min_length=1, description="The exact text to replace (exactly once).")],
        new_content: Annotated[str, Field(description="The text to put in its place.")],
        in_section: InSection = None,
    ) -> Changed:
        """Replace an exact piece of text in an entity. Zero or several matches fail and change nothing."""
        return ent.replace_content(libs.get(library_name), entity_name, old_content, new_content, in_section)

    def replace_entity_section(
        library_name: LibraryName,
        entity_name: EntityName,
        old_heading: Annotated[
            str, Field(min_length=1, description="The section to replace ('#' marks and case ignored).")
        ],
        *,  # the design's order, as above
        new_heading: Annotated[
            str, Field(description="The new heading text ('## Title' sets the level). Empty keeps the old heading.")
        ] = "",
        new_body_content: Annotated[str, Field(description="The section's new body (Markdown under the heading).")],
    ) -> Changed:
        """Replace a whole section (its subsections included) with a new heading and body."""
        return ent.replace_section(libs.get(library_name), entity_name, old_heading, new_heading, new_body_content)

    def rename_entity(
        library_name: LibraryName,
        old_name: Annotated[str, Field(min_length=1, description="The entity's current name.")],
        new_name: Annotated[str, Field(min_length=1, description="Its new name; must not exist yet.")],
    ) -> RenameResult:
        """Rename an entity and rewrite every relation and [[wikilink]] pointing to it across the library."""
        return ent.rename(libs.get(library_name), old_name, new_name)

    def merge_entities(
        library_name: LibraryName,
        source_names: EntityNames,
        target_name: EntityName,
    ) -> MergeResult:
        """Merge entities into an existing target: aliases and relations combined, bodies appended under a
        separator, links redirected to the target, sources deleted; logged in journey.yaml."""
        return ent.merge(libs.get(library_name), source_names, target_name)

    write = {"category": "write"}
    register(add_entities, title="Add entities", destructive=False, idempotent=False, **write)
    register(delete_entities, title="Delete entities", destructive=True, idempotent=True, **write)
    register(add_entity_content, title="Add content to an entity", destructive=False, idempotent=False, **write)
    register(delete_entity_content, title="Delete text from an entity", destructive=True, idempotent=False, **write)
    register(replace_entity_content, title="Replace text in an entity", destructive=True, idempotent=False, **write)
    register(replace_entity_section, title="Replace a section", destructive=True, idempotent=True, **write)
    register(rename_entity, title="Rename an entity", destructive=True, idempotent=False, **write)
    register(merge_entities, title="Merge entities", destructive=True, idempotent=False, **write)


def _register_graph(register: ToolRegistrar, libs: Libraries) -> None:
    def create_relations(library_name: LibraryName, relations: EdgeList) -> RelationsChanged:
        """Add relations to the 'from' entities' front matter. Both ends must exist; existing ones are left as is."""
        return graph.create_relations(libs.get(library_name), relations)

    def delete_relations(library_name: LibraryName, relations: EdgeList) -> RelationsChanged:
        """Remove relations from the 'from' entities' front matter. All must exist, or nothing changes."""
        return graph.delete_relations(libs.get(library_name), relations)

    def find_relations(
        library_name: LibraryName,
        to_entity: Annotated[str | None, Field(description="Only relations pointing to this entity.")] = None,
        relation_type: Annotated[str | None, Field(description="Only relations of this type.")] = None,
    ) -> RelationsResult:
        """Find relations (and so the 'from' entities) by target and/or type; without filters, every relation."""
        return graph.find_relations(libs.get(library_name), to_entity, relation_type)

    def garbage_collect_relations(
        library_name: LibraryName,
        remove: Annotated[bool, Field(description="Remove them (true) or only list them (false).")] = False,
    ) -> GarbageResult:
        """List, or remove, relations pointing to entities that no longer exist."""
        return graph.garbage_collect(libs.get(library_name), remove)

    register(find_relations, category="read", title="Find relations", read_only=True, idempotent=True)
    register(create_relations, category="write", title="Create relations", destructive=False, idempotent=True)
    register(delete_relations, category="write", title="Delete relations", destructive=True, idempotent=True)
    register(
        garbage_collect_relations,
        category="write",
        title="Garbage-collect relations",
        destructive=True,
        idempotent=True,
    )


def _register_manual(register: ToolRegistrar, libs: Libraries) -> None:
    def read_manual(library_name: LibraryName) -> ManualText:
        """Read the library's manual (meta.md): its conventions for how the library is organised."""
        return manual.read_manual(libs.get(library_name))

    def update_manual_section(
        library_name: LibraryName,
        toc: Toc,
        old_content: Annotated[str, Field(min_length=1, description="The exact text to replace in that section.")],
        new_content: Annotated[
            str, Field(description="Its replacement; when the section ends up empty it is removed.")
        ],
    ) -> Changed:
        """Replace an exact text within one manual section (exactly one match, or nothing changes)."""
        return manual.update_section(libs.get(library_name), toc, old_content, new_content)

    def add_manual_section(
        library_name: LibraryName,
        toc: Toc,
        new_content: Annotated[str, Field(min_length=1, description="Markdown to append to the section.")],
    ) -> Changed:
        """Append to a manual section, creating the section (and meta.md) when missing ('## ' level by default)."""
        return manual.add_section(libs.get(library_name), toc, new_content)

    def delete_manual_section(
        library_name: LibraryName,
        toc: Toc,
        deleting_content: Annotated[
            str, Field(min_length=1, description="The exact text to delete from that section.")
        ],
    ) -> Changed:
        """Delete an exact text from a manual section; a section left empty loses its heading too."""
        return manual.delete_section(libs.get(library_name), toc, deleting_content)

    register(read_manual, category="read", title="Read the manual", read_only=True, idempotent=True)
    register(update_manual_section, category="write", title="Update a manual section", destructive=True)
    register(add_manual_section, category="write", title="Add to a manual section", destructive=False)
    register(delete_manual_section, category="write", title="Delete from a manual section", destructive=True)
