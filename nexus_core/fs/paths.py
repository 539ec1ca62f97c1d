"""The path policy: which real paths a plugin may touch.

Paths are checked by one ``PathPolicy`` per plugin: inside a root after
resolving ``..`` and symlinks, and matching no ``deny_paths`` pattern (nor the
built-in secrets, ``fs.secrets``). Every refusal carries its reason.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from nexus_core.access.denied import PermissionDenied
from nexus_core.access.sessions import NO_ROOTS, current
from nexus_core.fs.nonblocking import Blocking, on_loop, plain_local
from nexus_core.fs.safe_open import SafeOpening
from nexus_core.fs.secrets import (
    GIT_BESIDE_HEAD,
    GIT_HEAD,
    RUNS_CODE,
    SECRETS,
    SYSTEM,
    SecretMatcher,
    anywhere,
)


class PathPolicy(SafeOpening):
    """The one place a plugin turns a user-supplied path into a real path it may touch.

    Roots are the configured ones, else the calling session's (see ``sessions``),
    plus folders the plugin owns by config (``include``, e.g. a library). Relative
    paths resolve against the first root. The real path (``..`` and symlinks
    resolved) must lie inside a root, and neither it nor the path as written may
    match a deny pattern: the built-in secret list (``sensitive.SECRETS``), the
    config's ``deny_paths`` and the session's own. ``/proc``, ``/sys`` and
    ``/dev`` are never served. Writes are also refused inside git directories
    (``.git``, bare and separate ones: a write there can plant a hook or a filter
    that runs programs) and virtualenvs, to files that run code later
    (``secrets.RUNS_CODE``, names checked as files and as folders), to any entry
    named ``HEAD`` and to git's ``objects``/``refs``/``commondir`` beside one (no
    git directory can be assembled: ``secrets.GIT_HEAD``), and to ``protected`` paths: Nexus's own config,
    plugin folders, data and installed code.

    ``open_read``, ``open_folder`` and ``write_file`` (``safe_open``) resolve and
    then open race-free: use them rather than opening a resolved path.
    """

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]] | None,
        deny_paths: Sequence[str] = (),
        protected: Sequence[str | os.PathLike[str]] = (),
        *,
        deny_secrets: bool = True,
        plugin: str = "",
    ) -> None:
        self.plugin = plugin
        self._fixed = tuple(_real(r) for r in roots) if roots else None
        self._own: tuple[Path, ...] = ()
        self._secrets = deny_secrets
        self._patterns = tuple(deny_paths)
        self.protected = tuple(_real(p) for p in protected)
        self._static = _View.of(self._fixed or (), self._patterns, deny_secrets) if self._fixed is not None else None

    def __repr__(self) -> str:
        roots = [str(r) for r in self._fixed] if self._fixed is not None else "per session"
        return f"PathPolicy(roots={roots}, deny_paths={list(self._patterns)}, deny_secrets={self._secrets})"

    def include(self, folder: str | os.PathLike[str]) -> None:
        """Make ``folder`` one of this plugin's own roots in every session (a folder its config names)."""
        real = _real(folder)
        if real not in self._own:
            self._own += (real,)

    @property
    def configured(self) -> bool:
        """Whether the roots come from the config (not from the session)."""
        return self._fixed is not None

    @property
    def roots(self) -> tuple[Path, ...]:
        """The roots for the current session; ``PermissionDenied`` saying how to give some when there are none."""
        roots = self._view().roots
        if not roots:
            raise PermissionDenied(f"permission denied: {NO_ROOTS}")
        return roots

    @property
    def deny_patterns(self) -> tuple[str, ...]:
        """The patterns hidden from this plugin: the built-in secret list (unless switched off), then deny_paths."""
        return (*(SECRETS if self._secrets else ()), *self._view().patterns)

    def _view(self) -> _View:
        session = current()
        if self._static is not None and session.narrowing is None and not self._own:
            return self._static
        key = f"paths:{id(self)}"
        view = session.cache.get(key)
        if view is None:
            if on_loop():  # the session's roots are resolved below: not on the event loop
                raise Blocking("the session's roots are not resolved yet")
            roots = self._fixed if self._fixed is not None else tuple(_real(r) for r in session.roots())
            patterns = self._patterns
            if session.narrowing is not None:
                roots = session.narrowing.roots_within(self.plugin, roots)
                patterns = (*patterns, *session.narrowing.deny_paths(self.plugin))
            view = session.cache[key] = _View.of((*roots, *self._own), patterns, self._secrets)
        return view

    def resolve(self, path: str | os.PathLike[str], *, write: bool = False) -> Path:
        """The real absolute path for ``path``, or ``PermissionDenied`` saying why not."""
        raw = os.fspath(path)
        if not raw.strip():
            raise PermissionDenied("permission denied: the path is empty")
        if "\x00" in raw:
            raise PermissionDenied("permission denied: the path contains a NUL byte")
        roots = self.roots
        if on_loop():
            lexical = real = _plain(raw, roots)
        else:
            given = Path(raw).expanduser()
            if not given.is_absolute():
                given = roots[0] / given
            lexical = Path(os.path.normpath(given))
            real = Path(os.path.realpath(given))
        root = self.root_of(real)
        if root is None:
            if self.root_of(lexical) is not None:
                raise PermissionDenied(
                    f"permission denied: '{raw}' resolves through a symlink to '{real}', outside the allowed roots"
                )
            raise PermissionDenied(f"permission denied: '{raw}' is outside the allowed roots ({_text(roots)})")
        for candidate in (lexical, real) if lexical != real else (real,):
            if reason := self.denied(candidate):
                raise PermissionDenied(f"permission denied: '{raw}' {reason}")
        if write:
            self._check_writable(raw, real, root)
        return real

    def _check_writable(self, raw: str, real: Path, root: Path) -> None:
        for guarded in self.protected:
            if real == guarded or real.is_relative_to(guarded):
                raise PermissionDenied(
                    f"permission denied: '{raw}' is Nexus's own configuration, data or code ({guarded}); "
                    "tools may not change it"
                )
        rel = real.relative_to(root).as_posix()
        if reason := _runs_code(rel) or _plants_git_dir(real, root):
            raise PermissionDenied(f"permission denied: '{raw}' {reason}; writes there are refused")
        for folder in (real, *real.parents):
            if folder != root and not folder.is_relative_to(root):
                break
            if _is_git_dir(folder):
                raise PermissionDenied(
                    f"permission denied: '{raw}' is inside the git directory '{folder}'; writes there are refused"
                )
            if (folder / "pyvenv.cfg").is_file():
                raise PermissionDenied(
                    f"permission denied: '{raw}' is inside the virtualenv '{folder}'; writes there are refused"
                )

    def check_entry(self, entry: Path, shown: str) -> None:
        """``resolve(write=True)``'s checks for a directory entry itself (a path not made yet, a symlink)."""
        root = self.root_of(entry)
        if root is None:
            raise PermissionDenied(f"permission denied: '{shown}' is outside the allowed roots")
        self._check_writable(shown, entry, root)

    def check_moved_tree(self, folder: Path, destination: Path, shown: str) -> None:
        """A folder moved as a whole writes every entry inside it anew: none may land where a write may not."""
        root = self.root_of(destination)
        if root is None:
            raise PermissionDenied(f"permission denied: '{shown}' is outside the allowed roots")
        for here, dirs, files in os.walk(folder):
            for name in (*dirs, *files):
                landed = destination / Path(here, name).relative_to(folder)
                rel = landed.relative_to(root).as_posix()
                if reason := _runs_code(rel) or _plants_git_dir(landed, root):
                    inner = Path(here, name).relative_to(folder).as_posix()
                    raise PermissionDenied(f"permission denied: '{shown}' holds '{inner}', which {reason}")

    def allows(self, path: str | os.PathLike[str]) -> bool:
        """Whether an already-real path (say, found by walking a root) is visible."""
        real = Path(path)
        return self.root_of(real) is not None and self.denied(real) is None

    def visible(self, path: str, is_dir: bool) -> bool:
        """``allows`` for a walk that already knows what each path is: no stat, no ``Path`` (thousands a second)."""
        view = self._view()
        if view.system:  # a root holds /proc, /sys or /dev: "/", from where a walk joins "//proc"
            plain = "/" + path.lstrip("/")
            if any(plain == s or plain.startswith(s + "/") for s in view.system):
                return False
        root = view.root_text(path)
        if root is None:
            return False
        if path == root:
            return True
        rel = _fold(path[len(root) :].lstrip("/"))
        if view.spec is not None and view.spec.match_file(rel + "/" if is_dir else rel):
            return False
        return not (view.secrets and _SECRETS.match(rel, lambda: is_dir))

    def denied(self, path: Path) -> str | None:
        """Why a path is hidden (a deny pattern it matches, a system folder), or None when it is not."""
        view = self._view()
        text = str(path)
        for system in view.system:  # only when a root contains /proc, /sys or /dev (a root of "/")
            if text == system or text.startswith(system + "/"):
                return f"is in {system}, which is never served"
        root = view.root_text(text)
        if root is None or text == root:
            return None
        rel = _fold(text[len(root) :].lstrip("/"))
        if view.spec is not None and (pattern := _match(view, rel, path)):
            return f"matches the deny_paths pattern '{pattern}'"  # the user's own pattern names it best
        if view.secrets and (pattern := _SECRETS.match(rel, path.is_dir)):
            return f"matches the built-in secret list (deny_secrets) pattern '{pattern}'"
        return None

    def root_of(self, path: Path) -> Path | None:
        """The root containing ``path`` (which must be absolute and normalised), or None."""
        return self._view().root_of(path)

    def display(self, path: Path) -> str:
        """``path`` relative to its root when there is one root, else absolute; for output."""
        view = self._view()
        text = str(path)
        root = view.root_text(text)
        if root is None or len(view.roots) > 1:
            return text
        return text[len(root) :].lstrip("/") or "."  # relative_to(root).as_posix() on strings: no pathlib parsing


