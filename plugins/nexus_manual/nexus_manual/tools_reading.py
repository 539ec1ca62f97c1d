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
    entity_glob: str = "*",
) -> EntityList:
    """List a library's entities (Markdown pages) by name glob."""
    return ent.list_entities(libs.get(library_name), entity_glob)


def read_entities(libs: Libraries, library_name: LibraryName, entity_names: EntityNames) -> EntitiesText:
    """Read whole entity pages, front matter included."""
    return ent.read_entities(libs.get(library_name), entity_names)


def get_entities_toc(libs: Libraries, library_name: LibraryName, entity_names: EntityNames) -> EntitiesToc:
    """The headings of entity pages."""
    return ent.get_toc(libs.get(library_name), entity_names)


def read_entities_sections(
    libs: Libraries,
    library_name: LibraryName,
    entity_names: EntityNames,
    section_globs: Annotated[
        list[str],
        Field(
            min_length=1,
            description="Globs over headings; 'frontmatter' for it.",
        ),
    ],
) -> EntitiesSections:
    """Read the sections of entity pages whose headings match."""
    return ent.read_sections(libs.get(library_name), entity_names, section_globs)


def register(register: ToolRegistrar, libs: Libraries) -> None:
    hints = {"category": "read", "read_only": True, "idempotent": True}
    for fn, title, keywords in (
        (list_entities, "List entities", "which pages a library has, find pages by name"),
        (read_entities, "Read entities", "open a library page, show a document"),
        (get_entities_toc, "Entities' tables of contents", "outline, headings, structure of a library page"),
        (read_entities_sections, "Read sections of entities", "one section, part of a library page, chapter"),
    ):
        register(bound(fn, libs), title=title, keywords=keywords, **hints)
