"""What the entity tools do, on a Library; the tool wrappers in ``tools.py`` only add the schema."""

from __future__ import annotations

from typing import Any

from nexus_core import ToolError
from nexus_manual import frontmatter
from nexus_manual.library import Doc, Library
from nexus_manual.models import (
    Changed,
    EntitiesSections,
    EntitiesText,
    EntitiesToc,
    EntityList,
    EntitySections,
    EntityText,
    EntityToc,
    MergeResult,
    NewEntity,
    RenameResult,
    SectionText,
    TocItem,
)
from nexus_manual.names import (
    FRONTMATTER,
    check_entity_name,
    glob_match,
    heading_level_hint,
    name_glob_match,
    normalize_heading,
)
from nexus_manual.relations import dedupe_relations, redirect_library, relation_list
from nexus_manual.sections import (
    Heading,
    Splice,
    append_block,
    find_section,
    insert_after,
    matching_sections,
    outline,
    replace_exact,
)
from nexus_manual.skeleton import recommended, skeleton

_MANAGED = {"aliases", "relations", frontmatter.DATE_CREATED, frontmatter.DATE_MODIFIED}


def unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


# -- reading ------------------------------------------------------------------------


def list_entities(lib: Library, entity_glob: str) -> EntityList:
    names = [n for n in lib.names() if name_glob_match(entity_glob or "*", n)]
    return EntityList(library=lib.name, entities=names, count=len(names))


def read_entities(lib: Library, names: list[str]) -> EntitiesText:
    paths = lib.require(unique(names))
    docs = [lib.load(n, p) for n, p in zip(unique(names), paths, strict=True)]
    return EntitiesText(library=lib.name, entities=[EntityText(name=d.name, content=d.text) for d in docs])


def toc_items(headings: list[Heading]) -> list[TocItem]:
    return [TocItem(heading=FRONTMATTER, level=0), *(TocItem(heading=h.text, level=h.level) for h in headings)]


def get_toc(lib: Library, names: list[str]) -> EntitiesToc:
    names = unique(names)
    out = []
    for name, path in zip(names, lib.require(names), strict=True):
        headings, _, _ = lib.peek(name, path, lambda _hs: [])
        out.append(EntityToc(name=name, toc=toc_items(headings)))
    return EntitiesToc(library=lib.name, entities=out)


def read_sections(lib: Library, names: list[str], globs: list[str]) -> EntitiesSections:
    if not globs or not any(g.strip() for g in globs):
        raise ToolError("section_globs is empty; give heading patterns such as 'Setup*' or 'frontmatter'")
    names = unique(names)
    out = []
    want_front = any(glob_match(g, FRONTMATTER) for g in globs)
    first_headings: list[Heading] = []
    for name, path in zip(names, lib.require(names), strict=True):
        headings, block, chosen = lib.peek(name, path, lambda hs: matching_sections(hs, globs), front=want_front)
        first_headings = headings if not out else first_headings
        sections = [SectionText(heading=FRONTMATTER, level=0, content=block)] if want_front else []
        sections += [SectionText(heading=h.text, level=h.level, content=text) for h, text in chosen]
        out.append(EntitySections(name=name, sections=sections))
    if not any(e.sections for e in out):
        known = ", ".join(f"'{h.text}'" for h in first_headings[:30]) or "none"
        raise ToolError(
            f"no section matches {globs} in {', '.join(names)} (headings of '{names[0]}': {known}); "
            "globs are fnmatch-style and case-insensitive"
        )
    return EntitiesSections(library=lib.name, entities=out)


# -- creating and deleting ----------------------------------------------------------


def add_entities(lib: Library, entities: list[NewEntity]) -> Changed:
    names = [check_entity_name(e.name) for e in entities]
    if not names:
        raise ToolError("entities is empty")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ToolError(f"the same name is given twice: {', '.join(dupes)}")
    with lib.lock:
        listed = lib.names()
        existing = set(listed)
        taken = [n for n in names if n in existing or lib.entity_path(n).exists()]
        if taken:
            raise ToolError(f"already exists: {', '.join(taken)}; edit it instead, or pick another name")
        known = existing | set(names)
        dangling = [f"{e.name} -> {r.to}" for e in entities for r in e.relations if r.to not in known]
        if dangling:
            raise ToolError(f"relations to entities that do not exist: {', '.join(dangling)}; create them first")
        plans = _skeletons(lib, listed, [e.entity_type for e in entities if not e.content.strip()])
        stamp, notes = frontmatter.now(), []
        for e in entities:
            data: dict[str, Any] = {
                "entity_type": e.entity_type,
                "aliases": unique([a for a in e.aliases if a.strip()]),
                "relations": dedupe_relations(r.model_dump() for r in e.relations),
                frontmatter.DATE_CREATED: stamp,
                frontmatter.DATE_MODIFIED: stamp,
            }
            if e.content.strip():
                body = e.content.strip("\n") + "\n"
            else:
                sections, learned = plans[e.entity_type.strip().casefold()]
                body = skeleton(e.name, sections)
                source = f"sections other '{e.entity_type}' entities use" if learned else "a default outline"
                notes.append(f"'{e.name}' starts with {source}: {', '.join(sections)}")
            lib.write(lib.entity_path(e.name, write=True), frontmatter.render(data, body))
    return Changed(library=lib.name, changed=names, message="; ".join([f"created {len(names)} entities", *notes]))


