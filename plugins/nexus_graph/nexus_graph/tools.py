"""The tools: thin functions that validate, call the store or the analysis, and shape the answer.

Each tool is a module-level function whose first parameter is the plugin's context; ``register_tools``
binds it (``bound``) and puts in add_entity's category annotation, which lists the configured categories
and so is known only then.
"""

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from nexus_core import Blocking, PluginContext, ToolRegistrar, on_loop, run_nonblocking
from nexus_graph import analysis, interchange
from nexus_graph.graph import GraphIndex, GraphStore
from nexus_graph.models import (
    AddEntityResult,
    ComponentsFinding,
    ConnectResult,
    CorruptFinding,
    CorruptLine,
    DanglingFinding,
    DanglingRelation,
    DuplicateGroup,
    DuplicatesFinding,
    EntityDetail,
    EntityOut,
    EntropyReport,
    ExportResult,
    Finding,
    GraphConfig,
    Hub,
    HubsFinding,
    ImportResult,
    NeighborNode,
    NeighborsResult,
    PathResult,
    PathStep,
    RelationOut,
    SearchHit,
    SearchResult,
)
from nexus_graph.records import GraphError, check_predicate
from nexus_graph.search import Hit, tokens
from nexus_graph.storage import entity_file

EntityId = str  # a slug ("python"), as search_knowledge gives it

_STORE = "store"  # the key of the plugin's GraphStore in ctx.state (the host gives each plugin its own dict)


def forget(ctx: PluginContext) -> None:
    """Drop the store of a context whose server stopped."""
    ctx.state.pop(_STORE, None)


def store_for(ctx: PluginContext) -> GraphStore:
    """The plugin's one store, made on first use (so the folder is only created when needed)."""
    store = ctx.state.get(_STORE)
    if store is None:
        config: GraphConfig = ctx.config
        root = config.graph_dir or ctx.data_dir
        store = ctx.state[_STORE] = GraphStore(root, config.categories_all, ctx.log)
    return store


def detail(index: GraphIndex, entity_id: str) -> EntityDetail:
    entity = index.require(entity_id)
    out, into = index.relations_of(entity.id)
    return EntityDetail(
        entity=EntityOut.of(entity),
        outgoing=[RelationOut.of(r) for r in out],
        incoming=[RelationOut.of(r) for r in into],
    )


def entropy_report(store: GraphStore, stale_days: int) -> EntropyReport:
    with store.reading() as index:
        report = analysis.entropy(index, stale_days)
        names = {i: index.entities[i].name for group, _ in report.duplicates for i in group}
        hub_names = {i: index.entities[i].name for i, _, _ in report.hubs}
    problems = store.problems()
    orphans, stale, components = _connection_findings(report, stale_days)
    hubs, duplicates, dangling = _shape_findings(report, names, hub_names)
    cap = analysis.MAX_IDS
    corrupt = CorruptFinding(
        count=len(problems),
        lines=[CorruptLine(file=p.file, line=p.line, error=p.error) for p in problems[:cap]],
        suggestion="These lines are skipped: fix them by hand in the files named (a truncated last line is what a "
        "writer that crashed leaves behind; the next append starts a new line after it)."
        if problems
        else "Nothing to do.",
    )
    issues = sum(1 for c in (orphans.count, stale.count, duplicates.count, dangling.count, corrupt.count) if c)
    summary = (
        f"{report.entities} entities, {report.relations} relations, {len(report.components)} connected group(s); "
        f"{orphans.count} orphan(s), {stale.count} stale, {duplicates.count} duplicate group(s), "
        f"{dangling.count} dangling relation(s), {corrupt.count} unreadable line(s)."
    ) + (" Looks tidy." if not issues else "")
    return EntropyReport(
        entities=report.entities,
        relations=report.relations,
        density=round(report.density, 8),
        stale_days=stale_days,
        orphans=orphans,
        stale=stale,
        components=components,
        hubs=hubs,
        duplicates=duplicates,
        dangling=dangling,
        corrupt_lines=corrupt,
        summary=summary,
    )


