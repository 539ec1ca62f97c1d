"""The two grep engines, ripgrep and pure Python, producing the same hits for the same tree.

Both search the files ``walk`` would list (see walk.py), skip binary files (a
NUL byte) and files above max_file_size, and report per file the matching
lines plus context lines. ``trim`` then orders files as a sorted depth-first
walk and applies the overall match cap, so the engines' outputs are identical.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from nexus_core import PathPolicy, ToolError

from .fs import looks_binary
from .walk import RG_WALK_FLAGS, DenyFilter, sort_key, walk_files

MAX_LINE_CHARS = 500
# rg output beyond this many matches is not read (a safety valve against huge result sets).
RG_MATCH_VALVE = 20_000


@dataclass
class Query:
    pattern: str
    literal: bool
    ignore_case: bool
    context: int
    include: list[str]
    exclude: list[str]
    max_results: int
    include_ignored: bool
    max_file_size: int


@dataclass
class FileHits:
    rel: str
    lines: list[tuple[int, str, bool]] = field(default_factory=list)  # (line number, text, is a match)

    @property
    def matches(self) -> int:
        return sum(1 for _, _, m in self.lines if m)


def smart_ignore_case(pattern: str, literal: bool) -> bool:
    """ripgrep's smart case: case-insensitive unless the pattern has an uppercase letter (escapes aside)."""
    text = pattern if literal else re.sub(r"\\.", "", pattern)
    return not any(c.isupper() for c in text)


