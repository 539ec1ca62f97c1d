"""``nexus serve``: through the shared server (the relay on stdio, the shared server's HTTP), or standalone."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from nexus_core.cli.options import flags
from nexus_core.cli.output import fail
from nexus_core.errors import NexusError
from nexus_core.serve.options import SERVE_FLAGS, ServeOptions


@click.command()
@flags(*SERVE_FLAGS)
def serve(**values: Any) -> None:
    """Serve every enabled plugin through the shared server: on stdio (what desktop clients launch), or over
    Streamable HTTP while this command runs (sse: the legacy HTTP+SSE transport too, at /sse); --standalone
    serves in this process."""
    options = ServeOptions.of(values)
    try:
        options.check_roots()
    except ValueError as exc:
        fail(str(exc))
    if options.transport == "stdio" and not options.standalone:  # (`nexus serve` usually reaches the relay first)
        from nexus_core.serve import relay

        sys.exit(relay.run(options))
    if options.transport in ("http", "sse") and not options.standalone:
        from nexus_core.cli.server import serve_http_shared

        try:
            serve_http_shared(options)
        except KeyboardInterrupt:  # Ctrl-C is how a person stops it: a clean stop, not click's "Aborted!", status 1
            click.echo("nexus: stopped serving HTTP", err=True)
        return
    standalone(options)


def standalone(options: ServeOptions) -> None:
    """Serve in this process, on stdio or Streamable HTTP, with no shared server."""
    import anyio

    from nexus_core.access.sessions import process_session
    from nexus_core.assembly import build_for_serving, report
    from nexus_core.config.effective import load, with_libraries
    from nexus_core.serve.http import serve_http
    from nexus_core.serve.stdio import claimed_stdio, serve_stdio

    overrides = options.overrides + ((f"server.name={json.dumps(options.name)}",) if options.name else ())
    process_session().launch_roots = tuple(Path(r).expanduser().absolute() for r in options.roots)
    stdio = options.transport == "stdio"
    if stdio and sys.stdin.isatty():
        click.echo("nexus: speaking MCP on stdin/stdout; start me from an MCP client (see `nexus install`).", err=True)
    try:
        # On stdio the protocol has the pipes to itself from the start: plugins start loading while the host is
        # built (nexus_prepare), and nothing they print may reach the client.
        with claimed_stdio() if stdio else contextlib.nullcontext() as pipes:
            config = with_libraries(load(options.config, overrides, options.verbose), options.libraries)
            process_session().profile = config.profile(options.profile) if options.profile else None
            host = build_for_serving(config)
            if options.enable is not None:
                try:
                    process_session().enabled = host.enabled(options.enable)
                except ValueError as exc:  # a category no plugin declares
                    fail(str(exc))
            report(host)
            if pipes is not None:
                anyio.run(serve_stdio, host, pipes)
            else:
                http = config.server.http
                bind = options.bind or http.host
                port = http.port if options.port is None else options.port
                try:
                    anyio.run(lambda: serve_http(host, bind=bind, port=port, sse=options.transport == "sse"))
                except KeyboardInterrupt:  # as in the shared server's: Ctrl-C is a clean stop, not "Aborted!"
                    click.echo("nexus: stopped serving HTTP", err=True)
    except NexusError as exc:
        fail(str(exc))
