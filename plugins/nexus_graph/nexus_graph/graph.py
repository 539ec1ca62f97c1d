"""The in-memory index of the JSONL folder, and the only code that appends to it.

The index is built on first use and brought up to date before every call by
comparing each file's inode, size and mtime with what was read: a grown file
is read from where reading stopped (another process appended), a file that
shrank, vanished or changed in place triggers a full rebuild. Writers hold
the folder's exclusive lock from that refresh through their append, so the
checks they make (id taken? both ends exist? duplicate?) see every other
process's writes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from nexus_core import on_local_fs
from nexus_graph import storage
from nexus_graph.duplicates import DuplicateIndex
from nexus_graph.records import (
    MAX_CONTEXT,
    MAX_DESC,
    MAX_NAME,
    Entity,
    GraphError,
    Relation,
    check_id,
    check_predicate,
    clean_tags,
    now_iso,
)
from nexus_graph.search import SearchIndex
from nexus_graph.watch import Watch

DEFAULT_CATEGORIES = ("concepts", "tech_stack", "people", "projects")
# Up to this many entities a search takes 1-2 ms (a few on a busy machine) and may run on the
# event loop: no longer than a worker thread holding the GIL makes the loop wait anyway (the 5 ms switch
# interval). A bigger graph is searched in a worker thread.
LOOP_MAX_ENTITIES = 20_000
T = TypeVar("T")


@dataclass(frozen=True)
class Problem:
    """A line that could not be used: where it is and why."""

    file: str
    line: int
    error: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.error}"


@dataclass
class GraphIndex:
    entities: dict[str, Entity] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    relation_keys: dict[tuple[str, str, str], int] = field(default_factory=dict)
    outgoing: dict[str, list[int]] = field(default_factory=dict)
    incoming: dict[str, list[int]] = field(default_factory=dict)
    last_relation: dict[str, float] = field(default_factory=dict)  # id -> newest relation touching it
    search: SearchIndex = field(default_factory=SearchIndex)
    names: DuplicateIndex = field(default_factory=DuplicateIndex)
    version: int = 0

    def add_entity(self, entity: Entity) -> None:
        self.entities[entity.id] = entity
        self.search.add(entity)
        self.names.add(entity.id, entity.name)
        self.version += 1

    def add_relation(self, relation: Relation) -> None:
        position = len(self.relations)
        self.relations.append(relation)
        self.relation_keys[relation.key] = position
        self.outgoing.setdefault(relation.src, []).append(position)
        self.incoming.setdefault(relation.dst, []).append(position)
        for end in (relation.src, relation.dst):
            if relation.created_ts > self.last_relation.get(end, 0.0):
                self.last_relation[end] = relation.created_ts
        self.version += 1

    def relations_of(self, entity_id: str) -> tuple[list[Relation], list[Relation]]:
        """(outgoing, incoming) relations of an entity."""
        out = [self.relations[i] for i in self.outgoing.get(entity_id, ())]
        into = [self.relations[i] for i in self.incoming.get(entity_id, ())]
        return out, into

    def require(self, entity_id: str, what: str = "entity") -> Entity:
        """The entity, or an error naming close ids so the caller can retry."""
        check_id(entity_id, what)
        entity = self.entities.get(entity_id)
        if entity is None:
            close = [h.id for h in self.search.search(entity_id.replace("-", " "), 3)]
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise GraphError(f"{what} '{entity_id}' does not exist{hint} (search_knowledge finds entities)")
        return entity


class GraphStore:
    """One graph folder: a thread-safe index over it, and validated appends."""

    def __init__(self, root: Path, categories: tuple[str, ...], log: logging.Logger | None = None) -> None:
        self.root = root
        self.categories = categories
        self.log = log or logging.getLogger("nexus.graph")
        self._lock = threading.RLock()
        self._real_root: str | None = None  # resolved on first use, for the mount check
        self._watch = Watch(root)  # tells the event loop's searches whether anything changed since the last read
        self._kept_lock = storage.KeptLock()  # and, while the watch holds, whether a writer holds the lock
        self._reset()

    def _reset(self) -> None:
        self.index = GraphIndex()
        self._files: dict[Path, storage.FileState] = {}
        self._problems: list[Problem] = []
        self._tails: dict[Path, Problem] = {}
        self._ignored_folders: set[str] = set()
        self._listing: list[tuple[str | None, Path]] | None = None  # the files to read, while still true
        self._listed: tuple[list[Path], tuple[storage.FolderStamp, ...]] = ([], ())

    # -- reading --------------------------------------------------------------------

    @contextlib.contextmanager
    def reading(self) -> Iterator[GraphIndex]:
        """The index, up to date with the folder, held steady while the caller uses it."""
        with self._lock:
            with storage.locked(self.root, exclusive=False):
                self._sync()
                self._rewatch()
            yield self.index

    def read_now(self, fn: Callable[[GraphIndex], T], max_entities: int = LOOP_MAX_ENTITIES) -> T | None:
        """``fn(index)`` when that cannot wait or take long, else None (then call it under ``reading``, in a thread).

        For a caller on the event loop: it runs only when the folder is on a local disk (a stat on a hung
        network mount would stall every session), neither lock is held by someone else, no file changed since
        the last read (appends are read in ``reading``) and the graph is small enough for ``fn`` to be quick.
        """
        if len(self.index.entities) > max_entities or not self._on_local_disk():
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return fn(self.index) if self._settled_now() else None
        finally:
            self._lock.release()

    def _settled_now(self) -> bool:
        """No writer holds the folder's lock, and the index holds all that is on disk."""
        if self._kept_lock.kept:
            if not self._kept_lock.free():
                return False
            if self._watch.unchanged():
                return True
            self._kept_lock.close()  # the folder changed: kept again once it is read in full
            return False
        with storage.locked(self.root, exclusive=False, wait=False) as held:
            return held and self._current()

    def _on_local_disk(self) -> bool:
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return on_local_fs(self._real_root)

    def _current(self) -> bool:
        """Whether the index holds all that is on disk: as the watch says, or (without one) as ``_fresh`` finds."""
        return self._watch.unchanged() if self._watch.available else self._fresh()

    def _rewatch(self) -> None:
        """After a full read (under the lock): watch what was read, unless the watch holds still (nothing changed
        since); keep the lock file open while it does."""
        if not self._watch.available or self._listing is None:
            return
        if not self._watch.unchanged():
            self._kept_lock.close()
            files = [path for _, path in self._listing]
            if not self._watch.arm(self._listed[0], files) or not self._fresh():  # changed before the watch began
                self._watch.close()
                return
        if not self._kept_lock.kept:
            self._kept_lock.keep(self.root)

    def _fresh(self) -> bool:
        """Whether the index holds all that is on disk: the listing still true and no file changed (stats only)."""
        folders, stamps = self._listed
        listing = self._listing
        if listing is None or len(listing) != len(self._files) or storage.folder_stamps(folders) != stamps:
            return False
        for _, path in listing:
            state = self._files.get(path)
            try:
                st = os.stat(path)  # not path.stat(): pathlib's wrapper costs as much as the system call
            except OSError:
                return False
            if state is None or (st.st_ino, st.st_size, st.st_mtime_ns) != (state.ino, state.size, state.mtime_ns):
                return False
        return True

    def problems(self) -> list[Problem]:
        """Every unusable line seen, plus any truncated last lines present now."""
        with self._lock:
            ignored = [
                Problem(f"{name}/{storage.ENTITY_FILE}", 0, "folder is not a configured category; not loaded")
                for name in sorted(self._ignored_folders)
            ]
            return [*self._problems, *self._tails.values(), *ignored]

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _sync(self) -> None:
        for _attempt in range(3):
            if self._sync_once():
                return
            self.log.warning("graph files under %s changed in place; rebuilding the index", self.root)
            self._reset()
        raise GraphError("the graph folder keeps changing in place; try again")

    def _sync_once(self) -> bool:
        """Read what was appended since the last call; False when a file was rewritten (rebuild)."""
        targets = self._targets()
        if set(self._files) - {path for _, path in targets}:
            return False  # a file vanished
        for category, path in targets:
            try:
                st = path.stat()
            except FileNotFoundError:
                return False
            state = self._files.get(path)
            if state is None:
                state = self._files[path] = storage.FileState(st.st_ino, -1, st.st_mtime_ns)
            elif st.st_ino != state.ino or st.st_size < state.size:
                return False
            elif st.st_size == state.size:
                if st.st_mtime_ns != state.mtime_ns:
                    return False
                continue
            self._ingest(path, category, state)
            state.size, state.mtime_ns = st.st_size, st.st_mtime_ns  # once read: a read that failed is tried again
        return True

    def _targets(self) -> list[tuple[str | None, Path]]:
        """The files to read (category or None, path); listed again only when a folder holding them changed."""
        folders, stamps = self._listed
        if self._listing is not None and storage.folder_stamps(folders) == stamps:
            return self._listing
        started = time.time_ns()
        found = storage.entity_files(self.root)
        self._ignored_folders = {name for name in found if name not in self.categories}
        targets: list[tuple[str | None, Path]] = [(n, p) for n, p in found.items() if n in self.categories]
        targets += [(None, path) for path in storage.relation_files(self.root)]
        folders = storage.listing_folders(self.root)
        stamps = storage.folder_stamps(folders)
        settled = all(s is None or s[1] < started - storage.SETTLED_NS for s in stamps)
        self._listed, self._listing = (folders, stamps), (targets if settled else None)
        return targets

    def _ingest(self, path: Path, category: str | None, state: storage.FileState) -> None:
        name = self.relative(path)
        lines, partial = storage.read_new_lines(path, state)
        for line in lines:
            where = f"{name}:{line.number}"
            try:
                if line.error:
                    raise ValueError(line.error)
                if category is None:
                    self._ingest_relation(Relation.from_record(line.data, where))
                else:
                    self._ingest_entity(Entity.from_record(line.data, category, where))
            except ValueError as exc:
                self._problem(Problem(name, line.number, str(exc)))
        self._tails.pop(path, None)
        if partial is not None:
            self._tails[path] = Problem(name, partial.number, partial.error or "truncated")

    def _ingest_entity(self, entity: Entity) -> None:
        first = self.index.entities.get(entity.id)
        if first is not None:
            raise ValueError(f"duplicate id '{entity.id}' (first defined at {first.source}); ignored")
        self.index.add_entity(entity)

    def _ingest_relation(self, relation: Relation) -> None:
        if relation.key in self.index.relation_keys:
            first = self.index.relations[self.index.relation_keys[relation.key]]
            raise ValueError(f"duplicate relation (first at {first.source}); ignored")
        self.index.add_relation(relation)

    def _problem(self, problem: Problem) -> None:
        self._problems.append(problem)
        self.log.warning("skipped %s", problem)

    # -- writing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[GraphIndex]:
        with self._lock, storage.locked(self.root, exclusive=True):
            self._sync()
            try:
                yield self.index
            finally:
                self._sync()
                self._rewatch()  # this write is read: the next search need not leave the event loop for it

    def check_category(self, category: str) -> str:
        if category not in self.categories:
            known = ", ".join(self.categories)
            raise GraphError(
                f"unknown category {category!r}; known categories: {known} "
                "(more can be added with extra_categories in the plugin's config)"
            )
        return category

    def add_entity(
        self, category: str, entity_id: str, type: str, name: str, desc: str = "", tags: list[str] | None = None
    ) -> Entity:
        self.check_category(category)
        check_id(entity_id)
        entity = Entity(
            id=entity_id,
            category=category,
            type=_text(type, "type", 50),
            name=_text(name, "name", MAX_NAME),
            desc=_text(desc, "desc", MAX_DESC, required=False),
            tags=clean_tags(tags or []),
            created=now_iso(),
        )
        with self._writing() as index:
            existing = index.entities.get(entity_id)
            if existing is not None:
                raise GraphError(
                    f"entity '{entity_id}' already exists (category '{existing.category}', created "
                    f"{existing.created}); the graph is append-only and never overwrites: pick another id "
                    "or connect to the existing entity"
                )
            storage.append_lines(storage.entity_file(self.root, category), [storage.dumps(entity.to_record())])
        return self.index.entities[entity_id]

    def connect(self, src: str, rel: str, dst: str, context: str = "") -> tuple[Relation, bool]:
        """Append a relation; (the relation, True) or, when it already exists, (the existing one, False)."""
        check_id(src, "src")
        check_id(dst, "dst")
        check_predicate(rel)
        if src == dst:
            raise GraphError(f"src and dst are both '{src}'; a relation joins two different entities")
        context = _text(context, "context", MAX_CONTEXT, required=False)
        with self._writing() as index:
            index.require(src, "src")
            index.require(dst, "dst")
            position = index.relation_keys.get((src, rel, dst))
            if position is not None:
                return index.relations[position], False
            relation = Relation(src, rel, dst, context, now_iso())
            storage.append_lines(
                storage.relation_file(self.root, relation.created), [storage.dumps(relation.to_record())]
            )
        return self.index.relations[self.index.relation_keys[(src, rel, dst)]], True

    def append_batch(
        self, entities: list[Entity], relations: list[Relation]
    ) -> tuple[list[Entity], list[Relation], list[str]]:
        """Append what is new among ``entities`` and ``relations`` (an import): (added, added, skip reasons)."""
        skipped: list[str] = []
        with self._writing() as index:
            new_entities: list[Entity] = []
            known = set(index.entities)
            for entity in entities:
                self.check_category(entity.category)
                if entity.id in known:
                    skipped.append(f"entity '{entity.id}' already exists; kept the existing one (append-only)")
                    continue
                known.add(entity.id)
                new_entities.append(entity)
            new_relations: list[Relation] = []
            keys = set(index.relation_keys)
            for relation in relations:
                missing = [end for end in (relation.src, relation.dst) if end not in known]
                if missing:
                    skipped.append(
                        f"relation {relation.src} -{relation.rel}-> {relation.dst}: no entity '{missing[0]}'"
                    )
                elif relation.key in keys:
                    skipped.append(f"relation {relation.src} -{relation.rel}-> {relation.dst} already exists")
                else:
                    keys.add(relation.key)
                    new_relations.append(relation)
            batches: dict[Path, list[bytes]] = {}
            for entity in new_entities:
                batches.setdefault(storage.entity_file(self.root, entity.category), []).append(
                    storage.dumps(entity.to_record())
                )
            for relation in new_relations:
                batches.setdefault(storage.relation_file(self.root, relation.created), []).append(
                    storage.dumps(relation.to_record())
                )
            for path, lines in batches.items():
                storage.append_lines(path, lines)
        return new_entities, new_relations, skipped


def _text(value: str, what: str, limit: int, *, required: bool = True) -> str:
    value = value.strip()
    if required and not value:
        raise GraphError(f"{what} is empty")
    if len(value) > limit:
        raise GraphError(f"{what} is {len(value)} characters long; the limit is {limit}")
    if "\x00" in value:
        raise GraphError(f"{what} contains a NUL character")
    return value


def touched_at(index: GraphIndex, entity: Entity) -> float:
    """When an entity last grew: its creation, or its newest relation."""
    return max(entity.created_ts, index.last_relation.get(entity.id, 0.0))
