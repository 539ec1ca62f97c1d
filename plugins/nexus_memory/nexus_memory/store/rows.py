"""Float32 rows of one width kept in a file rather than in the process: the mirror's sentence vectors.

The mirror reads a few candidates' sentence vectors per recall, and they were ~11 KB a memory of resident memory
(3 sentences of 896 floats) on top of Chroma's own copy in its index. Here they live in an unnamed file in the
store's folder (``O_TMPFILE`` where the system has it: nothing is left behind, whatever ends the process), written
once and read back with ``pread``: the kernel's page cache holds them, which it can reclaim, and the process keeps
only each row's slot. A row read back holds the same bits as the row written, so the arithmetic on them is the
same. A freed slot is reused, so the file is as large as the most rows held at once.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


class RowFile:
    """Rows of ``width`` float32 in slots of an unnamed file in ``folder``; thread-safe."""

    def __init__(self, width: int, folder: Path | None = None) -> None:
        self.width = width
        self._row = width * 4  # bytes a row
        # 0600, unlinked at once (or never linked); closed by the finalizer below
        self._file = tempfile.TemporaryFile(dir=folder, buffering=0)  # noqa: SIM115
        self._fd = self._file.fileno()
        self._close = weakref.finalize(self, self._file.close)  # dropped with the mirror that holds it
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._end = 0  # slots in the file

    def __len__(self) -> int:
        """Slots in use."""
        return self._end - len(self._free)

    def put(self, rows: np.ndarray) -> list[int]:
        """Write ``rows`` (float32, C order) into free slots (the end of the file when none): their slots."""
        with self._lock:
            slots = [self._free.pop() if self._free else self._take_end() for _ in range(len(rows))]
        self.write(slots, rows)
        return slots

    def write(self, slots: Sequence[int], rows: np.ndarray) -> None:
        """Overwrite these slots with ``rows`` (one row a slot, in order)."""
        for start, at, count in _runs(slots):
            os.pwrite(self._fd, rows[at : at + count].tobytes(), start * self._row)

    def read(self, slots: Sequence[int]) -> np.ndarray:
        """The rows of these slots, in their order: a new (len(slots), width) float32 array."""
        import numpy as np

        out = np.empty((len(slots), self.width), dtype=np.float32)
        flat = out.reshape(-1).view(np.uint8)
        for start, at, count in _runs(slots):
            data = os.pread(self._fd, count * self._row, start * self._row)
            if len(data) != count * self._row:
                raise OSError(f"the sentence vectors' file ended early (slot {start})")
            flat[at * self._row : (at + count) * self._row] = np.frombuffer(data, dtype=np.uint8)
        return out

    def free(self, slots: Sequence[int]) -> None:
        with self._lock:
            self._free.extend(slots)
            self._free.sort(reverse=True)  # taken lowest first: a memory's rows stay in one run

    def close(self) -> None:
        self._close()

    def _take_end(self) -> int:
        self._end += 1
        return self._end - 1


def _runs(slots: Sequence[int]) -> list[tuple[int, int, int]]:
    """Consecutive slots as (first slot, index in ``slots``, count): one system call each."""
    runs: list[tuple[int, int, int]] = []
    for i, slot in enumerate(slots):
        if runs and runs[-1][0] + runs[-1][2] == slot:
            first, at, count = runs[-1]
            runs[-1] = (first, at, count + 1)
        else:
            runs.append((slot, i, 1))
    return runs
