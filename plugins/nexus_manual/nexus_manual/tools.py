"""The MCP tools: one module per group (tools_reading, tools_editing, tools_relations, tools_manual), each
a set of module-level functions taking the plugin's libraries first; the work is in entities / graph / manual."""

from __future__ import annotations

from nexus_core import PluginContext, ToolRegistrar
from nexus_manual import tools_editing, tools_manual, tools_reading, tools_relations
from nexus_manual.library import Libraries


def register_tools(register: ToolRegistrar, ctx: PluginContext, libs: Libraries) -> None:
    for group in (tools_reading, tools_editing, tools_relations, tools_manual):
        group.register(register, libs)
