"""``nexus memory export|import|reindex``: JSON Lines that round-trip memories, their vectors and links, and the
re-embedding of a collection with the configured embedder.

One object per line: first ``{"kind": "header", ...}`` naming the embedder,
then ``{"kind": "memory", ...}`` lines (with the vector, and a memory's image as ``image_mime_type`` and base64
``image_data``, store_memory's names), then ``{"kind": "link", ...}`` lines. Import keeps ids and timestamps; it reuses
the vectors when the file's embedder is the target's, and re-embeds otherwise
(which is how a collection moves to another embedder).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click

from nexus_memory.embed import EmbedderError
from nexus_memory.images.files import EXTENSIONS, MAX_IMAGE_BYTES, ImageFiles
from nexus_memory.models import MEMORY_TYPES, RELATION_TYPES
from nexus_memory.progress import STEP, Progress
from nexus_memory.reindex import reindex
from nexus_memory.store import ChromaStore, LinkRecord, Record, StoreError, one_line, recipe_for

FORMAT = "nexus-memory/1"
PAGE = STEP  # lines a call of export_memories or import_memories carries for `nexus memory`: the progress's step
RESOURCE_LINES = 10_000  # lines a page of memory://export holds at most (PAGE_BYTES ends most pages first)
PAGE_BYTES = 4 << 20  # ... and at most about this many bytes (a line with an image is up to 10.7 MB): a message fits


@dataclass
class TransferCounts:
    memories: int = 0
    links: int = 0
    skipped: int = 0
    re_embedded: int = 0


Item = tuple[Record, list[float] | None, bytes | None] | LinkRecord  # what an export's line imports


def _progress(label: str, total: int | None, shown: bool = True, unit: str = "lines") -> Progress:
    """The command's progress on stderr; not shown (written nowhere) when a tool runs the same code."""
    return Progress(label, total, unit, None if shown else io.StringIO())


def _header(store: ChromaStore) -> str:
    header = {
        "kind": "header",
        "format": FORMAT,
        "embedder": store.embedder.name,
        "dimension": store.embedder.dimension,
        "text": store.recipe,
    }
    return json.dumps(header)


def _memory_lines(got: dict[str, Any], images: ImageFiles) -> Iterator[str]:
    """One line per memory of a Chroma get() with documents, metadatas and embeddings."""
    for i, doc, meta, vec in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True):
        r = Record.from_chroma(i, doc, meta)
        data = images.read(r.id, r.image) if r.image else None
        line = {
            "kind": "memory",
            "id": r.id,
            "content": r.content,
            "memory_type": r.memory_type,
            "context": r.context,
            "tags": r.tags,
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "archived": r.archived,
            "last_recalled_at": r.last_recalled_at,
            "embedding": [round(float(x), 7) for x in vec],
        }
        if data is not None:
            line |= {"image_mime_type": r.image, "image_data": base64.b64encode(data).decode()}
        yield json.dumps(line, ensure_ascii=False)


def _link_line(lk: LinkRecord) -> str:
    return json.dumps({"kind": "link", **lk.metadata()}, ensure_ascii=False)


def export_memories(store: ChromaStore, out: IO[str], progress: bool = False) -> TransferCounts:
    counts = TransferCounts()
    store.open()  # the collection's embedder and recipe, not the configured ones
    out.write(_header(store) + "\n")
    with _progress("export", store.count() + store.links.count(), progress) as bar:
        images = ImageFiles(store.data_dir)
        for got in store.page(include=("documents", "metadatas", "embeddings")):
            for line in _memory_lines(got, images):
                out.write(line + "\n")
                counts.memories += 1
                bar.update()
        for lk in store.links.all():
            out.write(_link_line(lk) + "\n")
            counts.links += 1
            bar.update()
    return counts


