"""Serving Streamable HTTP: the token, the loopback checks, the listening socket, the console beside it."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings

from nexus_core.config.lookup import user_config_path
from nexus_core.errors import ConfigError
from nexus_core.host import sdk
from nexus_core.serve.limits import LimitBody

if TYPE_CHECKING:
    from nexus_core.config.model import NexusConfig
    from nexus_core.host.build import Host


log = logging.getLogger("nexus")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class StaticTokenVerifier:
    """Accepts exactly one bearer token (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token.encode()):
            return AccessToken(token=token, client_id="nexus", scopes=[])
        return None


def http_token(config: NexusConfig, bind: str) -> str:
    """The bearer token HTTP clients must send: the configured one (read from this process's environment),
    else the generated one; listening beyond loopback needs a configured one."""
    http = config.server.http
    token = http.token.resolve() if http.token else None
    if http.token and token is None:
        raise ConfigError(config.source, "server.http.token", f"environment variable {http.token.env} is not set")
    if not is_loopback(bind) and token is None:
        raise ConfigError(
            config.source,
            "server.http.host",
            f'refusing to listen on {bind} without a token; set [server.http] token = {{ env = "NEXUS_TOKEN" }}',
        )
    return token or generated_token()


def http_app(host: Host, *, bind: str, port: int, token: str | None = None, sse: bool = False) -> Any:
    """The Starlette app for Streamable HTTP: always behind a bearer token, Host and Origin checked.

    ``token``: the one a ``nexus serve --transport http`` resolved in its own environment (see ``http_token``).
    ``sse``: serve the legacy HTTP+SSE transport beside it, behind the same checks (``serve.sse``)."""
    http = host.config.server.http
    token = token or http_token(host.config, bind)
    allowed_hosts = [f"{h}:*" for h in LOOPBACK_HOSTS] + ([] if is_loopback(bind) else [f"{bind}:*"])
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts + list(LOOPBACK_HOSTS),
        allowed_origins=own_origins(bind, port) + http.allowed_origins,
    )
    auth = AuthSettings(issuer_url=f"http://{bind}:{port}", resource_server_url=None)  # type: ignore[arg-type]
    app = sdk.streamable_http_app(
        host.server,
        streamable_http_path=http.path,
        transport_security=security,
        host=bind,
        auth=auth,
        token_verifier=StaticTokenVerifier(token),
        session_idle_timeout=http.session_idle_timeout,
    )
    from nexus_core.console import console_for
    from nexus_core.console.app import mount

    if sse:
        from nexus_core.serve.sse import add_sse_routes

        add_sse_routes(app, host.server, security)
    mount(app, console_for(host))  # /console/: loopback only, behind its own login (see console.app)
    app.add_middleware(LimitBody)  # a body over the message limit is refused before it is read whole
    return app


def own_origins(bind: str, port: int) -> list[str]:
    """The origins of this listener's own pages: its host and port only. Any loopback port would let a page
    served by another local program (a dev server, another user's listener) call the tools from a browser."""
    names = [*LOOPBACK_HOSTS] if is_loopback(bind) else [f"[{bind}]" if ":" in bind else bind]
    return [f"http://{name}:{port}" for name in names]


def token_path() -> Path:
    return user_config_path().parent / "http-token"


def generated_token() -> str:
    """The token HTTP clients send when the config names none: made once, kept 0600 in the user config dir."""
    path = token_path()
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
    token = write_token(path)
    # Never the token itself: logs are read by tools, pasted into issues and kept for long.
    log.warning(
        "HTTP clients must send 'Authorization: Bearer <token>' with the token generated now and kept in %s "
        '(`nexus server token --rotate` replaces it; set [server.http] token = { env = "NEXUS_TOKEN" } to choose '
        "your own)",
        path,
    )
    return token


def write_token(path: Path) -> str:
    """A new token written to ``path`` (0600, atomically: a reader sees the old token or the new one)."""
    from nexus_core.fs.atomic import atomic_write
    from nexus_core.fs.modes import private_folder

    token = secrets.token_urlsafe(32)
    private_folder(path.parent)
    atomic_write(path, token + "\n", mode=0o600)
    return token


async def serve_http(host: Host, *, bind: str, port: int, sock: socket.socket | None = None, sse: bool = False) -> None:
    """Serve Streamable HTTP (and the console) on ``bind:port``, or on ``sock`` when given (already listening);
    ``sse``: the legacy HTTP+SSE transport too."""
    from nexus_core.console import console_for

    server = http_server(host, bind=bind, port=port, sse=sse)
    log.info("serving on http://%s:%d%s", bind, port, host.config.server.http.path)
    console_for(host)  # ready before the first request; its login link is not logged (it opens the console)
    log.warning("console: run `nexus console` for a login link")
    await server.serve(sockets=[sock] if sock is not None else None)


class QuietCancel(logging.Filter):
    """A clean stop cancels the app's lifespan, whose traceback (Starlette's text, or the exception) uvicorn
    logs at ERROR: a stop is not an error, so that record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
            return False
        text = record.getMessage().rstrip()
        return not (text.startswith("Traceback") and text.endswith("CancelledError"))


_QUIET_CANCEL = QuietCancel()


def http_server(host: Host, *, bind: str, port: int, token: str | None = None, sse: bool = False) -> Any:
    """The uvicorn server of ``http_app``; ``should_exit = True`` stops it (within a few seconds)."""
    import uvicorn  # only the HTTP transport pays for it

    logging.getLogger("uvicorn.error").addFilter(_QUIET_CANCEL)  # the same filter object is added only once

    app = http_app(host, bind=bind, port=port, token=token, sse=sse)
    # No proxy headers: a loopback client's X-Forwarded-For would replace the peer address (and port) that the
    # console checks (loopback, and the user owning the connection) with whatever it claims.
    config = uvicorn.Config(
        app, host=bind, port=port, log_level="warning", lifespan="on", proxy_headers=False, timeout_graceful_shutdown=3
    )
    return uvicorn.Server(config)


def listening_socket(bind: str, port: int) -> socket.socket:
    """A socket listening on ``bind:port`` (0: any free port); OSError when the address is taken."""
    family = socket.AF_INET6 if ":" in bind.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def loopback_socket(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1: ``port`` if it is free, else any free port."""
    for candidate in (port, 0):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", candidate))
        except OSError:
            sock.close()
            continue
        sock.listen(128)  # connections wait in the backlog until the server accepts them
        return sock
    raise OSError("no free port on 127.0.0.1")


def is_loopback(bind: str) -> bool:
    if bind == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False
