"""Small filesystem helpers shared by the tools: size limits, text detection, atomic writes."""

from __future__ import annotations

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