def _skeletons(lib: Library, names: list[str], types: list[str]) -> dict[str, tuple[list[str], bool]]:
    """Per entity type (casefolded): the sections a new entity without content starts with, and if learned."""
    return {t.strip().casefold(): recommended(lib, names, t) for t in dict.fromkeys(types)}


def delete_entities(lib: Library, names: list[str]) -> Changed:
    names = unique(names)
    with lib.lock:
        paths = lib.require(names)
        for name in names:
            lib.entity_path(name, write=True)  # refuse before deleting anything
        for path in paths:
            lib.remove(path)
    return Changed(
        library=lib.name,
        changed=names,
        message=f"deleted {len(names)} entities; garbage_collect_relations finds relations left pointing to them",
    )


# -- editing by context --------------------------------------------------------------


def _region(doc: Doc, in_section: str | None) -> tuple[int, int, str]:
    """The span an exact-text edit may touch: a section's body, or the whole body."""
    if not in_section or not in_section.strip():
        return doc.parts.body_start, len(doc.text), f"entity '{doc.name}'"
    if normalize_heading(in_section) == FRONTMATTER:
        raise ToolError(
            "the front matter is not edited as text; use the relation tools, rename_entity or merge_entities"
        )
    h = find_section(doc.headings, in_section, f"entity '{doc.name}'")
    return h.body_start, h.end, f"section '{h.text}' of entity '{doc.name}'"


def add_content(lib: Library, name: str, content: str, in_section: str | None, after: str | None) -> Changed:
    if not content.strip():
        raise ToolError("new_content is empty")

    def make(doc: Doc) -> tuple[Splice, str]:
        if after:
            start, end, where = _region(doc, in_section)
            return insert_after(
                doc.text, after, content, start, end, where
            ), f"inserted after the given text in {where}"
        if in_section and in_section.strip():
            _region(doc, in_section)  # refuses 'frontmatter'
            h = find_section(doc.headings, in_section, f"entity '{name}'")
            return append_block(doc.text, h.own_end, content), f"appended to section '{h.text}'"
        return append_block(doc.text, len(doc.text), content), f"appended to entity '{name}'"

    return lib.edit(name, make)


def delete_content(lib: Library, name: str, content: str, in_section: str | None) -> Changed:
    def make(doc: Doc) -> tuple[Splice, str]:
        start, end, where = _region(doc, in_section)
        return replace_exact(doc.text, content, "", start, end, where), f"deleted text from {where}"

    return lib.edit(name, make)


def replace_content(lib: Library, name: str, old: str, new: str, in_section: str | None) -> Changed:
    def make(doc: Doc) -> tuple[Splice, str]:
        start, end, where = _region(doc, in_section)
        return replace_exact(doc.text, old, new, start, end, where), f"replaced text in {where}"

    return lib.edit(name, make)


def heading_line(wanted: str, default_level: int) -> str:
    title = " ".join(wanted.strip().lstrip("#").split())
    if not title:
        raise ToolError("the new heading is empty")
    return f"{'#' * (heading_level_hint(wanted) or default_level)} {title}\n"


def replace_section(lib: Library, name: str, old_heading: str, new_heading: str, new_body: str) -> Changed:
    if normalize_heading(old_heading) == FRONTMATTER:
        raise ToolError("the front matter is not a section to replace; use the relation tools")

    def make(doc: Doc) -> tuple[Splice, str]:
        h = find_section(doc.headings, old_heading, f"entity '{name}'")
        line = heading_line(new_heading, h.level) if new_heading.strip() else doc.text[h.start : h.body_start]
        block = line + ("\n" + new_body.strip("\n") + "\n" if new_body.strip() else "")
        more = "\n" if h.end < len(doc.text) else ""  # a blank line before the next heading
        return Splice(h.start, h.end, block + more), f"replaced section '{h.text}' (subsections included)"

    return lib.edit(name, make)