def _connection_findings(report: analysis.Report, stale_days: int) -> tuple[Finding, Finding, ComponentsFinding]:
    """Orphans, stale entities and the groups cut off from the largest one."""
    cap = analysis.MAX_IDS
    main, rest = (report.components[0], report.components[1:]) if report.components else ([], [])
    scattered = [i for group in rest if len(group) > 1 for i in group]
    none = "Nothing to do."
    orphans = Finding(
        count=len(report.orphans),
        ids=report.orphans[:cap],
        suggestion="Connect each to a related entity with connect_entities, or leave it if it stands alone on purpose."
        if report.orphans
        else none,
    )
    stale = Finding(
        count=len(report.stale),
        ids=report.stale[:cap],
        suggestion=f"No new relation in {stale_days} days: check they still matter, and connect what is current "
        "(relations record what changed; the graph is append-only)."
        if report.stale
        else none,
    )
    components = ComponentsFinding(
        count=len(report.components),
        ids=scattered[:cap],
        largest=len(main),
        sizes=[len(g) for g in report.components[:10]],
        suggestion=f"{len(rest)} group(s) are cut off from the largest one: link the listed entities (groups "
        "of two or more; single ones are the orphans) to it with connect_entities."
        if rest
        else none,
    )
    return orphans, stale, components


def _shape_findings(
    report: analysis.Report, names: dict[str, str], hub_names: dict[str, str]
) -> tuple[HubsFinding, DuplicatesFinding, DanglingFinding]:
    """Hubs, look-alike names and relations to missing entities."""
    cap, none = analysis.MAX_IDS, "Nothing to do."
    hubs = HubsFinding(
        hubs=[Hub(id=i, name=hub_names[i], degree=o + n, outgoing=o, incoming=n) for i, o, n in report.hubs],
        suggestion="The most connected entities: check each is one thing rather than a catch-all; if its relations "
        "mix topics, add narrower entities and connect them instead."
        if report.hubs
        else "No relations yet: connect entities with connect_entities.",
    )
    duplicates = DuplicatesFinding(
        count=len(report.duplicates),
        groups=[
            DuplicateGroup(ids=ids, names=[names[i] for i in ids], similarity=score)
            for ids, score in report.duplicates[:cap]
        ],
        suggestion="Near-identical names: pick the entity to keep, connect the others to it with 'same_as', and "
        "use the kept id from now on (nothing is deleted in an append-only graph)."
        if report.duplicates
        else none,
    )
    dangling = DanglingFinding(
        count=len(report.dangling),
        relations=[
            DanglingRelation(src=r.src, rel=r.rel, dst=r.dst, missing=missing, source=r.source)
            for r, missing in report.dangling[:cap]
        ],
        suggestion="These relations name entities that do not exist: create the missing ids with add_entity."
        if report.dangling
        else none,
    )
    return hubs, duplicates, dangling


def category_arg(config: GraphConfig) -> Any:
    """add_entity's category: its schema lists the configured categories, known only at registration."""
    return Annotated[
        str,
        Field(
            description="The category folder: one of the configured categories.",
            json_schema_extra={"enum": list(config.categories_all)},  # checked in the body, with a clear error
        ),
    ]


def add_entity(
    ctx: PluginContext,
    category: str,  # annotated at registration: category_arg
    id: Annotated[
        str,
        Field(
            description="Unique slug id (kebab-case): lowercase letters, digits, hyphens; e.g. 'python-asyncio'.",
            json_schema_extra={"pattern": "^[a-z0-9-]+$"},  # ID_RE, as the design writes it
        ),
    ],
    type: Annotated[str, Field(description="What kind of thing it is, e.g. 'concept', 'framework', 'person'.")],
    name: Annotated[str, Field(description="Its display name, e.g. 'Python asyncio'.")],
    desc: Annotated[str, Field(description="A short description: one or two sentences.")],
    tags: Annotated[list[str] | None, Field(description="Tags for classification and search.")] = None,
) -> AddEntityResult:
    """Add an entity to the knowledge graph. Append-only: an existing id is refused, never overwritten."""
    store = store_for(ctx)
    entity = store.add_entity(category, id, type, name, desc, tags)
    return AddEntityResult(entity=EntityOut.of(entity), file=store.relative(entity_file(store.root, entity.category)))


def connect_entities(
    ctx: PluginContext,
    src: Annotated[str, Field(description="The id the relation starts from.")],
    rel: Annotated[str, Field(description="A short snake_case predicate, e.g. 'uses', 'depends_on'.")],
    dst: Annotated[str, Field(description="The id the relation points to.")],
    context: Annotated[str, Field(description="Why or where this holds, in a sentence.")] = "",
) -> ConnectResult:
    """Add a typed relation src -rel-> dst between two existing entities. An existing one is reported, not added."""
    relation, added = store_for(ctx).connect(src, rel, dst, context)
    message = (
        f"added {src} -{rel}-> {dst}"
        if added
        else f"{src} -{rel}-> {dst} already exists (since {relation.created}); nothing added"
    )
    return ConnectResult(relation=RelationOut.of(relation), added=added, message=message)


