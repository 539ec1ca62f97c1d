"""The JSONL folder: concurrent writers, damaged lines, and an index that follows the files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mcp import Client

from nexus_core import on_local_fs
from nexus_graph import storage
from nexus_graph.graph import DEFAULT_CATEGORIES, GraphStore
from nexus_graph.watch import Watch
from tests.graph.helpers import add, call, lines, write_lines

pytestmark = pytest.mark.anyio

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from nexus_graph.graph import DEFAULT_CATEGORIES, GraphStore

    root, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = GraphStore(root, DEFAULT_CATEGORIES)
    while not (root / "go").exists():  # start together
        time.sleep(0.001)
    for i in range(count):
        store.add_entity("concepts", f"{name}-{i}", "concept", f"{name} number {i}", "x" * (i % 7) * 300)
        store.connect(f"{name}-{i}", "part_of", "hub", f"written by {name}")
    """
)


def test_two_processes_append_concurrently_without_losing_or_mixing_lines(tmp_path: Path) -> None:
    root, count = tmp_path / "graph", 150
    GraphStore(root, DEFAULT_CATEGORIES).add_entity("concepts", "hub", "concept", "Hub")
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(root), name, str(count)], stderr=subprocess.PIPE)
        for name in ("alpha", "beta")
    ]
    (root / "go").touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    entity_lines = (root / "concepts" / "entities.jsonl").read_text().split("\n")
    assert entity_lines[-1] == ""  # ends with a newline
    records = [json.loads(line) for line in entity_lines[:-1]]  # every line is one whole record
    assert len(records) == 2 * count + 1
    assert len({r["id"] for r in records}) == 2 * count + 1
    relations = [r for path in (root / "relations").glob("*/*.jsonl") for r in lines(path)]
    assert len(relations) == 2 * count and {r["dst"] for r in relations} == {"hub"}
    with GraphStore(root, DEFAULT_CATEGORIES).reading() as index:
        assert len(index.entities) == 2 * count + 1 and len(index.relations) == 2 * count


async def test_a_truncated_last_line_is_reported_skipped_and_not_glued_to_the_next(graph_host, graph_dir: Path) -> None:
    entities = graph_dir / "concepts" / "entities.jsonl"
    good = {"id": "good", "type": "concept", "name": "Good", "created": "2026-01-01T00:00:00Z"}
    write_lines(entities, [good, '{"id": "cut", "type": "concept", "na'])
    async with Client(graph_host().server) as client:
        report = await call(client, "get_entropy_report")
        (problem,) = report["corrupt_lines"]["lines"]
        assert problem["file"] == "concepts/entities.jsonl" and problem["line"] == 2
        assert "truncated" in problem["error"]
        assert (await call(client, "get_entity", id="good"))["entity"]["name"] == "Good"
        await add(client, "after", "After the cut")  # the next append starts on a fresh line
        assert (await call(client, "get_entity", id="after"))["entity"]["name"] == "After the cut"
        report = await call(client, "get_entropy_report")
        (problem,) = report["corrupt_lines"]["lines"]
        assert problem["line"] == 2 and "not valid JSON" in problem["error"]
    raw = entities.read_text().splitlines()
    assert raw[1] == '{"id": "cut", "type": "concept", "na' and json.loads(raw[2])["id"] == "after"


async def test_corrupt_and_invalid_lines_are_reported_with_file_and_line(graph_host, graph_dir: Path) -> None:
    t = "2026-01-01T00:00:00Z"
    write_lines(
        graph_dir / "people" / "entities.jsonl",
        [
            {"id": "ada", "type": "person", "name": "Ada", "created": t},
            "{broken\n",
            {"id": "Bad Id", "type": "person", "name": "X", "created": t},
            {"id": "ada", "type": "person", "name": "Ada twice", "created": t},
            {"id": "bob", "type": "person", "name": "Bob", "created": "not a date"},
            {"id": "cy", "type": "person", "name": "Cy", "created": t},
        ],
    )
    write_lines(graph_dir / "relations" / "2026" / "01.jsonl", [{"src": "ada", "dst": "cy", "created": t}])
    async with Client(graph_host().server) as client:
        found = await call(client, "search_knowledge", query="cy")
        assert [h["id"] for h in found["hits"]] == ["cy"]
        report = await call(client, "get_entropy_report")
    problems = {(p["file"], p["line"]): p["error"] for p in report["corrupt_lines"]["lines"]}
    assert set(problems) == {
        ("people/entities.jsonl", 2),
        ("people/entities.jsonl", 3),
        ("people/entities.jsonl", 4),
        ("people/entities.jsonl", 5),
        ("relations/2026/01.jsonl", 1),
    }
    assert "duplicate id 'ada'" in problems[("people/entities.jsonl", 4)]
    assert report["entities"] == 2


