"""``nexus server run|start|stop|status`` and ``nexus trust``: the shared server from the command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import click

from nexus_core import locate, relay, runtime, shared
from nexus_core.errors import NexusError


def _shape_options(fn: Any) -> Any:
    """The options that choose which shared server (the same ones ``nexus serve`` takes)."""
    fn = click.option("--name", help="The server's name as clients see it.")(fn)
    fn = click.option("--libraries", metavar="NAME:PATH,...", help="Markdown libraries for nexus-manual.")(fn)
    fn = click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key.")(fn)
    return click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file.")(fn)


def _which(config_path: str | None, overrides: tuple[str, ...], libraries: str | None, name: str | None) -> tuple:
    """(key, server arguments) of the shared server that ``nexus serve`` with these options would use."""
    try:
        choice = locate.find_config(config_path)
    except FileNotFoundError as exc:
        raise click.ClickException(f"{exc}: config file not found") from None
    args = argparse.Namespace(overrides=list(overrides), libraries=libraries, name=name)
    shape = relay.server_args(args, choice.path)
    return runtime.server_key(choice.path, shape), shape


@click.group()
def server() -> None:
    """The shared server that every client's `nexus serve` relays to."""


@server.command("run", hidden=True)
@click.option("--key", required=True)
@_shape_options
@click.option("-v", "--verbose", is_flag=True)
def server_run(
    key: str,
    config_path: str | None,
    overrides: tuple[str, ...],
    libraries: str | None,
    name: str | None,
    verbose: bool,
) -> None:
    """Run the shared server in the foreground (what the relay starts, detached)."""
    from nexus_core.cli import _fail, _report, _with_libraries, build_with_frozen_gc, load
    from nexus_core.sessions import process_session

    if shared.hold_lifetime_lock(key) is None:
        click.echo(f"nexus: the shared server {key} is already running", err=True)
        return
    if name:
        overrides += (f"server.name={json.dumps(name)}",)
    process_session().cwd = None  # the server's own folder is no client's project
    try:
        config = _with_libraries(load(config_path, overrides, verbose), libraries)
        host = build_with_frozen_gc(config)
        _report(host)
        http = config.server.http
        bind = (http.host, http.port) if http.enabled else None
        anyio.run(lambda: shared.SharedServer(host, key, idle_timeout=config.server.idle_timeout).serve(http=bind))
    except NexusError as exc:
        _fail(str(exc))


@server.command("start")
@_shape_options
def server_start(config_path: str | None, overrides: tuple[str, ...], libraries: str | None, name: str | None) -> None:
    """Start the shared server for this config (if it is not running) and show its status."""
    key = ensure_running(config_path, overrides, libraries, name)
    _print_status(shared.ask(key, "status"))


def ensure_running(config_path: str | None, overrides: tuple[str, ...], libraries: str | None, name: str | None) -> str:
    """The key of the shared server for these options, started if none runs."""
    key, shape = _which(config_path, overrides, libraries, name)
    if shared.ask(key, "status") is None:
        try:
            relay.Relay(key, shape, {}).start_only()
        except relay.RelayError as exc:
            raise click.ClickException(str(exc)) from None
    return key


def serve_http(options: dict[str, Any], bind: str | None, port: int | None) -> None:
    """``nexus serve --transport http``: the shared server serves Streamable HTTP at this address, with this
    command's token, roots and profile, for as long as this command runs; stdio clients share its state."""
    from nexus_core.cli import _fail, load
    from nexus_core.transports import http_token

    try:
        config = load(options["config_path"], options["overrides"], options["verbose"])
        bind = bind or config.server.http.host
        port = config.server.http.port if port is None else port
        token = http_token(config, bind)
    except NexusError as exc:
        _fail(str(exc))
    key, shape = _which(options["config_path"], options["overrides"], options["libraries"], options["name"])
    choice = locate.find_config(options["config_path"])
    hello = {
        "nexus": "http",
        "host": bind,
        "port": port,
        "token": token,
        "cwd": str(Path.cwd()),
        "roots": [str(Path(r).expanduser().absolute()) for r in options["roots"]],
        "narrowing": str(choice.narrowing) if choice.narrowing else None,
        "profile": options["profile"],
    }
    link = relay.Relay(key, shape, {})
    while True:
        try:
            sock, answer = link.reach(hello | {"fingerprint": runtime.install_fingerprint()}, expect="http")
        except relay.RelayError as exc:
            _fail(str(exc), exc.code)
        click.echo(f"nexus: serving Streamable HTTP on {answer['url']} (shared server pid {answer['pid']})", err=True)
        console = shared.ask(key, "console") or {}
        if console.get("url"):
            click.echo(f"console: {console['url']} (works once; `nexus console` makes more)", err=True)
        with sock:
            while sock.recv(1 << 16):  # until the server goes away (a restart after an upgrade or a config edit)
                pass
        click.echo("nexus: the shared server went away; serving HTTP again", err=True)


@server.command("stop")
@_shape_options
def server_stop(config_path: str | None, overrides: tuple[str, ...], libraries: str | None, name: str | None) -> None:
    """Stop the shared server for this config; open sessions end (their relays start a new one when used)."""
    key, _ = _which(config_path, overrides, libraries, name)
    answer = shared.ask(key, "stop")
    if answer is None:
        click.echo("no shared server is running for this config")
        return
    lock = runtime.server_files(key)["lock"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and relay._locked(lock):
        time.sleep(0.05)
    click.echo(f"stopped the shared server (pid {answer.get('pid')})")


@server.command("status")
@_shape_options
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def server_status(
    config_path: str | None, overrides: tuple[str, ...], libraries: str | None, name: str | None, as_json: bool
) -> None:
    """Show the shared server for this config: pid, uptime, version, sessions, plugins, memory."""
    key, _ = _which(config_path, overrides, libraries, name)
    status = shared.ask(key, "status")
    if as_json:
        click.echo(json.dumps(status, indent=2))
    else:
        _print_status(status)
    if status is None:
        sys.exit(3)


def _print_status(status: dict[str, Any] | None) -> None:
    if status is None:
        click.echo("no shared server is running for this config (a client's `nexus serve` starts one)")
        return
    click.echo(f"shared server {status['key']}: pid {status['pid']}, up {_duration(status['uptime_s'])}")
    click.echo(f"  version {status['version']}, config {status['config']}")
    click.echo(
        f"  memory {status['rss_mb']} MB resident; exits after {status['idle_timeout_s']:.0f} s without a client"
    )
    click.echo(f"  socket {status['socket']}" + (f", HTTP {status['http']}" if status["http"] else ""))
    click.echo(f"  log {status['log']}")
    plugins = ", ".join(f"{p['name']} {p['version']}".strip() + ("" if p["status"] == "ok" else f" ({p['status']})")
                        for p in status["plugins"])  # fmt: skip
    click.echo(f"  plugins: {plugins or 'none'}")
    click.echo(f"  sessions: {len(status['sessions'])}")
    for s in status["sessions"]:
        roots = ", ".join(s["roots"]) or "no roots"
        click.echo(f"    {s['client']} ({s['id']}): {s['calls']} call(s), {_duration(s['age_s'])}, {roots}")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, exists=True), default=".")
def trust(path: str) -> None:
    """Trust a folder's own nexus.toml (default: this folder): it may then widen your config, load plugins."""
    real = locate.trust(Path(path))
    click.echo(f"trusted {real}: its nexus.toml is now a full config (recorded in {locate.trust_path()})")
