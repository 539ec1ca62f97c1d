"""Where Nexus's config file is, found with the standard library only (the relay starts with this).

The file is searched for in this order: ``--config``, ``$NEXUS_CONFIG``,
``./nexus.toml`` when the user trusts its folder (``nexus trust PATH``), then
the user config dir. A ``./nexus.toml`` in a folder the user has not trusted
is not the config: it only narrows the chosen one for the session launched
there (see ``narrowing``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from nexus_core.config import folders

CONFIG_ENV = "NEXUS_CONFIG"
CONFIG_NAME = "nexus.toml"


def user_config_path() -> Path:
    return folders.config_dir() / CONFIG_NAME


def trust_path() -> Path:
    """The folders whose own ``nexus.toml`` the user trusts, kept beside the user config."""
    return user_config_path().parent / "trusted.toml"


def trusted_folders() -> list[Path]:
    try:
        text = trust_path().read_text(encoding="utf-8")
    except OSError:
        return []
    import tomllib  # here: a relay with no trusted folders does not parse TOML (14 ms at every launch)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    return [Path(f) for f in data.get("folders", []) if isinstance(f, str)]


def is_trusted(folder: Path) -> bool:
    return Path(os.path.realpath(folder)) in trusted_folders()


def trust(folder: Path) -> Path:
    """Record ``folder`` as trusted: its own ``nexus.toml`` is then a full config. Returns the real folder."""
    from nexus_core.fs.atomic import atomic_write
    from nexus_core.fs.modes import private_folder

    real = Path(os.path.realpath(folder))
    folders = sorted({*map(str, trusted_folders()), str(real)})
    lines = "".join(f"    {json.dumps(f)},\n" for f in folders)
    target = trust_path()
    private_folder(target.parent)
    text = f"# Folders whose own nexus.toml Nexus trusts (nexus trust PATH).\nfolders = [\n{lines}]\n"
    atomic_write(target, text, new_mode=0o600)
    return real


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; a folder this user may not search (a client launched in another user's
    folder) holds none for it, where ``Path.is_file`` would raise."""
    try:
        return path.is_file()
    except OSError:
        return False


class ConfigChoice(NamedTuple):  # not a dataclass: importing dataclasses costs the relay 13 ms at every launch
    """The config file to read (None: defaults), and an untrusted ``./nexus.toml`` that narrows it."""

    path: Path | None
    narrowing: Path | None = None


def find_config(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> ConfigChoice:
    """Where the config comes from when launched in ``cwd``. A named file that is missing: FileNotFoundError."""
    for candidate in (explicit, os.environ.get(CONFIG_ENV)):
        if candidate:
            path = Path(candidate).expanduser()
            if not path.is_file():
                raise FileNotFoundError(str(path))
            return ConfigChoice(path.resolve())
    local = (cwd or Path.cwd()) / CONFIG_NAME
    user = user_config_path()
    base = user.resolve() if _is_file(user) else None
    if _is_file(local) and local.resolve() != base:
        if is_trusted(local.parent):
            return ConfigChoice(local.resolve())
        return ConfigChoice(base, narrowing=local.resolve())
    return ConfigChoice(base)