async def test_the_index_follows_appends_by_other_processes(graph_host, graph_dir: Path) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "first", "First")
        assert (await call(client, "search_knowledge", query="zebra"))["hits"] == []
        write_lines(
            graph_dir / "concepts" / "entities.jsonl",
            [{"id": "zebra", "type": "animal", "name": "Zebra", "created": "2026-01-02T00:00:00Z"}],
        )
        write_lines(
            graph_dir / "relations" / "2025" / "12.jsonl",
            [{"src": "zebra", "rel": "follows", "dst": "first", "created": "2025-12-01T00:00:00Z"}],
        )
        assert (await call(client, "search_knowledge", query="zebra"))["hits"][0]["id"] == "zebra"
        assert (await call(client, "get_entity", id="first"))["incoming"][0]["src"] == "zebra"
        # history rewritten under us (not append-only): the index is rebuilt, not patched
        entities = graph_dir / "concepts" / "entities.jsonl"
        entities.write_text(entities.read_text().splitlines()[1] + "\n")
        result = await client.call_tool("get_entity", {"id": "first"})
        assert result.is_error and "does not exist" in result.content[0].text
        assert (await call(client, "get_entity", id="zebra"))["entity"]["type"] == "animal"


async def test_a_folder_that_is_not_a_category_is_reported_not_loaded(graph_host, graph_dir: Path) -> None:
    write_lines(
        graph_dir / "misc" / "entities.jsonl",
        [{"id": "stray", "type": "x", "name": "Stray", "created": "2026-01-01T00:00:00Z"}],
    )
    async with Client(graph_host().server) as client:
        report = await call(client, "get_entropy_report")
        assert report["entities"] == 0
        assert report["corrupt_lines"]["lines"][0]["file"] == "misc/entities.jsonl"
        assert "not a configured category" in report["corrupt_lines"]["lines"][0]["error"]
    async with Client(graph_host(extra_categories=["misc"]).server) as client:
        assert (await call(client, "get_entity", id="stray"))["entity"]["category"] == "misc"


def test_a_short_write_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    from nexus_graph.records import GraphError

    path = tmp_path / "concepts" / "entities.jsonl"
    storage.append_lines(path, [storage.dumps({"id": "a"})])
    before = path.read_bytes()
    with pytest.raises(GraphError, match="nothing was written"):
        _fill_disk(path)
    assert path.read_bytes() == before


def _fill_disk(path: Path) -> None:
    """Append with a file size limit the write cannot fit under (RLIMIT_FSIZE), as a full disk would."""
    import resource
    import signal

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 10, hard))
    try:
        storage.append_lines(path, [storage.dumps({"id": "b", "desc": "x" * 100})])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def backdate(root: Path) -> None:
    """Every folder under the graph an hour old, so its listing is reused (see storage.SETTLED_NS)."""
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (time.time() - 3600, time.time() - 3600))


