"""nexus-memory: remember what a developer learned, recall it by meaning, across projects.

Memories and their links live in Chroma (embedded in the data dir, or a
``chroma run`` server). The shared server's process loads the models as it
starts, beside the SDK's import (``preload``), and Chroma loads in a worker
thread as soon as the server has registered this plugin's tools (``warm_up``),
while it builds the rest and starts listening, so the handshake never waits for
them and the first call waits as little as it can. Importing this module
imports no SDK: the early loading imports it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nexus_core import Category, hookimpl

if TYPE_CHECKING:  # the plugin's module is imported by its early loading too (``preload``): no SDK here
    from pydantic import BaseModel

    from nexus_core import PluginContext
    from nexus_memory.runtime import Runtime
    from nexus_memory.service import MemoryService

_RUNTIME = "runtime"  # its key in ctx.state: one per plugin context, so several hosts in one process stay apart


def runtime_of(ctx: PluginContext) -> Runtime:
    """The plugin's state in the host that gave ``ctx``: its service, the warm-up, how calls run."""
    from nexus_memory.runtime import Runtime

    held = ctx.state.get(_RUNTIME)
    if held is None:
        held = ctx.state[_RUNTIME] = Runtime(ctx)
    return held


def service_of(ctx: PluginContext) -> MemoryService:
    """The memory operations of the plugin in the host that gave ``ctx`` (its store: ``.store``), opened on first
    use. The way in for tests and benchmarks: ``service_of(host.plugins["memory"].ctx)``."""
    return runtime_of(ctx).service()


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
        Category(
            name="export",
            description="Write export files into the roots (export_memories with path): your files, not only the "
            "plugin's store.",
        ),
        Category(
            name="reindex",
            description="Re-embed every memory in the running server (reindex_memories): minutes of CPU on a large "
            "store.",
        ),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    from nexus_memory.config import MemoryConfig

    return MemoryConfig


@hookimpl
def nexus_register_tools(register, ctx: PluginContext) -> None:
    from nexus_memory.tools import register_tools

    register_tools(register, runtime_of(ctx))


@hookimpl
def nexus_register_resources(register, ctx: PluginContext) -> None:
    from nexus_memory.tools import register_resources

    register_resources(register, runtime_of(ctx))


@hookimpl
def nexus_register_prompts(register) -> None:
    from nexus_memory.tools import register_prompts

    register_prompts(register)


@hookimpl
def nexus_prepare(ctx: PluginContext) -> None:
    if ctx.config.warm_up:  # while the server builds the other plugins and starts listening
        runtime_of(ctx).start_warm_up()


@hookimpl
def nexus_startup(ctx: PluginContext) -> None:
    if ctx.config.warm_up:  # a host that was not prepared (built in process, then served)
        runtime_of(ctx).start_warm_up()


@hookimpl
async def nexus_shutdown(ctx: PluginContext) -> None:
    import anyio.to_thread

    rt = ctx.state.pop(_RUNTIME, None)
    if rt is not None:
        await anyio.to_thread.run_sync(rt.close)


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
