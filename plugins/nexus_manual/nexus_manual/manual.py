"""What the manual tools do: ``meta.md``, one per library, edited section by section.

``toc`` names a section by its heading text (leading ``#`` marks, spacing and
case ignored). A section whose body becomes empty loses its heading too.
"""

from __future__ import annotations

from nexus_core import ToolError
from nexus_manual.entities import heading_line
from nexus_manual.library import Doc, Library
from nexus_manual.models import Changed, ManualText, TocItem
from nexus_manual.names import FRONTMATTER, MANUAL_NAME
from nexus_manual.sections import Heading, Splice, append_block, find_section, replace_exact, sections_named


def _require(lib: Library, doc: Doc | None) -> Doc:
    if doc is None:
        raise ToolError(f"library '{lib.name}' has no manual yet ({MANUAL_NAME}.md); add_manual_section creates it")
    return doc


def read_manual(lib: Library) -> ManualText:
    path = lib.manual_path()
    doc = lib.load(MANUAL_NAME, path) if path.is_file() else None
    if doc is None:
        return ManualText(library=lib.name, exists=False, content="", toc=[])
    toc = [TocItem(heading=FRONTMATTER, level=0)] if doc.parts.raw is not None else []
    toc += [TocItem(heading=h.text, level=h.level) for h in doc.headings]
    return ManualText(library=lib.name, exists=True, content=doc.text, toc=toc)


def _within(doc: Doc, h: Heading, splice: Splice) -> tuple[Splice, bool]:
    """``splice`` (an edit inside section ``h``), or the removal of the whole section when it leaves the
    section's body (subsections included) only whitespace."""
    body = doc.text[h.body_start : splice.start] + splice.new + doc.text[splice.end : h.end]
    return (Splice(h.start, h.end, ""), True) if not body.strip() else (splice, False)


def update_section(lib: Library, toc: str, old: str, new: str) -> Changed:
    def make(doc: Doc | None) -> tuple[Splice, str]:
        doc = _require(lib, doc)
        h = find_section(doc.headings, toc, "the manual")
        splice = replace_exact(doc.text, old, new, h.body_start, h.end, f"section '{h.text}' of the manual")
        splice, dropped = _within(doc, h, splice)
        return splice, f"section '{h.text}' " + ("is now empty and was removed" if dropped else "updated")

    return lib.edit(MANUAL_NAME, make, manual=True)


def add_section(lib: Library, toc: str, new: str) -> Changed:
    if not new.strip():
        raise ToolError("new_content is empty")

    def make(doc: Doc | None) -> tuple[Splice, str]:
        text = doc.text if doc else ""
        headings = doc.headings if doc else []
        if not sections_named(headings, toc):
            block = heading_line(toc, 2) + "\n" + new.strip("\n")
            return append_block(text, len(text), block), f"created section '{toc.strip()}'"
        h = find_section(headings, toc, "the manual")  # refuses an ambiguous heading rather than guess
        return append_block(text, h.own_end, new), f"appended to section '{h.text}'"

    return lib.edit(MANUAL_NAME, make, manual=True)


def delete_section(lib: Library, toc: str, deleting: str) -> Changed:
    def make(doc: Doc | None) -> tuple[Splice, str]:
        doc = _require(lib, doc)
        h = find_section(doc.headings, toc, "the manual")
        splice = replace_exact(doc.text, deleting, "", h.body_start, h.end, f"section '{h.text}' of the manual")
        splice, dropped = _within(doc, h, splice)
        return splice, f"deleted text from section '{h.text}'" + (
            "; it was empty, so it was removed" if dropped else ""
        )

    return lib.edit(MANUAL_NAME, make, manual=True)