async def test_new_files_by_other_writers_are_found_after_a_reused_listing(graph_host, graph_dir: Path) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "first", "First")
        write_lines(
            graph_dir / "relations" / "2025" / "11.jsonl",
            [{"src": "first", "rel": "follows", "dst": "first", "created": "2025-11-01T00:00:00Z"}],
        )
        backdate(graph_dir)
        assert (await call(client, "search_knowledge", query="zebra"))["hits"] == []
        record = {"id": "zebra", "type": "animal", "name": "Zebra", "created": "2026-01-02T00:00:00Z"}
        write_lines(graph_dir / "people" / "entities.jsonl", [record])  # a category folder that was not there
        assert (await call(client, "search_knowledge", query="zebra"))["hits"][0]["id"] == "zebra"
        backdate(graph_dir)
        await call(client, "search_knowledge", query="zebra")
        relation = {"src": "zebra", "rel": "follows", "dst": "first", "created": "2025-12-01T00:00:00Z"}
        write_lines(graph_dir / "relations" / "2025" / "12.jsonl", [relation])  # a new month in a known year
        assert (await call(client, "get_entity", id="first"))["incoming"][-1]["src"] == "zebra"
        (graph_dir / "projects").mkdir()
        backdate(graph_dir)
        await call(client, "search_knowledge", query="zebra")
        later = {"id": "okapi", "type": "animal", "name": "Okapi", "created": "2026-01-03T00:00:00Z"}
        write_lines(graph_dir / "projects" / "entities.jsonl", [later])  # a new file in a known folder
        assert (await call(client, "search_knowledge", query="okapi"))["hits"][0]["id"] == "okapi"


HOLDER = textwrap.dedent(
    """
    import fcntl, json, os, sys, time
    root = sys.argv[1]
    fd = os.open(sys.argv[2], os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(0.5)
    record = {"id": "okapi", "type": "animal", "name": "Okapi", "created": "2026-01-03T00:00:00Z"}
    with open(os.path.join(root, "concepts", "entities.jsonl"), "a") as f:
        f.write(json.dumps(record) + "\\n")
    """
)


async def test_searches_of_a_settled_folder_see_appends_and_wait_for_a_writer(graph_host, graph_dir: Path) -> None:
    # A settled folder is searched right on the event loop when nothing changed: an append to a known file
    # (no folder changes), or a writer holding the lock, must send the search through the full refresh.
    async with Client(graph_host().server) as client:
        await add(client, "first", "First")
        backdate(graph_dir)
        for _ in range(2):
            assert (await call(client, "search_knowledge", query="zebra"))["hits"] == []
        record = {"id": "zebra", "type": "animal", "name": "Zebra", "created": "2026-01-02T00:00:00Z"}
        write_lines(graph_dir / "concepts" / "entities.jsonl", [record])
        assert (await call(client, "search_knowledge", query="zebra"))["hits"][0]["id"] == "zebra"
        assert (await call(client, "search_knowledge", query="okapi"))["hits"] == []
        args = [sys.executable, "-c", HOLDER, str(graph_dir), str(storage.lock_file(graph_dir))]
        holder = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            assert (await call(client, "search_knowledge", query="okapi"))["hits"][0]["id"] == "okapi"
        finally:
            holder.wait(timeout=30)


def test_the_test_folder_counts_as_local(tmp_path: Path) -> None:
    assert on_local_fs(os.path.realpath(tmp_path))  # so the searches of these tests run on the event loop


def test_the_lock_folders_are_made_once_and_again_when_removed(tmp_path: Path) -> None:
    root = tmp_path / "graph"
    with storage.locked(root, exclusive=False) as held:
        assert held and root.is_dir()
    lock = storage.lock_file(root)
    run = lock.parent.parent
    run.chmod(0o755)  # checked (and made 0700) the first time only: later reads do not touch the folders
    with storage.locked(root, exclusive=False) as held:
        assert held
    assert run.stat().st_mode & 0o777 == 0o755
    run.chmod(0o700)
    lock.unlink()
    lock.parent.rmdir()  # removed meanwhile (a cleaner of old files): made again, the lock still taken
    with storage.locked(root, exclusive=True) as held:
        assert held and lock.exists()


def watched_store(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GraphStore, list[int]]:
    """A store read once over a settled folder (so its files are watched), and a list that grows by one at each
    check of every file's stat (``GraphStore._fresh``) from then on."""
    store = GraphStore(root, DEFAULT_CATEGORIES)
    store.add_entity("concepts", "first", "concept", "First")
    backdate(root)
    with store.reading():
        pass
    checks: list[int] = []
    fresh = GraphStore._fresh
    monkeypatch.setattr(GraphStore, "_fresh", lambda self: checks.append(1) or fresh(self))
    return store, checks


def count(index) -> int:
    return len(index.entities)


ZEBRA = {"id": "zebra", "type": "animal", "name": "Zebra", "created": "2026-01-02T00:00:00Z"}


