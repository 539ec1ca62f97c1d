"""What a reindex its process did not finish leaves (killed, a full disk that kept it from deleting), put back whole.

A reindex fills ``<name>_reindex`` and ``<name>_parts_reindex``, then renames, in this order: the live collection to
``<name>_pre_reindex``, the new one to ``<name>``, the live parts to ``<name>_parts_pre_reindex`` (when there are
any), the new parts to ``<name>_parts``; then deletes the old ones. Whatever the point it stopped at, the store is
opened as the reindex left it before its first rename or after its last: never with the live name missing, which
would open as an empty collection. What is left (the new collections, or the old ones) is deleted by the next
reindex, which would otherwise refuse to start beside it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from nexus_memory.store.records import StoreError, one_line

log = logging.getLogger("nexus.memory")


@dataclass(frozen=True)
class Names:
    """The collections of one reindex: the live ones, the new ones being filled, the old ones once replaced."""

    memories: str

    @property
    def parts(self) -> str:
        return f"{self.memories}_parts"

    @property
    def fresh(self) -> tuple[str, str]:
        return f"{self.memories}_reindex", f"{self.memories}_parts_reindex"

    @property
    def old(self) -> tuple[str, str]:
        return f"{self.memories}_pre_reindex", f"{self.memories}_parts_pre_reindex"


def recover(client: Any, name: str, delete: bool = True) -> None:
    """Finish or undo an interrupted reindex of collection ``name``, and (``delete``) delete what it left. Call it
    only where no reindex can be running: the embedded store's process, before it opens the collections (without
    ``delete``: on a disk still full, a failed delete can leave Chroma hanging, and the store must open), or a
    reindex about to start there."""
    names = Names(name)
    existing = {c.name for c in client.list_collections()}
    (fresh, fresh_parts), (old, old_parts) = names.fresh, names.old
    if old in existing and fresh in existing:  # stopped between its first two renames: the old one goes back
        if name in existing:  # not a state a reindex leaves: which one holds the memories is for the user to say
            raise StoreError(f"collections '{name}' and '{old}' both exist (an interrupted reindex?): check them")
        _rename(client, old, name)
        existing = existing - {old} | {name}
    elif old in existing and fresh_parts in existing:  # the new memories serve already: their parts follow them
        if names.parts in existing and old_parts not in existing:
            _rename(client, names.parts, old_parts)
            existing |= {old_parts}
        _rename(client, fresh_parts, names.parts)
        existing -= {fresh_parts}
    for leftover in (fresh, fresh_parts, old, old_parts) if delete else ():
        if leftover in existing:
            try:
                client.delete_collection(leftover)
            except Exception as exc:  # a full disk still: the next reindex deletes it
                log.warning("memory: could not delete %s, left by a reindex: %s", leftover, one_line(exc))
            else:
                log.warning("memory: deleted collection %s, left by a reindex that did not finish", leftover)


def _rename(client: Any, name: str, to: str) -> None:
    try:
        client.get_collection(name, embedding_function=None).modify(name=to)
    except Exception as exc:
        raise StoreError(f"a reindex that did not finish left '{name}', not renamed '{to}': {one_line(exc)}") from exc
    log.warning("memory: renamed collection %s to %s, as a reindex that did not finish would have", name, to)
