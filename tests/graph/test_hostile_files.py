"""Graph files written by hand or by other tools: a bad line or file costs bounded time and memory, is reported
with its place, and never hides the lines after it; an append never goes where it would be lost or hang."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

from nexus_graph import storage
from tests.graph.helpers import add, call, fail, write_lines

pytestmark = pytest.mark.anyio


def record(ident: str, **extra: object) -> dict[str, object]:
    return {"id": ident, "type": "t", "name": ident.upper(), "desc": "", "created": "2026-11-01T00:00:00Z", **extra}


async def test_a_line_nested_too_deep_is_reported_and_the_lines_after_it_are_read(graph_host, graph_dir) -> None:
    write_lines(graph_dir / "people" / storage.ENTITY_FILE, ["[" * 100_000 + "]" * 100_000 + "\n", record("q")])
    async with Client(graph_host().server) as client:
        found = await call(client, "get_entity", id="q")
        report = await call(client, "get_entropy_report")
    assert found["entity"]["name"] == "Q"
    (problem,) = report["corrupt_lines"]["lines"]
    assert (problem["file"], problem["line"]) == ("people/entities.jsonl", 1) and "RecursionError" in problem["error"]


async def test_an_overlong_line_is_skipped_unread(graph_host, graph_dir, monkeypatch) -> None:
    monkeypatch.setattr(storage, "MAX_LINE_BYTES", 1000)
    path = graph_dir / "concepts" / storage.ENTITY_FILE
    write_lines(path, [record("huge", desc="x" * 5000), record("after"), json.dumps(record("cut", desc="y" * 3000))])
    async with Client(graph_host().server) as client:
        missing = await fail(client, "get_entity", id="huge")
        after = await call(client, "get_entity", id="after")
        report = await call(client, "get_entropy_report")
        refused = await fail(client, "add_entity", category="concepts", id="x", type="t", name="X", desc="d" * 1000)
    assert "does not exist" in missing and after["entity"]["name"] == "AFTER"
    problems = {p["line"]: p["error"] for p in report["corrupt_lines"]["lines"]}
    assert problems[1].startswith("line of 5") and "over the 1000 read; skipped" in problems[1]
    assert problems[3] == "truncated: the last line has no newline"
    assert "over the 1000 a line may have; nothing was written" in refused


async def test_an_import_whose_entity_would_be_an_overlong_line_is_refused(graph_host, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(storage, "MAX_LINE_BYTES", 1000)
    source = tmp_path / "memory.jsonl"
    entity = {"type": "entity", "name": "Big", "entityType": "concept", "observations": ["o" * 100] * 20}
    source.write_text(json.dumps(entity) + "\n", encoding="utf-8")
    async with Client(graph_host().server) as client:
        refused = await fail(client, "import_graph", path=str(source))
    assert "line 1: entity 'Big' is" in refused and "nothing was imported" in refused


async def test_an_append_to_a_device_or_a_fifo_fails_clearly(graph_host, graph_dir) -> None:
    """Appended to /dev/null the entity would be acknowledged and lost; to a FIFO, the call would hang."""
    (graph_dir / "tech_stack").mkdir(parents=True)
    os.symlink("/dev/null", graph_dir / "tech_stack" / storage.ENTITY_FILE)
    fifo = graph_dir / "people" / storage.ENTITY_FILE
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # with a reader, a blocking open would succeed
    try:
        async with Client(graph_host().server) as client:
            device = await fail(client, "add_entity", category="tech_stack", id="a", type="t", name="A", desc="")
            piped = await fail(client, "add_entity", category="people", id="b", type="t", name="B", desc="")
            await add(client, "c", "C")
    finally:
        os.close(reader)
    assert "tech_stack/entities.jsonl is not a regular file; nothing was written" in device
    assert "people/entities.jsonl is not a regular file" in piped


def test_a_fifo_with_no_reader_fails_the_append_at_once(tmp_path: Path) -> None:
    from nexus_graph.records import GraphError

    fifo = tmp_path / "concepts" / storage.ENTITY_FILE
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(GraphError, match=r"could not append to .*entities\.jsonl: No such device or address"):
        storage.append_lines(fifo, [storage.dumps({"id": "a"})])