def export_page(store: ChromaStore, offset: int, limit: int) -> tuple[list[str], int, int]:
    """Lines ``offset`` to ``offset + limit`` of ``export_memories``'s output (fewer once they pass ``PAGE_BYTES``,
    at least one), how many it has in all, and the line the page starts at: ``offset``, or a few lines earlier when
    memories or links were deleted since a page ended there (``store.paging``). Only those memories are read, so
    paging through a store reads it once, not once a page."""
    store.open()
    now = store.deletions()  # before the page is read: a deletion meanwhile is stepped back over next time
    start = store.page_ends.start(offset, now) if offset > 0 else 0
    memories = now.memories
    lines = [_header(store)] if start == 0 else []
    first, end = max(start - 1, 0), start + limit - 1  # memory indexes: line n is memory n - 1
    full = False
    if first < min(end, memories):
        include = ["documents", "metadatas", "embeddings"]
        got = store.memories.get(offset=first, limit=min(end, memories) - first, include=include)
        size = 0
        for line in _memory_lines(got, ImageFiles(store.data_dir)):
            if full := bool(lines) and size + len(line) > PAGE_BYTES:
                break
            lines.append(line)
            size += len(line)
    first, end = max(first - memories, 0), end - memories  # link indexes
    if end > first and not full:
        got = store.links.collection.get(offset=first, limit=end - first, include=["metadatas"])
        lines += [_link_line(LinkRecord.from_meta(meta)) for meta in got["metadatas"]]
    total = 1 + memories + store.links.count()
    if start + len(lines) < total:
        store.page_ends.ended(start + len(lines), now)
    return lines, total, start


def export_resource_page(store: ChromaStore, offset: int) -> str:
    """The page of ``memory://export`` from line ``offset`` (1: the first after the header; 0 means 1): the header,
    with ``offset``, ``next_offset`` (null on the last page) and ``total_lines`` added, then the export's lines from
    there, as many as a page of ``export_memories`` (up to about ``PAGE_BYTES``). Each page is an export file of its
    own, which ``import_memories`` takes whole."""
    lines, total, first = export_page(store, max(offset, 1), RESOURCE_LINES)
    end = first + len(lines)
    paging = {"offset": first, "next_offset": end if end < total else None, "total_lines": total}
    return "\n".join([json.dumps(json.loads(_header(store)) | paging), *lines]) + "\n"