def test_a_settled_graph_is_watched_not_stat_ed_on_each_search(tmp_path: Path, monkeypatch) -> None:
    store, checks = watched_store(tmp_path / "graph", monkeypatch)
    assert store._watch.available  # Linux: what the searches on the event loop rely on
    for _ in range(3):
        assert store.read_now(count) == 1
    assert checks == []  # the watch said nothing changed: no stat of every file
    write_lines(tmp_path / "graph" / "concepts" / "entities.jsonl", [ZEBRA])
    assert store.read_now(count) is None  # changed: the caller reads it in full, in a thread
    with store.reading() as index:
        assert "zebra" in index.entities
    assert store.read_now(count) == 2


def test_a_write_through_another_name_of_a_graph_file_is_seen(tmp_path: Path, monkeypatch) -> None:
    store, _ = watched_store(tmp_path / "graph", monkeypatch)
    other = tmp_path / "elsewhere.jsonl"
    os.link(tmp_path / "graph" / "concepts" / "entities.jsonl", other)  # a hard link outside the graph folder
    with store.reading():  # (one more link is a change of the file: read again, watched again)
        pass
    assert store.read_now(count) == 1
    write_lines(other, [ZEBRA])
    assert store.read_now(count) is None


def test_a_graph_folder_pointed_elsewhere_is_read_anew(tmp_path: Path, monkeypatch) -> None:
    """The graph folder's path through a symlink that now leads to another folder: no event, but not the same."""
    GraphStore(tmp_path / "b", DEFAULT_CATEGORIES).add_entity("concepts", "other", "concept", "Other")
    GraphStore(tmp_path / "b", DEFAULT_CATEGORIES).add_entity("concepts", "more", "concept", "More")
    (tmp_path / "a").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    store, _ = watched_store(tmp_path / "link", monkeypatch)
    backdate(tmp_path / "b")
    assert store.read_now(count) == 1
    (tmp_path / "next").symlink_to(tmp_path / "b")
    (tmp_path / "next").replace(tmp_path / "link")
    assert store.read_now(count) is None
    with store.reading() as index:
        assert set(index.entities) == {"other", "more"}


def test_a_change_between_the_read_and_the_watch_is_not_missed(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "graph"
    store = GraphStore(root, DEFAULT_CATEGORIES)
    store.add_entity("concepts", "first", "concept", "First")
    backdate(root)
    arm = Watch.arm

    def late(self, folders, files):  # another process appends after the read, before the watch begins
        write_lines(root / "concepts" / "entities.jsonl", [ZEBRA])
        monkeypatch.setattr(Watch, "arm", arm)
        return arm(self, folders, files)

    monkeypatch.setattr(Watch, "arm", late)
    with store.reading() as index:
        assert "zebra" not in index.entities
    assert store.read_now(count) is None
    with store.reading() as index:
        assert "zebra" in index.entities


def test_a_watched_graph_keeps_its_lock_file_open_for_searches(tmp_path: Path, monkeypatch) -> None:
    store, _ = watched_store(tmp_path / "graph", monkeypatch)
    opened: list[Path] = []
    open_lock = storage._open_lock
    monkeypatch.setattr(storage, "_open_lock", lambda root: opened.append(root) or open_lock(root))
    for _ in range(3):
        assert store.read_now(count) == 1
    assert opened == []  # asked whether a writer holds it on the descriptor kept since the read


def test_a_kept_lock_file_removed_meanwhile_is_not_trusted(tmp_path: Path, monkeypatch) -> None:
    """A cleaner removed the lock file and a writer locks the one made anew: the search must wait for it."""
    root = tmp_path / "graph"
    store, _ = watched_store(root, monkeypatch)
    lock = storage.lock_file(root)
    lock.unlink()
    lock.touch(mode=0o600)  # made anew by the next process that locks it
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        assert store.read_now(count) is None  # the kept descriptor's file is gone: not asked
        with store.reading() as index:  # waits for the writer
            assert "okapi" in index.entities
    finally:
        holder.wait(timeout=30)


def test_a_search_after_this_servers_own_write_stays_on_the_event_loop(tmp_path: Path, monkeypatch) -> None:
    store, _ = watched_store(tmp_path / "graph", monkeypatch)
    store.add_entity("concepts", "second", "concept", "Second")  # read back and watched again under its lock
    assert store.read_now(count) == 2
