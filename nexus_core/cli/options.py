"""The serve options (``serve.options``) as click options: one definition for the relay and the command line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from nexus_core.serve.options import TRANSPORTS, Flag

_TYPES: dict[str, Any] = {
    "int": int,
    "file": click.Path(dir_okay=False),
    "folder": click.Path(file_okay=False),
    "transport": click.Choice(TRANSPORTS),
}


def flags(*chosen: Flag) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding ``chosen`` to a click command, in this order in its help."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for flag in reversed(chosen):
            fn = click.option(*flag.names, flag.dest, **_settings(flag))(fn)
        return fn

    return decorate


def _settings(flag: Flag) -> dict[str, Any]:
    if flag.kind == "switch":
        return {"is_flag": True, "help": flag.help}
    settings: dict[str, Any] = {"help": flag.help, "metavar": flag.metavar, "multiple": flag.repeated}
    if flag.kind in _TYPES:
        settings["type"] = _TYPES[flag.kind]
    if flag.kind == "transport":
        settings |= {"default": "stdio", "show_default": True}
    return settings
