"""The options of ``nexus serve`` and of the commands that name a shared server, defined once.

Standard library and platformdirs only: the relay parses them with ``argparse``
at every launch, the shared server parses its own with the same definitions,
and the command line turns them into click options (``cli.options``).

Some of them choose the shared server itself (``SHARED_SERVER_FLAGS``: its config,
overrides, libraries and name); they are part of its identity (``server_args``,
hashed into its key by ``rendezvous.server_key``) and the arguments it is
started with. The others belong to one client's session (``--root``,
``--profile``, ``--enable``) or to how this command serves (``--transport``,
``--http``, ``--standalone``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from nexus_core.config.folders import broad_root
from nexus_core.config.lookup import CONFIG_NAME, user_config_path

# NamedTuples, not dataclasses: importing dataclasses (and inspect with it) costs the relay 13 ms at every launch.


class Flag(NamedTuple):
    """One command-line option: how it is spelled, which field of ``ServeOptions`` it sets, its help."""

    names: tuple[str, ...]
    dest: str
    help: str | None = None
    metavar: str | None = None
    kind: str = "text"  # text, int, file (the config), folder, switch (no value) or transport
    repeated: bool = False


CONFIG = Flag(
    ("--config",),
    "config",
    f"Config file (default: $NEXUS_CONFIG, ./{CONFIG_NAME}, then {user_config_path()}).",
    kind="file",
)
VERBOSE = Flag(("-v", "--verbose"), "verbose", "Log at debug level (to stderr).", kind="switch")
SET = Flag(
    ("--set",),
    "overrides",
    "Override a config key, e.g. --set 'plugins.files.categories=[\"read\"]' (value in TOML syntax).",
    metavar="KEY=VALUE",
    repeated=True,
)
TRANSPORT = Flag(("--transport",), "transport", kind="transport")
HTTP = Flag(("--http",), "http", "Serve Streamable HTTP: --transport http, as design 001 spells it.", kind="switch")
BIND = Flag(("--host",), "bind", "HTTP address (default from [server.http], else 127.0.0.1).")
PORT = Flag(("--port",), "port", "HTTP port (default from [server.http], else 8766).", kind="int")
NAME = Flag(("--name",), "name", "The server's name as clients see it.")
LIBRARIES = Flag(
    ("--libraries",),
    "libraries",
    "Markdown libraries for the manual plugin, e.g. 'work:~/notes/work,personal:~/notes/me'.",
    metavar="NAME:PATH,...",
)
ROOT = Flag(
    ("--root",),
    "roots",
    "A folder this client may work in when the config names no roots (repeatable).",
    kind="folder",
    repeated=True,
)
ALLOW_BROAD_ROOT = Flag(
    ("--allow-broad-root",),
    "allow_broad_root",
    "Accept a --root of / or of the home folder (or above it): every file the user has.",
    kind="switch",
)
PROFILE = Flag(
    ("--profile",), "profile", "Serve only this profile's plugins and tools ([profiles.NAME] in the config)."
)
ENABLE = Flag(
    ("--enable",),
    "enable",
    "The categories this client may use, e.g. read,search,vcs (PLUGIN.CATEGORY: one plugin's): each is granted "
    "in every plugin that declares it, every other category is withheld.",
    metavar="CATEGORY,...",
)
STANDALONE = Flag(
    ("--standalone",),
    "standalone",
    "Serve in this process instead of through the shared server (its stores must not be in use).",
    kind="switch",
)

CONFIG_FLAGS = (CONFIG, VERBOSE, SET)  # every command that reads the config
SERVE_FLAGS = (
    *CONFIG_FLAGS, TRANSPORT, HTTP, BIND, PORT, NAME, LIBRARIES, ROOT, ALLOW_BROAD_ROOT, PROFILE, ENABLE, STANDALONE
)  # fmt: skip
# what the relay accepts
RELAY_FLAGS = (CONFIG, SET, LIBRARIES, NAME, ROOT, ALLOW_BROAD_ROOT, PROFILE, ENABLE, VERBOSE, TRANSPORT)
SHARED_SERVER_FLAGS = (CONFIG, SET, LIBRARIES, NAME)  # which shared server: its identity
TRANSPORTS = ("stdio", "http", "sse")  # sse: Streamable HTTP and, beside it, the legacy HTTP+SSE transport


class ServeOptions(NamedTuple):
    """What ``nexus serve`` was asked for; the relay, the shared server and the command line all read this."""

    config: str | None = None
    overrides: tuple[str, ...] = ()
    verbose: bool = False
    transport: str = "stdio"
    bind: str | None = None
    port: int | None = None
    name: str | None = None
    libraries: str | None = None
    roots: tuple[str, ...] = ()
    allow_broad_root: bool = False
    profile: str | None = None
    enable: str | None = None
    standalone: bool = False

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> ServeOptions:
        """The options from parsed values (click's keyword arguments, argparse's namespace), others ignored."""
        known = set(cls._fields)
        chosen = {k: v for k, v in values.items() if k in known and v is not None}
        if values.get("http") and chosen.get("transport", "stdio") == "stdio":
            chosen["transport"] = "http"
        return cls(**{k: tuple(v) if isinstance(v, list | tuple) else v for k, v in chosen.items()})

    @classmethod
    def parse(cls, argv: Sequence[str], flags: Iterable[Flag] = RELAY_FLAGS, prog: str = "nexus serve") -> ServeOptions:
        return cls.of(vars(parser(flags, prog).parse_args(argv)))

    def argv(self, flags: Iterable[Flag] = RELAY_FLAGS) -> list[str]:
        """These options as the command line of ``nexus serve`` (to launch a relay as a client does)."""
        out: list[str] = []
        for flag in flags:
            value = getattr(self, flag.dest)
            if flag.kind == "switch":
                out += [flag.names[-1]] if value else []
            elif flag.repeated:
                out += [a for item in value for a in (flag.names[-1], str(item))]
            elif value is not None and not (flag.kind == "transport" and value == "stdio"):
                out += [flag.names[-1], str(value)]
        return out

    def check_roots(self) -> None:
        """``ValueError`` (one line naming the flag) for a ``--root`` of ``/`` or the home folder, unless allowed."""
        if self.allow_broad_root:
            return
        for root in self.roots:
            if reason := broad_root(root):
                raise ValueError(f"--root {root} {reason}; pass --allow-broad-root to serve it anyway")

    def server_args(self, config: Path | None) -> list[str]:
        """The arguments that shape the server itself (so they are part of its identity), not one session.

        Raises ``ValueError`` for ``--libraries`` that are not ``NAME:PATH`` pairs.
        """
        out = ["--config", str(config)] if config else []
        for item in self.overrides:
            out += ["--set", item]
        if self.libraries:
            out += ["--libraries", absolute_libraries(self.libraries)]
        if self.name:
            out += ["--name", self.name]
        return out


def parser(flags: Iterable[Flag], prog: str) -> argparse.ArgumentParser:
    """An ``argparse`` parser for ``flags`` (no ``--help``: the full command line answers that)."""
    p = argparse.ArgumentParser(prog=prog, add_help=False)
    for flag in flags:
        if flag.kind == "switch":
            p.add_argument(*flag.names, action="store_true", dest=flag.dest)
        elif flag.repeated:
            p.add_argument(*flag.names, action="append", default=[], dest=flag.dest)
        elif flag.kind == "int":
            p.add_argument(*flag.names, type=int, dest=flag.dest)
        elif flag.kind == "transport":
            p.add_argument(*flag.names, default="stdio", dest=flag.dest)
        else:
            p.add_argument(*flag.names, dest=flag.dest)
    return p


def absolute_libraries(spec: str) -> str:
    """``--libraries`` paths made absolute here: the server does not run in this folder."""
    parts = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, path = item.partition(":")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"--libraries expects NAME:PATH pairs separated by commas, got '{item}'")
        parts.append(f"{name.strip()}:{Path(path.strip()).expanduser().absolute()}")
    return ",".join(parts)
