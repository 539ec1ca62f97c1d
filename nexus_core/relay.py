"""The relay: what a desktop client launches as ``nexus serve``, a thin pipe to the user's shared server.

Every client (Claude Desktop, Cursor, a terminal agent) launches its own
``nexus serve``. The relay finds the shared server for its config (one per
config file and Python install, see ``runtime``), starts it when none runs
(a lock makes two relays starting at once end up on one server), introduces
itself (launch folder, ``--root`` folders, profile, an untrusted
``./nexus.toml`` to narrow with), then passes JSON-RPC lines through unchanged
in both directions. It imports only the standard library, so it answers at once.

If the server dies, the relay answers the requests in flight with an error
that says so, starts a new server, replays the client's ``initialize`` (its
answer is swallowed: the client already has one) and goes on: the client's
session survives.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from nexus_core import locate, runtime

DRAIN_TIMEOUT = 60.0  # seconds the relay still waits for answers once the client has closed its input
START_TIMEOUT = 120.0  # seconds to wait for a new shared server to listen (plugins load, models do not)
REPLAY_ID = "nexus-relay-replay"
IN_FLIGHT_ERROR = -32603
_RESPONSE = re.compile(rb'^\{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)"')


class RelayError(Exception):
    """The relay cannot reach a shared server; the message says why and what to look at."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code  # the exit status: the server's own when it could not start (2: a config error)


def parse(argv: list[str]) -> argparse.Namespace:
    """``nexus serve``'s arguments (the same as the full CLI's; see ``cli.serve``)."""
    p = argparse.ArgumentParser(prog="nexus serve", add_help=False)
    p.add_argument("--config")
    p.add_argument("--set", action="append", default=[], dest="overrides")
    p.add_argument("--libraries")
    p.add_argument("--name")
    p.add_argument("--root", action="append", default=[], dest="roots")
    p.add_argument("--profile")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--transport", default="stdio")
    return p.parse_args(argv)


def server_args(args: argparse.Namespace, config: Path | None) -> list[str]:
    """The arguments that shape the server itself (so they are part of its identity), not one session."""
    out = ["--config", str(config)] if config else []
    for item in args.overrides:
        out += ["--set", item]
    if args.libraries:
        out += ["--libraries", _absolute_libraries(args.libraries)]
    if args.name:
        out += ["--name", args.name]
    return out


def _absolute_libraries(spec: str) -> str:
    """``--libraries`` paths made absolute here: the server does not run in this folder."""
    parts = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, path = item.partition(":")
        if not sep or not name.strip() or not path.strip():
            raise RelayError(f"--libraries expects NAME:PATH pairs separated by commas, got '{item}'", 2)
        parts.append(f"{name.strip()}:{Path(path.strip()).expanduser().absolute()}")
    return ",".join(parts)


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        choice = locate.find_config(args.config)
        shape = server_args(args, choice.path)
    except FileNotFoundError as exc:
        print(f"nexus: {exc}: config file not found", file=sys.stderr)
        return 2
    except RelayError as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return exc.code
    cwd = Path.cwd()
    hello = {
        "nexus": "hello",
        "fingerprint": runtime.install_fingerprint(),
        "cwd": str(cwd),
        "roots": [str(Path(r).expanduser().absolute()) for r in args.roots],
        "narrowing": str(choice.narrowing) if choice.narrowing else None,
        "profile": args.profile,
        "pid": os.getpid(),
    }
    if sys.stdin.isatty():
        print(
            "nexus: speaking MCP on stdin/stdout; start me from an MCP client (see `nexus install`).", file=sys.stderr
        )
    relay = Relay(runtime.server_key(choice.path, shape), shape, hello, verbose=args.verbose)
    try:
        relay.connect()
    except RelayError as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return exc.code
    relay.run(sys.stdin.buffer, sys.stdout.buffer)
    return 0


