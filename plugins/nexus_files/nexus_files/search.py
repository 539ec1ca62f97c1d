"""The search category: glob, grep, concat_files."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Literal

import pathspec
from pydantic import BaseModel, Field

from nexus_core import PathPolicy, PluginContext, ToolError, ToolRegistrar, report_progress

from .config import FilesConfig
from .fs import SNIFF_BYTES, TooLarge, human_size, looks_binary, open_file, read_data
from .grep_engine import GlobFilter, Query, confirm, python_grep, rg_grep, smart_ignore_case, trim
from .results import ToolOutput, tool
from .walk import DenyFilter, rg_list_files, ripgrep, sort_key, walk_files

PROGRESS_EVERY = 512  # files between two progress reports: the figures cost nothing next to the work

Globs = list[str]  # gitignore-style, under path


class GlobResult(ToolOutput):
    pattern: str
    path: str
    files: list[str] = Field(description="Matching files, sorted; paths as other tools take them.")
    total: int = Field(description="Matches in all pages.")
    next_cursor: str | None = Field(description="Pass as `cursor` to get the next page; None on the last page.")
    engine: Literal["ripgrep", "python"]

    def render(self) -> str:
        lines = list(self.files) or [f"no files match {self.pattern!r} under {self.path}"]
        if self.next_cursor:
            lines.append(f"[{len(self.files)} of {self.total} shown; pass cursor={self.next_cursor!r} for more]")
        return "\n".join(lines)


class GrepLine(BaseModel):
    line: int = Field(description="1-based line number.")
    text: str
    match: bool = Field(description="False for a context line.")


class GrepFile(BaseModel):
    path: str
    matches: int
    lines: list[GrepLine]


class GrepResult(ToolOutput):
    pattern: str
    path: str
    files: list[GrepFile] = Field(description="Files with matches, sorted by path.")
    total_matches: int
    truncated: bool = Field(description="True when max_results stopped the search; more matches exist.")
    engine: Literal["ripgrep", "python"]

    def render(self) -> str:
        if not self.files:
            return f"no matches for {self.pattern!r} under {self.path}"
        out: list[str] = []
        for f in self.files:
            out.append(f.path)
            previous = None
            for row in f.lines:
                if previous is not None and row.line > previous + 1:
                    out.append("  --")
                out.append(f"  {row.line}{':' if row.match else '-'}{row.text}")
                previous = row.line
        note = f"{self.total_matches} matches in {len(self.files)} files"
        if self.truncated:
            note += " (stopped at max_results; narrow the search for the rest)"
        return "\n".join([*out, f"[{note}]"])


class Skipped(BaseModel):
    path: str
    reason: str


class Concatenation(ToolOutput):
    text: str
    files: list[str]
    skipped: list[Skipped]
    truncated: bool

    def render(self) -> str:
        notes = [f"[skipped {s.path}: {s.reason}]" for s in self.skipped]
        if self.truncated:
            notes.append("[cut at the byte cap; concatenate fewer files]")
        return "\n".join([self.text, *notes]) if notes else self.text


def shown_under(policy, start: Path, rel: str) -> str:
    """``policy.display(start / rel)`` without building a Path per result (it adds up over 10k files)."""
    base = policy.display(start)
    if len(policy.roots) > 1 or base.startswith("/"):
        return f"{start}/{rel}"
    return f"{base}/{rel}" if base and base != "." else rel


def _cursor(offset: int, key: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset, "k": key}).encode()).decode()


def _offset(cursor: str | None, key: str) -> int:
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        offset, owner = int(data["o"]), data["k"]
    except (ValueError, KeyError, TypeError):
        raise ToolError("invalid cursor; pass the next_cursor of a previous glob call, unchanged") from None
    if owner != key:
        raise ToolError("this cursor belongs to a glob with other arguments; repeat the same pattern and path")
    return offset


def folder(policy: PathPolicy, path: str) -> Path:
    real = policy.resolve(path)
    if not real.is_dir():
        raise ToolError(f"'{path}' is not a folder" if real.exists() else f"'{path}' does not exist")
    return real


def listed(paths: Iterable[str], before: int = 0) -> list[str]:
    """The paths, with progress reported as they come (a walk of a big tree takes seconds); ``before``: files
    listed already, by an earlier walk of the same call."""
    out = []
    for path in paths:
        out.append(path)
        if len(out) % PROGRESS_EVERY == 0:
            report_progress(before + len(out), message=f"{before + len(out)} files listed")
    return out


def matching(rels: list[str], spec: pathspec.GitIgnoreSpec, pattern: str) -> Iterator[str]:
    """The paths ``spec`` matches; progress counts listing and matching alike, so its total is twice the files."""
    total = 2 * len(rels)
    for i, rel in enumerate(rels):
        if i % PROGRESS_EVERY == 0:
            report_progress(len(rels) + i, total, f"matching {len(rels)} files against {pattern!r}")
        if spec.match_file(rel):
            yield rel


def glob(
    ctx: PluginContext,
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            description="gitignore-style, e.g. '*.py', 'src/**/*.ts'.",
        ),
    ],
    path: str = ".",
    include_ignored: bool = False,
    limit: Annotated[int, Field(ge=1, le=10_000)] = 500,
    cursor: Annotated[str | None, Field(description="The previous page's next_cursor.")] = None,
) -> GlobResult:
    """Find files by glob pattern, .gitignore-aware."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    if pattern.startswith("!"):
        raise ToolError("a glob cannot start with '!'; pass the files you want, not the ones you don't")
    start = folder(policy, path)
    key = hashlib.sha1(f"{pattern}\0{start}\0{include_ignored}".encode()).hexdigest()[:12]
    offset = _offset(cursor, key)
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    rg = ripgrep(config.use_ripgrep, config.ripgrep_path)
    if rg:
        # No --glob pre-filter: rg's include globs override .gitignore, which glob must honour.
        rels = rg_list_files(
            rg, start, DenyFilter(policy), include_ignored=include_ignored, timeout=config.search_timeout
        )
    else:
        rels = listed(e.rel for e in walk_files(start, policy, include_ignored=include_ignored))
    matched = sorted(matching(rels, spec, pattern), key=sort_key)
    page = matched[offset : offset + limit]
    end = offset + len(page)
    return GlobResult(
        pattern=pattern,
        path=policy.display(start) or ".",
        files=[shown_under(policy, start, r) for r in page],
        total=len(matched),
        next_cursor=_cursor(end, key) if end < len(matched) else None,
        engine="ripgrep" if rg else "python",
    )


