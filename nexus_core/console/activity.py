"""The Activity page's data: the audit log's latest records, and the plugins as `nexus plugins` shows them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_core.access.denied import PermissionDenied
from nexus_core.access.sessions import Session, bound

if TYPE_CHECKING:
    from nexus_core.host.build import Host

CHUNK = 1 << 16
MAX_SCAN = 32 << 20  # bytes read back from the end looking for matches: a huge log stays quick
FILTERS = ("client", "plugin", "tool", "outcome")
CONSOLE_CLIENT = "console"  # the client name of the console's own calls (calls.py)


def read_activity(
    path: Path | None,
    filters: dict[str, str],
    limit: int = 200,
    since: int | None = None,
    quiet: frozenset[str] = frozenset(),
) -> dict:
    """The newest matching records (newest first), and the offset to ask ``since`` next time (live updates).

    ``since`` (an offset from an earlier answer) returns only what was appended after it. The console's own
    successful calls of the ``quiet`` tools (its reads) are left out: one page load makes ten of them.
    """
    if path is None:
        return {"entries": [], "offset": 0, "audit": None}
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return {"entries": [], "offset": 0, "audit": str(path)}
    if since is not None and since > size:  # the log was replaced: start over
        since = None
    lines, end = _tail_lines(path, size, since)
    entries = []
    for line in reversed(lines):
        entry = _parse(line)
        if entry is not None and _matches(entry, filters) and not _own_read(entry, quiet):
            entries.append(entry)
            if len(entries) >= limit:
                break
    return {"entries": entries, "offset": end, "audit": str(path)}


def _tail_lines(path: Path, size: int, since: int | None) -> tuple[list[bytes], int]:
    """Complete lines after ``since`` (or in the last ``MAX_SCAN`` bytes), and the offset where they end."""
    start = since if since is not None else max(0, size - MAX_SCAN)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(min(size - start, MAX_SCAN))
    skip = data.find(b"\n") + 1 if since is None and start > 0 else 0  # the first line read may be cut
    complete = data.rfind(b"\n") + 1  # a line still being written waits for the next poll
    return data[skip:complete].splitlines(), start + complete


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _own_read(entry: dict[str, Any], quiet: frozenset[str]) -> bool:
    if entry.get("client") != CONSOLE_CLIENT or entry.get("outcome") != "ok":
        return False
    return entry.get("kind", "tool") != "tool" or entry.get("tool") in quiet


def read_tools(host: Host) -> frozenset[str]:
    """The tools that only read (category ``read`` or marked read-only): the console's calls of them are quiet."""
    return frozenset(
        name for name, t in host.tools.items() if t.spec.category == "read" or t.spec.hints.get("readOnlyHint")
    )


def _matches(entry: dict[str, Any], filters: dict[str, str]) -> bool:
    for key in FILTERS:
        wanted = filters.get(key, "").strip().lower()
        if not wanted:
            continue
        value = str(entry.get(key, "")).lower()
        if key == "outcome" and wanted == "problem":
            if value == "ok":
                return False
        elif wanted not in value if key == "tool" else wanted != value:
            return False
    return True


def plugins_report(host: Host, session: Session, status: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Each plugin: version, status, categories granted and refused, tool rules and roots (for this session)."""
    report = []
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        granted = sorted(state.grants.categories) if state.grants else []
        table = host.config.table(state.name)
        report.append(
            {
                "name": state.name,
                "version": state.record.version or "",
                "status": state.status,
                "source": state.record.source,
                "granted": granted,
                "refused": [c for c in state.categories if c not in granted],
                "categories": {c.name: c.description for c in state.categories.values()},
                "allow_tools": list(table.allow_tools),
                "deny_tools": list(table.deny_tools),
                "roots": _roots(state, session),
                "runtime": status.get(state.name, []),
            }
        )
    return report


def _roots(state: Any, session: Session) -> list[str] | str:
    if state.ctx is None:
        return []
    with bound(session):
        try:
            roots = [str(r) for r in state.ctx.paths.roots]
        except PermissionDenied:
            roots = []
    return roots if state.ctx.paths.configured or roots else "each client's own"
