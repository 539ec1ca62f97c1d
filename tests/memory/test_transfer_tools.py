"""002's export and import as tools, beyond pages in the call: a file inside the roots (writing one needs the
`export` category, off by default), the resource memory://export (pages a client follows) and its contents given back
to import_memories; and reindex_memories' work in the server: the writes made meanwhile caught up, a cancelled run
leaving the old collection as it was, batches of about a second. In process, through the official client; the
transports test drives the same tools over stdio and Streamable HTTP."""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import nexus_memory
from nexus_memory import transfer
from nexus_memory.embed import MiniLMEmbedder
from nexus_memory.reindex import Cancelled, Fresh, next_size, reindex_in_server
from nexus_memory.store import SENTENCES_RECIPE, TAGS_RECIPE
from tests.memory.conftest import service_in
from tests.memory.helpers import call, fails, store

pytestmark = pytest.mark.anyio


@pytest.fixture
def memory_in(make_host: Any, tmp_path: Path) -> Any:
    """A host of the memory plugin whose roots are ``tmp_path/work`` (MiniLM, one vector a memory)."""
    (tmp_path / "work").mkdir(exist_ok=True)

    def make(categories: list[str], **keys: Any) -> Any:
        table = {"embedder": "minilm", "sentences": False, "categories": categories, **keys}
        server = {"roots": [str(tmp_path / "work")]}
        return make_host({"memory": nexus_memory}, {"server": server, "plugins": {"memory": table}})

    return make


async def _fill(client: Client) -> list[str]:
    a = await store(client, "Postgres ECONNREFUSED: compose published 5433.", "billing", ["postgres"], "failure")
    b = await store(client, "Compose maps 5432:5432 now; fixed.", "billing", ["postgres", "docker"], "success")
    c = await store(client, "Keep money as integer cents, never floats.", "billing", [], "decision")
    await call(client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="the fix")
    return [a, b, c]


def _whole(host: Any) -> list[str]:
    out = io.StringIO()
    transfer.export_memories(service_in(host).store, out)
    return out.getvalue().splitlines()


async def test_writing_an_export_file_needs_the_export_category(memory_in, tmp_path: Path) -> None:
    async with Client(memory_in(["read", "write"]).server) as client:
        await _fill(client)
        error = await fails(client, "export_memories", path="memories.jsonl")
        assert "permission denied: " in error and "'export' category" in error, error
        assert 'add "export" to categories in [plugins.memory]' in error and "\n" not in error
        assert not (tmp_path / "work" / "memories.jsonl").exists()
        assert len((await call(client, "export_memories"))["lines"]) == 5  # pages stay read


async def test_an_export_file_is_written_whole_and_private_inside_the_roots(memory_in, tmp_path: Path) -> None:
    work = tmp_path / "work"
    host = memory_in(["read", "write", "export"])
    async with Client(host.server) as client:
        await _fill(client)
        (work / "old.jsonl").write_text("keep me\n")
        os.chmod(work / "old.jsonl", 0o644)
        written = await call(client, "export_memories", path="old.jsonl", overwrite=True)
        assert (written["path"], written["memories"], written["links"], written["total_lines"]) == (
            "old.jsonl",
            3,
            1,
            5,
        )
        text = (work / "old.jsonl").read_text()
        assert text.splitlines() == _whole(host) and written["bytes_written"] == len(text.encode())
        assert stat.S_IMODE((work / "old.jsonl").stat().st_mode) == 0o600  # it holds every memory
        assert "exists; pass overwrite=true" in await fails(client, "export_memories", path="old.jsonl")
        (work / ".git").mkdir()
        (work / "folder").mkdir()
        (work / "link").symlink_to(tmp_path)
        refused = {
            str(tmp_path / "outside.jsonl"): "outside the allowed roots",
            "link/escaped.jsonl": "symlink",
            ".env": "secret list",
            ".git/memories.jsonl": "git directory",
            "missing/memories.jsonl": "the folder of 'missing/memories.jsonl' does not exist",
            ".git": "is a git directory",
            "folder": "'folder' is a folder",
        }
        for path, reason in refused.items():
            assert reason in await fails(client, "export_memories", path=path), path
        assert sorted(p.name for p in work.iterdir()) == [".git", "folder", "link", "old.jsonl"]
        assert (
            not [*(work / ".git").iterdir(), *(work / "folder").iterdir()] and not (tmp_path / "outside.jsonl").exists()
        )


