"""Export files inside the roots: ``export_memories(path=...)`` writes one, ``import_memories(path=...)`` reads one.

Both go through the plugin's path policy, as the files plugin's tools do: the path must lie inside the session's
roots once symlinks are resolved (a link out of them is refused), match neither the built-in secret list nor
``deny_paths``, and, to be written, be no file that runs code, nothing inside a git directory or a virtualenv, nor
Nexus's own data; the folders on the way are opened without following symlinks. The file is written whole or not at
all (a temp file in its folder, renamed over it), 0600 whatever it was (it holds every memory), and an existing file
is replaced only when asked. A file read is bounded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from nexus_core import PathPolicy, ToolError, locked
from nexus_memory import transfer
from nexus_memory.store import ChromaStore

MAX_IMPORT_BYTES = 256 << 20  # an import reads its whole file first (~9 KB a memory with its vector): ~28,000


@dataclass(frozen=True)
class Written:
    path: str  # as shown to the client: relative to its root when there is one root
    counts: transfer.TransferCounts
    size: int


class _Chunks:
    """What ``transfer.export_memories`` writes, kept as UTF-8 (one copy of the file in memory, not three)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, text: str) -> int:
        self.parts.append(text.encode("utf-8"))
        return len(text)


def write_export(paths: PathPolicy, path: str, store: ChromaStore, overwrite: bool) -> Written:
    """Write the whole export (``nexus memory export``'s JSON Lines) at ``path``, inside the roots."""
    real = paths.resolve(path, write=True)
    shown = paths.display(real)
    with locked(real):  # the check that it does not exist, then the write: no other writer in between
        if os.path.isdir(real):
            raise ToolError(f"'{shown}' is a folder; name a file in it")
        if not overwrite and os.path.lexists(real):
            raise ToolError(f"'{shown}' exists; pass overwrite=true to replace it")
        chunks = _Chunks()
        counts = transfer.export_memories(store, chunks)  # type: ignore[arg-type]  # it only writes
        data = b"".join(chunks.parts)
        del chunks
        try:
            paths.write_file(real, data, overwrite=overwrite, mode=0o600)
        except FileExistsError:
            raise ToolError(f"'{shown}' exists; pass overwrite=true to replace it") from None
        except IsADirectoryError:
            raise ToolError(f"'{shown}' is a folder; name a file in it") from None
        except FileNotFoundError:
            raise ToolError(f"the folder of '{shown}' does not exist") from None
        except OSError as exc:  # the file's disk (full, read-only), not the store: say which, and that nothing moved
            old = "; the file there is unchanged" if os.path.lexists(real) else ""
            raise ToolError(f"'{shown}' could not be written: {exc.strerror or exc}{old}") from None
    return Written(shown, counts, len(data))


def read_export(paths: PathPolicy, path: str) -> str:
    """The text of the export file at ``path``, inside the roots, of at most ``MAX_IMPORT_BYTES``."""
    try:
        with paths.open_read(path) as opened:
            if opened.stat.st_size > MAX_IMPORT_BYTES:
                raise _too_large(path, opened.stat.st_size)
            data = opened.read(MAX_IMPORT_BYTES + 1)
    except FileNotFoundError:
        raise ToolError(f"path '{path}' does not exist") from None
    except IsADirectoryError:
        raise ToolError(f"path '{path}' is a folder; name an export file (JSON Lines)") from None
    except OSError as exc:
        raise ToolError(f"path '{path}' cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_IMPORT_BYTES:  # it grew since the stat
        raise _too_large(path, len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"path '{path}' is not UTF-8 text (byte {exc.start}): an export is JSON Lines") from None


def _too_large(path: str, size: int) -> ToolError:
    return ToolError(
        f"path '{path}' is {size:,} bytes; import_memories reads at most {MAX_IMPORT_BYTES:,}: import it with "
        "`nexus memory import FILE`, which sends it in batches"
    )
