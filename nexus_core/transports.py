"""Serving: stdio (what desktop clients launch) and Streamable HTTP.

On stdio, stdout carries the protocol and nothing else: while plugins load,
file descriptor 1 points at stderr, and while serving the protocol has its own
copies of the client's pipes while fd 1 stays on stderr (``claimed_stdio``),
so a plugin (or a child process) that prints cannot corrupt the stream.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from nexus_core.errors import ConfigError
from nexus_core.locate import user_config_path
from nexus_core.sessions import bind, process_session

if TYPE_CHECKING:
    from nexus_core.config import NexusConfig
    from nexus_core.host import Host

log = logging.getLogger("nexus")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr for the duration, so stray prints cannot reach the protocol stream."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


async def serve_stdio(host: Host) -> None:
    """One client on this process's stdin and stdout (``nexus serve --standalone``)."""
    from nexus_core.client_pipes import ClientPipes  # it builds on error_for, below

    bind(process_session())  # one client: the one that launched this process
    lowlevel = host.server._lowlevel_server
    with claimed_stdio() as (infd, outfd):
        async with lowlevel.lifespan(lowlevel) as state, anyio.create_task_group() as serving:
            serving.start_soon(_stop_on_sigterm, host)
            await ClientPipes(infd, outfd).serve(lowlevel, state)
            serving.cancel_scope.cancel()


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """The protocol's own copies of fds 0 and 1. While serving, fd 0 reads nothing and fd 1 goes to stderr,
    so a plugin or a child process can neither eat the client's input nor write into the protocol."""
    infd, outfd, saved_in, saved_out = os.dup(0), os.dup(1), os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield infd, outfd
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out, infd, outfd):
            os.close(fd)


async def _stop_on_sigterm(host: Host) -> None:
    """SIGTERM stops the plugins the orderly way, so the processes they started (the bridge's servers) end too.

    Then the process exits at once: the SDK reads stdin in a thread that cancellation cannot interrupt.
    """
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            log.info("SIGTERM: stopping")
            await host.stop()
            os._exit(0)


def error_for(exc: Exception) -> JSONRPCError:
    """The answer to a client's line that is not JSON-RPC: -32700 for a line that is not JSON; -32600 for JSON
    that is not a valid message, with its id when it has one."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        log.info("stdio: a line that is not JSON")
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
    request_id = next(
        (e["input"]["id"] for e in errors if isinstance(e["input"], dict) and type(e["input"].get("id")) in (int, str)),
        None,
    )
    log.info("stdio: an invalid JSON-RPC message (id %r)", request_id)
    message = f"Invalid Request: {errors[0]['msg']} at {'.'.join(map(str, errors[0]['loc'][1:])) or 'top level'}"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message=message))


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


def http_app(host: Host, *, bind: str, port: int, token: str | None = None) -> Any:
    """The Starlette app for Streamable HTTP: always behind a bearer token, Host and Origin checked.

    ``token``: the one a ``nexus serve --transport http`` resolved in its own environment (see ``http_token``)."""
    http = host.config.server.http
    token = token or http_token(host.config, bind)
    allowed_hosts = [f"{h}:*" for h in LOOPBACK_HOSTS] + ([] if is_loopback(bind) else [f"{bind}:*"])
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts + list(LOOPBACK_HOSTS),
        allowed_origins=[f"http://{h}:*" for h in LOOPBACK_HOSTS] + http.allowed_origins,
    )
    auth = AuthSettings(issuer_url=f"http://{bind}:{port}", resource_server_url=None)  # type: ignore[arg-type]
    app = host.server._lowlevel_server.streamable_http_app(
        streamable_http_path=http.path,
        transport_security=security,
        host=bind,
        auth=auth,
        token_verifier=StaticTokenVerifier(token),
        session_idle_timeout=http.session_idle_timeout,
    )
    from nexus_core.console import console_for
    from nexus_core.console.app import mount

    mount(app, console_for(host))  # /console/: loopback only, behind its own login (see console.app)
    return app


def token_path() -> Path:
    return user_config_path().parent / "http-token"


def generated_token() -> str:
    """The token HTTP clients send when the config names none: made once, kept 0600 in the user config dir."""
    path = token_path()
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    log.warning(
        "HTTP clients must send 'Authorization: Bearer %s' (generated now, kept in %s; "
        'set [server.http] token = { env = "NEXUS_TOKEN" } to choose your own)',
        token,
        path,
    )
    return token


async def serve_http(host: Host, *, bind: str, port: int, sock: socket.socket | None = None) -> None:
    """Serve Streamable HTTP (and the console) on ``bind:port``, or on ``sock`` when given (already listening)."""
    from nexus_core.console import console_for

    server = http_server(host, bind=bind, port=port)
    log.info("serving on http://%s:%d%s", bind, port, host.config.server.http.path)
    login = console_for(host).login_path()
    log.warning("console: http://127.0.0.1:%d%s (works once; `nexus console` makes more)", port, login)
    await server.serve(sockets=[sock] if sock is not None else None)


def http_server(host: Host, *, bind: str, port: int, token: str | None = None) -> Any:
    """The uvicorn server of ``http_app``; ``should_exit = True`` stops it (within a few seconds)."""
    import uvicorn  # only the HTTP transport pays for it

    app = http_app(host, bind=bind, port=port, token=token)
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