@dataclass(frozen=True)
class _View:
    """The roots and deny patterns in force for one session, in the form the checks need (strings: fast)."""

    roots: tuple[Path, ...]
    patterns: tuple[str, ...]  # deny_paths: the config's, then the session's
    secrets: bool
    spec: pathspec.GitIgnoreSpec | None
    texts: tuple[str, ...]
    system: tuple[str, ...]  # the never-served folders some root contains

    @classmethod
    def of(cls, roots: tuple[Path, ...], patterns: tuple[str, ...], secrets: bool) -> _View:
        spec = pathspec.GitIgnoreSpec.from_lines(_fold(p) for p in anywhere(patterns)) if patterns else None
        texts = tuple(str(r) for r in roots)
        system = tuple(str(s) for s in SYSTEM if any(s.is_relative_to(r) for r in roots))
        return cls(roots, patterns, secrets, spec, texts, system)

    def root_text(self, text: str) -> str | None:
        for root in self.texts:
            if text == root or text.startswith(root if root.endswith("/") else root + "/"):
                return root
        return None

    def root_of(self, path: Path) -> Path | None:
        root = self.root_text(str(path))
        return None if root is None else self.roots[self.texts.index(root)]


def _match(view: _View, rel: str, path: Path) -> str | None:
    """The deny_paths pattern ``rel`` matches; a folder-only one ("secrets/") may match the path itself as a folder."""
    assert view.spec is not None
    result = view.spec.check_file(rel)
    if not result.include:
        as_folder = view.spec.check_file(rel + "/")
        if not as_folder.include or not path.is_dir():
            return None
        result = as_folder
    return view.patterns[result.index] if result.index is not None else "?"


