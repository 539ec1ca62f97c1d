"""The two grep engines, ripgrep and pure Python, producing the same hits for the same tree.

Both search the files ``walk`` would list (see walk.py), skip binary files (a
NUL byte) and files above max_file_size, and report per file the matching
lines plus context lines. ``trim`` then orders files as a sorted depth-first
walk and applies the overall match cap, so the engines' outputs are identical.

The Python engine matches with RE2 (``google-re2``): linear time whatever the
pattern, so ``(a+)+$`` cannot run for minutes, and it releases the GIL, so a
search never stalls the server's other calls. It opens files race-free
(``PathPolicy.open_read``) and stops at ``search_timeout``. ripgrep opens files
itself, so ``confirm`` checks what it reported against a race-free read.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import contextvars
import json
import os
import re
import signal
import stat
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pathspec
import re2

from nexus_core import PathPolicy, ToolError, report_progress

from .fs import looks_binary
from .walk import RG_WALK_FLAGS, DenyFilter, sort_key, walk_files

MAX_LINE_CHARS = 500
PROGRESS_EVERY = 256  # files walked between two progress reports of the Python engine
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


# -- pure Python (RE2) ---------------------------------------------------------------

# A search runs over windows of about this many bytes (cut at line ends), so the deadline is
# checked often even in a huge file; RE2 itself is linear in the text, whatever the pattern.
WINDOW = 1 << 20


class SearchTimeout(Exception):
    """The deadline passed during a search."""


def timeout_error(timeout: float) -> ToolError:
    return ToolError(f"grep took longer than search_timeout ({timeout} s); narrow the path or the include globs")


def compile_query(q: Query) -> re2._Regexp:
    """The pattern for RE2: line by line (``never_nl``, ``(?m)``), in linear time whatever the pattern."""
    options = re2.Options()
    options.never_nl = True  # a match never spans lines, as in ripgrep
    options.log_errors = False
    options.case_sensitive = not q.ignore_case
    source = re2.escape(q.pattern) if q.literal else q.pattern
    try:
        return re2.compile("(?m)" + source, options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ToolError(
            f"invalid regular expression {q.pattern!r}: {reason.replace('(?m)', '')}; the search engine (RE2, "
            "like ripgrep's) has no look-around or backreferences; pass literal=true to search the text as is"
        ) from None


def search_data(data: bytes, rel: str, q: Query, regex: re2._Regexp, limit: int, deadline: float) -> FileHits | None:
    """Hits in one file's bytes, at most ``limit`` matching lines, or None; ``SearchTimeout`` past ``deadline``."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)  # no empty line after the last newline
    starts: list[int] = []
    pos = 0
    while pos <= end and len(starts) < limit:
        if time.monotonic() > deadline:
            raise SearchTimeout
        stop = data.find(b"\n", min(pos + WINDOW, end))
        stop = end if stop < 0 or stop > end else stop
        match = regex.search(data, pos, stop)
        if match is None:
            if stop >= end:
                break
            pos = stop + 1
            continue
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        starts.append(line_start)
        line_end = data.find(b"\n", match.start())
        pos = (end if line_end < 0 or line_end > end else line_end) + 1
    if not starts:
        return None
    rows: dict[int, tuple[int, bool]] = {}  # line number -> (offset of its start, is a match)
    number, last = 1, 0
    for start in starts:
        number += data.count(b"\n", last, start)
        last = start
        rows[number] = (start, True)
        before = after = start
        for k in range(1, q.context + 1):  # context lines, found by their newlines
            if before == 0:
                break
            before = data.rfind(b"\n", 0, before - 1) + 1
            rows.setdefault(number - k, (before, False))
        for k in range(1, q.context + 1):
            after = data.find(b"\n", after) + 1
            if not 0 < after <= end:
                break
            rows.setdefault(number + k, (after, False))
    return FileHits(rel, [(n, _line(data, offset, end), match) for n, (offset, match) in sorted(rows.items())])


def _line(data: bytes, start: int, end: int) -> str:
    stop = data.find(b"\n", start, end)
    return clip(data[start : end if stop < 0 else stop].decode("utf-8", "replace").removesuffix("\r"))


