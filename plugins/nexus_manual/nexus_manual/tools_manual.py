"""The manual tools: read the library's meta.md, and change its sections by exact context."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from nexus_core import ToolRegistrar
from nexus_manual import manual
from nexus_manual.library import Libraries
from nexus_manual.models import Changed, ManualText
from nexus_manual.tool_args import LibraryName, Toc, bound


def read_manual(libs: Libraries, library_name: LibraryName) -> ManualText:
    """A library's manual (meta.md): how it is kept."""
    return manual.read_manual(libs.get(library_name))


def update_manual_section(
    libs: Libraries,
    library_name: LibraryName,
    toc: Toc,
    old_content: Annotated[str, Field(min_length=1, description="The exact text to replace in that section.")],
    new_content: Annotated[str, Field(description="Its replacement; when the section ends up empty it is removed.")],
) -> Changed:
    """Replace an exact text within one manual section (exactly one match, or nothing changes)."""
    return manual.update_section(libs.get(library_name), toc, old_content, new_content)


def add_manual_section(
    libs: Libraries,
    library_name: LibraryName,
    toc: Toc,
    new_content: Annotated[str, Field(min_length=1, description="Markdown to append to the section.")],
) -> Changed:
    """Append to a manual section, creating the section (and meta.md) when missing ('## ' level by default)."""
    return manual.add_section(libs.get(library_name), toc, new_content)


def delete_manual_section(
    libs: Libraries,
    library_name: LibraryName,
    toc: Toc,
    deleting_content: Annotated[str, Field(min_length=1, description="The exact text to delete from that section.")],
) -> Changed:
    """Delete an exact text from a manual section; a section left empty loses its heading too."""
    return manual.delete_section(libs.get(library_name), toc, deleting_content)


def register(register: ToolRegistrar, libs: Libraries) -> None:
    read = {"category": "read", "read_only": True, "idempotent": True}
    register(
        bound(read_manual, libs), title="Read the manual", keywords="library conventions, rules, guidelines", **read
    )
    write = {"category": "write"}
    for fn, title, destructive, keywords in (
        (update_manual_section, "Update a manual section", True, "change a convention or rule"),
        (add_manual_section, "Add to a manual section", False, "add a rule or convention"),
        (delete_manual_section, "Delete from a manual section", True, "remove a rule or convention"),
    ):
        register(bound(fn, libs), title=title, destructive=destructive, keywords=keywords, **write)