def _plain(raw: str, roots: tuple[Path, ...]) -> Path:
    """On the event loop: the path as written when it is its own real path, on local file systems.

    Anything else raises ``Blocking`` and is resolved as usual in a worker thread (see ``localfs``).
    """
    if raw.startswith("~") or ".." in raw.split("/"):
        raise Blocking(raw)
    lexical = os.path.normpath(raw if raw.startswith("/") else f"{roots[0]}/{raw}")
    if not plain_local(lexical):
        raise Blocking(raw)
    return Path(lexical)


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def _text(roots: Iterable[Path]) -> str:
    return ", ".join(str(r) for r in roots)


_CASE_INSENSITIVE = sys.platform in ("darwin", "win32")  # their usual file systems ignore case


def _fold(text: str) -> str:
    """Patterns and paths compared as the file system compares names."""
    return text.casefold() if _CASE_INSENSITIVE else text


_RUNS_CODE = pathspec.GitIgnoreSpec.from_lines(_fold(p) for p in anywhere(RUNS_CODE))
_SECRETS = SecretMatcher(SECRETS, _fold)


def _runs_code(rel: str) -> str | None:
    """Why writing ``rel`` (relative to its root) would plant code that runs later, or None."""
    folded = _fold(rel)
    for candidate in (folded, folded + "/"):  # a path not made yet may become a folder (mkdir, a renamed folder)
        result = _RUNS_CODE.check_file(candidate)
        if result.include:
            pattern = RUNS_CODE[result.index] if result.index is not None else "?"
            return f"runs code later (it matches '{pattern}')"
    return None


def _plants_git_dir(real: Path, root: Path) -> str | None:
    """Why writing ``real`` could make a folder a git directory (see ``secrets.GIT_HEAD``), or None."""
    for entry in (real, *real.parents):
        if entry == root or not entry.is_relative_to(root):
            return None
        name = _fold(entry.name)
        if name == ".git" or entry.name.casefold() == ".git":
            return "is a git directory"
        if name == _fold(GIT_HEAD):
            return f"would make a git directory (a file named '{GIT_HEAD}' is how git recognises one)"
        if name in _BESIDE_HEAD and os.path.lexists(entry.parent / GIT_HEAD):
            return f"would make a git directory ('{entry.name}' beside a '{GIT_HEAD}' file)"
    return None


_BESIDE_HEAD = frozenset(_fold(n) for n in GIT_BESIDE_HEAD)


def _is_git_dir(folder: Path) -> bool:
    """A ``.git`` folder by name (in any case), or any folder laid out as one (bare or separate git dirs)."""
    if folder.name.casefold() == ".git":
        return True
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