def grep(
    ctx: PluginContext,
    pattern: Annotated[str, Field(min_length=1, description="A regex (text if literal).")],
    path: str = ".",
    literal: bool = False,
    case: Annotated[
        Literal["smart", "sensitive", "insensitive"],
        Field(description="smart: sensitive if it has uppercase."),
    ] = "smart",
    context: Annotated[int, Field(ge=0, le=20, description="Lines around each match.")] = 0,
    include: Globs = [],  # noqa: B006 (pydantic copies defaults)
    exclude: Globs = [],  # noqa: B006
    max_results: Annotated[int, Field(ge=1, le=5000)] = 200,
    include_ignored: bool = False,
) -> GrepResult:
    """Search file contents by regex, .gitignore-aware."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    start = policy.resolve(path)
    if not start.exists():
        raise ToolError(f"'{path}' does not exist")
    ignore_case = case == "insensitive" or (case == "smart" and smart_ignore_case(pattern, literal))
    q = Query(
        pattern, literal, ignore_case, context, include, exclude, max_results, include_ignored,
        config.max_file_size,
    )  # fmt: skip
    rg = None if start.is_file() else ripgrep(config.use_ripgrep, config.ripgrep_path)
    if rg:
        hits = rg_grep(rg, start, policy, q, config.search_timeout)
    else:
        hits = python_grep(start, policy, q, config.search_timeout)
    kept, total, truncated = trim(hits, max_results)
    base = start.parent if start.is_file() else start
    if rg:
        confirmed = confirm(kept, base, policy, config.max_file_size)
        total -= sum(f.matches for f in kept) - sum(f.matches for f in confirmed)
        kept = confirmed
    files = [
        GrepFile(
            path=shown_under(policy, base, f.rel),
            matches=f.matches,
            lines=[GrepLine(line=n, text=t, match=m) for n, t, m in f.lines],
        )
        for f in kept
    ]
    return GrepResult(
        pattern=pattern,
        path=policy.display(start) or ".",
        files=files,
        total_matches=total,
        truncated=truncated,
        engine="ripgrep" if rg else "python",
    )


def concat_files(
    ctx: PluginContext,
    paths: Annotated[list[str], Field(min_length=1, max_length=200)],
    include: list[str] = [],  # noqa: B006 (pydantic copies defaults); globs within the folders given
    include_ignored: bool = False,
) -> Concatenation:
    """Concatenate text files; folders expand."""
    config: FilesConfig = ctx.config
    policy = ctx.paths
    keep = GlobFilter(include, [])
    chosen: list[Path] = []
    for given in paths:
        real = policy.resolve(given)
        if real.is_dir():
            walked = (e.path for e in walk_files(real, policy, include_ignored=include_ignored) if keep(e.rel))
            chosen += map(Path, listed(walked, len(chosen)))
        elif real.is_file():
            chosen.append(real)
        else:
            raise ToolError(f"'{given}' does not exist")
    budget = config.max_output_bytes
    parts: list[str] = []
    files: list[str] = []
    skipped: list[Skipped] = []
    truncated = False
    unique = list(dict.fromkeys(chosen))  # keep order, drop duplicates
    for done, real in enumerate(unique):
        shown = policy.display(real)
        report_progress(len(unique) + done, 2 * len(unique), f"reading {shown}")  # listing was the first half
        try:
            with open_file(policy, str(real)) as opened:
                data = read_data(opened, shown, config.max_file_size)
        except TooLarge as exc:
            skipped.append(Skipped(path=shown, reason=f"{human_size(exc.size)} is above max_file_size"))
            continue
        except ToolError as exc:  # changed since it was listed
            skipped.append(Skipped(path=shown, reason=str(exc)))
            continue
        if looks_binary(data[:SNIFF_BYTES]):
            skipped.append(Skipped(path=shown, reason="binary"))
            continue
        block = f"==> {shown} <==\n{data.decode('utf-8', errors='replace')}"
        if not block.endswith("\n"):
            block += "\n"
        encoded = block.encode("utf-8")
        if len(encoded) > budget:
            parts.append(encoded[:budget].decode("utf-8", errors="ignore"))
            files.append(shown)
            truncated = True
            break
        parts.append(block)
        files.append(shown)
        budget -= len(encoded)
    return Concatenation(text="\n".join(parts), files=files, skipped=skipped, truncated=truncated)


def register(register: ToolRegistrar, ctx: PluginContext) -> None:
    hints = {"category": "search", "read_only": True, "idempotent": True}
    register(
        tool(glob, ctx),
        title="Find files by glob",
        keywords="list or locate files by name or extension, recursively, which files exist",
        **hints,
    )
    grep_words = "find text or a string in the code, where something is defined, occurrences, usages, rg"
    register(tool(grep, ctx), title="Search file contents", keywords=grep_words, **hints)
    register(tool(concat_files, ctx), title="Concatenate files", keywords="cat several files into one", **hints)
