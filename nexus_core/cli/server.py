"""``nexus server start|stop|status`` and ``nexus trust``: the shared server from the command line.

Standard library, click and the relay only, unless a command must serve: asking the shared server for its
status does not import the SDK.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from nexus_core.cli.options import flags
from nexus_core.cli.output import fail
from nexus_core.config import lookup
from nexus_core.errors import NexusError
from nexus_core.serve import relay, rendezvous
from nexus_core.serve.options import SHARED_SERVER_FLAGS, ServeOptions


def which(options: ServeOptions) -> tuple[str, list[str]]:
    """(key, server arguments) of the shared server that ``nexus serve`` with these options would use."""
    try:
        choice = lookup.find_config(options.config)
        shape = options.server_args(choice.path)
    except FileNotFoundError as exc:
        raise click.ClickException(f"{exc}: config file not found") from None
    except ValueError as exc:  # --libraries that are not NAME:PATH pairs
        raise click.ClickException(str(exc)) from None
    return rendezvous.server_key(choice.path, shape), shape


@click.group()
def server() -> None:
    """The shared server that every client's `nexus serve` relays to."""


@server.command(
    "run",
    hidden=True,
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def server_run(arguments: tuple[str, ...]) -> None:
    """Run the shared server in the foreground: ``python -m nexus_core.serve.shared_main``, by its old name."""
    from nexus_core.serve import shared_main

    sys.exit(shared_main.main(list(arguments)))


@server.command("start")
@flags(*SHARED_SERVER_FLAGS)
def server_start(**values: Any) -> None:
    """Start the shared server for this config (if it is not running) and show its status."""
    key = ensure_running(ServeOptions.of(values))
    _print_status(rendezvous.ask(key, "status"))


def ensure_running(options: ServeOptions) -> str:
    """The key of the shared server for these options, started if none runs."""
    key, shape = which(options)
    if rendezvous.ask(key, "status") is None:
        try:
            relay.Relay(key, shape, {}).start_only()
        except relay.RelayError as exc:
            fail(str(exc), exc.code)
    return key


def serve_http_shared(options: ServeOptions) -> None:
    """``nexus serve --transport http``: the shared server serves Streamable HTTP at this address, with this
    command's token, roots, profile and --enable, for as long as this command runs; stdio clients share its
    state. ``--transport sse``: HTTP+SSE beside it, at /sse."""
    from nexus_core.config.effective import load
    from nexus_core.serve.http import http_token

    try:
        config = load(options.config, options.overrides, options.verbose)
        bind = options.bind or config.server.http.host
        port = config.server.http.port if options.port is None else options.port
        token = http_token(config, bind)
    except NexusError as exc:
        fail(str(exc))
    key, shape = which(options)
    choice = lookup.find_config(options.config)
    hello = {
        "nexus": "http",
        "host": bind,
        "port": port,
        "token": token,
        "sse": options.transport == "sse",
        "cwd": str(Path.cwd()),
        "roots": [str(Path(r).expanduser().absolute()) for r in options.roots],
        "narrowing": str(choice.narrowing) if choice.narrowing else None,
        "profile": options.profile,
        "enable": options.enable,
    }
    link = relay.Relay(key, shape, {})
    while True:
        try:
            sock, answer = link.reach(hello | {"fingerprint": rendezvous.install_fingerprint()}, expect="http")
        except relay.RelayError as exc:
            fail(str(exc), exc.code)
        sock.settimeout(None)  # answered: from here on it only waits for the server to go, however long it serves
        click.echo(f"nexus: serving Streamable HTTP on {answer['url']} (shared server pid {answer['pid']})", err=True)
        if answer.get("sse_url"):
            click.echo(f"nexus: serving HTTP+SSE on {answer['sse_url']}", err=True)
        # No login link here: a client launching this command keeps its stderr in a log file.
        click.echo("console: run `nexus console` for a login link", err=True)
        with sock:
            while sock.recv(1 << 16):  # until the server goes away (a restart after an upgrade or a config edit)
                pass
        click.echo("nexus: the shared server went away; serving HTTP again", err=True)


@server.command("token")
@click.option("--rotate", is_flag=True, help="Replace the generated HTTP token with a new one.")
def server_token(rotate: bool) -> None:
    """Where the generated HTTP token is kept; --rotate replaces it (never printed: read it from the file)."""
    from nexus_core.config.lookup import user_config_path

    path = user_config_path().parent / "http-token"  # serve.http.token_path, without importing the SDK
    if rotate:
        import secrets

        from nexus_core.fs.atomic import atomic_write
        from nexus_core.fs.modes import private_folder

        private_folder(path.parent)
        atomic_write(path, secrets.token_urlsafe(32) + "\n", mode=0o600)
        click.echo(
            f"nexus: a new HTTP token is in {path}. HTTP listeners already running keep the old one until they "
            "restart: stop `nexus serve --transport http` and start it again (or `nexus server stop`).",
            err=True,
        )
    else:
        click.echo(str(path))


@server.command("stop")
@flags(*SHARED_SERVER_FLAGS)
@click.option("--force", is_flag=True, help="A server that does not answer: SIGTERM, then SIGKILL.")
def server_stop(force: bool, **values: Any) -> None:
    """Stop the shared server for this config; open sessions end (their relays start a new one when used)."""
    options = ServeOptions.of(values)
    key, _ = which(options)  # a clear error for a missing config file or bad --libraries
    from nexus_core.serve.client import stop_shared_server

    try:
        pid = stop_shared_server(options=options)
    except rendezvous.Wedged as exc:
        if not force or exc.pid is None:
            fail(str(exc))
        _kill(key, exc.pid)
        return
    if pid is None:
        click.echo("no shared server is running for this config")
        return
    click.echo(f"stopped the shared server (pid {pid})")


def _kill(key: str, pid: int) -> None:
    """Stop a server that does not answer: SIGTERM (it exits cleanly if it can), SIGKILL after a while."""
    lock = rendezvous.server_files(key)["lock"]
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
            os.kill(pid, signal.SIGCONT)  # a stopped server (SIGSTOP) acts on SIGTERM only once it runs again
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and rendezvous.is_held(lock):
            time.sleep(0.05)
        if not rendezvous.is_held(lock):
            click.echo(f"stopped the shared server (pid {pid}, {sig.name})")
            return
    fail(f"the shared server (pid {pid}) did not stop")


@server.command("status")
@flags(*SHARED_SERVER_FLAGS)
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def server_status(as_json: bool, **values: Any) -> None:
    """Show the shared server for this config: pid, uptime, version, sessions, plugins, memory."""
    import json

    key, _ = which(ServeOptions.of(values))
    try:
        status = rendezvous.ask(key, "status")
    except rendezvous.Wedged as exc:  # stopped or stuck: say so and what to run, never a traceback
        if as_json:
            click.echo(json.dumps({"nexus": "not answering", "pid": exc.pid, "error": str(exc)}, indent=2))
        else:
            click.echo(f"nexus: {exc}", err=True)
        sys.exit(4)
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
    if status.get("audit_dropped"):  # a full disk: records that could not be written to the audit log
        click.echo(f"  audit log: {status['audit_dropped']} record(s) could not be written (see the log)")
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
    real = lookup.trust(Path(path))
    click.echo(f"trusted {real}: its nexus.toml is now a full config (recorded in {lookup.trust_path()})")
