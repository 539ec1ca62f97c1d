"""Reading ``nexus.toml``: where it is found, what every key means, and clear errors.

Every key is optional. The file is searched for in this order: ``--config``,
``$NEXUS_CONFIG``, ``./nexus.toml`` when its folder is trusted, then the user
config dir. A ``./nexus.toml`` in a folder the user has not trusted (``nexus
trust PATH``) only narrows the chosen config for the session launched there
(see ``narrowing``).
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nexus_core.config import folders, lookup
from nexus_core.config.design001 import DesignKeyError, from_design_001
from nexus_core.config.lookup import (  # noqa: F401  (re-exported: the config's public names)
    CONFIG_ENV,
    CONFIG_NAME,
    ConfigChoice,
    is_trusted,
    trust,
    trust_path,
    trusted_folders,
    user_config_path,
)
from nexus_core.errors import ConfigError


def default_data_dir() -> Path:
    return folders.data_dir()


class Strict(BaseModel):
    """A config table: unknown keys are errors (they are usually typos)."""

    model_config = ConfigDict(extra="forbid")


class EnvRef(Strict):
    """A secret named by an environment variable, never written inline: ``{ env = "NAME" }``."""

    env: str = Field(min_length=1)

    def resolve(self) -> str | None:
        return os.environ.get(self.env) or None


class HttpConfig(Strict):
    host: str = "127.0.0.1"
    port: int = Field(8766, ge=0, le=65535)
    path: str = "/mcp"
    token: EnvRef | None = None
    allowed_origins: list[str] = Field(default_factory=list, description="Origins allowed besides loopback.")
    enabled: bool = Field(False, description="The shared server serves Streamable HTTP too (same state as stdio).")
    session_idle_timeout: float = Field(1800, gt=0, description="Seconds after which an idle HTTP session ends.")


class AuditConfig(Strict):
    enabled: bool = True
    include_arguments: bool = False


class ServerConfig(Strict):
    name: str = "nexus"
    data_dir: Path = Field(default_factory=default_data_dir)
    roots: list[Path] | None = None
    deny_paths: list[str] = Field(default_factory=list)
    allow_broad_root: bool = Field(
        False, description="Accept roots of / or the home folder (or above it): every file the user has."
    )
    deny_secrets: bool = Field(True, description="Hide the built-in list of secret files (nexus_core/fs/secrets.py).")
    plugin_dirs: list[Path] = Field(default_factory=list)
    tool_dirs: list[Path] = Field(
        default_factory=lambda: [user_config_path().parent / "tools"],
        description="Folders of tool files, loaded at start and watched (docs/tool_files.md).",
    )
    idle_timeout: float = Field(600, gt=0, description="Seconds the shared server waits without a client, then exits.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    tool_search: bool = Field(False, description="tools/list shows only the pinned tools; find_tools finds the rest.")
    tool_search_pinned: list[str] = Field(
        default_factory=lambda: ["find_tools", "call_tool"], description="The tools listed in tool search mode."
    )
    http: HttpConfig = Field(default_factory=HttpConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)


class PluginTable(BaseModel):
    """The keys the host reads from every ``[plugins.NAME]`` table; the rest belong to the plugin."""

    model_config = ConfigDict(extra="allow")

    enabled: bool = True
    required: bool = False
    module: str | None = None
    prefix: str | None = Field(None, pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    categories: list[str] | None = None
    allow_tools: list[str] = Field(default_factory=list)
    deny_tools: list[str] = Field(default_factory=list)
    roots: list[Path] | None = None
    deny_paths: list[str] = Field(default_factory=list)
    data_dir: Path | None = None

    def public_name(self, name: str) -> str:
        """A tool's or prompt's name as clients see it: with ``prefix_`` when the table sets one."""
        return prefixed(self.prefix, name)

    @property
    def plugin_keys(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def prefixed(prefix: str | None, name: str) -> str:
    """``prefix_name``, or ``name`` when there is no prefix: the one rule for prefixed tool and prompt names."""
    return f"{prefix}_{name}" if prefix else name


class Profile(Strict):
    """A named set of plugins and tools a client is served (``nexus serve --profile NAME``).

    ``plugins`` limits the plugins (their tools, resources and prompts); ``tools`` further limits the
    tools, by name. Permissions still apply inside a profile: it never grants anything.
    """

    description: str = ""
    plugins: list[str] | None = None
    tools: list[str] | None = None
    tool_search: bool | None = Field(None, description="Tool search mode for this profile (default: [server]'s).")
    tool_search_pinned: list[str] | None = Field(None, description="Its pinned tools (default: [server]'s).")
    name: str = Field("", exclude=True)

    def refusal(self, plugin: str, kind: str, names: frozenset[str]) -> str | None:
        """Why an item is outside this profile, or None when it is inside."""
        if plugin in SERVED_IN_EVERY_PROFILE:
            return None
        if self.plugins is not None and plugin not in self.plugins:
            return f"'{names_text(names)}' is not in the profile '{self.name}' (plugins: {', '.join(self.plugins)})"
        if self.tools is not None and kind == "tool" and names.isdisjoint(self.tools):
            return f"tool '{names_text(names)}' is not in the profile '{self.name}'"
        return None


# find_tools and call_tool reach only what the profile allows anyway: tool search works beside any profile.
SERVED_IN_EVERY_PROFILE = frozenset({"tool_search"})


def names_text(names: frozenset[str]) -> str:
    return max(names, key=len)


BUILTIN_PROFILES = {
    "coding": Profile(description="Safe hands in your repositories and a memory of what you learned.",
                      plugins=["files", "memory"]),
    "notes": Profile(description="Markdown libraries, the knowledge graph and memory.",
                     plugins=["manual", "graph", "memory"]),
}  # fmt: skip


class NexusConfig(Strict):
    server: ServerConfig = Field(default_factory=ServerConfig)
    plugins: dict[str, PluginTable] = Field(default_factory=dict)
    profiles: dict[str, Profile] = Field(default_factory=dict)
    source: str = Field("defaults", exclude=True)
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    path: Path | None = Field(None, exclude=True)

    @field_validator("plugins", mode="before")
    @classmethod
    def _tables(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            for name, table in value.items():
                if not isinstance(table, Mapping):
                    raise ValueError(f"[plugins.{name}] must be a table")
        return value

    def table(self, plugin: str) -> PluginTable:
        return self.plugins.get(plugin) or PluginTable()

    def profile(self, name: str) -> Profile:
        """The profile of that name (the config's own, else a built-in one); ConfigError when there is none."""
        found = self.profiles.get(name) or BUILTIN_PROFILES.get(name)
        if found is None:
            known = ", ".join(sorted({*BUILTIN_PROFILES, *self.profiles}))
            raise ConfigError(self.source, f"profiles.{name}", f"no such profile (known: {known})")
        return found.model_copy(update={"name": name})

    def resolve_path(self, path: Path) -> Path:
        """A configured path: ``~`` expanded, relative ones against the config file's folder."""
        path = path.expanduser()
        return path if path.is_absolute() else (self.base_dir / path)

    def roots_for(self, plugin: str) -> list[Path] | None:
        """The plugin's own roots, else ``[server] roots``; None: each session's (see ``sessions``)."""
        key = f"plugins.{plugin}.roots" if self.table(plugin).roots else "server.roots"
        roots = [self.resolve_path(r) for r in self.table(plugin).roots or self.server.roots or ()]
        for root in roots if not self.server.allow_broad_root else ():
            if reason := folders.broad_root(root):
                why = f"{root} {reason}; set [server] allow_broad_root = true to serve it"
                raise ConfigError(self.source, key, why)
        return roots or None

    def deny_paths_for(self, plugin: str) -> list[str]:
        return [*self.server.deny_paths, *self.table(plugin).deny_paths]

    def protected_paths(self) -> list[Path]:
        """What no tool may write: the config files Nexus reads, its plugin and tool folders, its data.

        A model allowed to write these could grant itself permissions or load code at the next start.
        """
        files = [user_config_path().parent, self.resolve_path(self.server.data_dir)]
        folders = [*self.server.plugin_dirs, *self.server.tool_dirs]
        return [*files, *([self.path] if self.path else []), *map(self.resolve_path, folders)]

    def data_dir_for(self, plugin: str) -> Path:
        own = self.table(plugin).data_dir
        return self.resolve_path(own) if own else self.resolve_path(self.server.data_dir) / plugin


def find_config(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> ConfigChoice:
    """Where the config comes from when launched in ``cwd`` (see ``locate``); a named file must exist."""
    try:
        return lookup.find_config(explicit, cwd)
    except FileNotFoundError as exc:
        raise ConfigError(str(exc), "", "config file not found") from None


def load_config(explicit: str | os.PathLike[str] | None = None) -> NexusConfig:
    return read_config(find_config(explicit).path)


def read_config(path: Path | None) -> NexusConfig:
    """The config in ``path`` (TOML, or JSON when its name ends in ``.json``), or the defaults when None."""
    if path is None:
        return NexusConfig()
    tables = read_json(path) if path.suffix.lower() == ".json" else read_toml(path)
    return parse_config(tables, source=str(path), base_dir=path.parent, path=path)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON config's tables (design 001's ``--config config.json``): the same keys as ``nexus.toml``, or the
    design's own (``design001``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(str(path), "", f"not valid JSON: {exc}") from None
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", f"expected a JSON object of tables, got {type(data).__name__}")
    try:
        return from_design_001(data, path.parent)
    except DesignKeyError as exc:
        raise ConfigError(str(path), exc.key, str(exc)) from None


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables; a file that cannot be read or parsed is a ConfigError saying which and why."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "", f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from None


def parse_config(
    data: Mapping[str, Any], *, source: str = "<config>", base_dir: Path | None = None, path: Path | None = None
) -> NexusConfig:
    try:
        config = NexusConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(source, exc) from None
    config.source = source
    config.base_dir = base_dir or Path.cwd()
    config.path = path
    for plugin in ("", *config.plugins):  # a root of / or ~ is refused when the config is read, not per plugin
        config.roots_for(plugin)
    return config


def validation_error(
    source: str, exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> ConfigError:
    """Every pydantic error as a ConfigError, each with its dotted key (``server.http.port``), the value given,
    and a "did you mean" when an unknown key is close to one ``model`` (default: the whole config) knows."""
    model = model or (NexusConfig if not prefix else None)
    found = [_problem(err, prefix, model) for err in exc.errors()]
    (key, reason), more = found[0], found[1:]
    return ConfigError(source, key, reason, more)


_SECRET_WORDS = ("token", "secret", "password", "key")


def _problem(err: Any, prefix: str, model: type[BaseModel] | None) -> tuple[str, str]:
    loc = [str(part) for part in err["loc"]]
    key = ".".join(part for part in (prefix, *loc) if part != "")
    got = err["input"]
    if err["type"] == "extra_forbidden":
        reason = "unknown key"
        known = known_keys(model, loc[:-1]) + (list(PluginTable.model_fields) if prefix and len(loc) == 1 else [])
        close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6) if loc else []
        if close:
            reason += f" (did you mean '{close[0]}'?)"
    elif err["type"] == "value_error" and "error" in err.get("ctx", {}):
        reason = str(err["ctx"]["error"])  # a validator's own sentence, without pydantic's "Value error, "
    else:
        reason = err["msg"]
    secret = any(word in key.lower() for word in _SECRET_WORDS)
    if err["type"] != "missing" and not isinstance(got, dict | list) and not secret:
        reason += f" (got {got!r})"  # a whole table is not echoed, nor a secret-like key: it may hold a secret
    return key, reason


def known_keys(model: type[BaseModel] | None, loc: list[str]) -> list[str]:
    """The keys the table at ``loc`` (a path below ``model``) accepts; [] when unknown."""
    current: Any = model
    pending_dict = False
    for part in loc:
        if pending_dict:
            pending_dict = False
            continue  # a dict's own key (a plugin's or profile's name)
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return []
        current, pending_dict = _table_type(current.model_fields[part].annotation)
    if pending_dict or not (isinstance(current, type) and issubclass(current, BaseModel)):
        return []
    return list(current.model_fields)


def _table_type(annotation: Any) -> tuple[Any, bool]:
    """The model a field holds (through ``X | None``) and whether it is a dict of them."""
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, False
        if typing.get_origin(arg) is dict:
            return typing.get_args(arg)[-1], True
    return None, False
