"""nexus-manual: Markdown knowledge libraries, read in three depths and edited by exact context.

A library is a named folder of ``<entity>.md`` files (YAML front matter plus a
Markdown body) and one ``meta.md``, the manual that says how the library is
kept. Every folder and file goes through the host's path policy.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from nexus_core import (
    Category,
    PermissionDenied,
    PluginConfig,
    PluginContext,
    PromptRegistrar,
    ResourceRegistrar,
    ToolError,
    ToolRegistrar,
    hookimpl,
)


class ManualConfig(PluginConfig):
    """The keys of [plugins.manual] besides those the host reads."""

    libraries: dict[str, str] = Field(
        default_factory=dict,
        description="Library name -> folder (absolute or ~; each is its own root). Relative: inside the roots.",
    )

    @field_validator("libraries")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, folder in value.items():
            if not name.strip() or "," in name or ":" in name:
                raise ValueError(f"library name {name!r} must be non-empty, without ',' or ':'")
            if not folder.strip():
                raise ValueError(f"library '{name}' has an empty folder")
        return value


@hookimpl
def nexus_permission_categories() -> list[Category]:
    return [
        Category(name="read", description="List, read and search entities, relations and manuals.", default=True),
        Category(
            name="write",
            description="Create, edit, rename, merge and delete entities, relations and manual sections.",
        ),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    return ManualConfig


def _libraries(ctx: PluginContext):  # -> Libraries, imported lazily
    from nexus_manual.library import Libraries

    if "libraries" not in ctx.state:
        ctx.state["libraries"] = Libraries(ctx.config.libraries, ctx.paths)
    return ctx.state["libraries"]


@hookimpl
def nexus_register_tools(register: ToolRegistrar, ctx: PluginContext) -> None:
    from nexus_manual.tools import register_tools

    register_tools(register, ctx, _libraries(ctx))


@hookimpl
def nexus_register_resources(register: ResourceRegistrar, ctx: PluginContext) -> None:
    from nexus_manual.resources import register_resources

    register_resources(register, ctx, _libraries(ctx))


@hookimpl
def nexus_register_prompts(register: PromptRegistrar, ctx: PluginContext) -> None:
    from nexus_manual.resources import register_prompts

    register_prompts(register, ctx, _libraries(ctx))


@hookimpl
def nexus_startup(ctx: PluginContext) -> None:
    """Say at start which libraries cannot be used, rather than at the first call."""
    if not ctx.config.libraries:
        ctx.log.warning('no libraries configured; add [plugins.manual.libraries] name = "folder"')
    for lib in _libraries(ctx):
        try:
            lib.root()
        except (PermissionDenied, ToolError) as exc:
            ctx.log.warning("%s", exc)


@hookimpl
def nexus_console_pages(register, ctx: PluginContext) -> None:
    script = Path(__file__).parent / "console" / "libraries.js"
    register("libraries", title="Libraries", script=script, data={"libraries": sorted(ctx.config.libraries)}, order=40)