def search_file(
    policy: PathPolicy, path: str, rel: str, q: Query, regex: re2._Regexp, limit: int, deadline: float
) -> FileHits | None:
    """Hits in one file, opened race-free; None when it has none, is binary, too large or not servable."""
    try:
        with policy.open_read(path) as opened:
            if opened.stat.st_size > q.max_file_size:
                return None
            data = opened.read(q.max_file_size + 1)
    except (OSError, ToolError):
        return None  # gone, changed, or a hard link to a secret: invisible, like a deny-listed file
    if len(data) > q.max_file_size or looks_binary(data):
        return None
    return search_data(data, rel, q, regex, limit, deadline)


def python_grep(start: Path, policy: PathPolicy, q: Query, timeout: float) -> list[FileHits]:
    """Walk and search with a small thread pool (RE2 releases the GIL), stopping past the cap or the timeout.

    A timeout is a ``ToolError`` within about a window's search of ``timeout``: every
    search checks the deadline between windows, and the walk between files.
    """
    deadline = time.monotonic() + timeout
    regex = compile_query(q)
    try:
        if start.is_file():
            hit = search_file(policy, str(start), start.name, q, regex, q.max_results + 1, deadline)
            return [hit] if hit else []
        return _grep_tree(start, policy, q, regex, deadline)
    except SearchTimeout:
        raise timeout_error(timeout) from None


def _grep_tree(start: Path, policy: PathPolicy, q: Query, regex: re2._Regexp, deadline: float) -> list[FileHits]:
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
        try:
            for walked, entry in enumerate(walk_files(start, policy, include_ignored=q.include_ignored), 1):
                if found > q.max_results:
                    break
                if time.monotonic() > deadline:
                    raise SearchTimeout
                if walked % PROGRESS_EVERY == 0:
                    report_progress(walked, message=f"{walked} files searched, {found} matching lines")
                if not keep(entry.rel):
                    continue
                # Each task runs in a copy of this context: the path policy follows the calling session.
                task = contextvars.copy_context().run
                args = (search_file, policy, entry.path, entry.rel, q, regex, q.max_results + 1, deadline)
                window.append(pool.submit(task, *args))
                if len(window) >= workers * 4:
                    drain_one()
            while window and found <= q.max_results:
                drain_one()
        finally:
            for fut in window:
                fut.cancel()
    return out


# -- ripgrep -----------------------------------------------------------------------