def _lines(src: IO[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, line in enumerate(src, 1):
        if line.strip():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {n}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"line {n}: not a JSON object")
            yield n, obj


def _text(n: int, obj: dict[str, Any], *keys: str) -> None:
    """Each of ``keys`` a non-empty string: the ids a line names."""
    for key in keys:
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise ValueError(f"line {n}: {key} must be a non-empty string")


def _vector(n: int, obj: dict[str, Any], dimension: Any) -> list[float] | None:
    """A memory line's vector, checked against the header's dimension (it is stored as given); None without one."""
    if obj.get("embedding") is None or not isinstance(dimension, int):
        return None
    given = obj["embedding"]
    try:  # plain Python: numpy is loaded on the first store, not when the tools are listed
        vector = [float(x) for x in given if not isinstance(x, (bool, str))] if isinstance(given, list) else []
    except (TypeError, ValueError, OverflowError):
        vector = []
    finite = isinstance(given, list) and len(given) == len(vector) == dimension and all(map(math.isfinite, vector))
    if not finite:
        raise ValueError(f"line {n}: embedding must be {dimension} finite numbers (the header's dimension)")
    return vector


def _image(n: int, obj: dict[str, Any]) -> bytes | None:
    """A memory line's image, checked as store_memory checks one; None without one."""
    if "image_data" not in obj:
        return None
    if obj.get("image_mime_type") not in EXTENSIONS:
        raise ValueError(f"line {n}: image_mime_type must be one of {', '.join(EXTENSIONS)}")
    try:
        data = base64.b64decode(str(obj["image_data"]), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"line {n}: image_data is not base64") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise ValueError(f"line {n}: the image is over {MAX_IMAGE_BYTES} bytes")
    return data


def _memory(n: int, obj: dict[str, Any]) -> tuple[Record, bytes | None]:
    """A memory line's record, and its image's bytes (decoded once: they are what is written)."""
    if obj.get("memory_type") not in MEMORY_TYPES or not str(obj.get("content", "")).strip():
        raise ValueError(f"line {n}: a memory needs content and a memory_type in {', '.join(MEMORY_TYPES)}")
    _text(n, obj, "id")
    tags = obj.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValueError(f"line {n}: tags must be a list of strings")
    data = _image(n, obj)
    record = Record(
        str(obj["id"]),
        obj["content"],
        obj["memory_type"],
        str(obj.get("context", "")),
        tags,
        str(obj.get("created_at", "")),
        str(obj.get("updated_at", "")),
        archived=obj.get("archived") is True,
        last_recalled_at=str(obj.get("last_recalled_at") or ""),
        image=obj["image_mime_type"] if data is not None else "",
    )
    return record, data


def _items(src: IO[str], dimension_for: Callable[[dict[str, Any]], Any]) -> Iterator[Item]:
    """Each memory (its record, its vector checked against ``dimension_for(header)``, None to embed it again, and
    its image's bytes) and each link of an export, checked line by line: a bad line raises ``ValueError``."""
    dimension = None
    for n, obj in _lines(src):
        kind = obj.get("kind")
        if kind == "header":
            if obj.get("format") != FORMAT:
                raise ValueError(f"line {n}: unknown format {obj.get('format')!r} (expected {FORMAT})")
            dimension = dimension_for(obj)
        elif kind == "memory":
            record, data = _memory(n, obj)
            yield record, _vector(n, obj, dimension), data
        elif kind == "link":
            yield _link(n, obj)
        else:
            raise ValueError(f"line {n}: unknown kind {kind!r}")


def check(src: IO[str]) -> None:
    """Raise ``ValueError`` naming the first line ``import_memories`` would refuse (it reads no store)."""
    for _ in _items(src, lambda header: header.get("dimension")):
        pass


def _link(n: int, obj: dict[str, Any]) -> LinkRecord:
    _text(n, obj, "source_id", "target_id")
    if obj.get("relation_type") not in RELATION_TYPES:
        raise ValueError(f"line {n}: relation_type must be one of {', '.join(RELATION_TYPES)}")
    return LinkRecord.from_meta(obj)


def import_memories(store: ChromaStore, src: IO[str], progress: bool = False) -> TransferCounts:
    """Add the file's memories and links; ids already present are skipped (never overwritten).

    The whole file is read and checked first, so a bad line imports nothing.
    """

    def dimension_for(header: dict[str, Any]) -> int | None:
        """The store's, when its vectors were made as this store makes them (they are kept), else None."""
        store.open()
        same = header.get("embedder") == store.embedder.name and header.get("text", "content") == store.recipe
        return int(store.embedder.dimension) if same else None

    memories: list[tuple[Record, list[float] | None]] = []
    pictures: dict[str, bytes] = {}  # the memories' images, by id
    links: list[LinkRecord] = []
    for item in _items(src, dimension_for):
        if isinstance(item, LinkRecord):
            links.append(item)
            continue
        record, vector, data = item
        memories.append((record, vector))
        if data is not None:
            pictures[record.id] = data
    counts = TransferCounts()
    with _progress("import", len(memories) + len(links), progress) as bar:
        for start in range(0, len(memories), STEP):
            _flush(store, memories[start : start + STEP], pictures, counts, bar)
        for start in range(0, len(links), STEP):
            _put_links(store, links[start : start + STEP], counts)
            bar.update(len(links[start : start + STEP]))
    return counts


def _put_links(store: ChromaStore, links: list[LinkRecord], counts: TransferCounts) -> None:
    """Add the links not present yet: one already there keeps its reason, as a memory already there is kept."""
    with store.write_lock:  # beside a call that deletes a memory and its links
        present = set(store.links.collection.get(ids=[lk.id for lk in links], include=[])["ids"])
        for lk in links:
            if lk.id not in present:
                counts.links += store.links.put(lk)
                present.add(lk.id)


def _flush(
    store: ChromaStore,
    batch: list[tuple[Record, list[float] | None]],
    pictures: dict[str, bytes],
    counts: TransferCounts,
    bar: Progress,
) -> None:
    if not batch:
        return
    unique = list(dict((r.id, (r, v)) for r, v in batch).values())
    existing = set(store.memories.get(ids=[r.id for r, _ in unique], include=[])["ids"])
    made_by = store.embedder, store.recipe  # open since the header
    fresh = [(r, v) for r, v in unique if r.id not in existing]
    embedded = _embedded(store, [r for r, v in fresh if v is None])  # the slow part, before the lock
    with store.write_lock:  # a server's calls, and a reindex's switch, go on beside an import
        if store.embedder is not made_by[0] or store.recipe != made_by[1]:  # a reindex switched the collection
            fresh = [(r, None) for r, _ in fresh]
            embedded = _embedded(store, [r for r, _ in fresh])
        existing = set(store.memories.get(ids=[r.id for r, _ in fresh], include=[])["ids"]) if fresh else set()
        fresh = [(r, v) for r, v in fresh if r.id not in existing]  # stored by a call meanwhile
        images, pictured = ImageFiles(store.data_dir), [r for r, _ in fresh if r.id in pictures]
        for r in pictured:  # the files first: a memory never names an image that is not there
            images.put(r.id, pictures[r.id], r.image)
        try:
            store.add([r for r, _ in fresh], [v if v is not None else embedded[r.id] for r, v in fresh])
        except BaseException:
            for r in pictured:
                images.remove(r.id, r.image)
            raise
    counts.memories += len(fresh)
    counts.re_embedded += sum(1 for _, v in fresh if v is None)
    counts.skipped += len(batch) - len(fresh)
    bar.update(len(batch))


def _embedded(store: ChromaStore, records: list[Record]) -> dict[str, list[float]]:
    return dict(zip((r.id for r in records), store.embed_records(records), strict=True)) if records else {}


# -- the click group the core CLI mounts as `nexus memory` ---------------------------


def _configured_from(config_path: str | None) -> tuple[Any, Any]:
    from pydantic import ValidationError

    from nexus_core import load_config
    from nexus_memory.config import MemoryConfig

    config = load_config(config_path)
    try:
        return config, MemoryConfig.model_validate(config.table("memory").plugin_keys)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(["plugins", "memory", *map(str, err["loc"])])
        reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise click.ClickException(f"{config.source}: {key}: {reason}") from None


def _store_from_config(config_path: str | None) -> ChromaStore:
    """The store ``nexus serve`` would use with that config (the same file search, keys and data dir)."""
    from nexus_core import NexusError
    from nexus_memory.embed import configured

    try:
        config, cfg = _configured_from(config_path)
        embedder, recipe = configured(cfg.embedder), recipe_for(cfg.sentences)
        return ChromaStore(config.data_dir_for("memory"), cfg.collection, embedder, cfg.chroma_url, recipe=recipe)
    except (NexusError, EmbedderError) as exc:
        raise click.ClickException(str(exc)) from None


@contextmanager
def _clear_errors() -> Iterator[None]:
    """A bad file, a store another process holds, a full disk: one line on stderr, exit status 1."""
    try:
        yield
    except (ValueError, OSError, StoreError, EmbedderError) as exc:
        raise click.ClickException(str(exc)) from None


@click.group(name="memory", help="Export, import (JSON Lines) and reindex the memory plugin's memories.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None, help="nexus.toml to use.")
@click.option(
    "--standalone", is_flag=True, help="Open the store in this process, not through the shared server (none may run)."
)
@click.pass_context
def memory_cli(cctx: click.Context, config_path: str | None, standalone: bool) -> None:
    cctx.obj = Where(config_path, standalone)


@dataclass(frozen=True)
class Where:
    """Which store: the shared server's for this config (through a client session), or opened here."""

    config: str | None
    standalone: bool


@memory_cli.command("export", help="Write every memory and link to FILE ('-' for stdout).")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.pass_obj
def export_cmd(where: Where, file: str) -> None:
    if where.standalone:
        store = _store_from_config(where.config)
        with _clear_errors():
            counts = _write_export(file, lambda out: export_memories(store, out, progress=True))
    else:
        with _clear_errors():
            lines = _through_shared(where.config, _export_pages)
            counts = _write_export(file, lambda out: _counted(lines, out))
    click.echo(f"exported {counts.memories} memories and {counts.links} links", err=True)


def _write_export(file: str, write: Any) -> TransferCounts:
    """``write(out)`` into FILE whole or not at all, 0600 (it holds every memory), as the tool's export file."""
    if file == "-":
        return write(sys.stdout)
    target = Path(file)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)  # 0600, a name its own
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            counts = write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)  # a half-written export never replaces a good one
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return counts


