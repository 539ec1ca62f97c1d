"""The user's private folders for what runs, and where each shared server lives in them.

Standard library and platformdirs only: the relay imports this at every launch.

``runtime_dir()`` is ``$XDG_RUNTIME_DIR/nexus`` when the system provides one
(a per-user tmpfs, gone at logout), else ``<user state dir>/run``. It is created
with mode 0700 and refused when another user owns it, so no one else can reach
a socket or plant a lock. ``state_dir()`` keeps what should survive a reboot
(the shared servers' logs).

One shared server runs per config and per Python install: ``server_key`` names
it, and its socket, lock and description are ``<runtime dir>/<key>.sock``,
``.lock`` and ``.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import platformdirs


def state_dir() -> Path:
    return _private(Path(platformdirs.user_state_dir("nexus")))


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        return _private(Path(base) / "nexus")
    return _private(state_dir() / "run")


def _private(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user; refusing to use it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def server_key(config: Path | None, server_args: Sequence[str]) -> str:
    """The shared server for this config file, these server arguments and this Python install."""
    identity = [str(config or ""), list(server_args), os.path.realpath(sys.executable)]
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
