"""Where each shared server lives: its key, socket, lock, description and log in the user's run folder.

Standard library and platformdirs only: the relay imports this at every launch.

One shared server runs per config and per Python install: ``server_key`` names
it, and its socket, lock and description are ``<runtime dir>/<key>.sock``,
``.lock`` and ``.json`` (``config.folders.runtime_dir``, private to the user;
both ends of the socket check that the other runs as this user,
``access.peers``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexus_core.access.peers import other_user
from nexus_core.config.folders import runtime_dir, state_dir
from nexus_core.serve.limits import SERVER_TIMEOUT

# Variables a plugin reads once, as the server starts (design 002's: the memory store's folder, its embedder, its
# log level). A client launched with other values gets a server of its own: one started without them ignores them.
SERVER_VARIABLES = ("EXOCORTEX_DATA_DIR", "EXOCORTEX_EMBEDDING_MODEL", "EXOCORTEX_LOG_LEVEL")


def server_key(config: Path | None, server_args: Sequence[str]) -> str:
    """The shared server for this config file, these server arguments, this Python install and the values of
    ``SERVER_VARIABLES`` this process was launched with.

    The install is the environment (``sys.prefix``), not only the interpreter: every venv made from one
    Python resolves to the same executable, yet each has its own packages (and its own fingerprint).
    """
    identity: list[object] = [
        str(config or ""),
        list(server_args),
        os.path.realpath(sys.executable),
        os.path.realpath(sys.prefix),
    ]
    if variables := {name: os.environ[name] for name in SERVER_VARIABLES if os.environ.get(name, "").strip()}:
        identity.append(variables)  # only when set: the key of a launch without them stays as it was
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


def install_fingerprint(site: Path | None = None) -> str:
    """Changes when packages are installed, upgraded or removed here: a running server from before is stale.

    Each of those writes or removes a ``*.dist-info`` folder. The site folder's own mtime is no measure:
    it moves when Python first writes ``__pycache__`` there, on a fresh install's first start.
    """
    site = site or Path(sysconfig.get_paths()["purelib"])
    try:
        found = sorted((info.name, info.stat().st_mtime_ns) for info in site.glob("*.dist-info"))
    except OSError:
        return ""
    return hashlib.sha256(repr(found).encode()).hexdigest()[:16]


_SUN_PATH_MAX = 107  # bytes of a Unix socket's path (sockaddr_un.sun_path, less its NUL), on Linux
_folders: dict[Path, int] = {}  # folder -> descriptor kept open, for socket_address


def socket_address(path: Path) -> str:
    """What to bind or connect to for the Unix socket ``path``: the path itself, or, when it is longer than a
    socket address may be (a deep home folder), the same file reached through ``/proc/self/fd``."""
    if len(os.fsencode(path)) <= _SUN_PATH_MAX or not Path("/proc/self/fd").is_dir():
        return str(path)
    folder = path.parent
    if folder not in _folders:
        _folders[folder] = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return f"/proc/self/fd/{_folders[folder]}/{path.name}"


def server_files(key: str) -> dict[str, Path]:
    run = runtime_dir()
    logs = state_dir() / "logs"
    return {
        "socket": run / f"{key}.sock",
        "lock": run / f"{key}.lock",
        "start": run / f"{key}.start",
        "info": run / f"{key}.json",
        "log": logs / f"{key}.log",
    }


def is_held(path: Path) -> bool:
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


def hold_lifetime_lock(key: str) -> int | None:
    """The server's lifetime lock on its key, or None when another server holds it (then it runs)."""
    fd = os.open(server_files(key)["lock"], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


class Wedged(Exception):
    """The server of a key accepts connections but does not answer (stopped, or stuck): what to do about it."""

    def __init__(self, key: str, timeout: float) -> None:
        self.pid = lock_holder(key)
        who = f"pid {self.pid}" if self.pid else "its pid is unknown"
        kill = f"`kill {self.pid}` or " if self.pid else ""
        super().__init__(
            f"the shared server ({who}) is not answering within {timeout:g} s; {kill}`nexus server stop --force`"
        )


def lock_holder(key: str) -> int | None:
    """The pid the server of ``key`` wrote into its lifetime lock file, if one holds it."""
    path = server_files(key)["lock"]
    try:
        pid = int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and is_held(path) else None


def ask(key: str, request: str, timeout: float = SERVER_TIMEOUT) -> dict[str, Any] | None:
    """Send a control line (``status``, ``stop``) to the server of ``key``; None when none listens; ``Wedged``
    when it does not answer within ``timeout``."""
    try:
        return _ask(key, request, timeout)
    except TimeoutError:
        raise Wedged(key, timeout) from None


def _ask(key: str, request: str, timeout: float) -> dict[str, Any] | None:
    path = server_files(key)["socket"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_address(path))
        except OSError:
            return None
        uid = other_user(sock)
        if uid is not None:  # its answer (a console link to open) would be another user's
            raise PermissionError(f"{path} is served by another user (uid {uid}); refusing it")
        sock.sendall(json.dumps({"nexus": request}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    return json.loads(data) if data.strip() else None
