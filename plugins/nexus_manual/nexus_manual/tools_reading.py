"""The read tools over entities: list, read whole, read the table of contents, read sections."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from nexus_core import ToolRegistrar
from nexus_manual import entities as ent
from nexus_manual.library import Libraries
from nexus_manual.models import EntitiesSections, EntitiesText, EntitiesToc, EntityList
from nexus_manual.tool_args import EntityNames, LibraryName, bound


def list_entities(
    libs: Libraries,
    library_name: LibraryName,
    entity_glob: Annotated[str, Field(description="fnmatch-style glob over names, case-insensitive.")] = "*",
) -> EntityList:
    """List the entities of a library whose names match a glob. An empty list means none exist."""
    return ent.list_entities(libs.get(library_name), entity_glob)


def read_entities(libs: Libraries, library_name: LibraryName, entity_names: EntityNames) -> EntitiesText:
    """Read whole entity files, front matter included. Big files: get_entities_toc, then read_entities_sections."""
    return ent.read_entities(libs.get(library_name), entity_names)


def get_entities_toc(libs: Libraries, library_name: LibraryName, entity_names: EntityNames) -> EntitiesToc:
    """The table of contents of entities: first 'frontmatter' (level 0), then every heading with its level."""
    return ent.get_toc(libs.get(library_name), entity_names)


def read_entities_sections(
    libs: Libraries,
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


def register(register: ToolRegistrar, libs: Libraries) -> None:
    hints = {"category": "read", "read_only": True, "idempotent": True}
    register(bound(list_entities, libs), title="List entities", **hints)
    register(bound(read_entities, libs), title="Read entities", **hints)
    register(bound(get_entities_toc, libs), title="Entities' tables of contents", **hints)
    register(bound(read_entities_sections, libs), title="Read sections of entities", **hints)
