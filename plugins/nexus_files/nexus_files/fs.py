"""Small filesystem helpers shared by the tools: size limits, text detection, atomic writes."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from nexus_core import ToolError

SNIFF_BYTES = 8192


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def check_size(path: Path, shown: str, limit: int) -> int:
    """The file's size, or a ToolError naming the size and the limit when it is too large."""
    size = path.stat().st_size
    if size > limit:
        raise ToolError(
            f"'{shown}' is {size} bytes ({human_size(size)}), above max_file_size of {limit} bytes "
            f"({human_size(limit)}); use tail, grep or file_info instead"
        )
    return size


def require_file(path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolError(f"'{shown}' does not exist")
    if path.is_dir():
        raise ToolError(f"'{shown}' is a directory; use list_directory or directory_tree")
    if not path.is_file():
        raise ToolError(f"'{shown}' is not a regular file")


def looks_binary(data: bytes) -> bool:
    """Git's and ripgrep's heuristic: a NUL byte means binary."""
    return b"\x00" in data


def read_text(path: Path, shown: str, limit: int) -> str:
    """A text file's content (UTF-8, undecodable bytes replaced), refusing large and binary files."""
    require_file(path, shown)
    check_size(path, shown, limit)
    data = path.read_bytes()
    if looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"'{shown}' is a binary file ({len(data)} bytes); use file_info to inspect it")
    return data.decode("utf-8", errors="replace")


def _umask() -> int:
    # os.umask() can only be read by setting it, which races with other threads; Linux exposes it here.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and ``os.replace``.

    Readers see the old content or the new, never a half-written file. The mode
    of an existing file is kept; a new file gets 0o666 minus the umask.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
