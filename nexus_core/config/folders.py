"""The user's private folders: config, data, state and the run folder.

Standard library (and platformdirs on macOS and Windows) only: the relay imports this at every launch.

Every process of one user must find the same places whatever environment its
client launched it with: a terminal agent passes the full environment, while
the MCP SDKs launch servers with only ``HOME``, ``PATH``, ``SHELL``, ``TERM``,
``USER`` and ``LOGNAME``. So the places are derived from the home folder alone,
never from ``XDG_*`` variables: ``config_dir()`` is ``~/.config/nexus``,
``data_dir()`` ``~/.local/share/nexus``, ``state_dir()`` is ``~/.local/state/nexus``
(the platform's own folder on macOS and Windows, where ``XDG_*`` plays no
part), and ``runtime_dir()`` is its ``run`` folder, which holds the shared
servers' sockets and locks and every lock of ``fs.locks``. Each is created with
mode 0700 and refused when it is a symlink or another user owns it, so no one
else can reach a socket, plant a lock or swap the folder for their own later.
``state_dir()`` also keeps the shared servers' logs.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path


def broad_root(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is too broad a root (``/``, or the home folder or a folder holding it), or None.

    Such a root hands a client every file the user has (keys, browser profiles, other projects): it must be
    asked for (``--allow-broad-root``, ``[server] allow_broad_root``), never typed by accident.
    """
    real = Path(os.path.realpath(Path(path).expanduser()))
    if real == Path(real.anchor):
        return "is the whole file system"
    try:
        home = Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError):  # no HOME and no password entry: nothing to compare with
        return None
    return "holds the whole home folder" if home.is_relative_to(real) else None


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
        import platformdirs  # here: on Linux the relay would import it for nothing (20 ms at every launch)

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
