"""Relations in front matter (``relations: [{type, to}]``) and ``[[wikilinks]]`` in bodies.

Rename and merge both come down to one pass over the library: every file that
mentions an old name (a cheap byte search first) gets its relations and
wikilinks pointed at the new name, and ``date modified`` set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nexus_core import ToolError
from nexus_manual import frontmatter
from nexus_manual.library import Library, read_file
from nexus_manual.names import MANUAL_NAME

Edge = tuple[str, str, str]  # (from, to, type)


def relation_list(data: dict[str, Any]) -> list[Any]:
    rels = data.get("relations")
    return rels if isinstance(rels, list) else []


def edges_of(name: str, data: dict[str, Any]) -> list[Edge]:
    """The well-formed relations of one entity; malformed items are skipped here and kept on rewrite."""
    out = []
    for rel in relation_list(data):
        if isinstance(rel, dict) and isinstance(rel.get("to"), str):
            out.append((name, rel["to"], str(rel.get("type", ""))))
    return out


def dedupe_relations(rels: Iterable[Any]) -> list[Any]:
    seen, out = set(), []
    for rel in rels:
        key = (rel.get("type"), rel.get("to")) if isinstance(rel, dict) else repr(rel)
        if key not in seen:
            seen.add(key)
            out.append(rel)
    return out


def wikilink_pattern(names: Iterable[str]) -> re.Pattern[str]:
    """``[[name]]``, ``[[name|label]]``, ``[[name#heading]]``, ``[[name^block]]`` (and ``\\|`` in tables)."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(r"\[\[(" + alternatives + r")(?=\]\]|\||\\\||#|\^)")


def redirect_text(text: str, mapping: dict[str, str], *, where: str, is_manual: bool = False) -> str | None:
    """``text`` with relations and wikilinks to ``mapping``'s keys pointed at its values; None if unchanged."""
    parts = frontmatter.split(text)
    body = parts.body
    new_body, links = wikilink_pattern(mapping).subn(lambda m: "[[" + mapping[m.group(1)], body)
    head, rels_changed = parts.block, False
    if parts.raw is not None and any(n in parts.raw for n in mapping):
        try:
            data = frontmatter.load(parts.raw, where=where)
        except ToolError:
            data = {}  # broken YAML is the user's to fix; its wikilinks are still repaired
        rels = relation_list(data)
        if any(isinstance(r, dict) and r.get("to") in mapping for r in rels):
            data["relations"] = dedupe_relations(
                {**r, "to": mapping[r["to"]]} if isinstance(r, dict) and r.get("to") in mapping else r for r in rels
            )
            head, rels_changed = f"---\n{frontmatter.dump(data)}---\n", True
    if not links and not rels_changed:
        return None
    return frontmatter.touch(head + new_body, add_if_missing=not is_manual)


def library_files(lib: Library, root: Path) -> list[tuple[str, str]]:
    """Every entity file and the manual, as (name, path); plain strings, as this runs over 10k files."""
    folder = str(root)
    files = [(n, os.path.join(folder, f"{n}.md")) for n in lib.names()]
    manual = root / f"{MANUAL_NAME}.md"
    if manual.is_file() and lib.paths.allows(manual):
        files.append((MANUAL_NAME, str(manual)))
    return files


def redirect_library(lib: Library, mapping: dict[str, str], skip: Iterable[str] = ()) -> list[str]:
    """Point every relation and wikilink to ``mapping``'s keys at its values; returns the files changed."""
    needles = [n.encode("utf-8") for n in mapping]
    skipped = set(skip)
    pending: list[tuple[str, Path, str]] = []
    root = lib.root()
    for name, path in library_files(lib, root):
        if name in skipped:
            continue
        data = read_file(path)
        if data is None:
            continue  # gone, or not a file we read
        if not any(n in data for n in needles):
            continue  # the common case: this file never mentions an old name
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text: nothing of ours to repair
        new = redirect_text(text, mapping, where=f"'{name}'", is_manual=name == MANUAL_NAME)
        if new is not None:
            is_manual = name == MANUAL_NAME
            real = lib.manual_path(write=True, root=root) if is_manual else lib.entity_path(name, write=True, root=root)
            pending.append((name, real, new))
    lib.write_many([(real, new) for _, real, new in pending])
    return [name for name, _, _ in pending]


def scan_edges(lib: Library, must_contain: str | None = None) -> list[Edge]:
    """Every relation in the library (only from files containing ``must_contain``, when given)."""
    needle = must_contain.encode("utf-8") if must_contain else None
    edges: list[Edge] = []
    folder = str(lib.root())
    for name in lib.names():
        path = os.path.join(folder, f"{name}.md")
        data = read_file(path)
        if data is None:
            continue  # gone, or not a file we read: a bad file must not hide every other relation
        if needle is not None and needle not in data:
            continue
        text = data.decode("utf-8", errors="replace")
        parts = frontmatter.split(text)
        if parts.raw is None or "relations" not in parts.raw:
            continue
        try:
            fm = frontmatter.load(parts.raw, where=f"'{name}'")
        except ToolError:  # a broken file must not hide every other relation
            continue
        edges += edges_of(name, fm)
    return edges


def set_relations(text: str, where: str, change: Any) -> str:
    """Rewrite the ``relations`` key with ``change(list) -> list`` and touch ``date modified``."""
    parts = frontmatter.split(text)
    data = frontmatter.load(parts.raw, where=where)
    new = change(list(relation_list(data)))
    if new:
        data["relations"] = new
    else:
        data.pop("relations", None)
    data[frontmatter.DATE_MODIFIED] = frontmatter.now()
    return frontmatter.render(data, parts.body)