async def search_knowledge(
    ctx: PluginContext,
    query: str,
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
) -> SearchResult:
    """Fuzzy search of knowledge graph entities."""
    if not tokens(query):
        raise GraphError("query has no letters or digits: give a few words, e.g. 'async python'")
    if len(query) > 500:
        raise GraphError("query is longer than 500 characters; use a few key words")
    store = store_for(ctx)

    def search(index: GraphIndex) -> SearchResult:
        hits = [_hit(index, h) for h in index.search.search(query, limit)]
        return SearchResult(query=query, hits=hits, total_entities=len(index.entities))

    def search_settled() -> SearchResult:
        # A small graph unchanged since the last read is searched on the event loop: the hop to a worker
        # thread would cost about as much as the search. Anything that may wait or take long: the thread.
        if on_loop():
            result = store.read_now(search)
            if result is None:
                raise Blocking("the graph is large, locked or changed since the last read")
            return result
        with store.reading() as index:
            return search(index)

    return await run_nonblocking(search_settled)


def get_entity(ctx: PluginContext, id: EntityId) -> EntityDetail:
    """A knowledge graph entity and its relations."""
    with store_for(ctx).reading() as index:
        return detail(index, id)


def neighbors(
    ctx: PluginContext,
    id: EntityId,
    depth: Annotated[int, Field(ge=1, le=5)] = 1,
    rel: str | None = None,
    direction: Annotated[Literal["both", "out", "in"], Field(description="out: src to dst; in: backwards.")] = "both",
    limit: Annotated[int, Field(ge=1, le=1000)] = 100,
) -> NeighborsResult:
    """Entities within a few hops of one, and their relations."""
    if rel is not None:
        check_predicate(rel)
    with store_for(ctx).reading() as index:
        index.require(id)
        distance, walked, truncated = analysis.neighbors(index, id, depth, rel, direction, limit)
        nodes = [
            NeighborNode(id=i, name=e.name, category=e.category, type=e.type, distance=d)
            for i, d in sorted(distance.items(), key=lambda kv: (kv[1], kv[0]))
            for e in (index.entities[i],)
        ]
    return NeighborsResult(
        id=id,
        depth=depth,
        rel=rel,
        direction=direction,
        nodes=nodes,
        relations=[RelationOut.of(r) for r in walked],
        truncated=truncated,
    )


def find_path(
    ctx: PluginContext,
    src: EntityId,
    dst: EntityId,
    max_depth: Annotated[int, Field(ge=1, le=20)] = 8,
) -> PathResult:
    """The shortest chain of relations linking two entities."""
    with store_for(ctx).reading() as index:
        index.require(src, "src")
        index.require(dst, "dst")
        steps = analysis.shortest_path(index, src, dst, max_depth)
    if steps is None:
        return PathResult(
            src=src,
            dst=dst,
            found=False,
            hops=None,
            entities=[],
            steps=[],
            message=f"no path of at most {max_depth} hops links '{src}' and '{dst}'",
        )
    ids = [src] + [s.relation.dst if s.forward else s.relation.src for s in steps]
    return PathResult(
        src=src,
        dst=dst,
        found=True,
        hops=len(steps),
        entities=ids,
        steps=[
            PathStep(src=s.relation.src, rel=s.relation.rel, dst=s.relation.dst, walked=_walked(s.forward))
            for s in steps
        ],
        message=_describe(ids, steps),
    )


def export_graph(
    ctx: PluginContext,
    format: Literal["mermaid", "json"] = "mermaid",
    root: Annotated[str | None, Field(description="Only around this entity.")] = None,
    depth: Annotated[int, Field(ge=1, le=5)] = 2,
    max_nodes: Annotated[int, Field(ge=1, le=20000)] = 300,
) -> ExportResult:
    """Export the graph (or part) as a Mermaid diagram or JSON."""
    with store_for(ctx).reading() as index:
        ids, cut = None, False
        if root is not None:
            index.require(root, "root")
            distance, _, cut = analysis.neighbors(index, root, depth, None, "both", max_nodes)
            ids = sorted(distance, key=lambda i: (distance[i], i))
        entities, relations, truncated = interchange.select(index, ids, max_nodes)
        truncated = truncated or cut
    content = (
        interchange.to_mermaid(entities, relations, truncated)
        if format == "mermaid"
        else interchange.to_json(entities, relations)
    )
    return ExportResult(
        format=format, entities=len(entities), relations=len(relations), truncated=truncated, content=content
    )


def get_entropy_report(ctx: PluginContext) -> EntropyReport:
    """Health report of the knowledge graph, with what to fix."""
    return entropy_report(store_for(ctx), ctx.config.stale_days)