def _counted(lines: list[str], out: IO[str]) -> TransferCounts:
    counts = TransferCounts()
    for line in lines:
        out.write(line + "\n")
        counts.memories += line.startswith('{"kind": "memory"')
        counts.links += line.startswith('{"kind": "link"')
    return counts


async def _export_pages(session: Any) -> list[str]:
    async def page(offset: int) -> dict[str, Any]:
        return _structured(await session.call_tool("export_memories", {"offset": offset, "limit": PAGE}))

    got = await page(0)
    lines: list[str] = got["lines"]
    with _progress("export", got["total_lines"] - 1) as bar:  # the header is not counted
        bar.update(len(lines) - 1)
        while got["next_offset"] is not None:
            got = await page(got["next_offset"])
            lines += got["lines"]
            bar.update(len(got["lines"]))
    return lines


@memory_cli.command("import", help="Add the memories and links of FILE ('-' for stdin); existing ids are kept.")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.pass_obj
def import_cmd(where: Where, file: str) -> None:
    with _clear_errors():
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        check(io.StringIO(text))  # a bad line imports nothing, whichever way the store is reached
        if where.standalone:
            counts = import_memories(_store_from_config(where.config), io.StringIO(text), progress=True)
        else:
            counts = _through_shared(where.config, lambda session: _import_batches(session, text.splitlines()))
    click.echo(
        f"imported {counts.memories} memories ({counts.re_embedded} re-embedded, {counts.skipped} already "
        f"present) and {counts.links} links",
        err=True,
    )


