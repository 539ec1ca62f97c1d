"""The write tools over entities: create, delete, edit by exact context, rename, merge."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from nexus_core import ToolRegistrar
from nexus_manual import entities as ent
from nexus_manual.library import Libraries
from nexus_manual.models import Changed, MergeResult, NewEntity, RenameResult
from nexus_manual.tool_args import EntityName, EntityNames, InSection, LibraryName, bound


def add_entities(
    libs: Libraries,
    library_name: LibraryName,
    entities: Annotated[list[NewEntity], Field(min_length=1, description="The entities to create.")],
) -> Changed:
    """Create entities (one Markdown file each, with front matter). Refuses a name that already exists."""
    return ent.add_entities(libs.get(library_name), entities)


def delete_entities(libs: Libraries, library_name: LibraryName, entity_names: EntityNames) -> Changed:
    """Delete entities. All names must exist, or nothing is deleted."""
    return ent.delete_entities(libs.get(library_name), entity_names)


def add_entity_content(
    libs: Libraries,
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
    libs: Libraries,
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
    libs: Libraries,
    library_name: LibraryName,
    entity_name: EntityName,
    old_content: Annotated[str, Field(min_length=1, description="The exact text to replace (exactly once).")],
    new_content: Annotated[str, Field(description="The text to put in its place.")],
    in_section: InSection = None,
) -> Changed:
    """Replace an exact piece of text in an entity. Zero or several matches fail and change nothing."""
    return ent.replace_content(libs.get(library_name), entity_name, old_content, new_content, in_section)


def replace_entity_section(
    libs: Libraries,
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
    libs: Libraries,
    library_name: LibraryName,
    old_name: Annotated[str, Field(min_length=1, description="The entity's current name.")],
    new_name: Annotated[str, Field(min_length=1, description="Its new name; must not exist yet.")],
) -> RenameResult:
    """Rename an entity and rewrite every relation and [[wikilink]] pointing to it across the library."""
    return ent.rename(libs.get(library_name), old_name, new_name)


def merge_entities(
    libs: Libraries,
    library_name: LibraryName,
    source_names: EntityNames,
    target_name: EntityName,
) -> MergeResult:
    """Merge entities into an existing target: aliases and relations combined, bodies appended under a
    separator, links redirected to the target, sources deleted; logged in journey.yaml."""
    return ent.merge(libs.get(library_name), source_names, target_name)


# (tool, title, destructive, idempotent, keywords), all in the write category
TOOLS = (
    (add_entities, "Add entities", False, False, "new library page, create a document"),
    (delete_entities, "Delete entities", True, True, "remove library pages"),
    (add_entity_content, "Add content to an entity", False, False, "append or insert text in a library page"),
    (delete_entity_content, "Delete text from an entity", True, False, "remove a sentence from a library page"),
    (replace_entity_content, "Replace text in an entity", True, False, "change wording, fix a typo in a library page"),
    (replace_entity_section, "Replace a section", True, True, "rewrite a section of a library page"),
    (rename_entity, "Rename an entity", True, False, "change a library page's name, fix links to it"),
    (merge_entities, "Merge entities", True, False, "combine library pages, fold a duplicate page into another"),
)


def register(register: ToolRegistrar, libs: Libraries) -> None:
    for fn, title, destructive, idempotent, keywords in TOOLS:
        hints = {"destructive": destructive, "idempotent": idempotent, "keywords": keywords}
        register(bound(fn, libs), category="write", title=title, **hints)
