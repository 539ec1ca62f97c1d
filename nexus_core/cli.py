"""The ``nexus`` command line."""

from __future__ import annotations

import gc
import json
import logging
import sys
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import click
import importlib_metadata

from nexus_core import __version__
from nexus_core.atomic import atomic_write
from nexus_core.config import CONFIG_NAME, NexusConfig, find_config, parse_config, read_config, user_config_path
from nexus_core.errors import NexusError
from nexus_core.host import Host, build_host
from nexus_core.narrowing import read_narrowing
from nexus_core.plugins import ENTRY_POINT_GROUP
from nexus_core.sample_config import sample_config
from nexus_core.sessions import process_session
from nexus_core.transports import serve_http, serve_stdio, stdout_to_stderr

log = logging.getLogger("nexus")

CLI_ENTRY_POINT_GROUP = "nexus.cli"
DISTRIBUTION = "nexus-stack-core"


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"nexus: {message}", err=True)
    sys.exit(code)


def config_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help="Override a config key, e.g. --set 'plugins.files.categories=[\"read\"]' (value in TOML syntax).",
    )(fn)
    fn = click.option("-v", "--verbose", is_flag=True, help="Log at debug level (to stderr).")(fn)
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        help=f"Config file (default: $NEXUS_CONFIG, ./{CONFIG_NAME}, then {user_config_path()}).",
    )(fn)


def load(config_path: str | None, overrides: tuple[str, ...] = (), verbose: bool = False) -> NexusConfig:
    """The effective config: the file, then ``--set`` overrides; logging set up from it.

    An untrusted ``./nexus.toml`` narrows what this process's session may use (see ``narrowing``).
    """
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    choice = find_config(config_path)
    config = _overlay(read_config(choice.path), [_override(item) for item in overrides], "--set")
    level = "DEBUG" if verbose else config.server.log_level
    logging.getLogger().setLevel(level)
    logging.getLogger("nexus").setLevel(level)
    if choice.narrowing is not None:
        process_session().narrowing = read_narrowing(choice.narrowing)
    return config


def _override(item: str) -> dict[str, Any]:
    """One ``--set KEY=VALUE`` read as the TOML line ``KEY = VALUE``; a bare word is taken as a string."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise NexusError(f"--set expects KEY=VALUE, got '{item}'")
    for value in (raw, json.dumps(raw)):
        try:
            return tomllib.loads(f"{key} = {value}")
        except tomllib.TOMLDecodeError:
            continue
    raise NexusError(f"--set: '{key}' is not a valid TOML key")


def _overlay(config: NexusConfig, tables: list[dict[str, Any]], flag: str) -> NexusConfig:
    """``config`` with command-line tables merged over it, validated again like the file."""
    if not tables:
        return config
    data = config.model_dump(mode="python", exclude_unset=True)
    for table in tables:
        _merge(data, table)
    return parse_config(data, source=f"{config.source} with {flag}", base_dir=config.base_dir, path=config.path)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


class PluginCommands(click.Group):
    """Adds the commands plugins publish under the entry point group ``nexus.cli``, imported only when run."""

    def _entry_points(self) -> dict[str, Any]:
        return {ep.name: ep for ep in importlib_metadata.entry_points(group=CLI_ENTRY_POINT_GROUP)}

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
            _fail(f"command '{name}' from {ep.value} failed to load: {type(exc).__name__}: {exc}")
        if not isinstance(loaded, click.Command):
            _fail(f"entry point {name} = {ep.value} is not a click command")
        return loaded


def print_versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the host, then each installed plugin (entry point) with its distribution and version."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"{DISTRIBUTION} {__version__}")
    rows = []
    for ep in sorted(importlib_metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        rows.append((f"  {ep.name}", *((ep.dist.name, ep.dist.version) if ep.dist else (ep.value, "-"))))
    if rows:
        click.echo("plugins:")
        _table(rows)
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


@cli.command()
@config_options
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", "bind", help="HTTP address (default from [server.http], else 127.0.0.1).")
@click.option("--port", type=int, help="HTTP port (default from [server.http], else 8766).")
@click.option("--name", help="The server's name as clients see it.")
@click.option(
    "--libraries",
    metavar="NAME:PATH,...",
    help="Markdown libraries for the manual plugin, e.g. 'work:~/notes/work,personal:~/notes/me'.",
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A folder this client may work in when the config names no roots (repeatable).",
)
@click.option("--profile", help="Serve only this profile's plugins and tools ([profiles.NAME] in the config).")
@click.option(
    "--standalone",
    is_flag=True,
    help="Serve in this process instead of through the shared server (its stores must not be in use).",
)
def serve(
    config_path: str | None,
    overrides: tuple[str, ...],
    verbose: bool,
    transport: str,
    bind: str | None,
    port: int | None,
    name: str | None,
    libraries: str | None,
    roots: tuple[str, ...],
    profile: str | None,
    standalone: bool,
) -> None:
    """Serve every enabled plugin through the shared server: on stdio (what desktop clients launch), or over
    Streamable HTTP while this command runs; --standalone serves either in this process."""
    if transport == "stdio" and not standalone:  # (`nexus serve` usually reaches the relay before click)
        from nexus_core import relay

        argv = [*(["--config", config_path] if config_path else []), *(a for o in overrides for a in ("--set", o))]
        argv += [*(["--libraries", libraries] if libraries else []), *(["--name", name] if name else [])]
        argv += [*(a for r in roots for a in ("--root", r)), *(["--profile", profile] if profile else [])]
        sys.exit(relay.main(argv + (["-v"] if verbose else [])))
    if transport == "http" and not standalone:
        from nexus_core.server_cli import serve_http as serve_http_shared

        options = dict(config_path=config_path, overrides=overrides, verbose=verbose, name=name, libraries=libraries)
        serve_http_shared(options | {"roots": roots, "profile": profile}, bind, port)
        return
    if name:
        overrides += (f"server.name={json.dumps(name)}",)
    process_session().launch_roots = tuple(Path(r).expanduser().absolute() for r in roots)
    try:
        config = _with_libraries(load(config_path, overrides, verbose), libraries)
        process_session().profile = config.profile(profile) if profile else None
        host = build_with_frozen_gc(config)
        _report(host)
        if transport == "stdio":
            if sys.stdin.isatty():
                click.echo(
                    "nexus: speaking MCP on stdin/stdout; start me from an MCP client (see `nexus install`).", err=True
                )
            anyio.run(serve_stdio, host)
        else:
            http = config.server.http
            bind, port = bind or http.host, http.port if port is None else port
            anyio.run(lambda: serve_http(host, bind=bind, port=port))
    except NexusError as exc:
        _fail(str(exc))


def _with_libraries(config: NexusConfig, libraries: str | None) -> NexusConfig:
    """``--libraries work:/a,me:/b``: the manual plugin's libraries (each folder is its own root)."""
    pairs = [part.strip() for part in (libraries or "").split(",") if part.strip()]
    if not pairs:
        return config
    found: dict[str, str] = {}
    for item in pairs:
        name, sep, path = item.partition(":")
        if not sep or not name.strip() or not path.strip():
            raise NexusError(f"--libraries expects NAME:PATH pairs separated by commas, got '{item}'")
        folder = str(Path(path.strip()).expanduser().absolute())  # typed in a shell: relative to its cwd
        found[name.strip()] = folder
    return _overlay(config, [{"plugins": {"manual": {"libraries": found}}}], "--libraries")


