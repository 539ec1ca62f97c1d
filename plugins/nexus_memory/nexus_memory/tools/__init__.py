"""The MCP surface: tools, resources and the prompt, over ``MemoryService``, one module a group.

Each tool is a module-level async function whose first parameter is the plugin's ``Runtime``; ``params.bound``
gives it, so the host sees the rest of the signature. Tools run every blocking step (embedding, Chroma) in a
worker thread (``Runtime.run``), so other calls keep flowing while the model loads or Chroma works.
"""

from __future__ import annotations

from typing import Any

from nexus_memory.runtime import Runtime
from nexus_memory.tools import health, images, links, memories, prompts, reindex, resources, transfer
from nexus_memory.tools.params import bound

# In the order the server lists them.
TOOLS = [
    *memories.TOOLS,
    health.STATS,
    *links.TOOLS,
    health.ANALYZE,
    memories.MERGE,
    health.PING,
    *transfer.TOOLS,
    *reindex.TOOLS,
]


def register_tools(register: Any, rt: Runtime) -> None:
    for fn, how in TOOLS:
        register(bound(fn, rt), **how)


def register_resources(register: Any, rt: Runtime) -> None:
    for fn, uri, how in [*resources.RESOURCES, *images.RESOURCES, *transfer.RESOURCES]:
        register(bound(fn, rt), uri, **how)


def register_prompts(register: Any) -> None:
    register(prompts.record_fix, title="Record a fix", category="write")
