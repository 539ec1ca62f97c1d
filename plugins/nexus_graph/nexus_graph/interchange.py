"""Other formats: Mermaid and JSON out, the reference ``memory`` MCP server's JSONL in."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_graph import storage
from nexus_graph.graph import GraphIndex
from nexus_graph.records import (
    MAX_DESC,
    MAX_NAME,
    PREDICATE_RE,
    Entity,
    GraphError,
    Relation,
    now_iso,
    slugify,
    to_predicate,
)

MAX_IMPORT_BYTES = 50 * 1024 * 1024
PALETTE = ("#dbeafe", "#dcfce7", "#fef3c7", "#fce7f3", "#ede9fe", "#e0f2fe", "#fee2e2", "#f1f5f9")


def select(index: GraphIndex, ids: list[str] | None, max_nodes: int) -> tuple[list[Entity], list[Relation], bool]:
    """The entities to export (the given ids, or the whole graph most-connected first) and the relations among them."""
    if ids is None:
        degree = {i: len(index.outgoing.get(i, ())) + len(index.incoming.get(i, ())) for i in index.entities}
        ids = sorted(index.entities, key=lambda i: (-degree[i], i))
    truncated = len(ids) > max_nodes
    chosen = [index.entities[i] for i in ids[:max_nodes]]
    keep = {e.id for e in chosen}
    relations = [r for r in index.relations if r.src in keep and r.dst in keep]
    return chosen, relations, truncated


def to_mermaid(entities: list[Entity], relations: list[Relation], truncated: bool) -> str:
    """A flowchart: one box per entity (name, category and type), one labelled arrow per relation."""
    node = {e.id: f"n{i}" for i, e in enumerate(entities)}
    lines = ["flowchart LR"]
    if truncated:
        lines.append("  %% truncated: only the first entities are drawn; raise max_nodes or export around a root")
    for e in entities:
        label = _escape(e.name) + f"<br/><small>{_escape(e.category)} · {_escape(e.type)}</small>"
        lines.append(f'  {node[e.id]}["{label}"]')
    for r in relations:
        lines.append(f"  {node[r.src]} -->|{r.rel}| {node[r.dst]}")
    categories = sorted({e.category for e in entities})
    for i, category in enumerate(categories):
        lines.append(f"  classDef {category} fill:{PALETTE[i % len(PALETTE)]},stroke:#334155")
        members = ",".join(node[e.id] for e in entities if e.category == category)
        lines.append(f"  class {members} {category}")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    """Mermaid labels are HTML-ish inside quotes: escape what would end or break them."""
    replacements = {"&": "&amp;", '"': "#quot;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " "}
    return "".join(replacements.get(ch, ch) for ch in text)


def to_json(entities: list[Entity], relations: list[Relation]) -> str:
    data = {
        "entities": [{"category": e.category, **e.to_record()} for e in entities],
        "relations": [r.to_record() for r in relations],
    }
    return json.dumps(data, ensure_ascii=False, indent=1)


# -- import from the reference memory server -------------------------------------------

TYPE_CATEGORIES = {
    "person": "people",
    "people": "people",
    "user": "people",
    "project": "projects",
    "technology": "tech_stack",
    "tech": "tech_stack",
    "library": "tech_stack",
    "framework": "tech_stack",
    "language": "tech_stack",
    "tool": "tech_stack",
}


@dataclass
class Parsed:
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # memory-server name -> id
    skipped: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)


def read_memory_file(path: Path, category: str | None, categories: tuple[str, ...]) -> Parsed:
    """Parse a ``memory.jsonl`` of ``{"type": "entity" | "relation", ...}`` lines; any bad line fails the import."""
    size = path.stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise GraphError(f"{path.name} is {size} bytes; the import limit is {MAX_IMPORT_BYTES}")
    parsed = Parsed()
    errors: list[str] = []
    relation_lines: list[tuple[int, dict[str, Any]]] = []
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                kind = data.get("type") if isinstance(data, dict) else None
                if kind == "entity":
                    _memory_entity(data, category, categories, parsed)
                elif kind == "relation":
                    relation_lines.append((number, data))
                else:
                    raise ValueError('expected an object with "type": "entity" or "relation"')
            except (ValueError, UnicodeDecodeError) as exc:
                errors.append(f"line {number}: {exc}")
    for number, data in relation_lines:
        try:
            _memory_relation(data, parsed)
        except ValueError as exc:
            errors.append(f"line {number}: {exc}")
    if errors:
        shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
        raise GraphError(f"{path.name} is not a memory-server JSONL file ({shown}); nothing was imported")
    return parsed


def _memory_entity(data: dict[str, Any], category: str | None, categories: tuple[str, ...], parsed: Parsed) -> None:
    name, kind = data.get("name"), data.get("entityType") or "entity"
    observations = data.get("observations") or []
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise ValueError(f"entity 'name' must be a string of 1 to {MAX_NAME} characters")
    if not isinstance(kind, str) or not isinstance(observations, list):
        raise ValueError("'entityType' must be a string and 'observations' a list")
    ident = slugify(name)
    if not ident:
        raise ValueError(f"entity name {name!r} has no letters or digits to make an id from")
    if ident in parsed.ids:
        parsed.skipped.append(f"entity {name!r}: its id '{ident}' is already used by another entity in the file")
        return
    parsed.renamed[name] = ident
    parsed.ids.add(ident)
    notes = [str(o) for o in observations]
    entity = Entity(
        id=ident,
        category=category or _category_for(kind, categories),
        type=kind.strip()[:50] or "entity",
        name=name.strip(),
        desc="; ".join(notes)[:MAX_DESC],
        observations=notes,
        created=now_iso(),
    )
    size = len(storage.dumps(entity.to_record()))
    if size > storage.MAX_LINE_BYTES:  # the graph would skip the line it became
        raise ValueError(f"entity {name!r} is {size} bytes with its observations, over {storage.MAX_LINE_BYTES}")
    parsed.entities.append(entity)


def _memory_relation(data: dict[str, Any], parsed: Parsed) -> None:
    ends = [data.get("from"), data.get("to")]
    kind = data.get("relationType")
    if not all(isinstance(v, str) and v for v in (*ends, kind)):
        raise ValueError("a relation needs 'from', 'to' and 'relationType' strings")
    src, dst = (parsed.renamed.get(v) or slugify(v) for v in ends)
    rel = to_predicate(kind)[:40]
    if not PREDICATE_RE.match(rel):
        parsed.skipped.append(f"relation {ends[0]!r} -{kind}-> {ends[1]!r}: type has no usable predicate")
    elif src == dst:
        parsed.skipped.append(f"relation {ends[0]!r} -{kind}-> {ends[1]!r}: both ends are the same entity")
    else:
        parsed.relations.append(Relation(src, rel, dst, f"imported: {ends[0]} {kind} {ends[1]}", now_iso()))


def _category_for(kind: str, categories: tuple[str, ...]) -> str:
    """The category an entityType maps to: a category of that name (or plural), a known synonym, else concepts."""
    key = slugify(kind).replace("-", "_")
    for candidate in (key, key + "s", TYPE_CATEGORIES.get(key, "")):
        if candidate in categories:
            return candidate
    return "concepts" if "concepts" in categories else categories[0]
