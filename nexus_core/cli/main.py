"""The ``nexus`` command group: its commands, and those plugins publish under ``nexus.cli``.

Only ``serve`` and the commands that build a host import the SDK, pydantic and the plugins, and only when
they run: ``nexus --help``, ``nexus server status`` or ``nexus install`` answer without them.
"""

from __future__ import annotations

import sys

import click

from nexus_core import __version__
from nexus_core.cli import config, console, doctor, install, plugins, serve, server
from nexus_core.cli.output import fail, table
from nexus_core.cli.plugin_commands import PluginCommands
from nexus_core.serve import rendezvous

DISTRIBUTION = "nexus-stack-core"


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)
    except rendezvous.Wedged as exc:  # any command that asks a stopped or stuck server: what to run, no traceback
        fail(str(exc), 4)


def print_versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the host, then each installed plugin (entry point) with its distribution and version."""
    if not value or ctx.resilient_parsing:
        return
    import importlib_metadata

    from nexus_core.hookspecs import PROJECT  # the plugins' entry point group

    click.echo(f"{DISTRIBUTION} {__version__}")
    rows = []
    for ep in sorted(importlib_metadata.entry_points(group=PROJECT), key=lambda ep: ep.name):
        rows.append((f"  {ep.name}", *((ep.dist.name, ep.dist.version) if ep.dist else (ep.value, "-"))))
    if rows:
        click.echo("plugins:")
        table(rows)
    ctx.exit()


@click.group(cls=PluginCommands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=print_versions,
    help="Show the version of the host and of every installed plugin.",
)
def cli() -> None:
    """Nexus: one MCP server, composed from installed plugins."""


for command in (
    serve.serve,
    plugins.plugins,
    plugins.tools,
    plugins.call,
    config.config,
    server.server,
    server.trust,
    console.console,
    doctor.doctor,
    install.install,
    install.uninstall,
):
    cli.add_command(command)


@cli.command()
@click.argument("shell", required=False, type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str | None) -> None:
    """Print the shell completion script: add  eval "$(nexus completion)"  to your shell's rc file."""
    from click.shell_completion import get_completion_class

    if shell is None:
        import shellingham

        try:
            shell = shellingham.detect_shell()[0]
        except shellingham.ShellDetectionFailure:
            fail("cannot detect your shell; name it: nexus completion bash|zsh|fish")
    completer = get_completion_class(shell or "")
    if completer is None:
        fail(f"no completion for {shell}; supported: bash, zsh, fish")
    click.echo(completer(cli, {}, "nexus", "_NEXUS_COMPLETE").source())
