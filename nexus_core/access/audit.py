"""The audit log: one JSON line per tool call, appended under the data dir."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nexus_core.fs.modes import private_folder

log = logging.getLogger("nexus.audit")
_encode = json.JSONEncoder(default=str, ensure_ascii=False).encode  # built once: json.dumps with options is not
_string = json.encoder.encode_basestring  # a str in JSON, as _encode writes it (in C; non-ASCII kept)


def _line(fields: tuple[tuple[str, Any], ...]) -> str:
    """``_encode(dict(fields))`` for the fields of a record: strings and finite floats are written directly
    (a record is written per call), anything else by ``_encode``."""
    parts = []
    for key, value in fields:
        if type(value) is str:
            parts.append(f'"{key}": {_string(value)}')
        elif type(value) is float and math.isfinite(value):
            parts.append(f'"{key}": {value!r}')
        else:
            parts.append(f'"{key}": {_encode(value)}')
    return "{" + ", ".join(parts) + "}"


class AuditLog:
    """Appends records to ``path`` (JSON Lines); ``path=None`` only logs them at debug level.

    Each record is written with a single ``write`` on an ``O_APPEND`` descriptor,
    so lines from several server processes never interleave. A write cut short (a
    full disk) is taken back: the file is truncated to where the record began, so
    it always ends on a whole line and the next record is never swallowed. A record
    that cannot be written is counted (``dropped``: ``nexus server status`` shows
    it) and logged at error level, never lost in silence.
    """

    def __init__(self, path: Path | None, *, include_arguments: bool = False) -> None:
        self.path = path
        self.include_arguments = include_arguments
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._clock: tuple[int, str] = (-1, "")  # (a second, its date and time of day formatted)
        self.dropped = 0  # records that could not be written since the server started

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
        fields = (
            ("time", self._now()),
            ("client", client or "unknown"),
            ("session", session),
            ("kind", kind),
            ("plugin", plugin),
            ("tool", tool),
            ("outcome", outcome),
            ("duration_ms", round(duration_ms, 3)),
        )
        if error:
            fields += (("error", error),)
        if self.include_arguments and arguments is not None:
            fields += (("arguments", arguments),)
        line = _line(fields)
        log.debug("audit %s", line)
        if self.path is not None:
            self._append(line + "\n")

    def _now(self) -> str:
        """The time as ``datetime.now(UTC).isoformat(timespec="milliseconds")`` writes it; the date and time
        of day are formatted once a second."""
        now = time.time()
        second = int(now)
        clock = self._clock  # read once: another thread may be replacing it
        if second != clock[0]:
            clock = self._clock = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
        return f"{clock[1]}.{int((now - second) * 1000):03d}+00:00"

    def _append(self, line: str) -> None:
        data = line.encode()
        try:
            with self._lock:
                fd = self._open()
                written = os.write(fd, data)
                if written < len(data):
                    _take_back(fd, written)
                    raise OSError(errno.ENOSPC, f"only {written} of {len(data)} bytes written; the record was removed")
        except OSError as exc:  # auditing must never break a call; say so loudly instead
            self.dropped += 1
            reason = exc.strerror or str(exc) or type(exc).__name__
            log.error("cannot append to the audit log %s: %s (%d record(s) dropped)", self.path, reason, self.dropped)

    def _open(self) -> int:
        if self._fd is None:
            assert self.path is not None
            private_folder(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            end = os.fstat(fd).st_size
            if end and os.pread(fd, 1, end - 1) != b"\n":  # torn by an older version or a crash: end that line
                os.write(fd, b"\n")
            self._fd = fd
        return self._fd

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _take_back(fd: int, written: int) -> None:
    """Truncate a record written in part, unless another process appended after it (then end it with a newline)."""
    end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: just past what this write added
    if written and os.fstat(fd).st_size == end:
        os.ftruncate(fd, end - written)
    elif written:
        with contextlib.suppress(OSError):
            os.write(fd, b"\n")
