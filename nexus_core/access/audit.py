"""The audit log: one JSON line per tool call, appended under the data dir."""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nexus_core.fs.modes import private_folder

log = logging.getLogger("nexus.audit")
_encode = json.JSONEncoder(default=str, ensure_ascii=False).encode  # built once: json.dumps with options is not


class AuditLog:
    """Appends records to ``path`` (JSON Lines); ``path=None`` only logs them at debug level.

    Each record is written with a single ``write`` on an ``O_APPEND`` descriptor,
    so lines from several server processes never interleave.
    """

    def __init__(self, path: Path | None, *, include_arguments: bool = False) -> None:
        self.path = path
        self.include_arguments = include_arguments
        self._fd: int | None = None
        self._lock = threading.Lock()

    def record(
        self,
        *,
        plugin: str,
        tool: str,
        outcome: str,
        duration_ms: float,
        arguments: dict[str, Any] | None = None,
        error: str | None = None,
        kind: str = "tool",
        client: str = "",
        session: str = "",
    ) -> None:
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "client": client or "unknown",
            "session": session,
            "kind": kind,
            "plugin": plugin,
            "tool": tool,
            "outcome": outcome,
            "duration_ms": round(duration_ms, 3),
        }
        if error:
            entry["error"] = error
        if self.include_arguments and arguments is not None:
            entry["arguments"] = arguments
        line = _encode(entry)
        log.debug("audit %s", line)
        if self.path is not None:
            self._append(line + "\n")

    def _append(self, line: str) -> None:
        try:
            with self._lock:
                if self._fd is None:
                    assert self.path is not None
                    private_folder(self.path.parent)
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.write(self._fd, line.encode())
        except OSError as exc:  # auditing must never break a call; say so loudly instead
            log.error("cannot append to the audit log %s: %s", self.path, exc)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
