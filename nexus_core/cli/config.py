"""``nexus config init|check``: write a commented example config, or check one."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nexus_core.cli.options import flags
from nexus_core.cli.output import fail
from nexus_core.cli.plugins import built_host
from nexus_core.config.lookup import CONFIG_NAME, user_config_path
from nexus_core.serve.options import CONFIG_FLAGS

if TYPE_CHECKING:
    from nexus_core.host.build import Host


@click.group()
def config() -> None:
    """Write or check the config file."""


@config.command("init")
@click.option("--path", type=click.Path(dir_okay=False), help=f"Where to write (default ./{CONFIG_NAME}).")
@click.option("--user", is_flag=True, help=f"Write to the user config file ({user_config_path()}).")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def config_init(path: str | None, user: bool, force: bool) -> None:
    """Write a commented example config listing every installed plugin's categories."""
    from nexus_core.assembly import build_host
    from nexus_core.config.model import NexusConfig
    from nexus_core.config.sample import sample_config
    from nexus_core.fs.atomic import atomic_write

    target = Path(path) if path else user_config_path() if user else Path(CONFIG_NAME)
    if target.exists() and not force:
        fail(f"{target} exists; pass --force to overwrite it")
    host = build_host(NexusConfig())
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, sample_config(host))
    click.echo(f"wrote {target}")


@config.command("check")
@flags(*CONFIG_FLAGS)
def config_check(**values: Any) -> None:
    """Validate the config and print the effective permissions of every plugin."""
    from nexus_core.access.denied import PermissionDenied  # the SDK's ToolError: imported when a host is built

    host = built_host(values)
    click.echo(f"config: {host.config.source}")
    click.echo(f"data dir: {host.config.resolve_path(host.config.server.data_dir)}")
    failed = _check_narrowing(host) | _check_unknown_plugins(host)
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        if state.error is None:
            click.echo(f"\n[plugins.{state.name}] {state.status}")
        else:  # every error, one a line
            click.echo(f"\n[plugins.{state.name}] failed:")
            for line in state.error.split("; "):
                click.echo(f"  error: {line}")
        failed |= state.error is not None
        if state.grants is None or state.ctx is None:
            continue
        for category in state.categories.values():
            mark = "granted" if category.name in state.grants.categories else "not granted"
            click.echo(f"  category {category.name:<10} {mark:<12} {category.description}")
        tools = [t for t in host.tools.values() if t.plugin == state.name]
        allowed = [t.name for t in tools if t.refusal is None]
        click.echo(f"  tools: {len(allowed)} of {len(tools)} callable: {', '.join(sorted(allowed)) or '-'}")
        try:
            roots = ", ".join(str(r) for r in state.ctx.paths.roots)
        except PermissionDenied:  # none configured, and this folder is not one: each client's folder then
            roots = "none here: each client's folder, or --root"
        click.echo(f"  roots: {roots}")
        click.echo(f"  deny_paths: {', '.join(state.ctx.paths.deny_patterns) or '-'}")
    sys.exit(1 if failed else 0)


def _check_unknown_plugins(host: Host) -> bool:
    """The config's tables for plugins not installed here (a misspelt name configures nothing; the server only
    warns, so a config shared with a machine that has the plugin still serves); True when there are such."""
    unknown = sorted(name for name, table in host.config.plugins.items() if name not in host.plugins and table.enabled)
    for name in unknown:
        close = difflib.get_close_matches(name, list(host.plugins), n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (installed: {', '.join(sorted(host.plugins))})"
        click.echo(f"\n[plugins.{name}] failed:\n  error: no installed plugin is named '{name}'{hint}")
    return bool(unknown)


def _check_narrowing(host: Host) -> bool:
    """The untrusted ``./nexus.toml`` that narrows what a client launched here gets, and the categories it names
    that its plugin does not declare (a typo takes away nothing it meant to); True when there are such."""
    from nexus_core.access.sessions import process_session

    narrowing = process_session().narrowing
    if narrowing is None:
        return False
    click.echo(
        f"narrowed by: {narrowing.source} (a folder you have not trusted: it may only take away; "
        f"`nexus trust {narrowing.source.parent}` makes it your config)"
    )
    wrong = False
    for name, table in sorted(narrowing.plugins.items()):
        state = host.plugins.get(name)
        declared = list(state.categories) if state is not None else []
        for category in sorted((table.categories or frozenset()) - set(declared)) if declared else ():
            close = difflib.get_close_matches(category, declared, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (plugin '{name}' declares: {', '.join(declared)})"
            click.echo(f"  error: {narrowing.source}: plugins.{name}.categories: unknown category '{category}'{hint}")
            wrong = True
    return wrong
