"""Small filesystem helpers shared by the tools: race-free opening, size limits, text detection."""

from __future__ import annotations

import os

from nexus_core import OpenedFile, PathPolicy, ToolError

SNIFF_BYTES = 8192


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class TooLarge(ToolError):
    """A file above max_file_size: the message names its size and the limit."""

    def __init__(self, size: int, shown: str, limit: int) -> None:
        self.size = size
        super().__init__(
            f"'{shown}' is {size} bytes ({human_size(size)}), above max_file_size of {limit} bytes "
            f"({human_size(limit)}); use tail, grep or file_info instead"
        )


def open_file(policy: PathPolicy, given: str, *, folders: bool = False, shown: str = "") -> OpenedFile:
    """``policy.open_read`` (resolve, then open race-free) with this plugin's messages for what is not a file."""
    shown = shown or given
    try:
        return policy.open_read(given, folders=folders)
    except FileNotFoundError:
        raise ToolError(f"'{shown}' does not exist") from None
    except IsADirectoryError:
        raise ToolError(f"'{shown}' is a directory; use list_directory or directory_tree") from None
    except NotADirectoryError:
        raise ToolError(f"'{shown}' does not exist (a part of it is a file, not a folder)") from None


def read_data(opened: OpenedFile, shown: str, limit: int) -> bytes:
    """All of an opened file, refusing one above ``limit`` bytes (even if it grew after it was opened)."""
    if opened.stat.st_size > limit:
        raise TooLarge(opened.stat.st_size, shown, limit)
    data = opened.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(len(data), shown, limit)
    return data


def looks_binary(data: bytes) -> bool:
    """Git's and ripgrep's heuristic: a NUL byte means binary."""
    return b"\x00" in data


def check_text(data: bytes, shown: str) -> None:
    """Refuse binary content (a NUL byte in its head)."""
    if looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"'{shown}' is a binary file ({len(data)} bytes); use file_info to inspect it")


def decode_text(data: bytes, shown: str) -> str:
    """UTF-8 text (undecodable bytes replaced), refusing binary content."""
    check_text(data, shown)
    return data.decode("utf-8", errors="replace")


def pread_all(fd: int, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer at the end of the file), without moving the file position."""
    parts: list[bytes] = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            break
        parts.append(part)
        offset, size = offset + len(part), size - len(part)
    return b"".join(parts)


def read_text(policy: PathPolicy, given: str, limit: int, *, shown: str = "") -> tuple[str, str]:
    """A text file inside the roots, opened race-free: (its content, its path for output)."""
    with open_file(policy, given, shown=shown) as opened:
        shown = shown or policy.display(opened.path)
        return decode_text(read_data(opened, shown, limit), shown), shown