def clip(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def trim(files: list[FileHits], cap: int) -> tuple[list[FileHits], int, bool]:
    """Sort files, keep at most ``cap`` matches; a file cut mid-way loses the lines after its last kept match."""
    files = sorted((f for f in files if f.matches), key=lambda f: sort_key(f.rel))
    kept: list[FileHits] = []
    total = 0
    for f in files:
        if total >= cap:
            return kept, total, True
        room = cap - total
        if f.matches <= room:
            kept.append(f)
            total += f.matches
            continue
        seen, last = 0, 0
        for number, _, is_match in f.lines:
            if is_match:
                seen += 1
                if seen == room:
                    last = number
                    break
        kept.append(FileHits(f.rel, [row for row in f.lines if row[0] <= last]))
        return kept, cap, True
    return kept, total, False


class GlobFilter:
    """include/exclude globs (gitignore syntax) on paths relative to the search folder."""

    def __init__(self, include: list[str], exclude: list[str]) -> None:
        self.include = pathspec.GitIgnoreSpec.from_lines(include) if include else None
        self.exclude = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None

    def __call__(self, rel: str) -> bool:
        if self.include is not None and not self.include.match_file(rel):
            return False
        return not (self.exclude is not None and self.exclude.match_file(rel))


# -- pure Python -------------------------------------------------------------------


def compile_query(q: Query) -> re.Pattern[str]:
    source = re.escape(q.pattern) if q.literal else q.pattern
    try:
        return re.compile(source, re.IGNORECASE if q.ignore_case else 0)
    except re.error as exc:
        raise ToolError(
            f"invalid regular expression {q.pattern!r}: {exc}; pass literal=true to search the text as is"
        ) from None


def search_file(path: str, rel: str, q: Query, line_re: re.Pattern[str], limit: int) -> FileHits | None:
    """Hits in one file, at most ``limit`` matches; None when it has none, is binary or too large."""
    try:
        if os.stat(path).st_size > q.max_file_size:
            return None
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if q.literal and not q.ignore_case:
        if q.pattern.encode("utf-8") not in data:
            return None
        if looks_binary(data):
            return None
        text = data.decode("utf-8", errors="replace")
    else:
        if looks_binary(data):
            return None
        text = data.decode("utf-8", errors="replace")
        if not line_re.search(text):
            return None  # a line match implies a whole-text match: cheap prefilter
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    hits: list[int] = []
    for i, line in enumerate(lines):
        if line_re.search(line):
            hits.append(i)
            if len(hits) >= limit:
                break
    if not hits:
        return None
    hit_set = set(hits)
    shown: set[int] = set()
    for h in hits:
        shown.update(range(max(0, h - q.context), min(len(lines), h + q.context + 1)))
    rows = [(i + 1, clip(lines[i].removesuffix("\r")), i in hit_set) for i in sorted(shown)]
    return FileHits(rel, rows)


def python_grep(start: Path, policy: PathPolicy, q: Query) -> list[FileHits]:
    """Walk and search with a small thread pool (file reads release the GIL), stopping past the cap."""
    line_re = compile_query(q)
    if start.is_file():
        hit = search_file(str(start), start.name, q, line_re, q.max_results + 1)
        return [hit] if hit else []
    keep = GlobFilter(q.include, q.exclude)
    out: list[FileHits] = []
    found = 0
    window: collections.deque[Future[FileHits | None]] = collections.deque()
    workers = min(8, (os.cpu_count() or 2) * 2)

    def drain_one() -> None:
        nonlocal found
        hit = window.popleft().result()
        if hit is not None:
            out.append(hit)
            found += hit.matches

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for entry in walk_files(start, policy, include_ignored=q.include_ignored):
            if found > q.max_results:
                break
            if not keep(entry.rel):
                continue
            window.append(pool.submit(search_file, entry.path, entry.rel, q, line_re, q.max_results + 1))
            if len(window) >= workers * 4:
                drain_one()
        while window and found <= q.max_results:
            drain_one()
        for fut in window:
            fut.cancel()
    return out


# -- ripgrep -----------------------------------------------------------------------


def _rg_text(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", errors="replace")


def rg_command(rg: str, q: Query) -> list[str]:
    cmd = [
        rg,
        "--json",
        *RG_WALK_FLAGS,
        f"--max-filesize={q.max_file_size}",
        f"--max-count={q.max_results + 1}",
        "--ignore-case" if q.ignore_case else "--case-sensitive",
    ]
    if q.literal:
        cmd.append("--fixed-strings")
    if q.context:
        cmd.append(f"--context={q.context}")
    if q.include_ignored:
        cmd.append("--no-ignore-vcs")
    # Only excludes go to rg: its include globs would override .gitignore. Includes are applied to its output.
    cmd += [f"--glob=!{g}" for g in q.exclude]
    return [*cmd, "--regexp", q.pattern, "--", "."]


def rg_grep(rg: str, start: Path, policy: PathPolicy, q: Query, timeout: float) -> list[FileHits]:
    """Run rg --json in ``start``; deny-listed files are dropped from its output."""
    deny = DenyFilter(policy)
    keep = GlobFilter(q.include, q.exclude)
    base = str(start) + os.sep
    proc = subprocess.Popen(
        rg_command(rg, q),
        cwd=start,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        _killpg(proc)

    timer = threading.Timer(timeout, kill)
    timer.start()
    files: dict[str, FileHits] = {}
    matches = 0
    try:
        assert proc.stdout is not None
        current: FileHits | None = None
        for raw in proc.stdout:
            event = json.loads(raw)
            kind, data = event["type"], event["data"]
            if kind == "begin":
                rel = _rg_text(data["path"]).removeprefix("./")
                visible = deny.allows(base + rel) and keep(rel)
                current = files.setdefault(rel, FileHits(rel)) if visible else None
            elif kind in ("match", "context") and current is not None:
                text = clip(_rg_text(data["lines"]).removesuffix("\n").removesuffix("\r"))
                current.lines.append((data["line_number"], text, kind == "match"))
                if kind == "match":
                    matches += 1
                    if matches > RG_MATCH_VALVE:
                        break
        stderr = b""
        if matches <= RG_MATCH_VALVE:
            stderr = proc.stderr.read() if proc.stderr else b""
    finally:
        timer.cancel()
        _killpg(proc)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
    if timed_out.is_set():
        raise ToolError(f"grep took longer than search_timeout ({timeout} s); narrow the path or the include globs")
    if proc.returncode == 2 and not files:
        message = stderr.decode("utf-8", errors="replace").strip()
        raise ToolError(f"ripgrep refused the search: {message}")
    return list(files.values())


def _killpg(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
