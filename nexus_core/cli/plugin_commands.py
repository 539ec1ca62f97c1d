"""The commands plugins publish under the entry point group ``nexus.cli``, imported only when run.

``nexus --help`` lists them with their one-line help. Importing a plugin's module for that would import the
plugin (its stores, the SDK): seconds where the listing takes milliseconds. So the help is read from the
module's source, the command's decorator or docstring, as click would show it; a command whose help is not
written there plainly is imported after all.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path
from typing import Any

import click

from nexus_core.cli.output import fail

CLI_ENTRY_POINT_GROUP = "nexus.cli"


class PluginCommands(click.Group):
    """A group that adds the plugins' commands to its own."""

    def _entry_points(self) -> dict[str, Any]:
        return _plugin_entry_points()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._entry_points()})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        ep = self._entry_points().get(name)
        if ep is None:
            return None
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken plugin command must not break the others
            fail(f"command '{name}' from {ep.value} failed to load: {type(exc).__name__}: {exc}")
        if not isinstance(loaded, click.Command):
            fail(f"entry point {name} = {ep.value} is not a click command")
        return loaded

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing of ``--help``, with the plugins' commands described from their source."""
        builtin = set(super().list_commands(ctx))
        rows = []
        for name in self.list_commands(ctx):
            ep = None if name in builtin else self._entry_points().get(name)
            help_text = _written_help(ep.value) if ep is not None else None
            command = click.Command(name, help=help_text) if help_text else self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])


@functools.cache
def _plugin_entry_points() -> dict[str, Any]:
    """The ``nexus.cli`` entry points, read once: each read scans every installed distribution."""
    import importlib_metadata  # only for a command that is not built in, and for --help

    return {ep.name: ep for ep in importlib_metadata.entry_points(group=CLI_ENTRY_POINT_GROUP)}


def _written_help(target: str) -> str | None:
    """The help of the click command ``module:name`` as its source writes it (a literal ``help=`` or the
    docstring), or None when it is not that plain (then the module is imported to ask the command)."""
    module, _, attribute = target.partition(":")
    source = _source_of(module)
    if source is None or not attribute:
        return None
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == attribute:
            return _help_of(node)
    return None


def _source_of(module: str) -> Path | None:
    """The file of ``module`` found without importing it, nor its package (whose imports may be heavy)."""
    top, _, rest = module.partition(".")
    spec = importlib.util.find_spec(top)
    if spec is None:
        return None
    if not rest:
        return Path(spec.origin) if spec.origin and spec.origin.endswith(".py") else None
    for folder in spec.submodule_search_locations or ():
        path = Path(folder, *rest.split("."))
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _help_of(function: ast.FunctionDef) -> str | None:
    decorators = [d for d in function.decorator_list if isinstance(d, ast.Call)]
    command = next((d for d in decorators if ast.unparse(d.func) in ("click.command", "click.group")), None)
    if command is None or any(k.arg in ("short_help", "hidden", "deprecated", "cls") for k in command.keywords):
        return None
    given = next((k.value for k in command.keywords if k.arg == "help"), None)
    if given is not None:
        return given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else None
    return ast.get_docstring(function, clean=False)
