"""Permissions: categories a plugin declares, what the TOML grants, and the path policy.

A tool is callable when, in this order, its plugin is enabled, its category is
granted, it passes ``allow_tools`` (when that list is not empty) and it is not
in ``deny_tools``. Paths are checked by one ``PathPolicy`` per plugin: inside a
root after resolving ``..`` and symlinks, and matching no ``deny_paths`` pattern.
Every refusal carries its reason.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from nexus_core.errors import PermissionDenied


@dataclass(frozen=True, kw_only=True)
class Category:
    """A permission category a plugin declares, e.g. ``read`` or ``write``.

    ``default`` says whether it is granted when the TOML does not list the
    plugin's ``categories``. Keep anything that writes or executes off by default.
    """

    name: str
    description: str
    default: bool = False


@dataclass(frozen=True)
class Grants:
    """What the TOML grants one plugin."""

    plugin: str
    categories: frozenset[str]
    allow_tools: frozenset[str] = frozenset()
    deny_tools: frozenset[str] = frozenset()

    def refusal(self, names: Iterable[str], category: str) -> str | None:
        """Why a tool (known by any of ``names``) may not run, or None when it may."""
        names = list(names)
        table = f"[plugins.{self.plugin}]"
        if category not in self.categories:
            return (
                f"permission denied: tool '{names[-1]}' needs the '{category}' category of plugin "
                f"'{self.plugin}', which is not granted; add \"{category}\" to categories in {table}"
            )
        if self.allow_tools and self.allow_tools.isdisjoint(names):
            return f"permission denied: tool '{names[-1]}' is not in allow_tools of {table}"
        if not self.deny_tools.isdisjoint(names):
            return f"permission denied: tool '{names[-1]}' is listed in deny_tools of {table}"
        return None


class PathPolicy:
    """The one place a plugin turns a user-supplied path into a real path it may touch.

    Relative paths resolve against the first root. The real path (``..`` and
    symlinks resolved) must lie inside a root, and neither it nor the path as
    written may match a ``deny_paths`` pattern (gitignore syntax). Writes are
    also refused inside git directories (``.git``, bare and separate ones: a
    write there can plant a hook or a filter that runs programs) and to
    ``protected`` paths: Nexus's own config, plugin folders and data.
    """

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]],
        deny_paths: Sequence[str] = (),
        protected: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        if not roots:
            raise ValueError("a path policy needs at least one root")
        self.roots = tuple(Path(os.path.realpath(Path(r).expanduser())) for r in roots)
        self.deny_patterns = tuple(deny_paths)
        self.protected = tuple(Path(os.path.realpath(Path(p).expanduser())) for p in protected)
        self._deny = pathspec.GitIgnoreSpec.from_lines(_fold(p) for p in deny_paths)

    def __repr__(self) -> str:
        return f"PathPolicy(roots={[str(r) for r in self.roots]}, deny_paths={list(self.deny_patterns)})"

    def resolve(self, path: str | os.PathLike[str], *, write: bool = False) -> Path:
        """The real absolute path for ``path``, or ``PermissionDenied`` saying why not."""
        raw = os.fspath(path)
        if not raw.strip():
            raise PermissionDenied("permission denied: the path is empty")
        if "\x00" in raw:
            raise PermissionDenied("permission denied: the path contains a NUL byte")
        given = Path(raw).expanduser()
        if not given.is_absolute():
            given = self.roots[0] / given
        lexical = Path(os.path.normpath(given))
        real = Path(os.path.realpath(given))
        root = self.root_of(real)
        if root is None:
            if self.root_of(lexical) is not None:
                raise PermissionDenied(
                    f"permission denied: '{raw}' resolves through a symlink to '{real}', outside the allowed roots"
                )
            raise PermissionDenied(f"permission denied: '{raw}' is outside the allowed roots ({self._roots_text()})")
        for candidate in (lexical, real):
            if reason := self.denied(candidate):
                raise PermissionDenied(f"permission denied: '{raw}' {reason}")
        if write:
            self._check_writable(raw, real, root)
        return real

    def _check_writable(self, raw: str, real: Path, root: Path) -> None:
        for guarded in self.protected:
            if real == guarded or real.is_relative_to(guarded):
                raise PermissionDenied(
                    f"permission denied: '{raw}' is Nexus's own configuration or data ({guarded}); "
                    "tools may not change it"
                )
        for folder in (real, *real.parents):
            if folder != root and not folder.is_relative_to(root):
                break
            if _is_git_dir(folder):
                raise PermissionDenied(
                    f"permission denied: '{raw}' is inside the git directory '{folder}'; writes there are refused"
                )

    def allows(self, path: str | os.PathLike[str]) -> bool:
        """Whether an already-real path (say, found by walking a root) is visible."""
        real = Path(path)
        return self.root_of(real) is not None and self.denied(real) is None

    def denied(self, path: Path) -> str | None:
        """The deny pattern a path inside a root matches, as a reason; None when it matches none."""
        root = self.root_of(path)
        if root is None or not self.deny_patterns:
            return None
        rel = _fold(path.relative_to(root).as_posix())
        if rel == ".":
            return None
        result = self._deny.check_file(rel + "/" if path.is_dir() else rel)
        if not result.include:
            return None
        pattern = self.deny_patterns[result.index] if result.index is not None else "?"
        return f"matches the deny_paths pattern '{pattern}'"

    def root_of(self, path: Path) -> Path | None:
        """The root containing ``path`` (which must be absolute and normalised), or None."""
        return next((r for r in self.roots if path == r or path.is_relative_to(r)), None)

    def display(self, path: Path) -> str:
        """``path`` relative to its root when there is one root, else absolute; for output."""
        root = self.root_of(path)
        if root is None or len(self.roots) > 1:
            return str(path)
        rel = path.relative_to(root).as_posix()
        return rel

    def _roots_text(self) -> str:
        return ", ".join(str(r) for r in self.roots)


_CASE_INSENSITIVE = sys.platform in ("darwin", "win32")  # their usual file systems ignore case


def _fold(text: str) -> str:
    """Patterns and paths compared as the file system compares names."""
    return text.casefold() if _CASE_INSENSITIVE else text


def _is_git_dir(folder: Path) -> bool:
    """A ``.git`` folder by name (in any case), or any folder laid out as one (bare or separate git dirs)."""
    if folder.name.casefold() == ".git":
        return True
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
