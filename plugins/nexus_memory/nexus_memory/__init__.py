"""nexus-memory: remember what a developer learned, recall it by meaning, across projects.

Memories and their links live in Chroma (embedded in the data dir, or a
``chroma run`` server). Chroma, onnxruntime and the model load on first use,
so server start stays fast.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from nexus_core import Category, PluginContext, hookimpl
from nexus_memory.config import MemoryConfig
from nexus_memory.tools import Runtime, register_prompts, register_resources, register_tools

_RUNTIMES: dict[int, Runtime] = {}  # one per plugin context, so several hosts in one process stay apart


def runtime(ctx: PluginContext) -> Runtime:
    if id(ctx) not in _RUNTIMES:
        _RUNTIMES[id(ctx)] = Runtime(ctx)
    return _RUNTIMES[id(ctx)]


@hookimpl
def nexus_permission_categories() -> list[Category]:
    return [
        Category(name="read", description="Recall, list, read and analyse memories and their links.", default=True),
        Category(
            name="write",
            description="Store and update memories, link and unlink them (the plugin's own store, not your files).",
            default=True,
        ),
        Category(name="delete", description="Delete memories and merge several into one (irreversible)."),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    return MemoryConfig


@hookimpl
def nexus_register_tools(register, ctx: PluginContext) -> None:
    register_tools(register, runtime(ctx))


@hookimpl
def nexus_register_resources(register, ctx: PluginContext) -> None:
    register_resources(register, runtime(ctx))


@hookimpl
def nexus_register_prompts(register) -> None:
    register_prompts(register)


@hookimpl
def nexus_shutdown(ctx: PluginContext) -> None:
    rt = _RUNTIMES.pop(id(ctx), None)
    if rt is not None:
        rt.close()


@hookimpl
def nexus_console_pages(register) -> None:
    pages = Path(__file__).parent / "console"
    fields = pages / "fields.js"  # the one module that reads the tools' fields
    register(
        "memories",
        title="Memories",
        script=[fields, pages / "memories.js"],
        views={"recall_memories": "search", "get_memory": "memory"},
        order=10,
    )
    register("health", title="Health", script=[fields, pages / "health.js"], order=20)