# -- renaming and merging ------------------------------------------------------------


def rename(lib: Library, old: str, new: str) -> RenameResult:
    check_entity_name(new)
    if old == new:
        raise ToolError("the old and new names are the same")
    with lib.lock:
        old_path = lib.require([old])[0]
        new_path = lib.entity_path(new, write=True)
        lib.entity_path(old, write=True)
        if new_path.exists():
            raise ToolError(f"an entity named '{new}' already exists; merge_entities combines two entities")
        # New file first, links next, old file last: a crash part-way never loses the entity.
        lib.write(new_path, frontmatter.touch(lib.load(old, old_path).text))
        changed = redirect_library(lib, {old: new}, skip={old})
        lib.remove(old_path)
        lib.log_journey({"action": "rename", "from": old, "to": new, "files_updated": len(changed)})
    return RenameResult(library=lib.name, old_name=old, new_name=new, files_updated=[n for n in changed if n != new])


def _aliases(data: dict[str, Any]) -> list[Any]:
    value = data.get("aliases")
    return value if isinstance(value, list) else ([value] if value else [])


def merge_sections(body: str, piece: str, name: str) -> tuple[str, str]:
    """``body`` with each section of ``piece`` whose heading (level and text) it has exactly once appended
    under that heading, marked with its source; and what is left of ``piece`` (its other sections).

    Appending a source's sections as they were would give the target two sections of one heading,
    which the section tools then refuse as ambiguous.
    """
    targets = outline(body)
    moves: list[tuple[Heading, Heading]] = []
    for h in outline(piece):
        same = [t for t in targets if t.key == h.key and t.level == h.level]
        if len(same) == 1 and not any(t is same[0] for _, t in moves):
            moves.append((h, same[0]))
    for h, t in sorted(moves, key=lambda m: m[1].own_end, reverse=True):
        text = piece[h.body_start : h.own_end].strip("\n")
        if text:
            head, tail = body[: t.own_end].rstrip("\n"), body[t.own_end :].lstrip("\n")
            body = f"{head}\n\n<!-- merged from {name} -->\n{text}\n" + (f"\n{tail}" if tail else "")
    for h, _ in sorted(moves, key=lambda m: m[0].start, reverse=True):
        piece = piece[: h.start] + piece[h.own_end :]
    return body, piece


def merge(lib: Library, sources: list[str], target: str) -> MergeResult:
    sources = unique(sources)
    if not sources:
        raise ToolError("source_names is empty")
    if target in sources:
        raise ToolError(f"'{target}' is both a source and the target")
    with lib.lock:
        paths = lib.require([*sources, target])
        for n in [*sources, target]:
            lib.entity_path(n, write=True)
        tdoc = lib.load(target, paths[-1])
        data = frontmatter.load(tdoc.parts.raw, where=f"'{target}'")
        aliases, rels, body = _aliases(data), list(relation_list(data)), tdoc.parts.body
        for name, path in zip(sources, paths, strict=False):
            sdoc = lib.load(name, path)
            sdata = frontmatter.load(sdoc.parts.raw, where=f"'{name}'")
            aliases += [name, *_aliases(sdata)]
            rels += relation_list(sdata)
            for key, value in sdata.items():
                if key not in _MANAGED and (key not in data or (key == "entity_type" and not data[key])):
                    data[key] = value  # keep what only the source knew
            body, piece = merge_sections(body, sdoc.parts.body, name)
            piece = piece.strip("\n")
            if piece or not sdoc.parts.body.strip():
                sep = f"---\n\n<!-- merged from {name} -->\n"
                body = (body.rstrip("\n") + "\n\n" if body.strip() else "") + sep + (f"\n{piece}\n" if piece else "")
        merged_rels = [{**r, "to": target} if isinstance(r, dict) and r.get("to") in sources else r for r in rels]
        data["aliases"] = unique([a for a in aliases if a != target])
        data["relations"] = dedupe_relations(
            r for r in merged_rels if not (isinstance(r, dict) and r.get("to") == target)
        )
        data[frontmatter.DATE_MODIFIED] = frontmatter.now()
        lib.write(paths[-1], frontmatter.render(data, body))
        changed = redirect_library(lib, dict.fromkeys(sources, target), skip=sources)
        for path in paths[:-1]:
            lib.remove(path)
        lib.log_journey({"action": "merge", "sources": sources, "target": target, "files_updated": len(changed)})
    return MergeResult(
        library=lib.name, target=target, merged=sources, files_updated=[n for n in changed if n != target]
    )
