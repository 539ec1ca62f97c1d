"""The shared server: one per user and config, owning all state, serving every client's session.

Relays (``nexus serve``, see ``relay``) connect over a Unix socket in the
user's private runtime folder. Each connection opens with one line of JSON:
``hello`` (a client session: its launch folder, ``--root`` folders, profile,
an untrusted ``./nexus.toml`` to narrow with), ``status`` or ``stop``. After
``hello`` the connection carries MCP as JSON lines, in either protocol era,
with the session bound to every request it makes.

The server holds an exclusive lock for its lifetime, so exactly one runs per
key; it exits after ``idle_timeout`` seconds without a session, and as soon as
a relay finds it stale (the install changed, or its config file did): the
relays then start a new one and replay their handshakes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.message import SessionMessage

from nexus_core import runtime
from nexus_core.config import NexusConfig
from nexus_core.host import Host, core_version
from nexus_core.narrowing import read_narrowing
from nexus_core.sessions import Session, bound
from nexus_core.transports import parse_error_replies

log = logging.getLogger("nexus")

MAX_LINE = 256 << 20  # one JSON-RPC message; a file read can be large
HELLO_TIMEOUT = 10.0


class SharedServer:
    def __init__(self, host: Host, key: str, *, idle_timeout: float) -> None:
        self.host, self.key = host, key
        self.files = runtime.server_files(key)
        self.idle_timeout = idle_timeout
        self.fingerprint = runtime.install_fingerprint()
        self.config_stamp = _stamp(host.config.path)
        self.started = time.time()
        self.sessions: dict[str, Session] = {}
        self.idle_since: float | None = time.monotonic()
        self.http_url: str | None = None
        self._tg: TaskGroup | None = None

    # -- running --------------------------------------------------------------------

    async def serve(self, *, http: tuple[str, int] | None = None) -> None:
        lowlevel = self.host.server._lowlevel_server
        async with lowlevel.lifespan(lowlevel) as state, self._listen() as listener:
            self._write_info()
            log.info("shared server %s listening on %s (pid %d)", self.key, self.files["socket"], os.getpid())
            try:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    tg.start_soon(self._stop_on_signals)
                    tg.start_soon(self._exit_when_idle)
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
        old = os.umask(0o177)
        try:
            listener = await anyio.create_unix_listener(path)
        finally:
            os.umask(old)
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
            if self.idle_since is not None and time.monotonic() - self.idle_since >= self.idle_timeout:
                self.stop(f"no session for {self.idle_timeout:.0f} s")
                return

    async def _serve_http(self, bind: str, port: int) -> None:
        from nexus_core.transports import serve_http

        self.http_url = f"http://{bind}:{port}{self.host.config.server.http.path}"
        await serve_http(self.host, bind=bind, port=port)

    # -- one connection -----------------------------------------------------------------

    async def _connection(self, stream: SocketStream, state: Any) -> None:
        async with stream:
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
            session = _session_from(hello, self.host.config)
        except Exception as exc:  # an unreadable ./nexus.toml, an unknown profile: this client gets the reason
            await _send(stream, {"nexus": "refused", "reason": str(exc)})
            return
        await _send(stream, {"nexus": "welcome", "session": session.id, "pid": os.getpid()})
        self.sessions[session.id] = session
        self.idle_since = None
        log.info("session %s opened (pid %s, %s)", session.id, hello.get("pid"), session.cwd)
        try:
            with bound(session):
                await self._serve_mcp(stream, reader, state)
        finally:
            del self.sessions[session.id]
            log.info("session %s (%s) closed after %d call(s)", session.id, session.client or "?", session.calls)
            if not self.sessions:
                self.idle_since = time.monotonic()

    async def _serve_mcp(self, stream: SocketStream, reader: BufferedByteReceiveStream, state: Any) -> None:
        """MCP as JSON lines over the socket, exactly as on stdio."""
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](16)
        lowlevel = self.host.server._lowlevel_server

        async def read_lines() -> None:
            async with incoming_send:
                while True:
                    try:
                        line = await reader.receive_until(b"\n", MAX_LINE)
                    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
                        return
                    except anyio.DelimiterNotFound:
                        log.warning("a message over %d bytes: closing the session", MAX_LINE)
                        return
                    if not line.strip():
                        continue
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except Exception as exc:
                        message = exc
                    await incoming_send.send(message)

        async def write_lines() -> None:
            async with outgoing_receive:
                async for message in outgoing_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await stream.send(data.encode() + b"\n")
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        return

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            await serve_dual_era_loop(
                lowlevel,
                parse_error_replies(incoming, outgoing),
                outgoing,
                lifespan_state=state,
                init_options=lowlevel.create_initialization_options(),
            )
            tg.cancel_scope.cancel()

    def _stale(self, hello: dict) -> str | None:
        if hello.get("fingerprint") not in (None, self.fingerprint):
            return "Nexus or a plugin was installed, upgraded or removed since this server started"
        if _stamp(self.host.config.path) != self.config_stamp:
            return f"the config file {self.host.config.path} changed"
        return None

    # -- describing itself ----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "nexus": "status",
            "pid": os.getpid(),
            "key": self.key,
            "version": core_version(),
            "started": self.started,
            "uptime_s": round(time.time() - self.started, 1),
            "config": str(self.host.config.path or "defaults"),
            "socket": str(self.files["socket"]),
            "log": str(self.files["log"]),
            "http": self.http_url,
            "rss_mb": _rss_mb(),
            "idle_timeout_s": self.idle_timeout,
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
        self.files["info"].write_text(json.dumps(info))


def _session_from(hello: dict, config: NexusConfig) -> Session:
    narrowing = read_narrowing(Path(hello["narrowing"])) if hello.get("narrowing") else None
    return Session(
        transport="relay",
        cwd=Path(hello["cwd"]) if hello.get("cwd") else None,
        launch_roots=tuple(Path(r) for r in hello.get("roots") or ()),
        narrowing=narrowing,
        profile=config.profile(hello["profile"]) if hello.get("profile") else None,
    )


async def _send(stream: SocketStream, message: dict[str, Any]) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(json.dumps(message).encode() + b"\n")


def _stamp(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _rss_mb() -> float | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def hold_lifetime_lock(key: str) -> int | None:
    """The server's lifetime lock on its key, or None when another server holds it (then it runs)."""
    fd = os.open(runtime.server_files(key)["lock"], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def ask(key: str, request: str, timeout: float = 10.0) -> dict[str, Any] | None:
    """Send a control line (``status``, ``stop``) to the server of ``key``; None when none listens."""
    import socket

    path = runtime.server_files(key)["socket"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except OSError:
            return None
        sock.sendall(json.dumps({"nexus": request}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    return json.loads(data) if data.strip() else None