def _rg_text(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", errors="replace")


def rg_command(rg: str, q: Query, *, size_cap: bool = True) -> list[str]:
    cmd = [
        rg,
        "--json",
        *RG_WALK_FLAGS,
        "--no-mmap",  # every file rg searches stays an open descriptor, where the watch sees it
        f"--max-count={q.max_results + 1}",
        "--ignore-case" if q.ignore_case else "--case-sensitive",
    ]
    if size_cap:
        cmd.append(f"--max-filesize={q.max_file_size}")
    if q.literal:
        cmd.append("--fixed-strings")
    if q.context:
        cmd.append(f"--context={q.context}")
    if q.include_ignored:
        cmd.append("--no-ignore-vcs")
    # Only excludes go to rg: its include globs would override .gitignore. Includes are applied to its output.
    cmd += [f"--glob=!{g}" for g in q.exclude]
    return [*cmd, "--regexp", q.pattern, "--", "."]


# rg's --max-filesize stats every file before opening it (50,000 files: 15-18% of the whole search). Instead rg
# runs without it while a thread looks at the files it has open every WATCH_EVERY seconds: one above
# max_file_size stops it, and the search runs again with --max-filesize. A huge text file so costs at most
# about WATCH_EVERY of scanning before it is noticed (binary ones stop rg at their first NUL byte anyway), and
# a folder where one was seen is searched with --max-filesize from the start for HUGE_REMEMBERED seconds.
WATCH_EVERY = 0.05
HUGE_REMEMBERED = 600.0
_huge_under: dict[str, float] = {}  # folder -> when a file above max_file_size was seen in a search of it


def _proc_fds_readable() -> bool:
    return os.path.isdir(f"/proc/{os.getpid()}/fd")


def reading_a_huge_file(pid: int, limit: int) -> bool:
    """Whether process ``pid`` holds a regular file larger than ``limit`` bytes open (Linux ``/proc``)."""
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False  # it has exited
    for name in names:
        try:
            info = os.stat(f"{fd_dir}/{name}")
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            return True
    return False


def _huge_seen_under(start: str) -> bool:
    now = time.monotonic()
    for folder, when in list(_huge_under.items()):
        if now - when > HUGE_REMEMBERED:
            _huge_under.pop(folder, None)
        elif folder == start or folder.startswith(start.rstrip(os.sep) + os.sep):
            return True
    return False


def rg_grep(rg: str, start: Path, policy: PathPolicy, q: Query, timeout: float) -> list[FileHits]:
    """Run rg --json in ``start``; deny-listed files are dropped from its output.

    Files above max_file_size may still be in it (a file seen too late by the watch): ``confirm`` drops them.
    """
    deadline = time.monotonic() + timeout
    key = str(start)
    if _proc_fds_readable() and not _huge_seen_under(key):
        files = _run_rg(rg, start, policy, q, timeout, deadline, watch=True)
        if files is not None:
            return files
        _huge_under[key] = time.monotonic()
        if len(_huge_under) > 256:
            _huge_under.pop(next(iter(_huge_under)), None)
    files = _run_rg(rg, start, policy, q, timeout, deadline, watch=False)
    assert files is not None
    return files


def _run_rg(
    rg: str, start: Path, policy: PathPolicy, q: Query, timeout: float, deadline: float, *, watch: bool
) -> list[FileHits] | None:
    """rg's hits, or None when ``watch`` saw it reading a file above max_file_size (and stopped it)."""
    deny = DenyFilter(policy)
    keep = GlobFilter(q.include, q.exclude)
    base = str(start) + os.sep
    proc = subprocess.Popen(
        rg_command(rg, q, size_cap=not watch),
        cwd=start,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,  # a group of its own to kill, started with vfork (a new session forks the whole server)
    )
    done, timed_out, huge = threading.Event(), threading.Event(), threading.Event()

    def guard() -> None:
        while True:
            left = max(0.0, deadline - time.monotonic())
            if done.wait(min(WATCH_EVERY, left) if watch else left):
                return
            if time.monotonic() >= deadline:
                timed_out.set()
            elif watch and reading_a_huge_file(proc.pid, q.max_file_size):
                huge.set()
            else:
                continue
            _killpg(proc)
            return

    guard_thread = threading.Thread(target=guard, name="rg-guard", daemon=True)
    guard_thread.start()
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
                report_progress(len(files), message=f"{matches} matching lines in {len(files)} files so far")
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
        done.set()
        guard_thread.join()  # before the wait below: the guard must not look at a reaped (reusable) pid
        _killpg(proc)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
    if timed_out.is_set():
        raise timeout_error(timeout)
    if huge.is_set():
        return None
    if proc.returncode == 2 and not files:
        message = stderr.decode("utf-8", errors="replace").strip()
        raise ToolError(f"ripgrep refused the search: {message}")
    return list(files.values())


def confirm(files: list[FileHits], base: Path, policy: PathPolicy, max_file_size: int) -> list[FileHits]:
    """The files whose reported lines a race-free read of the same file shows too.

    ripgrep opens what a path names when it gets there: a folder swapped for a
    symlink meanwhile, or a hard link to a secret, would show another file's lines.
    A file above ``max_file_size`` is dropped, as the Python engine skips it.
    """
    kept = []
    for f in files:
        try:
            with policy.open_read_as_written(f"{base}/{f.rel}") as opened:  # rg's paths are most often real
                if opened.stat.st_size > max_file_size:
                    continue
                data = opened.read(max_file_size + 1)
        except (OSError, ToolError):
            continue
        if len(data) > max_file_size:
            continue  # grew while it was read
        lines = data.split(b"\n", max(n for n, _, _ in f.lines))  # the lines after the last one reported stay whole
        if all(
            n <= len(lines) and clip(lines[n - 1].decode("utf-8", "replace").removesuffix("\r")) == text
            for n, text, _ in f.lines
        ):
            kept.append(f)
    return kept


def _killpg(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