class Relay:
    """One client's pipe to the shared server, reconnecting (and restarting it) when it goes away."""

    def __init__(self, key: str, shape: list[str], hello: dict[str, Any], *, verbose: bool = False) -> None:
        self.files = runtime.server_files(key)
        self.key, self.shape, self.hello, self.verbose = key, shape, hello, verbose
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()  # guards sock, backlog and pending
        self.pending: dict[bytes, None] = {}  # ids (as JSON) of the client's requests awaiting an answer
        self.backlog: list[tuple[bytes, bytes | None]] = []  # client lines (and request ids) held while reconnecting
        self.initialize: dict[str, Any] | None = None  # the client's initialize request, to replay
        self.initialized: bytes | None = None
        self.closing = False  # the client closed its side: the server closing ours is expected
        self.wanted = threading.Event()  # set when a client line waits for a server

    # -- reaching the server --------------------------------------------------------

    def connect(self) -> None:
        """Connect to the shared server, starting it when none listens, and say hello."""
        self.sock = self._connected()

    def _connected(self) -> socket.socket:
        """A greeted connection; a server that is dying (its socket still accepting) or stale is waited out."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            sock = self._dial() or self._start()
            try:
                welcome = self._greet(sock)
            except OSError:  # reset: it died between accepting and answering
                welcome = {"nexus": "restart"}
            if welcome.get("nexus") == "welcome":
                return sock
            sock.close()
            if welcome.get("nexus") != "restart":
                raise RelayError(f"the shared server refused this client: {welcome.get('reason', welcome)}", 2)
            if time.monotonic() > deadline:
                raise RelayError(f"the shared server kept restarting (log: {self.files['log']})")
            self._wait_gone()  # a stale server (an upgrade, an edited config) exits: then start a new one
            time.sleep(0.05)

    def start_only(self) -> None:
        """Start the shared server if none listens (``nexus server start``)."""
        sock = self._dial() or self._start()
        sock.close()

    def _dial(self) -> socket.socket | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.files["socket"]))
            return sock
        except OSError:
            sock.close()
            return None

    def _greet(self, sock: socket.socket) -> dict[str, Any]:
        sock.sendall(json.dumps(self.hello).encode() + b"\n")
        line = _read_line(sock)
        try:
            return json.loads(line) if line else {"nexus": "restart"}
        except ValueError:
            return {"nexus": "refused", "reason": line[:200].decode(errors="replace")}

    def _wait_gone(self, timeout: float = 30.0) -> None:
        """Until the stale server has let go of its lock (it is shutting its plugins down)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _locked(self.files["lock"]):
            time.sleep(0.05)

    def _start(self) -> socket.socket:
        """Start the shared server, one relay at a time, and wait until it listens."""
        with _flock(self.files["start"]):
            sock = self._dial()  # another relay may have started it while this one waited
            if sock is not None:
                return sock
            log = self.files["log"]
            log.parent.mkdir(parents=True, exist_ok=True)
            offset = log.stat().st_size if log.exists() else 0
            proc = spawn_server(self.key, self.shape, log)
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                sock = self._dial()
                if sock is not None:
                    return sock
                if proc.poll() is not None and not _locked(self.files["lock"]):
                    reason = f"the shared server did not start:\n{_tail(log, offset)}\n(log: {log})"
                    raise RelayError(reason, proc.returncode or 1)
                time.sleep(0.02)
            raise RelayError(f"the shared server did not listen within {START_TIMEOUT:.0f} s (log: {log})")

    # -- relaying -------------------------------------------------------------------

    def run(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        reader = threading.Thread(target=self._from_server, args=(stdout,), daemon=True, name="from-server")
        reader.start()
        for line in iter(stdin.readline, b""):
            if line.strip():
                self._to_server(line if line.endswith(b"\n") else line + b"\n")
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while (self.pending or self.backlog) and time.monotonic() < deadline:  # answer what was asked
            time.sleep(0.01)
        with self.lock, contextlib.suppress(OSError):
            self.closing = True
            self.wanted.set()
            if self.sock is not None:
                self.sock.shutdown(socket.SHUT_WR)  # the client is gone: so is its session
        reader.join(timeout=5)

    def _to_server(self, line: bytes) -> None:
        request_id = self._note_client(line)
        with self.lock:
            if self.sock is not None:
                try:
                    self.sock.sendall(line)
                except OSError:
                    self.sock = None  # the reader notices the drop
                else:
                    if request_id is not None:
                        self.pending[request_id] = None
                    return
            self.backlog.append((line, request_id))
            self.wanted.set()  # the client wants a server again: the reader reconnects

    def _note_client(self, line: bytes) -> bytes | None:
        """Remember the handshake (a reconnection replays it); return the id of a request, as JSON."""
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or "method" not in message:
            return None
        if message["method"] == "initialize":
            self.initialize = message
        elif message["method"] == "notifications/initialized":
            self.initialized = line
        return json.dumps(message["id"]).encode() if "id" in message else None

    def _from_server(self, stdout: BinaryIO) -> None:
        buffer = b""
        while True:
            sock = self.sock
            try:
                chunk = sock.recv(1 << 16) if sock is not None else b""
            except OSError:
                chunk = b""
            if not chunk:
                if self.closing:
                    return
                self._lost(stdout)
                self.wanted.wait()  # until the client sends something: a stopped server stays stopped till then
                if self.closing and not self.backlog:
                    return
                if not self._reconnect():
                    os._exit(1)  # no server can be had: the client sees the pipe close
                buffer = b""
                continue
            buffer += chunk
            if b"\n" not in buffer:
                continue
            lines, _, buffer = buffer.rpartition(b"\n")
            for line in lines.split(b"\n"):
                self._note_server(line)
            try:
                stdout.write(lines + b"\n")
                stdout.flush()
            except (BrokenPipeError, ValueError):
                os._exit(0)  # the client is gone

    def _note_server(self, line: bytes) -> None:
        match = _RESPONSE.match(line)
        if match is not None:
            request_id = match.group(1)
        elif b'"id"' in line[:512] and b'"method"' not in line[:512]:
            try:
                request_id = json.dumps(json.loads(line)["id"]).encode()
            except (ValueError, KeyError, TypeError):
                return
        else:
            return
        with self.lock:
            self.pending.pop(request_id, None)

    def _lost(self, stdout: BinaryIO) -> None:
        """The server went away: what was in flight fails, saying so."""
        with self.lock:
            self.sock, lost = None, list(self.pending)
            self.pending.clear()
            self.wanted.clear()
            if self.backlog:
                self.wanted.set()
        for request_id in lost:
            error = {
                "code": IN_FLIGHT_ERROR,
                "message": "the shared Nexus server stopped while handling this request; it is being restarted, "
                "so try again (see `nexus server status`)",
            }
            stdout.write(b'{"jsonrpc":"2.0","id":' + request_id + b',"error":' + json.dumps(error).encode() + b"}\n")
        stdout.flush()
        print("nexus: the shared server went away", file=sys.stderr)

    def _reconnect(self) -> bool:
        """Get a server again (starting one), replay the client's handshake, send what waited."""
        print("nexus: reconnecting to the shared server", file=sys.stderr)
        try:
            sock = self._connected()
            self._replay(sock)
        except (RelayError, OSError) as exc:
            print(f"nexus: cannot reconnect: {exc}", file=sys.stderr)
            return False
        return True

    def _replay(self, sock: socket.socket) -> None:
        """The new server has a new session: give it the client's handshake (its answer is not forwarded),
        then let the client's lines through again."""
        if self.initialize is not None:
            sock.sendall(json.dumps(dict(self.initialize, id=REPLAY_ID)).encode() + b"\n")
            answer = _read_line(sock)
            if REPLAY_ID.encode() not in answer[:200]:
                raise RelayError(f"the new server did not accept the replayed initialize: {answer[:200]!r}")
            if self.initialized is not None:
                sock.sendall(self.initialized)
        with self.lock:  # what the client sent meanwhile goes first, in order
            for line, request_id in self.backlog:
                sock.sendall(line)
                if request_id is not None:
                    self.pending[request_id] = None
            self.backlog.clear()
            self.sock = sock


def spawn_server(key: str, shape: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``nexus server run`` detached from this client: its own session, output to its log."""
    if log.exists() and log.stat().st_size > 10 << 20:
        log.replace(log.with_suffix(".log.1"))
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "nexus_core", "server", "run", "--key", key, *shape],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd=runtime.state_dir(),
            start_new_session=True,
            close_fds=True,
        )


def _read_line(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    """One line, read a byte at a time: nothing after it may be consumed (it belongs to the pipe)."""
    data = bytearray()
    while len(data) < limit:
        byte = sock.recv(1)
        if not byte or byte == b"\n":
            break
        data += byte
    return bytes(data)


@contextlib.contextmanager
def _flock(path: Path):  # type: ignore[no-untyped-def]
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _locked(path: Path) -> bool:
    """Whether a server holds its lifetime lock on ``path``."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _tail(log: Path, offset: int, lines: int = 15) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.strip().splitlines()[-lines:]) or "(the log is empty)"