async def test_import_reads_an_export_file_inside_the_roots(
    memory_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    source = memory_in(["read", "write", "export"])
    async with Client(source.server) as client:
        await _fill(client)
        await call(client, "export_memories", path="backup.jsonl")
    target = memory_in(["read", "write"], collection="copy")
    async with Client(target.server) as client:
        got = await call(client, "import_memories", path="backup.jsonl")
        assert (got["memories"], got["links"], got["re_embedded"], got["skipped"]) == (3, 1, 0, 0)
        assert _whole(target)[1:] == _whole(source)[1:]
        lines = (work / "backup.jsonl").read_text().splitlines()
        (work / "bad.jsonl").write_text("\n".join([lines[0], lines[1], "{not json"]))
        (work / "bytes.jsonl").write_bytes(b"\xff\xfe")
        for args, reason in [
            ({"path": "nowhere.jsonl"}, "path 'nowhere.jsonl' does not exist"),
            ({"path": str(tmp_path / "elsewhere.jsonl")}, "outside the allowed roots"),
            ({"path": "bad.jsonl"}, "line 3: not JSON"),
            ({"path": "bytes.jsonl"}, "is not UTF-8 text"),
            ({"path": "backup.jsonl", "lines": lines}, "give one of lines, path or resource"),
            ({}, "give one of lines, path or resource"),
        ]:
            assert reason in await fails(client, "import_memories", **args), args
        assert "nothing was imported" in await fails(client, "import_memories", path="bad.jsonl")
        monkeypatch.setattr("nexus_memory.export_file.MAX_IMPORT_BYTES", 100)
        assert "import_memories reads at most 100" in await fails(client, "import_memories", path="backup.jsonl")
        assert (await call(client, "get_stats"))["total_memories"] == 3


async def test_the_export_resource_comes_in_pages_each_an_export_import_takes(
    memory_in, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = memory_in(["read", "write"])
    async with Client(source.server) as client:
        await _fill(client)
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert listed["memory://export"].mime_type == "application/jsonl"
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "memory://export{?offset}" in templates
        whole = await client.read_resource("memory://export")
        (only,) = whole.contents
        header = json.loads(only.text.splitlines()[0])
        assert (header["offset"], header["next_offset"], header["total_lines"]) == (1, None, 5)
        assert only.text.splitlines()[1:] == _whole(source)[1:]
        monkeypatch.setattr(transfer, "PAGE_BYTES", 100)  # under one memory's line: a page a line
        pages, uri = [], "memory://export"
        while uri:
            (contents,) = (await client.read_resource(uri)).contents
            pages.append(contents)
            paging = json.loads(contents.text.splitlines()[0])
            uri = f"memory://export?offset={paging['next_offset']}" if paging["next_offset"] is not None else ""
        assert [len(p.text.splitlines()) for p in pages] == [2, 2, 3]  # the header, then a memory (and the link)
        assert [line for p in pages for line in p.text.splitlines()[1:]] == _whole(source)[1:]
        for bad in ("-1", "two"):
            with pytest.raises(MCPError, match=f"offset must be a whole number, 0 or more .*not '{bad}'"):
                await client.read_resource(f"memory://export?offset={bad}")
    target = memory_in(["read", "write"], collection="copy")
    async with Client(target.server) as client:
        given = [p.model_dump(by_alias=True, mode="json", exclude_none=True) for p in pages]
        first = await call(client, "import_memories", resource=given[0])
        blob = {"uri": given[1]["uri"], "blob": base64.b64encode(given[1]["text"].encode()).decode()}
        second = await call(client, "import_memories", resource=blob)
        embedded = [
            await call(client, "import_memories", resource={"type": "resource", "resource": g}) for g in given[2:]
        ]
        assert [r["memories"] for r in [first, second, *embedded]] == [1, 1, 1]
        assert embedded[-1]["links"] == 1 and _whole(target)[1:] == _whole(source)[1:]
        assert "neither text nor blob" in await fails(client, "import_memories", resource={"uri": "memory://export"})


class _Meanwhile(MiniLMEmbedder):
    """MiniLM that runs ``meanwhile[n]`` before its n-th batch: the calls a server serves while it reindexes."""

    def __init__(self, *meanwhile: Any) -> None:
        super().__init__()
        self.meanwhile, self.batches = meanwhile, 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.batches < len(self.meanwhile):
            self.meanwhile[self.batches]()
        self.batches += 1
        return super().embed(texts)


async def test_reindex_in_the_server_catches_up_on_what_was_written_meanwhile(memory_in) -> None:
    host = memory_in(["read", "write", "delete"])
    async with Client(host.server) as client:
        a, b, c = await _fill(client)
        service = service_in(host)
        added: list[str] = []

        def new(content: str) -> None:
            added.append(service.store_memory(content, "cache", [], "insight").memory_id)

        def meanwhile() -> None:  # in the reindex's thread, the write lock free: as a call in another thread
            new("Redis evicts keys under maxmemory: set allkeys-lru.")
            service.update(a, "Postgres refused connections: compose published 5433, not 5432.", None, None)
            service.update(b, None, None, None, archived=True)
            service.delete(c)

        locked: list[bool] = []

        def held_elsewhere() -> None:  # the last catch-up's batch: a call's write waits for the switch
            def try_lock() -> None:
                got = service.store.write_lock.acquire(blocking=False)
                locked.append(not got)
                if got:
                    service.store.write_lock.release()

            other = threading.Thread(target=try_lock)
            other.start()
            other.join()

        # the second batch is the first catch-up's: what is written then is caught up holding the lock (the third)
        target = _Meanwhile(meanwhile, lambda: new("Memcached drops keys over 1 MB: split the value."), held_elsewhere)
        memories, done = reindex_in_server(service.store, target, SENTENCES_RECIPE, False, threading.Event())
        store_ = service.store
        assert (memories, store_.embedder, store_.recipe) == (4, target, SENTENCES_RECIPE)
        assert done == 3 + 2 + 1 and locked == [True]  # the three, the new and the changed one, then the last one
        names = {col.name for col in store_.client.list_collections()}
        assert names == {"nexus_memories", "nexus_memories_links", "nexus_memories_parts"}
        got = store_.get([a, b, c, *added])
        assert set(got) == {a, b, *added} and got[b].archived and "not 5432" in got[a].content
        expected = MiniLMEmbedder().embed([got[a].text(SENTENCES_RECIPE)])[0]
        assert store_.vectors([a])[a] == pytest.approx(expected, abs=1e-5)
        assert not store_.parts.of([c])["ids"] and len(store_.parts.of([a])["ids"]) == 2  # a's two clauses
        hit = await call(client, "recall_memories", query="which port does compose publish postgres on", limit=1)
        assert hit["memories"][0]["id"] == a
        hit = await call(client, "recall_memories", query="memcached value size limit", limit=1)
        assert hit["memories"][0]["id"] == added[1]
        assert (await call(client, "get_stats"))["embedded_text"] == SENTENCES_RECIPE


class _Held(MiniLMEmbedder):
    """Holds its first embedding until ``go`` (a call that embedded before a reindex's switch and goes on after),
    and gives a vector MiniLM never would, of ``dimension``."""

    def __init__(self, dimension: int = 384) -> None:
        super().__init__()
        self.entered, self.go, self.size = threading.Event(), threading.Event(), dimension

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.entered.set()
        assert self.go.wait(30)
        return [[1.0] + [0.0] * (self.size - 1) for _ in texts]


def _across_a_switch(service: Any, held: _Held, call: Any) -> list[Any]:
    """``call()`` in a thread, held at its first embedding while a reindex switches the collection; its answer."""
    service.store.embedder, answer = held, []  # the collection's embedder, as far as the store knows ("minilm")
    thread = threading.Thread(target=lambda: answer.append(call()))
    thread.start()
    try:
        assert held.entered.wait(30)
        reindex_in_server(service.store, MiniLMEmbedder(), TAGS_RECIPE, True, threading.Event())
    finally:
        held.go.set()
        thread.join(30)
    return answer


async def test_a_store_that_embedded_before_the_switch_embeds_again_after(memory_in) -> None:
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        await _fill(client)
        service, content = service_in(host), "Nginx 502 after deploys: add readiness checks."
        (stored,) = _across_a_switch(
            service, _Held(), lambda: service.store_memory(content, "gateway", ["nginx"], "success")
        )
        mid = stored.memory_id
        expected = MiniLMEmbedder().embed([service.store.get([mid])[mid].text(TAGS_RECIPE)])[0]
        assert service.store.vectors([mid])[mid] == pytest.approx(expected, abs=1e-5)


async def test_a_recall_that_embedded_its_query_before_the_switch_is_asked_again(memory_in) -> None:
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        ids = await _fill(client)
        service = service_in(host)
        for held in (_Held(), _Held(dimension=8)):  # the same dimension (ranked wrong), another (refused)
            (result,) = _across_a_switch(
                service, held, lambda: service.recall("money as integer cents", 1, None, None, None)
            )
            assert result.memories[0].id == ids[2] and result.memories[0].similarity > 0.3, result


async def test_a_cancelled_reindex_leaves_the_collection_and_recall_as_they_were(memory_in) -> None:
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        ids = await _fill(client)
        service, stop = service_in(host), threading.Event()
        before = service.store.vectors(ids)
        with pytest.raises(Cancelled, match="cancelled: the collection is unchanged"):
            reindex_in_server(service.store, _Meanwhile(stop.set), SENTENCES_RECIPE, True, stop)
        names = {col.name for col in service.store.client.list_collections()}
        assert names == {"nexus_memories", "nexus_memories_links"}
        assert service.store.recipe == TAGS_RECIPE and service.store.vectors(ids) == before
        hit = await call(client, "recall_memories", query="integer cents for money", limit=1)
        assert hit["memories"][0]["id"] == ids[2]
        assert (await call(client, "get_stats"))["embedded_text"] == TAGS_RECIPE


class _Slower(MiniLMEmbedder):
    name = "minilm-slower"  # a collection it made says so

    def embed(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.3 * len(texts))
        return super().embed(texts)


async def test_a_reindex_its_client_cancels_stops_and_leaves_the_collection(
    memory_in, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("nexus_memory.tools.reindex.configured", lambda name: _Slower())
    host = memory_in(["read", "write", "reindex"])
    async with Client(host.server) as client:
        await _fill(client)
        rt = nexus_memory.runtime_of(host.plugins["memory"].ctx)
        with anyio.move_on_after(0.5):  # the client gives up: it sends notifications/cancelled
            answer = await client.call_tool("reindex_memories", {"force": True})
            raise AssertionError(f"the reindex answered before it was cancelled: {answer}")
        with anyio.fail_after(10):
            while rt.reindexing.locked():  # the worker stops at its next batch
                await anyio.sleep(0.05)
        names = {col.name for col in service_in(host).store.client.list_collections()}
        assert names == {"nexus_memories", "nexus_memories_links"}
        assert (await call(client, "get_stats"))["embedder"] == "minilm"


class _Slow(MiniLMEmbedder):
    def embed(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.004 * len(texts))
        return super().embed(texts)


class _Bar:
    def __init__(self) -> None:
        self.steps: list[int] = []

    def update(self, n: float = 1) -> None:
        self.steps.append(int(n))


async def test_a_reindex_moves_every_50_memories_or_every_second(memory_in, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (next_size(50, 0.5), next_size(50, 5.0), next_size(3, 0.0), next_size(1, 60.0)) == (50, 10, 50, 1)
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        header = json.loads((await call(client, "export_memories"))["lines"][0])
        note = {"kind": "memory", "memory_type": "note", "context": "ci", "tags": []}
        unit = [1.0] + [0.0] * 383  # a vector of its own: the import embeds nothing
        lines = [
            json.dumps(note | {"id": f"m{i}", "content": f"Build {i} failed at step {i % 5}.", "embedding": unit})
            for i in range(90)
        ]
        assert (await call(client, "import_memories", lines=[json.dumps(header), *lines]))["memories"] == 90
        monkeypatch.setattr("nexus_memory.reindex.SECOND", 0.1)  # a "second" of 0.1 s: batches of ~25 at 4 ms each
        store_, bar = service_in(host).store, _Bar()
        fresh = Fresh(store_, _Slow(), TAGS_RECIPE)
        try:
            fresh.fill(bar)  # type: ignore[arg-type]
        finally:
            fresh.drop()
    assert sum(bar.steps) == 90 and bar.steps[0] == 50 and max(bar.steps[1:]) < 40, bar.steps


@pytest.mark.parametrize("renames", [0, 1, 2, 3, 4])
async def test_a_reindex_stopped_anywhere_is_undone_or_finished_when_the_store_opens_again(
    memory_in, renames: int
) -> None:
    """A server killed (or a disk full) in a reindex: its new collections filled, then ``renames`` of the switch's
    four renames done. The next open serves every memory, from the old collection (before the new one took the
    name) or the new one, and the next reindex runs, deleting what was left."""
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        ids = await _fill(client)
    store = service_in(host).store
    fresh = Fresh(store, MiniLMEmbedder(), SENTENCES_RECIPE)
    fresh.fill(transfer._progress("reindex", None, shown=False))
    names = fresh.names
    store.client.get_or_create_collection(names.parts, embedding_function=None)  # the live sentence vectors
    moves = [(names.memories, names.old[0]), (names.fresh[0], names.memories)]
    moves += [(names.parts, names.old[1]), (names.fresh[1], names.parts)]
    for name, to in moves[:renames]:
        store.client.get_collection(name, embedding_function=None).modify(name=to)
    nexus_memory.runtime_of(host.plugins["memory"].ctx).close()  # the process ends there
    again = memory_in(["read", "write", "reindex"])
    async with Client(again.server) as client:
        stats = await call(client, "get_stats")
        assert stats["total_memories"] == 3
        assert stats["embedded_text"] == (SENTENCES_RECIPE if renames >= 2 else TAGS_RECIPE)
        hit = await call(client, "recall_memories", query="integer cents for money", limit=1)
        assert hit["memories"][0]["id"] == ids[2]
        assert (await call(client, "reindex_memories", force=True))["memories"] == 3
        cols = {col.name for col in service_in(again).store.client.list_collections()}
        assert cols == {names.memories, f"{names.memories}_links", names.parts}


async def test_a_reindex_runs_again_beside_what_a_failed_one_could_not_delete(memory_in) -> None:
    """A reindex that failed on a full disk could not delete its new collection either: the next one, in the same
    server once there is room, deletes it and runs, instead of refusing for good."""
    host = memory_in(["read", "write", "reindex"])
    async with Client(host.server) as client:
        await _fill(client)
        store = service_in(host).store
        store.client.create_collection("nexus_memories_reindex", embedding_function=None)
        assert (await call(client, "reindex_memories", force=True))["memories"] == 3
        cols = {col.name for col in store.client.list_collections()}
        assert cols == {"nexus_memories", "nexus_memories_links", "nexus_memories_parts"}


async def test_a_bad_line_anywhere_in_an_import_imports_nothing(memory_in, tmp_path: Path) -> None:
    """A line the store itself would refuse (a vector of another length) after the first batches, or one whose
    fields are of the wrong kind: a one-line error naming it, and not one memory or link imported."""
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        await _fill(client)
        header, memory = _whole(host)[:2]
        copies = [json.dumps(json.loads(memory) | {"id": f"copy-{n}"}) for n in range(120)]
        link = {"kind": "link", "source_id": "copy-1", "target_id": "copy-2", "relation_type": "related"}
        bad = {
            "embedding must be 384 finite numbers": json.loads(copies[110]) | {"embedding": [0.1, 0.2]},
            "line 112: embedding must be": json.loads(copies[110]) | {"embedding": ["a"] * 384},
            "line 112: id must be a non-empty string": {k: v for k, v in json.loads(copies[110]).items() if k != "id"},
            "line 112: tags must be a list of strings": json.loads(copies[110]) | {"tags": "postgres"},
            "line 112: not a JSON object": [1, 2],
            "line 112: target_id must be a non-empty string": link | {"target_id": None},
        }
        for reason, line in bad.items():
            lines = [header, *copies[:110], json.dumps(line), *copies[111:], json.dumps(link)]
            (tmp_path / "work" / "bad.jsonl").write_text("\n".join(lines) + "\n")
            for args in ({"lines": lines}, {"path": "bad.jsonl"}):
                error = await fails(client, "import_memories", **args)
                assert reason in error and "nothing was imported" in error and "\n" not in error, error
            assert (await call(client, "get_stats"))["total_memories"] == 3
            assert (await call(client, "get_stats"))["total_links"] == 1
        with pytest.raises(ValueError, match="line 112: embedding must be 384"):  # what `nexus memory import` checks
            transfer.check(
                io.StringIO("\n".join([header, *copies[:110], json.dumps(bad["line 112: embedding must be"])]))
            )


async def test_an_import_keeps_a_link_already_there_as_it_is(memory_in) -> None:
    host = memory_in(["read", "write"])
    async with Client(host.server) as client:
        a, b, _ = await _fill(client)
        exported = _whole(host)
        await call(client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="retold")
        assert (await call(client, "import_memories", lines=exported))["links"] == 0
        (link,) = (await call(client, "get_memory_links", memory_id=b))["links"]
        assert link["reason"] == "retold"


async def test_an_export_file_on_a_full_disk_says_so_and_leaves_the_old_one(memory_in, tmp_path: Path) -> None:
    """The export's own disk is full (a real 256 KB tmpfs, root only): the error names the file and the reason,
    not the store, the file there is as it was, and nothing is left beside it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    full = tmp_path / "work" / "full"
    full.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(full)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (full / "memories.jsonl").write_text("the last export\n")
        async with Client(memory_in(["read", "write", "export"]).server) as client:
            await call(client, "import_memories", lines=_many(60))
            error = await fails(client, "export_memories", path="full/memories.jsonl", overwrite=True)
            assert "'full/memories.jsonl' could not be written: No space left on device" in error, error
            assert error.endswith("; the file there is unchanged") and "store" not in error, error
            assert (
                os.listdir(full) == ["memories.jsonl"] and (full / "memories.jsonl").read_text() == "the last export\n"
            )
            assert (await call(client, "get_stats"))["total_memories"] == 60
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)


def _bulk(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012d}"


def _many(n: int) -> list[str]:
    """``n`` memory lines without vectors (embedded as they are imported)."""
    line = {"kind": "memory", "memory_type": "note", "context": "bulk", "tags": ["bulk"]}
    return [
        json.dumps(line | {"id": _bulk(i), "content": f"Bulk memory {i}: a timeout in service {i}."}) for i in range(n)
    ]


async def _tool_page(client: Client, offset: int) -> tuple[list[str], int | None]:
    page = await call(client, "export_memories", offset=offset, limit=4)
    return page["lines"], page["next_offset"]


async def _resource_page(client: Client, offset: int) -> tuple[list[str], int | None]:
    header, *lines = (await client.read_resource(f"memory://export?offset={offset}")).contents[0].text.splitlines()
    return lines, json.loads(header)["next_offset"]


@pytest.mark.parametrize("page", [_tool_page, _resource_page])
async def test_pages_read_while_memories_and_links_are_deleted_skip_none(
    memory_in, monkeypatch: pytest.MonkeyPatch, page: Any
) -> None:
    """Another client deletes memories and links the export has passed, between its pages: every memory and link
    still there at the end is in one of the pages (some lines come twice; an import skips them)."""
    monkeypatch.setattr(transfer, "RESOURCE_LINES", 4)
    host = memory_in(["read", "write", "delete"])
    async with Client(host.server) as client:
        await call(client, "import_memories", lines=_many(12))
        ids = [_bulk(i) for i in range(12)]
        for a, b in itertools.pairwise(ids[6:]):
            await call(client, "link_memories", source_id=a, target_id=b, relation_type="extends")
        seen: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            lines, offset = await page(client, offset)
            seen += [json.loads(line) for line in lines]
            passed = [s for s in seen if s["kind"] == "memory" and s["id"] in ids]
            if passed:  # a memory already exported, before where the next page starts
                ids.remove(passed[0]["id"])
                await call(client, "delete_memory", memory_id=passed[0]["id"])
            kept = _links(_whole(host))
            if passed_links := [link for link in _links(seen) if link in kept][: len(kept) - 1]:  # one stays
                await call(client, "unlink_memories", source_id=passed_links[0][0], target_id=passed_links[0][1])
        left = {line["id"] for line in map(json.loads, _whole(host)) if line["kind"] == "memory"}
        assert left == set(ids) and left <= {s["id"] for s in seen if s["kind"] == "memory"}
        assert _links(_whole(host)) and set(_links(_whole(host))) <= set(_links(seen))


def _links(lines: list[Any]) -> list[tuple[str, str]]:
    """The (source, target) of each link among export lines (as text or read)."""
    read = [json.loads(line) if isinstance(line, str) else line for line in lines]
    return [(s["source_id"], s["target_id"]) for s in read if s["kind"] == "link"]


async def test_pages_read_across_a_reindex_start_over(memory_in) -> None:
    """A reindex rewrites the collection, the memories it caught up at its end: the next page starts at line 1."""
    host = memory_in(["read", "write", "reindex"])
    async with Client(host.server) as client:
        await call(client, "import_memories", lines=_many(6))
        first = await call(client, "export_memories", limit=3)
        await call(client, "reindex_memories", force=True)
        again = await call(client, "export_memories", offset=first["next_offset"], limit=3)
        assert (first["next_offset"], again["offset"], again["next_offset"]) == (3, 1, 4)
