"""nexus-files: sandboxed file, search, shell and read-only git skills inside the configured roots.

Every path passes the host's path policy (``ctx.paths``): relative paths start
at the first root, nothing outside the roots, no symlink escape, deny_paths
invisible to reading, searching and listing, and no writes inside ``.git``.
Writing and executing are off by default.
"""

from __future__ import annotations

from pydantic import BaseModel

from nexus_core import Category, PluginContext, hookimpl


@hookimpl
def nexus_permission_categories() -> list[Category]:
    return [
        Category(name="read", description="Read files and list folders inside the roots.", default=True),
        Category(name="search", description="Find files by glob and search their contents.", default=True),
        Category(name="write", description="Create, change, move and delete files inside the roots."),
        Category(
            name="execute",
            description="Run allowlisted shell commands, each argument checked by the command's spec; "
            "includes python (run_python), as the design has it.",
            includes=("python",),  # 001 puts run_python in execute; python alone stays a finer grant
        ),
        Category(
            name="python",
            description="Run Python scripts (run_python): as much access as your own user account has.",
        ),
        Category(name="vcs", description="Read-only git: status, log, diff, show, blame, branches.", default=True),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    from .config import FilesConfig

    return FilesConfig


@hookimpl
def nexus_register_tools(register, ctx: PluginContext) -> None:
    from . import clipboard, execute, git, read, search, write

    for module in (read, search, write, execute, git, clipboard):
        module.register(register, ctx)


@hookimpl
def nexus_register_resources(register, ctx: PluginContext) -> None:
    from .resources import register_resources

    register_resources(register, ctx)


@hookimpl
def nexus_register_prompts(register, ctx: PluginContext) -> None:
    from .resources import register_prompts

    register_prompts(register, ctx)
