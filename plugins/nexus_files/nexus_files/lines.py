"""A text file's lines by number without decoding or splitting all of it, for read_file.

``read_file`` reports ``total_lines`` (``str.splitlines`` over the whole file)
and shows a window of lines. Decoding and splitting a 50 MB file for that costs
a second whatever the window, so lines are counted on the bytes: when the file
holds no line break other than ``\\n`` that ``splitlines`` honours, its lines are
the ``\\n``-separated pieces, and only the window is decoded (UTF-8 with
replacement never joins bytes across a ``\\n``, so a piece decodes as it would
in the whole). Files with other line breaks take the full decode.

The count per block of bytes is kept per file, stamped by (device, inode, size,
mtime, ctime): paging through a large file then reads only the window. An index
is kept only when the file was last changed ``SETTLE_NS`` before it was read,
so a change within one timestamp tick cannot hide behind an unchanged stamp.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

BLOCK = 8192  # bytes per counted block: a lookup scans at most one block for the line it wants
SETTLE_NS = 2_000_000_000  # a file changed less than this before it was read is not indexed
CACHED_FILES = 32
# What str.splitlines also breaks at, as bytes (C2 85, E2 80 A8/A9 are U+0085, U+2028, U+2029 in UTF-8).
_OTHER_BREAKS_ASCII = (b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
_OTHER_BREAKS_UTF8 = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")

Stamp = tuple[int, int, int, int, int]
Reader = Callable[[int, int], bytes]  # (offset, length) -> those bytes of the file


@dataclass(frozen=True)
class LineIndex:
    """Where lines start in one version of a file: ``before[k]`` is the number of ``\\n`` before block k."""

    size: int
    total: int  # lines, as str.splitlines counts them
    before: array

    def start(self, line: int, read: Reader) -> int:
        """The byte offset where 0-based ``line`` starts (``size`` when it is past the last)."""
        if line <= 0:
            return 0
        if line >= self.total:
            return self.size
        block = bisect.bisect_left(self.before, line) - 1  # the block holding the line-th newline
        base = block * BLOCK
        data = read(base, BLOCK)
        pos = -1
        for _ in range(line - self.before[block]):
            pos = data.find(b"\n", pos + 1)
        return base + pos + 1

    def lines(self, first: int, count: int, read: Reader) -> list[str]:
        """Lines ``first`` to ``first + count`` (0-based; ``count`` 0: to the end), decoded."""
        if first >= self.total:
            return []
        begin = self.start(first, read)
        end = self.start(first + count, read) if count else self.size
        return window(read(begin, end - begin))


def only_newlines(data: bytes) -> bool:
    """Whether ``\\n`` is the only line break ``str.splitlines`` would find in ``data`` decoded as UTF-8."""
    if any(b in data for b in _OTHER_BREAKS_ASCII):
        return False
    return data.isascii() or not any(b in data for b in _OTHER_BREAKS_UTF8)


def index_of(data: bytes) -> LineIndex:
    """The index of ``data`` (which holds no line break but ``\\n``)."""
    before = array("q", [0])
    count = 0
    for base in range(0, len(data), BLOCK):
        count += data.count(b"\n", base, base + BLOCK)
        before.append(count)
    total = count + (1 if data and not data.endswith(b"\n") else 0)
    return LineIndex(len(data), total, before)


def window(data: bytes) -> list[str]:
    """``data`` (whole lines, no line break but ``\\n``) decoded and split as ``str.splitlines`` would."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class IndexCache:
    """Line indexes of recently read files, by stamp; thread-safe (tool bodies run in worker threads)."""

    def __init__(self, size: int = CACHED_FILES, settle_ns: int = SETTLE_NS) -> None:
        self._size, self._settle = size, settle_ns
        self._entries: OrderedDict[Stamp, LineIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, st: os.stat_result) -> LineIndex | None:
        key = stamp(st)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, st: os.stat_result, index: LineIndex, read_at_ns: int) -> None:
        """Keep ``index`` when the file it was built from had settled before ``read_at_ns``."""
        if read_at_ns - max(st.st_mtime_ns, st.st_ctime_ns) < self._settle or index.size != st.st_size:
            return
        with self._lock:
            self._entries[stamp(st)] = index
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


def stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def now_ns() -> int:
    return time.time_ns()
