"""Walking a tree the way git sees it: .gitignore-aware, deny_paths-filtered, symlinks not followed.

Also finds the ripgrep binary and lists files through it, with flags chosen so
both engines see the same files: hidden files included, ``.git`` skipped,
.gitignore and .git/info/exclude honoured (even outside a git repo), the
user's global excludes and ``.ignore``/``.rgignore`` files not.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from nexus_core import PathPolicy, ToolError, report_progress

# Same file set as the Python walker: see the module docstring.
RG_WALK_FLAGS = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-ignore-dot",
    "--no-messages",
    "--glob=!.git",
)


@dataclass(frozen=True, slots=True)
class Entry:
    path: str  # absolute, real (symlinks are not followed, so a walked path is its own real path)
    rel: str  # relative to the walk's start, with "/"
    is_dir: bool
    is_symlink: bool
    depth: int  # 1 for the start's children


def sort_key(rel: str) -> list[str]:
    """Order paths as a sorted depth-first walk does, whatever produced them."""
    return rel.split("/")


class DenyFilter:
    """``PathPolicy.allows`` without a stat per path, for paths whose kind is already known."""

    def __init__(self, policy: PathPolicy) -> None:
        self.policy = policy

    def allows(self, path: str, is_dir: bool = False) -> bool:
        return self.policy.visible(path, is_dir)


class IgnoreRules:
    """The .gitignore layers in effect in one folder; deeper layers win, like git."""

    def __init__(self, layers: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.layers = layers

    @classmethod
    def for_dir(cls, start: Path, root: Path) -> IgnoreRules:
        """Rules for ``start``: every .gitignore from its root down to it, plus .git/info/exclude."""
        rules = cls()
        chain = [start, *start.parents]
        for folder in reversed(chain[: chain.index(root) + 1] if root in chain else [start]):
            rules = rules.child(str(folder))
        return rules

    def child(self, folder: str) -> IgnoreRules:
        layers = self.layers
        for name in (os.path.join(".git", "info", "exclude"), ".gitignore"):
            spec = _load(os.path.join(folder, name))
            if spec is not None:
                layers = (*layers, (folder + os.sep, spec))
        return self if layers is self.layers else IgnoreRules(layers)

    def ignored(self, path: str, is_dir: bool) -> bool:
        for base, spec in reversed(self.layers):
            rel = path[len(base) :].replace(os.sep, "/")
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                return result.include
        return False


def _load(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def walk(
    start: Path,
    policy: PathPolicy,
    *,
    max_depth: int | None = None,
    include_ignored: bool = False,
) -> Iterator[Entry]:
    """Everything under ``start`` that is visible, depth first, sorted by name.

    Skips ``.git``, gitignored paths (unless ``include_ignored``), deny-listed
    paths, and symlinks whose target is not allowed. Symlinked folders are
    listed but not entered. Folders are opened race-free: ``start`` from its
    root (``open_folder``), each subfolder from its parent's descriptor without
    following symlinks, so a folder swapped for a symlink meanwhile is skipped,
    never listed.
    """
    root = policy.root_of(start) or start
    rules = None if include_ignored else IgnoreRules.for_dir(start, root)
    try:
        anchor = policy.open_folder(start)
        try:
            fd = os.open(".", _LIST, dir_fd=anchor)
        finally:
            os.close(anchor)
    except (OSError, ToolError):
        return
    try:
        yield from _walk(fd, str(start), "", 1, rules, DenyFilter(policy), policy, max_depth)
    finally:
        os.close(fd)


# A folder opened to list it: never through a symlink.
_LIST = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _walk(
    fd: int,
    folder: str,
    prefix: str,
    depth: int,
    rules: IgnoreRules | None,
    deny: DenyFilter,
    policy: PathPolicy,
    max_depth: int | None,
) -> Iterator[Entry]:
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        if e.name == ".git":
            continue
        path = folder + os.sep + e.name
        try:
            is_link = e.is_symlink()
            is_dir = e.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if not deny.allows(path, is_dir):
            continue
        if is_link and not policy.allows(Path(os.path.realpath(path))):
            continue  # a link out of the roots or onto a denied path stays invisible
        if rules is not None and rules.ignored(path, is_dir):
            continue
        rel = prefix + e.name
        yield Entry(path, rel, is_dir, is_link, depth)
        if is_dir and (max_depth is None or depth < max_depth):
            try:
                sub = os.open(e.name, _LIST, dir_fd=fd)
            except OSError:
                continue  # replaced by a symlink (or removed) since it was listed
            try:
                child_rules = rules.child(path) if rules is not None else None
                yield from _walk(sub, path, rel + "/", depth + 1, child_rules, deny, policy, max_depth)
            finally:
                os.close(sub)


def first_hidden(folder: Path, policy: PathPolicy, limit: int = 100_000) -> str | None:
    """The first path below ``folder`` that deny_paths hide (relative to it), or None; ToolError past ``limit``.

    For programs that go through a whole folder themselves (``grep -r``, ``rg``,
    ``find``, ``cp -r``): they know nothing of deny_paths, so such a folder must hold
    nothing hidden. Symlinks are not followed (run_command refuses the options
    that would make those programs follow them).
    """
    deny = DenyFilter(policy)
    stack, seen = [str(folder)], 0
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > limit:
                raise ToolError(f"'{folder}' holds more than {limit} files to check for hidden ones; name a subfolder")
            is_dir = e.is_dir(follow_symlinks=False)
            if not deny.allows(e.path, is_dir):
                return os.path.relpath(e.path, folder)
            if is_dir:
                stack.append(e.path)
    return None


def walk_files(start: Path, policy: PathPolicy, *, include_ignored: bool = False) -> Iterator[Entry]:
    """Regular files under ``start`` (symlinks skipped, as ripgrep does)."""
    for entry in walk(start, policy, include_ignored=include_ignored):
        if not entry.is_dir and not entry.is_symlink:
            yield entry


@functools.cache
def _find_rg(explicit: str | None) -> str | None:
    if explicit:
        return shutil.which(explicit) or None
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / "rg"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


def ripgrep(mode: str, explicit: str | None) -> str | None:
    """The rg binary to use, None for the pure-Python engine; ``always`` without rg is an error."""
    if mode == "never":
        return None
    found = _find_rg(explicit)
    if found is None and mode == "always":
        raise ToolError(
            "use_ripgrep is 'always' but no rg binary was found; install ripgrep==14.1.0 or set ripgrep_path"
        )
    return found


def rg_list_files(
    rg: str, start: Path, deny: DenyFilter, *, include_ignored: bool, timeout: float, extra: Sequence[str] = ()
) -> list[str]:
    """Files under ``start`` as ripgrep sees them (relative, "/"-separated), deny-filtered.

    Read as rg lists them, so a call with a progress token hears how many so far (a big tree takes seconds).
    """
    cmd = [rg, "--files", "--null", *RG_WALK_FLAGS, *extra]
    if include_ignored:
        cmd.append("--no-ignore-vcs")
    # --no-messages: rg writes nothing to stderr but a fatal error, which the pipe holds whole
    proc = subprocess.Popen(
        [*cmd, "."], cwd=start, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        proc.kill()

    timer = threading.Timer(timeout, expire)
    timer.start()
    chunks, listed = [], 0
    try:
        assert proc.stdout is not None and proc.stderr is not None
        while chunk := proc.stdout.read1(1 << 16):
            chunks.append(chunk)
            listed += chunk.count(b"\0")
            report_progress(listed, message=f"{listed} files listed")
        stderr = proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
    if expired.is_set():
        raise ToolError(f"listing files took longer than search_timeout ({timeout} s); narrow the path")
    if proc.returncode not in (0, 1):
        raise ToolError(f"ripgrep failed: {stderr.decode(errors='replace').strip()}")
    base = str(start) + os.sep
    out = []
    for raw in b"".join(chunks).split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw).removeprefix("./")
        if deny.allows(base + rel):
            out.append(rel)
    return out
