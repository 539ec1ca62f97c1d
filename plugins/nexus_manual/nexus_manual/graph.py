"""What the relation tools do: create, delete, find and garbage-collect ``{from, to, type}`` edges."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from nexus_core import ToolError
from nexus_manual.library import Library
from nexus_manual.models import Edge, GarbageResult, RelationsChanged, RelationsResult
from nexus_manual.names import check_entity_name
from nexus_manual.relations import edges_of, relation_list, scan_edges, set_relations


def _edge(e: tuple[str, str, str]) -> Edge:
    return Edge(from_=e[0], to=e[1], type=e[2])


def _by_source(edges: list[Edge]) -> dict[str, list[Edge]]:
    grouped: dict[str, list[Edge]] = defaultdict(list)
    for e in edges:
        check_entity_name(e.from_)
        check_entity_name(e.to)
        grouped[e.from_].append(e)
    return grouped


def _is(rel: Any, edge: Edge) -> bool:
    return isinstance(rel, dict) and rel.get("to") == edge.to and str(rel.get("type", "")) == edge.type


def create_relations(lib: Library, edges: list[Edge]) -> RelationsChanged:
    if not edges:
        raise ToolError("relations is empty")
    grouped = _by_source(edges)
    with lib.lock:
        lib.require(list(grouped))
        missing = sorted({e.to for e in edges if not lib.exists(e.to)})
        if missing:
            raise ToolError(f"relations point to entities that do not exist: {', '.join(missing)}; create them first")
        added, present = [], []
        for name, wanted in grouped.items():
            doc = lib.read(name)
            current = edges_of(name, _data(doc.parts.raw, name))
            new = [e for e in dict.fromkeys((e.from_, e.to, e.type) for e in wanted) if e not in current]
            present += [e for e in wanted if (e.from_, e.to, e.type) in current]
            if new:
                text = set_relations(
                    doc.text, f"'{name}'", lambda rels, n=new: rels + [{"type": t, "to": to} for _, to, t in n]
                )
                lib.rewrite(doc, text)
                added += [_edge(e) for e in new]
    return RelationsChanged(library=lib.name, changed=added, unchanged=present)


def delete_relations(lib: Library, edges: list[Edge]) -> RelationsChanged:
    if not edges:
        raise ToolError("relations is empty")
    grouped = _by_source(edges)
    with lib.lock:
        lib.require(list(grouped))
        docs = {name: lib.read(name) for name in grouped}
        absent = [
            f"{e.from_} -[{e.type}]-> {e.to}"
            for name, wanted in grouped.items()
            for e in wanted
            if not any(_is(r, e) for r in relation_list(_data(docs[name].parts.raw, name)))
        ]
        if absent:
            raise ToolError(f"no such relation: {', '.join(absent)}; nothing changed (find_relations lists them)")
        for name, wanted in grouped.items():
            text = set_relations(
                docs[name].text, f"'{name}'", lambda rels, w=wanted: [r for r in rels if not any(_is(r, e) for e in w)]
            )
            lib.rewrite(docs[name], text)
    return RelationsChanged(library=lib.name, changed=list(edges))


def find_relations(lib: Library, to_entity: str | None, relation_type: str | None) -> RelationsResult:
    edges = [
        _edge(e)
        for e in scan_edges(lib, must_contain=to_entity or None)
        if (not to_entity or e[1] == to_entity) and (not relation_type or e[2] == relation_type)
    ]
    return RelationsResult(library=lib.name, relations=edges, count=len(edges))


def garbage_collect(lib: Library, remove: bool) -> GarbageResult:
    with lib.lock:
        names = set(lib.names())
        dangling = [_edge(e) for e in scan_edges(lib) if e[1] not in names]
        if remove:
            for name in dict.fromkeys(e.from_ for e in dangling):
                doc = lib.read(name)
                text = set_relations(
                    doc.text,
                    f"'{name}'",
                    lambda rels: [
                        r
                        for r in rels
                        if not (isinstance(r, dict) and isinstance(r.get("to"), str)) or r["to"] in names
                    ],
                )
                lib.rewrite(doc, text)
    return GarbageResult(library=lib.name, dangling=dangling, removed=remove and bool(dangling))


def _data(raw: str | None, name: str) -> dict[str, Any]:
    from nexus_manual import frontmatter

    return frontmatter.load(raw, where=f"'{name}'")