def build_with_frozen_gc(config: NexusConfig) -> Host:
    """Build the host for serving: stray prints go to stderr, and what is built is exempt from the cyclic GC."""
    with stdout_to_stderr(), long_lived_startup():  # import-time prints must not reach the protocol
        return build_host(config)


@contextmanager
def long_lived_startup() -> Iterator[None]:
    """Build without cyclic garbage collection, then exempt what was built from it.

    Building tool schemas allocates ~100k objects that live as long as the server;
    each full collection over them costs ~100 ms of start-up, and finds nothing.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _report(host: Host) -> None:
    granted = sum(1 for t in host.tools.values() if t.refusal is None)
    active = [s.name for s in host.active()]
    log.info("serving %d tools from %d plugin(s): %s", granted, len(active), ", ".join(active) or "none")


def _build(config_path: str | None, overrides: tuple[str, ...], verbose: bool) -> Host:
    try:
        return build_host(load(config_path, overrides, verbose))
    except NexusError as exc:
        _fail(str(exc))
        raise  # unreachable: _fail exits


@cli.command()
@config_options
def plugins(config_path: str | None, overrides: tuple[str, ...], verbose: bool) -> None:
    """List plugins: version, status, categories granted out of those available, and what they report at run time."""
    host = _build(config_path, overrides, verbose)
    report = anyio.run(_status, host)
    rows = [("PLUGIN", "VERSION", "STATUS", "GRANTED", "AVAILABLE", "SOURCE")]
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        granted = sorted(state.grants.categories) if state.grants else []
        rows.append(
            (
                state.name,
                state.record.version or "-",
                state.status,
                ",".join(granted) or "-",
                ",".join(state.categories) or "-",
                state.record.source,
            )
        )
    _table(rows)
    for plugin, lines in sorted(report.items()):
        if lines:
            click.echo(f"\n{plugin}:")
            for line in lines:
                click.echo(f"  {line}")


async def _status(host: Host) -> dict[str, list[str]]:
    async with host.running():
        return await host.status()


@cli.command()
@config_options
def tools(config_path: str | None, overrides: tuple[str, ...], verbose: bool) -> None:
    """List every tool with its plugin, category and whether it is granted (bridged servers' tools too)."""
    host = _build(config_path, overrides, verbose)
    anyio.run(_settled, host)
    found = [(e.plugin, e.name, e.spec.category, e.refusal) for e in host.tools.values()]
    found += [(e.plugin, e.key, e.item.category, e.refusal) for e in host.live.entries["tool"].values()]  # type: ignore[union-attr]
    rows = [("TOOL", "PLUGIN", "CATEGORY", "STATUS")]
    for plugin, name, category, refusal in sorted(found):
        status = "granted" if refusal is None else "refused: " + refusal.split(": ", 1)[-1]
        rows.append((name, plugin, category, status))
    _table(rows)


async def _settled(host: Host) -> None:
    """Start the plugins until what they publish at run time has arrived (within their limits)."""
    async with host.running():
        await host.settle()


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


@cli.command(context_settings={"ignore_unknown_options": True})
@config_options
@click.argument("tool")
@click.argument("arguments", nargs=-1)
@click.option("--json", "json_args", help="All arguments as one JSON object.")
def call(
    config_path: str | None,
    overrides: tuple[str, ...],
    verbose: bool,
    tool: str,
    arguments: tuple[str, ...],
    json_args: str | None,
) -> None:
    """Run one tool in-process and print its result: nexus call TOOL key=value ..."""
    host = _build(config_path, overrides, verbose)
    try:
        args = _call_arguments(host, tool, arguments, json_args)
    except NexusError as exc:
        _fail(str(exc))
    result = anyio.run(_call, host, tool, args)
    if result is None:
        sys.exit(1)
    text = "\n".join(getattr(block, "text", None) or block.model_dump_json() for block in result.content)
    if result.is_error:
        _fail(text, code=1)
    if result.structured_content is not None:
        text = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
    click.echo(text)


async def _call(host: Host, tool: str, args: dict[str, Any]) -> Any:
    async with host.running():
        try:
            return await host.server.call_tool(tool, args)
        except Exception as exc:  # the same text a client would see in the isError result
            click.echo(f"nexus: {exc}", err=True)
            return None


def _call_arguments(host: Host, tool: str, pairs: tuple[str, ...], json_args: str | None) -> dict[str, Any]:
    """``key=value`` pairs typed by the tool's input schema (strings stay strings), or ``--json``."""
    args: dict[str, Any] = {}
    if json_args:
        try:
            args = json.loads(json_args)
        except json.JSONDecodeError as exc:
            raise NexusError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(args, dict):
            raise NexusError("--json must be a JSON object")
    entry = host.tools.get(tool)
    properties = entry.sdk.parameters.get("properties", {}) if entry and entry.sdk else {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise NexusError(f"expected key=value, got '{pair}'")
        args[key] = raw if properties.get(key, {}).get("type") == "string" else _json_or_text(raw)
    return args


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


@cli.group()
def config() -> None:
    """Write or check the config file."""


@config.command("init")
@click.option("--path", type=click.Path(dir_okay=False), help=f"Where to write (default ./{CONFIG_NAME}).")
@click.option("--user", is_flag=True, help=f"Write to the user config file ({user_config_path()}).")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def config_init(path: str | None, user: bool, force: bool) -> None:
    """Write a commented example config listing every installed plugin's categories."""
    target = Path(path) if path else user_config_path() if user else Path(CONFIG_NAME)
    if target.exists() and not force:
        _fail(f"{target} exists; pass --force to overwrite it")
    host = build_host(NexusConfig())
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, sample_config(host))
    click.echo(f"wrote {target}")


@config.command("check")
@config_options
def config_check(config_path: str | None, overrides: tuple[str, ...], verbose: bool) -> None:
    """Validate the config and print the effective permissions of every plugin."""
    host = _build(config_path, overrides, verbose)
    click.echo(f"config: {host.config.source}")
    click.echo(f"data dir: {host.config.resolve_path(host.config.server.data_dir)}")
    failed = False
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        click.echo(f"\n[plugins.{state.name}] {state.status}")
        failed |= state.error is not None
        if state.grants is None or state.ctx is None:
            continue
        for category in state.categories.values():
            mark = "granted" if category.name in state.grants.categories else "not granted"
            click.echo(f"  category {category.name:<10} {mark:<12} {category.description}")
        tools = [t for t in host.tools.values() if t.plugin == state.name]
        allowed = [t.name for t in tools if t.refusal is None]
        click.echo(f"  tools: {len(allowed)} of {len(tools)} callable: {', '.join(sorted(allowed)) or '-'}")
        click.echo(f"  roots: {', '.join(str(r) for r in state.ctx.paths.roots)}")
        click.echo(f"  deny_paths: {', '.join(state.ctx.paths.deny_patterns) or '-'}")
    sys.exit(1 if failed else 0)


def _add_commands() -> None:
    from nexus_core.console.command import console
    from nexus_core.doctor import doctor
    from nexus_core.install_cli import install, uninstall
    from nexus_core.server_cli import server, trust

    cli.add_command(server)
    cli.add_command(trust)
    cli.add_command(console)
    cli.add_command(doctor)
    cli.add_command(install)
    cli.add_command(uninstall)


_add_commands()


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
            _fail("cannot detect your shell; name it: nexus completion bash|zsh|fish")
    completer = get_completion_class(shell or "")
    if completer is None:
        _fail(f"no completion for {shell}; supported: bash, zsh, fish")
        return
    click.echo(completer(cli, {}, "nexus", "_NEXUS_COMPLETE").source())
