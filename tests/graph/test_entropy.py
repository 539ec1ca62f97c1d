"""The entropy report on a graph written as files, with old timestamps where staleness needs them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from tests.graph.helpers import add, call, write_lines

pytestmark = pytest.mark.anyio

OLD = "2020-03-01T00:00:00Z"


def entity(ident: str, name: str, created: str = OLD) -> dict[str, object]:
    return {"id": ident, "type": "concept", "name": name, "desc": "", "tags": [], "created": created}


async def test_every_section_names_the_ids_affected_and_a_suggestion(graph_host, graph_dir: Path) -> None:
    write_lines(
        graph_dir / "concepts" / "entities.jsonl",
        [
            entity("old-a", "Old A"),
            entity("old-b", "Old B"),
            entity("lonely", "Lonely"),
            entity("py-async", "Python Asyncio"),
            entity("py-async-2", "pyhton asyncio"),  # a typo: a duplicate
            entity("py-async-3", "Asyncio, Python"),  # the same words in another order: a duplicate
            entity("py-311", "Python 3.11"),
            entity("py-312", "Python 3.12"),  # different numbers: not a duplicate
        ],
    )
    write_lines(
        graph_dir / "relations" / "2020" / "03.jsonl",
        [
            {"src": "old-a", "rel": "uses", "dst": "old-b", "created": OLD},
            {"src": "old-a", "rel": "uses", "dst": "ghost", "created": OLD},  # dangling
        ],
    )
    async with Client(graph_host(stale_days=30).server) as client:
        for ident in ("hub", "x", "y", "z"):
            await add(client, ident, ident.upper())
        for ident in ("x", "y", "z"):
            await call(client, "connect_entities", src=ident, rel="part_of", dst="hub")
        await call(client, "connect_entities", src="py-311", rel="precedes", dst="py-312")
        report = await call(client, "get_entropy_report")
    assert report["entities"] == 12 and report["relations"] == 6 and report["stale_days"] == 30
    assert set(report["orphans"]["ids"]) == {"lonely", "py-async", "py-async-2", "py-async-3"}
    assert report["orphans"]["count"] == 4 and "connect_entities" in report["orphans"]["suggestion"]
    # stale: created long ago and no new relation; py-311/312 got one today
    assert set(report["stale"]["ids"]) == {"old-a", "old-b", "lonely", "py-async", "py-async-2", "py-async-3"}
    assert "30 days" in report["stale"]["suggestion"]
    comps = report["components"]
    assert comps["count"] == 7 and comps["largest"] == 4 and comps["sizes"][:3] == [4, 2, 2]
    assert set(comps["ids"]) == {"old-a", "old-b", "py-311", "py-312"}
    assert report["hubs"]["hubs"][0] == {"id": "hub", "name": "HUB", "degree": 3, "outgoing": 0, "incoming": 3}
    (group,) = report["duplicates"]["groups"]
    assert group["ids"] == ["py-async", "py-async-2", "py-async-3"]
    assert group["names"] == ["Python Asyncio", "pyhton asyncio", "Asyncio, Python"]
    assert 80 < group["similarity"] < 100  # the typo pair is the least alike link
    assert "same_as" in report["duplicates"]["suggestion"]
    (dangling,) = report["dangling"]["relations"]
    assert dangling["missing"] == ["ghost"] and dangling["source"] == "relations/2020/03.jsonl:2"
    assert "add_entity" in report["dangling"]["suggestion"]
    assert report["density"] == pytest.approx(5 / (12 * 11), abs=1e-6)  # the dangling relation links nothing


async def test_an_empty_graph_reports_nothing_to_do(graph_host) -> None:
    async with Client(graph_host().server) as client:
        report = await call(client, "get_entropy_report")
    assert report["entities"] == 0 and report["density"] == 0
    assert report["orphans"]["suggestion"] == "Nothing to do." and "Looks tidy" in report["summary"]
