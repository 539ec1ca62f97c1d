"""The user's private folders for what runs, and where each shared server lives in them.

Standard library and platformdirs only: the relay imports this at every launch.

Every process of one user must find the same places whatever environment its
client launched it with: a terminal agent passes the full environment, while
the MCP SDKs launch servers with only ``HOME``, ``PATH``, ``SHELL``, ``TERM``,
``USER`` and ``LOGNAME``. So the places are derived from the home folder alone,
never from ``XDG_*`` variables: ``config_dir()`` is ``~/.config/nexus``,
``data_dir()`` ``~/.local/share/nexus``, ``state_dir()`` is ``~/.local/state/nexus``
(the platform's own folder on macOS and Windows, where ``XDG_*`` plays no
part), and ``runtime_dir()`` is its ``run`` folder, which holds the shared
servers' sockets and locks and every lock of ``locks``. Each is created with
mode 0700 and refused when it is a symlink or another user owns it, so no one
else can reach a socket, plant a lock or swap the folder for their own later.
Both ends of the socket also check that the other runs as this user
(``peer_uid``). ``state_dir()`` also keeps the shared servers' logs.

One shared server runs per config and per Python install: ``server_key`` names
it, and its socket, lock and description are ``<runtime dir>/<key>.sock``,
``.lock`` and ``.json``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import platformdirs


def state_dir() -> Path:
    return _private(_per_user("state"))


def data_dir() -> Path:
    """Where the plugins keep their stores by default (``server.data_dir``); not created here."""
    return _per_user("data")


def runtime_dir() -> Path:
    return _private(state_dir() / "run")


def config_dir() -> Path:
    """Where the user's ``nexus.toml``, trusted folders, tool folder and HTTP token are; not created here."""
    return _per_user("config")


_LINUX_FOLDERS = {"config": ".config", "data": ".local/share", "state": ".local/state"}


def _per_user(kind: str) -> Path:
    """``~/.config/nexus``, ``~/.local/share/nexus``, ``~/.local/state/nexus``; macOS and Windows: the platform's."""
    if sys.platform in ("darwin", "win32"):
        return Path(getattr(platformdirs, f"user_{kind}_dir")("nexus"))
    return Path.home() / _LINUX_FOLDERS[kind] / "nexus"


def _private(folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()  # not stat(): a symlink planted here could be pointed elsewhere after this check
    if not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{folder} is not a folder (a symlink?); refusing to use it")
    if info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user; refusing to use it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (None where the system does not say)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def tcp_peer_uid(client_port: int, server_port: int) -> int | None:
    """The user id owning the loopback TCP connection from ``client_port`` to ``server_port`` (Linux's
    ``/proc/net/tcp``), -1 when no such connection is listed, None where the system does not say.
    Loopback is every local user's, not only this one's."""
    wanted = f":{client_port:04X}", f":{server_port:04X}"
    found = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        found = -1
        for line in lines:
            fields = line.split()  # sl local_address rem_address st queues timer retransmits uid timeout inode
            if len(fields) < 10 or fields[9] == "0":  # no inode: a closed connection's TIME_WAIT, owned by no one
                continue
            if fields[1].endswith(wanted[0]) and fields[2].endswith(wanted[1]):
                return int(fields[7])
    return found


def other_user(sock: socket.socket) -> int | None:
    """The user id at the other end of ``sock`` if it is not this user (None: this user, or the system cannot say)."""
    uid = peer_uid(sock)
    return None if uid in (None, os.getuid()) else uid


def server_key(config: Path | None, server_args: Sequence[str]) -> str:
    """The shared server for this config file, these server arguments and this Python install.

    The install is the environment (``sys.prefix``), not only the interpreter: every venv made from one
    Python resolves to the same executable, yet each has its own packages (and its own fingerprint).
    """
    identity = [str(config or ""), list(server_args), os.path.realpath(sys.executable), os.path.realpath(sys.prefix)]
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
