"""The prompt: a health review of the graph, driven by the entropy report it embeds."""

from __future__ import annotations

from nexus_core import PluginContext, PromptRegistrar
from nexus_graph.models import GraphConfig
from nexus_graph.tools import entropy_report, store_for


def register_prompts(register: PromptRegistrar, ctx: PluginContext) -> None:
    config: GraphConfig = ctx.config

    def review_graph_health() -> str:
        """Review the knowledge graph's health from its entropy report and propose concrete fixes."""
        report = entropy_report(store_for(ctx), config.stale_days)
        return (
            "Review the health of the knowledge graph from its entropy report (below, as get_entropy_report "
            f"returns it). In short: {report.summary}\n\n"
            "Go through the findings that have a count above zero, most harmful first: corrupt_lines, "
            "dangling, duplicates, orphans, components, stale, then hubs. For each, propose concrete fixes "
            "naming the ids:\n"
            "- dangling: add_entity for each missing id (category, id, type, name, desc), or say which relation "
            "was a typo.\n"
            "- duplicates: which id to keep, and connect_entities(src=<other>, rel='same_as', dst=<kept>) for "
            "the others; the graph is append-only, so nothing is deleted.\n"
            "- orphans and cut-off groups: search_knowledge for related entities, then connect_entities with a "
            "short snake_case rel and a context sentence saying why.\n"
            "- stale: which still matter, and the relation that records what changed.\n"
            "- corrupt_lines: the file and line to fix by hand.\n"
            "- hubs: whether a catch-all should be split into narrower entities.\n"
            "List the tool calls you propose and wait for my go-ahead before making them (writing needs the "
            "graph's write category). If the report shows nothing to do, say so in one line.\n\n"
            f"```json\n{report.model_dump_json(indent=1)}\n```"
        )

    register(review_graph_health, title="Review the graph's health", category="read", requires="get_entropy_report")
