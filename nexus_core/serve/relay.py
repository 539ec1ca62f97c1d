"""The relay: what a desktop client launches as ``nexus serve``, a thin link to the user's shared server.

Every client (Claude Desktop, Cursor, a terminal agent) launches its own
``nexus serve``. The relay finds the shared server for its config (one per
config file and Python install, see ``rendezvous``), starts it when none runs
(a lock makes two relays starting at once end up on one server), introduces
itself (launch folder, ``--root`` folders, profile, ``--enable``, an untrusted
``./nexus.toml`` to narrow with), then hands the server its own stdin and
stdout (``SCM_RIGHTS`` over the Unix socket): the server reads the client's
requests and writes its answers directly, so the relay adds nothing to a call.
It imports only the standard library, so it answers at once.

It stays on the line to keep watch: the server keeps the ids of the requests
in flight in a file the relay handed over (it reads it only if the server
dies), and tells it the client's handshake. If the server dies, the relay
answers the requests in flight with an error that says so; when the client
next sends something, it starts a new server and hands over the handshake to
replay (its answer is swallowed: the client already has one) with what the
client sent: the client's session goes on.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_core import __version__
from nexus_core.access import peers
from nexus_core.config import folders, lookup
from nexus_core.fs.modes import FILE, private_folder
from nexus_core.host.hardening import make_undumpable
from nexus_core.serve import greeting, rendezvous
from nexus_core.serve.limits import SERVER_TIMEOUT
from nexus_core.serve.options import ServeOptions

if TYPE_CHECKING:
    import subprocess

START_TIMEOUT = 120.0  # seconds to wait for a new shared server to listen (plugins load, models do not)
IN_FLIGHT_ERROR = -32603
EARLY = 1 << 16  # bytes of the client's first line the relay reads while a server starts (longer: left to it)


class RelayError(Exception):
    """The relay cannot reach a shared server; the message says why and what to look at."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code  # the exit status: the server's own when it could not start (2: a config error)


def main(argv: list[str]) -> int:
    """``nexus serve``'s arguments (see ``options``), then ``run``."""
    return run(ServeOptions.parse(argv))


def run(options: ServeOptions) -> int:
    """Link this process's client to its shared server; the exit status."""
    # The client launched the relay with its whole environment (NEXUS_TOKEN, keys a bridged server needs) and
    # it stays alive beside the shared server: a script the server runs, as this user, must not read it from
    # /proc/<relay pid>/environ. The environment itself is kept: the shared server the relay starts needs it.
    make_undumpable()
    try:
        options.check_roots()
        choice = lookup.find_config(options.config)
        shape = options.server_args(choice.path)
    except FileNotFoundError as exc:
        print(f"nexus: {exc}: config file not found", file=sys.stderr)
        return 2
    except ValueError as exc:  # --libraries that are not NAME:PATH pairs, a --root of / or ~
        print(f"nexus: {exc}", file=sys.stderr)
        return 2
    cwd = Path.cwd()
    hello = {
        "nexus": "hello",
        "cwd": str(cwd),
        "roots": [str(Path(r).expanduser().absolute()) for r in options.roots],
        "narrowing": str(choice.narrowing) if choice.narrowing else None,
        "profile": options.profile,
        "enable": options.enable,
        "pid": os.getpid(),
    }
    if sys.stdin.isatty():
        print(
            "nexus: speaking MCP on stdin/stdout; start me from an MCP client (see `nexus install`).", file=sys.stderr
        )
    try:
        relay = Relay(rendezvous.server_key(choice.path, shape), shape, hello)
        relay.name = greeting.server_name(choice.path, options.overrides, options.name)
        relay.connect()
    except RelayError as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return exc.code
    except OSError as exc:  # a runtime folder refused (another user's, a symlink), a full disk
        print(f"nexus: {exc}", file=sys.stderr)
        return 1
    return relay.run()


