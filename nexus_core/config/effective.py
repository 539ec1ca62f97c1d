"""The effective config: the file, then what the command line sets over it (``--set``, ``--libraries``)."""

from __future__ import annotations

import json
import logging
import sys
import tomllib
from pathlib import Path
from typing import Any

from nexus_core.access.sessions import process_session
from nexus_core.config.model import NexusConfig, find_config, parse_config, read_config
from nexus_core.config.narrowing import read_narrowing
from nexus_core.errors import NexusError


def load(config_path: str | None, overrides: tuple[str, ...] = (), verbose: bool = False) -> NexusConfig:
    """The effective config: the file, then ``--set`` overrides; logging set up from it.

    An untrusted ``./nexus.toml`` narrows what this process's session may use (see ``narrowing``).
    """
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    choice = find_config(config_path)
    config = overlay(read_config(choice.path), [_override(item) for item in overrides], "--set")
    level = "DEBUG" if verbose else config.server.log_level
    logging.getLogger("nexus").setLevel(level)
    # Other libraries' chatter (the quantizer's logging.info on the root logger) shows only with --verbose.
    logging.getLogger().setLevel("DEBUG" if verbose else max(logging.WARNING, logging.getLevelName(level)))
    if choice.narrowing is not None:
        process_session().narrowing = read_narrowing(choice.narrowing)
    return config


def _override(item: str) -> dict[str, Any]:
    """One ``--set KEY=VALUE`` read as the TOML line ``KEY = VALUE``; a bare word is taken as a string."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise NexusError(f"--set expects KEY=VALUE, got '{item}'")
    for value in (raw, json.dumps(raw)):
        try:
            return tomllib.loads(f"{key} = {value}")
        except tomllib.TOMLDecodeError:
            continue
    raise NexusError(f"--set: '{key}' is not a valid TOML key")


def overlay(config: NexusConfig, tables: list[dict[str, Any]], flag: str) -> NexusConfig:
    """``config`` with command-line tables merged over it, validated again like the file."""
    if not tables:
        return config
    data = config.model_dump(mode="python", exclude_unset=True)
    for table in tables:
        _merge(data, table)
    return parse_config(data, source=f"{config.source} with {flag}", base_dir=config.base_dir, path=config.path)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def with_libraries(config: NexusConfig, libraries: str | None) -> NexusConfig:
    """``--libraries work:/a,me:/b``: the manual plugin's libraries (each folder is its own root)."""
    pairs = [part.strip() for part in (libraries or "").split(",") if part.strip()]
    if not pairs:
        return config
    found: dict[str, str] = {}
    for item in pairs:
        name, sep, path = item.partition(":")
        if not sep or not name.strip() or not path.strip():
            raise NexusError(f"--libraries expects NAME:PATH pairs separated by commas, got '{item}'")
        folder = str(Path(path.strip()).expanduser().absolute())  # typed in a shell: relative to its cwd
        found[name.strip()] = folder
    return overlay(config, [{"plugins": {"manual": {"libraries": found}}}], "--libraries")