async def _import_batches(session: Any, lines: list[str]) -> TransferCounts:
    header = [line for line in lines if line.startswith('{"kind": "header"')][:1]
    body = [line for line in lines if line.strip() and not line.startswith('{"kind": "header"')]
    counts = TransferCounts()
    with _progress("import", len(body)) as bar:
        for batch in _batches(body):
            got = _structured(await session.call_tool("import_memories", {"lines": header + batch}))
            for field in ("memories", "re_embedded", "skipped", "links"):
                setattr(counts, field, getattr(counts, field) + got[field])
            bar.update(len(batch))
    return counts


def _batches(lines: list[str]) -> Iterator[list[str]]:
    """``lines`` in runs of at most ``PAGE`` lines and about ``PAGE_BYTES`` (one line at least)."""
    batch: list[str] = []
    size = 0
    for line in lines:
        if batch and (len(batch) == PAGE or size + len(line) > PAGE_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(line)
        size += len(line)
    if batch:
        yield batch


def _through_shared(config: str | None, work: Any) -> Any:
    """``work(session)`` in a client session of the shared server that owns the store."""
    import anyio

    from nexus_core import shared_session

    _configured_from(config)  # the config's own errors, named here: the server would only leave the plugin out

    async def run() -> Any:
        async with shared_session(config) as session:
            return await work(session)

    try:
        return anyio.run(run)
    except ValueError:
        raise
    except Exception as exc:  # the relay said why on stderr; a tool error says it here
        raise click.ClickException(_reason(exc)) from None


def _structured(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise ValueError(" ".join(getattr(block, "text", "") for block in result.content))
    return result.structured_content or {}


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return one_line(exc) or f"no answer from the shared server ({type(exc).__name__}; see above)"


@memory_cli.command(
    "reindex",
    help="Re-embed every memory with the configured embedder and text recipe (after changing [plugins.memory] "
    "embedder or sentences). The shared server for this config is stopped first (its clients' next call starts "
    "it again).",
)
@click.option("--force", is_flag=True, help="Re-embed even when the collection already uses them.")
@click.pass_obj
def reindex_cmd(where: Where, force: bool) -> None:
    if not where.standalone:
        from nexus_core import stop_shared_server

        if (pid := stop_shared_server(where.config)) is not None:
            click.echo(f"stopped the shared server (pid {pid}) to reindex its store", err=True)
    store = _store_from_config(where.config)
    target, recipe = store.embedder, store.recipe  # the configured ones: open() adopts the collection's
    with _clear_errors():
        store.open()
        before = f"{store.embedder.name} on {store.recipe}"
        try:
            done = reindex(store, target, recipe, progress=True, force=force)
        except (StoreError, EmbedderError):
            raise
        except Exception as exc:  # Chroma's own errors, on one line
            raise StoreError(f"reindex failed, the collection is unchanged: {one_line(exc)}") from exc
    if done:
        click.echo(f"re-embedded {done} memories: {before} -> {target.name} on {recipe}", err=True)
    else:
        click.echo(f"nothing to do: the collection already uses {target.name} on {recipe} (--force to redo)", err=True)