class Relay:
    """One client's link to the shared server: it hands over the client's pipes and keeps watch."""

    def __init__(self, key: str, shape: list[str], hello: dict[str, Any], *, stdin: int = 0, stdout: int = 1) -> None:
        self.files = rendezvous.server_files(key)
        self.key, self.shape, self.hello = key, shape, hello
        self.stdin, self.stdout = stdin, stdout
        self.sock: socket.socket | None = None
        self.in_flight = _scratch_file()  # the server writes the ids of the requests it is handling here
        self.replay: list[str] = []  # the client's initialize and initialized lines, as the server saw them
        self.name: str | None = None  # the server's name, when the relay may answer initialize itself (greeting)
        self.early: bytes | None = b""  # the client's input read while a server starts; None once it was handed over
        self._closed = False  # the client closed its input while a server started
        self.answered: dict[str, Any] | None = None  # the initialize result the relay gave, for the server to compare

    # -- reaching the server --------------------------------------------------------

    def connect(self, pending_input: bytes = b"") -> None:
        """Connect to the shared server (starting it when none listens), say hello, hand over the pipes."""
        # The install as it is now, not at launch: a relay started before an upgrade would find every new
        # server stale, restart it again and again, and cut every other session each time.
        fingerprint = rendezvous.install_fingerprint()
        hello = dict(self.hello, fingerprint=fingerprint, replay=self.replay)
        sock, _ = self.reach(hello, pending_input)
        self.early = None  # handed over: from now on the server reads the client
        os.ftruncate(self.in_flight, 0)
        try:
            socket.send_fds(sock, [b"F"], [self.stdin, self.stdout, self.in_flight])
        except TimeoutError:
            sock.close()
            raise RelayError(str(rendezvous.Wedged(self.key, SERVER_TIMEOUT))) from None
        sock.settimeout(None)  # from here on the relay only waits for notes, however long the session lasts
        self.sock = sock

    def start_only(self) -> None:
        """Start the shared server if none listens (``nexus server start``)."""
        sock = self._dial() or self._start()
        sock.close()

    def reach(
        self, hello: dict[str, Any], pending_input: bytes = b"", expect: str = "welcome"
    ) -> tuple[socket.socket, dict[str, Any]]:
        """A connection greeted with ``hello`` (started when none listens) and the server's answer, which must be
        ``expect``; a server that is dying (its socket still accepting) or stale is waited out. Each wait on the
        connection still ends after ``SERVER_TIMEOUT``: a caller that then waits as long as the server lives
        sets no timeout. ``pending_input``: what the client sent that the server has not read; while a server
        starts, the relay may answer the client's initialize itself (``greeting``), which the server then replays."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            sock = self._dial() or self._start()
            if self.early:  # read while the server started
                pending_input, self.early = self.early + pending_input, b""
            if self.answered is not None:
                hello = dict(hello, replay=self.replay, answered=self.answered)
            try:
                welcome = _greet(sock, dict(hello, pending_input=pending_input.decode("latin-1")))
            except TimeoutError:  # accepted (the kernel's backlog) but never answered: stopped or stuck
                sock.close()
                raise RelayError(str(rendezvous.Wedged(self.key, SERVER_TIMEOUT))) from None
            except OSError:  # reset: it died between accepting and answering
                welcome = {"nexus": "restart"}
            if welcome.get("nexus") == expect:
                return sock, welcome
            sock.close()
            if welcome.get("nexus") != "restart":
                raise RelayError(f"the shared server refused this client: {welcome.get('reason', welcome)}", 2)
            if time.monotonic() > deadline:
                raise RelayError(f"the shared server kept restarting (log: {self.files['log']})")
            self._wait_gone()  # a stale server (an upgrade, an edited config) exits: then start a new one
            time.sleep(0.05)

    def _dial(self) -> socket.socket | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(SERVER_TIMEOUT)  # every wait on the server ends: a stopped one must not hang the client
        try:
            sock.connect(rendezvous.socket_address(self.files["socket"]))
        except TimeoutError:  # its backlog is full: it accepts nothing
            sock.close()
            raise RelayError(str(rendezvous.Wedged(self.key, SERVER_TIMEOUT))) from None
        except OSError:
            sock.close()
            return None
        uid = peers.other_user(sock)
        if uid is not None:  # never hand the client's pipes to another user's process
            sock.close()
            raise RelayError(f"{self.files['socket']} is served by another user (uid {uid}); refusing it")
        return sock

    def _wait_gone(self, timeout: float = 30.0) -> None:
        """Until the stale server has let go of its lock (it is shutting its plugins down)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and rendezvous.is_held(self.files["lock"]):
            time.sleep(0.05)

    def _start(self) -> socket.socket:
        """Start the shared server, one relay at a time, and wait until it listens."""
        with _flock(self.files["start"], self._meanwhile):
            sock = self._dial()  # another relay may have started it while this one waited
            if sock is not None:
                return sock
            log = self.files["log"]
            private_folder(log.parent)
            offset = log.stat().st_size if log.exists() else 0
            proc = spawn_server(self.key, self.shape, log)
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                sock = self._dial()
                if sock is not None:
                    return sock
                if proc.poll() is not None and not rendezvous.is_held(self.files["lock"]):
                    reason = f"the shared server did not start:\n{_tail(log, offset)}\n(log: {log})"
                    raise RelayError(reason, proc.returncode or 1)
                self._meanwhile(0.02)
            raise RelayError(f"the shared server did not listen within {START_TIMEOUT:.0f} s (log: {log})")

    def _meanwhile(self, wait: float) -> None:
        """Wait up to ``wait`` seconds for a server to start, answering the client's ``initialize`` meanwhile: the
        first line it sends, once, at the first launch (never after a server loss: the session is under way)."""
        done = self.early is None or b"\n" in self.early or len(self.early) > EARLY
        if done or self._closed or self.name is None or self.replay:
            time.sleep(wait)
            return
        try:
            if not select.select([self.stdin], [], [], wait)[0]:
                return
            chunk = os.read(self.stdin, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self._closed = True
            return
        self.early += chunk
        line, newline, rest = self.early.partition(b"\n")
        found = greeting.answer(line, self.name, __version__) if newline else None
        if found is not None:
            reply, self.answered = found
            _write_all(self.stdout, reply)
            self.replay, self.early = [line.decode()], rest

    # -- keeping watch ----------------------------------------------------------------

    def run(self) -> int:
        """Follow the session until it ends; after a server loss, resume it when the client next sends."""
        while True:
            if self._follow():
                return 0  # the client closed its side: the session ended
            self._fail_in_flight()
            waiting = self._client_input()
            if not waiting:
                return 0  # the client left while there was no server
            print("nexus: reconnecting to the shared server", file=sys.stderr)
            try:
                self.connect(waiting)
            except (RelayError, OSError) as exc:
                print(f"nexus: cannot reconnect: {exc}", file=sys.stderr)
                return 1

    def _follow(self) -> bool:
        """Read the server's notes until the connection ends; True when it ended the session itself."""
        assert self.sock is not None
        buffer = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.sock.close()
                self.sock = None
                print("nexus: the shared server went away", file=sys.stderr)
                return False
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                note = json.loads(line)
                if "replay" in note:
                    self.replay.append(note["replay"])
                elif "bye" in note:
                    if note.get("reason"):
                        print(f"nexus: the shared server ended this session: {note['reason']}", file=sys.stderr)
                    self.sock.close()
                    return True

    def _fail_in_flight(self) -> None:
        """The server died: each request it was handling gets an error that says so (it wrote nothing more)."""
        message = json.dumps(
            "the shared Nexus server stopped while handling this request; it is being restarted, "
            "so try again (see `nexus server status`)"
        )
        for request_id in self._requests_in_flight():
            line = f'{{"jsonrpc":"2.0","id":{request_id},"error":{{"code":{IN_FLIGHT_ERROR},"message":{message}}}}}\n'
            _write_all(self.stdout, line.encode())

    def _requests_in_flight(self) -> list[str]:
        fd = self.in_flight
        size = int.from_bytes(os.pread(fd, 8, 0) or b"\0", "little")
        try:
            return [i for i in json.loads(os.pread(fd, size, 8)) if isinstance(i, str)] if size else []
        except ValueError:
            return []

    def _client_input(self) -> bytes:
        """Wait until the client sends again; what it sent (b"" when it closed its side)."""
        select.select([self.stdin], [], [])
        try:
            return os.read(self.stdin, 1 << 16)
        except BlockingIOError:  # the server had made the pipe non-blocking: nothing yet after all
            return self._client_input()


def _scratch_file() -> int:
    """A file only this relay and its server can reach: anonymous memory, else an unlinked temp file."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("nexus-in-flight", os.MFD_CLOEXEC)
    import tempfile  # here: only where memfd_create is missing

    fd, path = tempfile.mkstemp(dir=folders.runtime_dir())
    os.unlink(path)
    return fd


def _greet(sock: socket.socket, hello: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(json.dumps(hello).encode() + b"\n")
    line = _read_line(sock)
    try:
        return json.loads(line) if line else {"nexus": "restart"}
    except ValueError:
        return {"nexus": "refused", "reason": line[:200].decode(errors="replace")}


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:
            select.select([], [fd], [])
        except OSError:
            return  # the client is gone


def spawn_server(key: str, shape: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start the shared server (``python -m nexus_core.serve.shared_main``) detached from this client: its own
    session, output to its log."""
    import subprocess  # here: a relay that finds its server running starts nothing

    if log.exists() and log.stat().st_size > 10 << 20:
        log.replace(log.with_suffix(".log.1"))
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE)
    os.fchmod(fd, FILE)  # a log an older version made 0644: what plugins log may be private
    with os.fdopen(fd, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "nexus_core.serve.shared_main", "--key", key, *shape],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd=folders.state_dir(),
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
def _flock(path: Path, meanwhile: Callable[[float], None]):  # type: ignore[no-untyped-def]
    """The lock at ``path``; while another process holds it, ``meanwhile(seconds)`` waits."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                meanwhile(0.02)
        yield
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
