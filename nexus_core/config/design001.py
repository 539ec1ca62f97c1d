"""Design 001's own config file (``nexus-mcp-server --config config.json``): its ``ServerConfig`` keys, read as
Nexus's tables, so a config written for the design works as written.

``working_directory`` and ``allowed_paths`` become the roots, ``blocked_paths`` ``deny_paths``, and
``enabled_categories`` and ``max_file_size`` the files plugin's grants and limit. Relative paths are taken from
the working directory, as the design resolves them. A Nexus table in the same file wins over a design key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DESIGN_KEYS = ("working_directory", "allowed_paths", "blocked_paths", "enabled_categories", "max_file_size")


class DesignKeyError(ValueError):
    """A design key of the wrong shape: ``key`` names it."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key


def from_design_001(data: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """``data`` with design 001's keys moved into the tables Nexus reads; unchanged when it has none."""
    if not any(key in data for key in DESIGN_KEYS):
        return data
    tables = {key: value for key, value in data.items() if key not in DESIGN_KEYS}
    work = _path(data.get("working_directory", "."), base_dir, "working_directory")
    roots = [_path(p, work, "allowed_paths") for p in _strings(data, "allowed_paths")]
    if "working_directory" in data or roots:
        roots = roots or [work]
    server: dict[str, Any] = {}
    if roots:
        server["roots"] = [str(r) for r in roots]
    blocked = [_path(p, work, "blocked_paths") for p in _strings(data, "blocked_paths")]
    if patterns := [pattern for p in blocked if (pattern := _pattern(p, roots or [work]))]:
        server["deny_paths"] = patterns
    files: dict[str, Any] = {}
    if "enabled_categories" in data:
        files["categories"] = _strings(data, "enabled_categories")
    if "max_file_size" in data:
        files["max_file_size"] = data["max_file_size"]
    tables["server"] = server | dict(tables.get("server") or {})
    if files:
        plugins = dict(tables.get("plugins") or {})
        plugins["files"] = files | dict(plugins.get("files") or {})
        tables["plugins"] = plugins
    return tables


def _strings(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DesignKeyError(key, "expected a list of strings")
    return value


def _path(value: Any, base: Path, key: str) -> Path:
    if not isinstance(value, str) or not value:
        raise DesignKeyError(key, "expected a path")
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _pattern(path: Path, roots: list[Path]) -> str | None:
    """A ``deny_paths`` pattern for ``path``, relative to the root that holds it (deny_paths match at any depth,
    so it hides that name under every root: stricter, never looser); None outside every root (out anyway)."""
    for root in roots:
        if path.is_relative_to(root) and path != root:
            return path.relative_to(root).as_posix()
    return None