def import_graph(
    ctx: PluginContext,
    path: Annotated[str, Field(description="A memory.jsonl of the reference memory MCP server, inside the roots.")],
    category: Annotated[
        str | None, Field(description="Put every entity here; default: chosen from each entityType.")
    ] = None,
) -> ImportResult:
    """Import the JSONL file of the reference 'memory' MCP server (entities with observations, relations).
    Names become ids ('John Smith' -> 'john-smith'); existing ids are kept, never overwritten."""
    store = store_for(ctx)
    if category is not None:
        store.check_category(category)
    real = ctx.paths.resolve(path)
    if not real.is_file():
        raise GraphError(f"'{path}' is not a file")
    parsed = interchange.read_memory_file(real, category, store.categories)
    added_entities, added_relations, skipped = store.append_batch(parsed.entities, parsed.relations)
    return ImportResult(
        path=ctx.paths.display(real),
        entities_added=len(added_entities),
        relations_added=len(added_relations),
        skipped=parsed.skipped + skipped,
        ids={name: ident for name, ident in parsed.renamed.items() if name != ident},
    )


def register_tools(register: ToolRegistrar, ctx: PluginContext) -> None:
    category = category_arg(ctx.config)
    write = {"category": "write", "read_only": False, "destructive": False}
    for fn, title, idempotent, keywords in (
        (
            bound(add_entity, ctx, category=category),
            "Add entity",
            False,
            "new knowledge graph node: concept, person, technology",
        ),
        (
            bound(connect_entities, ctx),
            "Connect entities",
            True,
            "add a knowledge graph edge: relate two nodes, uses, depends on",
        ),
        (
            bound(import_graph, ctx),
            "Import memory-server graph",
            True,
            "load memory.jsonl from the memory server into the knowledge graph",
        ),
    ):
        register(fn, title=title, idempotent=idempotent, keywords=keywords, **write)
    read = {"category": "read", "read_only": True, "idempotent": True}
    for fn, title, keywords in (
        (search_knowledge, "Search knowledge", "find knowledge graph nodes, look up a concept"),
        (get_entity, "Get entity", "show a knowledge graph node, its details and edges"),
        (neighbors, "Neighbours of an entity", "nearby knowledge graph nodes, what is connected to"),
        (find_path, "Find a path", "how two knowledge graph nodes are related, connection between them"),
        (export_graph, "Export graph", "diagram, visualize, draw, dump the knowledge graph"),
        (
            get_entropy_report,
            "Entropy report",
            "knowledge graph health: orphans, stale entities, dangling relations, look-alike names, cleanup",
        ),
    ):
        register(bound(fn, ctx), title=title, keywords=keywords, **read)


def bound(fn: Callable[..., Any], ctx: PluginContext, **annotations: Any) -> Callable[..., Any]:
    """The tool ``fn(ctx, ...)`` with ``ctx`` given, as the host takes it.

    The host builds the tool's name, description and schemas from the result's name, docstring and
    ``__signature__``: ``fn``'s, without ``ctx`` and with ``annotations`` replacing its parameters' own.
    """
    body = functools.partial(fn, ctx)
    if inspect.iscoroutinefunction(fn):

        async def call(**kwargs: Any) -> Any:
            return await body(**kwargs)
    else:

        def call(**kwargs: Any) -> Any:
            return body(**kwargs)

    functools.update_wrapper(call, fn)
    signature = inspect.signature(body, eval_str=True)
    parameters = [p.replace(annotation=annotations.get(p.name, p.annotation)) for p in signature.parameters.values()]
    call.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return call


def _hit(index: GraphIndex, hit: Hit) -> SearchHit:
    entity = index.entities[hit.id]
    text = hit.matched
    if hit.field == "desc":
        text = _snippet(entity.desc, hit.matched)
    elif hit.field == "tags":
        text = next((t for t in entity.tags if hit.matched in t.casefold()), hit.matched)
    elif hit.field == "name":
        text = entity.name
    elif hit.field == "id":
        text = entity.id
    return SearchHit(
        id=entity.id,
        name=entity.name,
        category=entity.category,
        type=entity.type,
        score=round(hit.score, 1),
        matched_field=hit.field,
        matched_text=text,
    )


def _snippet(text: str, word: str, width: int = 60) -> str:
    at = text.casefold().find(word)
    if at < 0:
        return text[:width]
    start = max(0, at - width // 2)
    end = min(len(text), at + len(word) + width // 2)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _walked(forward: bool) -> Literal["forward", "backward"]:
    return "forward" if forward else "backward"


def _describe(ids: list[str], steps: list[analysis.Step]) -> str:
    parts = [ids[0]]
    for step, node in zip(steps, ids[1:], strict=True):
        parts.append(f"-{step.relation.rel}->" if step.forward else f"<-{step.relation.rel}-")
        parts.append(node)
    return " ".join(parts)
