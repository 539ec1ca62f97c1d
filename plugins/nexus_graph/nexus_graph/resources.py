"""Resources: an entity, a month of relations, and the entropy report, as JSON.

URI parts are checked before anything is looked up; a part that could name
a path (``..``, ``%2F``, uppercase, a month 13) is refused with the reason.
"""

from __future__ import annotations

import json
import re

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from nexus_core import PluginContext
from nexus_graph.models import GraphConfig
from nexus_graph.records import CATEGORY_RE, ID_RE, GraphError
from nexus_graph.storage import RELATIONS_DIR
from nexus_graph.tools import detail, entropy_report, store_for

JSON = "application/json"
YEAR_RE = re.compile(r"^\d{4}\Z")
MONTH_RE = re.compile(r"^(0?[1-9]|1[0-2])\Z")


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def register_resources(register, ctx: PluginContext) -> None:
    config: GraphConfig = ctx.config

    def entity(type: str, id: str) -> str:
        """The full JSON content of one entity, with its relations both ways (outgoing, incoming).

        {type} is its category or its type field."""
        if not CATEGORY_RE.match(type):
            raise ResourceError(f"malformed URI: {type!r} is not a category (e.g. 'concepts', 'tech_stack')")
        if not ID_RE.match(id):
            raise ResourceError(f"malformed URI: {id!r} is not an entity id (lowercase letters, digits and hyphens)")
        with store_for(ctx).reading() as index:
            found = index.entities.get(id)
            if found is None or type not in (found.category, found.type):
                raise ResourceNotFoundError(f"no entity '{id}' in '{type}'")
            data = detail(index, id).model_dump()
        return _dumps({**data["entity"], "outgoing": data["outgoing"], "incoming": data["incoming"]})

    def relations(year: str, month: str) -> str:
        """The relations made in one month (the file relations/YYYY/MM.jsonl), in order."""
        if not YEAR_RE.match(year) or not MONTH_RE.match(month):
            raise ResourceError(
                f"malformed URI: expected knowledge://relations/YYYY/MM, got year {year!r}, month {month!r}"
            )
        source = f"{RELATIONS_DIR}/{year}/{int(month):02d}.jsonl"
        with store_for(ctx).reading() as index:
            found = [r.to_record() for r in index.relations if r.source.rsplit(":", 1)[0] == source]
        return _dumps({"file": source, "count": len(found), "relations": found})

    def entropy() -> str:
        """The entropy report (as the get_entropy_report tool returns it)."""
        try:
            return entropy_report(store_for(ctx), config.stale_days).model_dump_json(indent=1)
        except GraphError as exc:
            raise ResourceError(str(exc)) from None

    register(entity, "knowledge://entities/{type}/{id}", name="entity", mime_type=JSON, category="read")
    register(relations, "knowledge://relations/{year}/{month}", name="relations", mime_type=JSON, category="read")
    register(entropy, "knowledge://stats/entropy", name="entropy", mime_type=JSON, category="read")
