"""The shared server: one per user and config, owning all state, serving every client's session.

Relays (``nexus serve``, see ``relay``) connect over a Unix socket in the
user's private runtime folder. Each connection opens with one line of JSON:
``hello`` (a client session: its launch folder, ``--root`` folders, profile,
an untrusted ``./nexus.toml`` to narrow with), ``status``, ``stop`` or
``console`` (serve HTTP if it is off, and answer a one-time console login link),
``http`` (``nexus serve --transport http`` or ``sse``: serve Streamable HTTP on its
address, with its token, and HTTP+SSE beside it when asked, for as long as its
connection stays open). After
``hello`` the relay hands over its client's stdin and stdout, and the server
serves MCP on them directly, in either protocol era, with the session bound
to every request (``client_pipes``); the socket stays open for notes to the
relay and tells each side when the other is gone.

The server holds an exclusive lock for its lifetime, so exactly one runs per
key; it exits after ``idle_timeout`` seconds without a session, and as soon as
a relay finds it stale (the install changed, or its config file did): the
relays then start a new one and replay their handshakes.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from nexus_core import __version__
from nexus_core.access import peers
from nexus_core.access.sessions import Session, bound, process_session, start_sessions_like
from nexus_core.assembly import build_for_serving, report
from nexus_core.config.model import NexusConfig
from nexus_core.config.narrowing import read_narrowing
from nexus_core.console import last_used as console_last_used
from nexus_core.errors import NexusError
from nexus_core.host import catalog, heap, sdk
from nexus_core.host.build import Host
from nexus_core.serve import rendezvous
from nexus_core.serve.client_pipes import ClientPipes

log = logging.getLogger("nexus")

HELLO_TIMEOUT = 10.0
RELEASE_EVERY = 30.0  # seconds between two hand-backs of freed memory (one takes a few ms)


class SharedServer:
    def __init__(self, host: Host, key: str, *, idle_timeout: float) -> None:
        self.host, self.key = host, key
        self.files = rendezvous.server_files(key)
        self.idle_timeout = idle_timeout
        self.fingerprint = rendezvous.install_fingerprint()
        self.config_stamp = self._config_stamp()
        self.started = time.time()
        self.sessions: dict[str, Session] = {}
        self.idle_since: float | None = time.monotonic()
        self.own_http: tuple[str, int] | None = None  # where the server's own HTTP (console, [server.http]) is
        self.listeners: dict[tuple[str, int], Listener] = {}  # what `nexus serve --transport http` asked for
        self._tg: TaskGroup | None = None

    # -- running --------------------------------------------------------------------

    async def serve(self, *, http: tuple[str, int] | None = None) -> None:
        async with sdk.lifespan(self.host.server) as state, self._listen() as listener:
            self._write_info()
            log.info("shared server %s listening on %s (pid %d)", self.key, self.files["socket"], os.getpid())
            try:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    tg.start_soon(self._stop_on_signals)
                    tg.start_soon(self._exit_when_idle)
                    tg.start_soon(release_freed_memory, RELEASE_EVERY)
                    if http is not None:
                        tg.start_soon(self._serve_http, *http)
                    await listener.serve(lambda stream: self._connection(stream, state), task_group=tg)
            finally:
                with contextlib.suppress(OSError):
                    self.files["info"].unlink()
                with contextlib.suppress(OSError):
                    self.files["socket"].unlink()

    @contextlib.asynccontextmanager
    async def _listen(self) -> AsyncIterator[Any]:
        path = self.files["socket"]
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by a server that died: the lifetime lock proves no other owns it
        # No umask change: it is process-wide, and plugin threads create their folders meanwhile. The socket is
        # bound under a temporary name in the private run folder, made 0600, then renamed to where clients dial.
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        listener = await anyio.create_unix_listener(rendezvous.socket_address(temporary))
        try:
            os.chmod(temporary, 0o600)
            os.rename(temporary, path)
        except BaseException:
            await listener.aclose()
            raise
        async with listener:
            yield listener

    def stop(self, reason: str) -> None:
        log.info("shared server stopping: %s", reason)
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def _stop_on_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                self.stop(signal.Signals(signum).name)
                return

    async def _exit_when_idle(self) -> None:
        while True:
            await anyio.sleep(min(self.idle_timeout, 5.0))
            if self.idle_since is None:
                continue
            since = max(self.idle_since, console_last_used(self.host) or 0.0)  # a console in use counts
            if time.monotonic() - since >= self.idle_timeout:
                self.stop(f"no session for {self.idle_timeout:.0f} s")
                return

    async def _serve_http(self, bind: str, port: int, sock: Any = None) -> None:
        from nexus_core.serve.http import serve_http

        self.own_http = (bind, port)
        try:
            await serve_http(self.host, bind=bind, port=port, sock=sock)
        except SystemExit:  # uvicorn exits when it cannot bind: the port's holder must not take stdio down too
            log.error(
                "HTTP is not served: %s:%d is taken; stdio clients are, and `nexus console` picks a free port",
                bind,
                port,
            )
            self.own_http = None

    async def _console(self) -> dict[str, Any]:
        """Serve HTTP now if it is off (the console lives there, on loopback), and a one-time login link."""
        from nexus_core.console import console_for
        from nexus_core.serve.http import is_loopback, loopback_socket

        http = self.host.config.server.http
        # A loopback address that `nexus serve --transport http` holds serves the console too.
        port = next((port for bind, port in self.listeners if is_loopback(bind) or bind in ("0.0.0.0", "::")), 0)
        if not port and self.own_http is None and self._tg is not None:
            sock = loopback_socket(http.port)
            port = sock.getsockname()[1]
            self.own_http = ("127.0.0.1", port)  # before the task runs: one listener only
            self._tg.start_soon(self._serve_http, "127.0.0.1", port, sock)
        elif not port and not is_loopback(http.host) and http.host not in ("0.0.0.0", "::"):
            return {"nexus": "refused", "reason": f"HTTP listens on {http.host} only; the console needs loopback"}
        login = await anyio.to_thread.run_sync(console_for(self.host).login_path)  # the first one collects pages
        port = port or (self.own_http[1] if self.own_http else 0)
        return {"nexus": "console", "url": f"http://127.0.0.1:{port}{login}", "pid": os.getpid()}

    # -- one connection -----------------------------------------------------------------

    async def _connection(self, stream: SocketStream, state: Any) -> None:
        async with stream:
            uid = peers.other_user(stream.extra(SocketAttribute.raw_socket))
            if uid is not None:  # sessions and control commands: this user's only
                log.warning("refused a connection from another user (uid %s)", uid)
                return
            reader = BufferedByteReceiveStream(stream)
            try:
                with anyio.fail_after(HELLO_TIMEOUT):
                    hello = json.loads(await reader.receive_until(b"\n", 1 << 20))
            except (Exception, anyio.get_cancelled_exc_class()):
                return
            match hello.get("nexus") if isinstance(hello, dict) else None:
                case "status":
                    await _send(stream, self.status())
                case "stop":
                    await _send(stream, {"nexus": "stopping", "pid": os.getpid()})
                    self.stop("nexus server stop")
                case "console":
                    await _send(stream, await self._console())
                case "http":
                    await self._hold_http(stream, hello)
                case "tools":  # `nexus tools`: the host's tools, refused ones too
                    await _send(stream, {"nexus": "tools", "tools": catalog.tool_rows(self.host)})
                case "plugins":
                    await _send(stream, {"nexus": "plugins", **await catalog.plugins_answer(self.host)})
                case "hello":
                    await self._session(stream, reader, hello, state)
                case _:
                    await _send(stream, {"nexus": "refused", "reason": "expected a hello line"})

    async def _session(self, stream: SocketStream, reader: BufferedByteReceiveStream, hello: dict, state: Any) -> None:
        if reason := self._stale(hello):
            await _send(stream, {"nexus": "restart", "reason": reason})
            self.stop(f"stale: {reason}")
            return
        try:
            session = _session_from(hello, self.host)
        except Exception as exc:  # an unreadable ./nexus.toml, an unknown profile: this client gets the reason
            await _send(stream, {"nexus": "refused", "reason": str(exc)})
            return
        await _send(stream, {"nexus": "welcome", "session": session.id, "pid": os.getpid()})
        try:
            with anyio.fail_after(HELLO_TIMEOUT):
                _, fds = await stream.receive_fds(1, 3)  # the client's stdin and stdout, the in-flight file
        except (Exception, anyio.get_cancelled_exc_class()):
            return
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return
        self.sessions[session.id] = session
        self.idle_since = None
        log.info("session %s opened (relay pid %s, %s)", session.id, hello.get("pid"), session.cwd)
        try:
            with bound(session):
                pipes = ClientPipes(fds[0], fds[1], relay=stream, trackfd=fds[2], hello=hello)
                await pipes.serve(sdk.lowlevel(self.host.server), state)
        except Exception:  # one client's broken pipes end its session, never the server every client shares
            log.exception("session %s ended by an error", session.id)
        finally:
            for fd in fds:
                os.close(fd)
            del self.sessions[session.id]
            log.info("session %s (%s) closed after %d call(s)", session.id, session.client or "?", session.calls)
            self._note_idle()

    def _note_idle(self) -> None:
        if not self.sessions and not any(listener.holders for listener in self.listeners.values()):
            self.idle_since = time.monotonic()

    # -- HTTP for `nexus serve --transport http` ------------------------------------------

    async def _hold_http(self, stream: SocketStream, hello: dict) -> None:
        """Serve Streamable HTTP at the address asked for while the asking connection stays open."""
        if reason := self._stale(hello):
            await _send(stream, {"nexus": "restart", "reason": reason})
            self.stop(f"stale: {reason}")
            return
        try:
            listener = self._listener(str(hello.get("host") or "127.0.0.1"), int(hello.get("port") or 0), hello)
        except OSError as exc:
            await _send(stream, {"nexus": "refused", "reason": f"cannot listen there: {exc.strerror or exc}"})
            return
        except (ValueError, NexusError) as exc:
            await _send(stream, {"nexus": "refused", "reason": str(exc)})
            return
        listener.holders += 1
        self.idle_since = None
        log.info("serving Streamable HTTP on %s (for `nexus serve --transport http`)", listener.url)
        await _send(stream, {"nexus": "http", "url": listener.url, "sse_url": listener.sse_url, "pid": os.getpid()})
        try:
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                while await stream.receive():
                    pass
        finally:
            listener.holders -= 1
            if not listener.holders:
                if not listener.kept:
                    listener.server.should_exit = True
                self.listeners = {k: v for k, v in self.listeners.items() if v is not listener}
            self._note_idle()

    def _listener(self, bind: str, port: int, hello: dict) -> Listener:
        """The HTTP listener on ``bind:port`` (``port`` 0: a new one on a free port), started if needed."""
        from nexus_core.serve.http import http_server, http_token, listening_socket
        from nexus_core.serve.sse import SSE_PATH

        token = str(hello.get("token") or "") or http_token(self.host.config, bind)
        sse = bool(hello.get("sse"))
        listener = self.listeners.get((bind, port)) if port else None
        if listener is None and port and (bind, port) == self.own_http:
            # The server's own HTTP (the console's, or [server.http]'s) already serves there: joined, never stopped.
            own = http_token(self.host.config, bind)
            listener = self.listeners[(bind, port)] = Listener(self._own_url() or "", own, server=None, kept=True)
        if listener is not None:
            if not hmac.compare_digest(listener.token.encode(), token.encode()):
                raise ValueError(f"{listener.url} is already served with another token")
            if sse and listener.sse_url is None:
                raise ValueError(f"{listener.url} is already served without SSE; stop it or choose another --port")
            return listener
        if self._tg is None:
            raise ValueError("the shared server is not serving yet")
        sock = listening_socket(bind, port)
        port = sock.getsockname()[1]
        host_part = f"[{bind}]" if ":" in bind else bind
        try:
            template = _session_from(hello, self.host, "http")
            server = http_server(self.host, bind=bind, port=port, token=token, sse=sse)
        except BaseException:
            sock.close()
            raise
        base = f"http://{host_part}:{port}"
        listener = Listener(
            f"{base}{self.host.config.server.http.path}", token, server, sse_url=f"{base}{SSE_PATH}" if sse else None
        )
        self.listeners[(bind, port)] = listener
        self._tg.start_soon(_run_listener, listener, sock, template)
        return listener

    def _own_url(self) -> str | None:
        if self.own_http is None:
            return None
        bind, port = self.own_http
        return f"http://{bind}:{port}{self.host.config.server.http.path}"

    def _stale(self, hello: dict) -> str | None:
        if hello.get("fingerprint") not in (None, self.fingerprint):
            return "Nexus or a plugin was installed, upgraded or removed since this server started"
        if self._config_stamp() != self.config_stamp:
            return f"the config file {self.host.config.path} or a file in its plugin_dirs changed"
        return None

    def _config_stamp(self) -> tuple[Any, ...]:
        """What the server was built from: the config file and the plugin files it loads at start."""
        config = self.host.config
        files = [f for d in config.server.plugin_dirs for f in sorted(config.resolve_path(d).glob("*.py"))]
        return tuple(_stamp(f) for f in [config.path, *files])

    # -- describing itself ----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "nexus": "status",
            "pid": os.getpid(),
            "key": self.key,
            "version": __version__,
            "started": self.started,
            "uptime_s": round(time.time() - self.started, 1),
            "config": str(self.host.config.path or "defaults"),
            "socket": str(self.files["socket"]),
            "log": str(self.files["log"]),
            "http": self._own_url() or next((listener.url for listener in self.listeners.values()), None),
            "http_listeners": [listener.url for listener in self.listeners.values()],
            "rss_mb": _rss_mb(),
            "idle_timeout_s": self.idle_timeout,
            "audit_dropped": self.host.audit.dropped,
            "plugins": [
                {"name": s.name, "version": s.record.version, "status": s.status}
                for s in sorted(self.host.plugins.values(), key=lambda s: s.name)
            ],
            "sessions": [
                {
                    "id": s.id,
                    "client": s.client or "?",
                    "cwd": str(s.cwd) if s.cwd else None,
                    "roots": [str(r) for r in s.roots()],
                    "calls": s.calls,
                    "age_s": round(time.time() - s.started, 1),
                }
                for s in self.sessions.values()
            ],
        }

    def _write_info(self) -> None:
        config = str(self.host.config.path or "")
        info = {"pid": os.getpid(), "key": self.key, "config": config, "started": self.started}
        from nexus_core.fs.atomic import atomic_write

        atomic_write(self.files["info"], json.dumps(info), mode=0o600)  # its own mode, whatever the umask


@dataclass
class Listener:
    """One HTTP address served for ``nexus serve --transport http``, while any such command holds it."""

    url: str
    token: str
    server: Any  # uvicorn.Server: ``should_exit = True`` stops it
    holders: int = 0
    sse_url: str | None = None  # where it serves the legacy HTTP+SSE transport too (``--transport sse``)
    kept: bool = False  # the server's own HTTP, which outlives its holders


async def _run_listener(listener: Listener, sock: Any, template: Session) -> None:
    start_sessions_like(template)  # its sessions start where that command was launched, with its roots and profile
    try:
        await listener.server.serve(sockets=[sock])
    except SystemExit:  # uvicorn exits when its app cannot start: the stdio clients stay served
        log.error("HTTP on %s stopped: its app did not start (see above)", listener.url)
    finally:
        sock.close()


async def release_freed_memory(every: float) -> None:
    """Every ``every`` seconds, hand the memory freed meanwhile back to the system: glibc keeps what the calls freed
    (an embedding's activations, a write's buffers) in its heap, and a busy server's resident memory grew with it
    (+80 MB over 200 stores; +26 MB once handed back)."""
    while True:
        await anyio.sleep(every)
        await anyio.to_thread.run_sync(heap.release_freed)


def _session_from(hello: dict, host: Host, transport: str = "relay") -> Session:
    narrowing = read_narrowing(Path(hello["narrowing"])) if hello.get("narrowing") else None
    return Session(
        transport=transport,
        cwd=Path(hello["cwd"]) if hello.get("cwd") else None,
        launch_roots=tuple(Path(r) for r in hello.get("roots") or ()),
        narrowing=narrowing,
        profile=host.config.profile(hello["profile"]) if hello.get("profile") else None,
        enabled=host.enabled(str(hello["enable"])) if hello.get("enable") is not None else None,
    )


async def _send(stream: SocketStream, message: dict[str, Any]) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(json.dumps(message).encode() + b"\n")


def _stamp(path: Path | None) -> tuple[int, int, int, int] | None:
    """A file's identity for the restart check: its mode too (a plugin file others could write is refused)."""
    if path is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino, info.st_mode


def _rss_mb() -> float | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def build(config: NexusConfig) -> Host:
    """The shared server's host, built from ``config`` (``NexusError``: a required plugin failed)."""
    process_session().cwd = None  # the server's own folder is no client's project
    host = build_for_serving(config)
    report(host)
    return host


def serve(key: str, host: Host) -> int:
    """Serve ``host`` as the shared server of ``key`` until stopped or idle (the process holds the lifetime lock:
    ``shared_main``); the exit status."""
    config = host.config
    http = config.server.http
    bind = (http.host, http.port) if http.enabled else None
    try:
        anyio.run(lambda: SharedServer(host, key, idle_timeout=config.server.idle_timeout).serve(http=bind))
    except NexusError as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # the entry point's old name, which a relay started before an upgrade still runs
    import runpy

    runpy.run_module("nexus_core.serve.shared_main", run_name="__main__", alter_sys=True)
