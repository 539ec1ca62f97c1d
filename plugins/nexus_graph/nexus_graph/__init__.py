"""nexus-graph: an append-only knowledge graph of entities and typed relations, kept as JSON Lines.

The hooks are here; the work is in ``graph`` (the index and appends),
``storage`` (files and locks), ``search``, ``analysis`` (walks and the
entropy report), ``interchange`` (Mermaid, JSON, memory-server import),
``tools``, ``resources`` and ``prompts``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from nexus_core import Category, PluginContext, hookimpl


@hookimpl
def nexus_permission_categories() -> list[Category]:
    return [
        Category(name="read", description="Search, read, walk, export and assess the knowledge graph.", default=True),
        Category(name="write", description="Add entities and relations, and import graphs (append-only)."),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    from nexus_graph.models import GraphConfig

    return GraphConfig


@hookimpl
def nexus_register_tools(register, ctx: PluginContext) -> None:
    from nexus_graph.tools import register_tools

    register_tools(register, ctx)


@hookimpl
def nexus_register_resources(register, ctx: PluginContext) -> None:
    from nexus_graph.resources import register_resources

    register_resources(register, ctx)


@hookimpl
def nexus_register_prompts(register, ctx: PluginContext) -> None:
    from nexus_graph.prompts import register_prompts

    register_prompts(register, ctx)


@hookimpl
def nexus_shutdown(ctx: PluginContext) -> None:
    from nexus_graph.tools import forget

    forget(ctx)


@hookimpl
def nexus_console_pages(register) -> None:
    script = Path(__file__).parent / "console" / "graph.js"
    register("graph", title="Graph", script=script, views={"neighbors": "neighbourhood"}, order=30)
