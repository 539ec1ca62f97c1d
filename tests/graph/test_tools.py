"""Every tool of nexus-graph through the MCP client, with the files it writes checked on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from tests.graph.helpers import add, call, fail, lines

pytestmark = pytest.mark.anyio


async def seed(client: Client) -> None:
    """python <-written_in- asyncio-lib, guido -created-> python, fastapi -uses-> asyncio-lib; rust alone."""
    await add(client, "python", "Python", "tech_stack", type="language", desc="A programming language", tags=["lang"])
    await add(client, "asyncio-lib", "Python asyncio", "tech_stack", type="library", desc="Async IO in the stdlib")
    await add(client, "guido", "Guido van Rossum", "people", type="person", desc="Created the Python language")
    await add(client, "fastapi", "FastAPI", "projects", type="framework", desc="Web framework built on Starlette")
    await add(client, "rust", "Rust", "tech_stack", type="language", desc="Memory-safe systems language")
    await call(client, "connect_entities", src="asyncio-lib", rel="written_in", dst="python")
    await call(client, "connect_entities", src="guido", rel="created", dst="python", context="in 1991")
    await call(client, "connect_entities", src="fastapi", rel="uses", dst="asyncio-lib")


async def test_add_entity_appends_one_line_to_its_category_file(graph_host, graph_dir: Path) -> None:
    async with Client(graph_host().server) as client:
        out = await add(
            client, "python", "Python", "tech_stack", type="language", desc=" A language ", tags=["Lang", "lang"]
        )
    assert out["file"] == "tech_stack/entities.jsonl"
    assert out["entity"]["desc"] == "A language" and out["entity"]["tags"] == ["lang"]
    (record,) = lines(graph_dir / "tech_stack" / "entities.jsonl")
    assert record["id"] == "python" and record["type"] == "language" and record["created"].endswith("Z")


async def test_an_existing_id_is_refused_and_the_file_is_unchanged(graph_host, graph_dir: Path) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "python", "Python", "tech_stack")
        before = (graph_dir / "tech_stack" / "entities.jsonl").read_bytes()
        error = await fail(
            client, "add_entity", category="concepts", id="python", type="x", name="Python again", desc="new"
        )
        assert "already exists" in error and "append-only" in error
        assert (graph_dir / "tech_stack" / "entities.jsonl").read_bytes() == before
        assert not (graph_dir / "concepts").exists()
        detail = await call(client, "get_entity", id="python")
    assert detail["entity"]["name"] == "Python"


@pytest.mark.parametrize(
    ("bad_id", "expected"),
    [
        ("../x", "invalid"),
        ("Python", "did you mean 'python'"),
        ("", "empty"),
        ("a/b", "invalid"),
        ("a b", "invalid"),
        ("py\n", "invalid"),  # `$` would match before a final newline
    ],
)
async def test_bad_ids_are_refused_and_nothing_is_written(
    graph_host, graph_dir: Path, bad_id: str, expected: str
) -> None:
    async with Client(graph_host().server) as client:
        error = await fail(client, "add_entity", category="concepts", id=bad_id, type="concept", name="X", desc="")
        assert expected in error
        bad_get = await fail(client, "get_entity", id=bad_id)
        assert "invalid" in bad_get or "empty" in bad_get
    assert not list(graph_dir.rglob("*.jsonl"))


async def test_other_bad_input_is_refused_with_the_reason(graph_host) -> None:
    async with Client(graph_host().server) as client:
        assert "unknown category 'nope'" in await fail(
            client, "add_entity", category="nope", id="x", type="t", name="X", desc=""
        )
        assert "name is empty" in await fail(
            client, "add_entity", category="concepts", id="x", type="t", name="  ", desc=""
        )
        assert "tag" in await fail(
            client, "add_entity", category="concepts", id="x", type="t", name="X", desc="", tags=["ok", " "]
        )


async def test_extra_categories_from_config_are_accepted(graph_host, graph_dir: Path) -> None:
    async with Client(graph_host(extra_categories=["decisions"]).server) as client:
        await add(client, "use-jsonl", "Use JSONL", "decisions")
    assert lines(graph_dir / "decisions" / "entities.jsonl")[0]["id"] == "use-jsonl"


async def test_connect_entities_checks_both_ends_predicates_and_duplicates(graph_host, graph_dir: Path) -> None:
    async with Client(graph_host().server) as client:
        await add(client, "python", "Python")
        await add(client, "guido", "Guido")
        first = await call(client, "connect_entities", src="guido", rel="created", dst="python", context="1991")
        assert first["added"] is True and first["relation"]["context"] == "1991"
        again = await call(client, "connect_entities", src="guido", rel="created", dst="python")
        assert again["added"] is False and "already exists" in again["message"]
        missing = await fail(client, "connect_entities", src="guido", rel="created", dst="pyton")
        assert "dst 'pyton' does not exist" in missing and "'python'" in missing  # a suggestion
        assert "snake_case" in await fail(client, "connect_entities", src="guido", rel="Created By", dst="python")
        assert "snake_case" in await fail(client, "connect_entities", src="guido", rel="x" * 41, dst="python")
        assert "snake_case" in await fail(client, "connect_entities", src="guido", rel="uses\n", dst="python")
        assert "two different" in await fail(client, "connect_entities", src="guido", rel="is", dst="guido")
    (month,) = list((graph_dir / "relations").glob("*/*.jsonl"))
    assert len(lines(month)) == 1
    year, mm = month.parent.name, month.stem
    assert len(year) == 4 and 1 <= int(mm) <= 12
    assert lines(month)[0]["created"].startswith(f"{year}-{mm}")


async def test_search_tolerates_typos_and_word_order_and_shows_the_field(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await seed(client)
        typo = await call(client, "search_knowledge", query="pyhton")
        assert typo["hits"][0]["id"] == "python" and typo["hits"][0]["matched_field"] == "name"
        order = await call(client, "search_knowledge", query="asyncio python")
        assert order["hits"][0]["id"] == "asyncio-lib"
        reordered = await call(client, "search_knowledge", query="rossum guido")
        assert reordered["hits"][0]["id"] == "guido"
        by_desc = await call(client, "search_knowledge", query="starlete")
        assert by_desc["hits"][0]["id"] == "fastapi"
        assert by_desc["hits"][0]["matched_field"] == "desc" and "Starlette" in by_desc["hits"][0]["matched_text"]
        by_tag = await call(client, "search_knowledge", query="lang")
        assert any(h["id"] == "python" and h["matched_field"] in ("tags", "desc") for h in by_tag["hits"])
        ranked = await call(client, "search_knowledge", query="python", limit=5)
        scores = [h["score"] for h in ranked["hits"]]
        assert scores == sorted(scores, reverse=True) and ranked["hits"][0]["id"] == "python"
        assert len((await call(client, "search_knowledge", query="python", limit=1))["hits"]) == 1
        none = await call(client, "search_knowledge", query="zzzzqqq")
        assert none["hits"] == [] and none["total_entities"] == 5
        assert "no letters or digits" in await fail(client, "search_knowledge", query="   ")
        assert "no letters or digits" in await fail(client, "search_knowledge", query="?!-")


async def test_get_entity_returns_relations_both_ways(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await seed(client)
        detail = await call(client, "get_entity", id="python")
        assert detail["entity"]["category"] == "tech_stack"
        assert {(r["src"], r["rel"]) for r in detail["incoming"]} == {
            ("asyncio-lib", "written_in"),
            ("guido", "created"),
        }
        assert detail["outgoing"] == []
        assert "does not exist" in await fail(client, "get_entity", id="cobol")


async def test_neighbors_by_depth_predicate_and_direction(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await seed(client)
        one = await call(client, "neighbors", id="python")
        assert {n["id"]: n["distance"] for n in one["nodes"]} == {"python": 0, "asyncio-lib": 1, "guido": 1}
        two = await call(client, "neighbors", id="python", depth=2)
        assert {n["id"] for n in two["nodes"]} == {"python", "asyncio-lib", "guido", "fastapi"}
        assert len(two["relations"]) == 3
        created = await call(client, "neighbors", id="python", depth=3, rel="created")
        assert {n["id"] for n in created["nodes"]} == {"python", "guido"}
        out = await call(client, "neighbors", id="python", direction="out")
        assert [n["id"] for n in out["nodes"]] == ["python"]
        assert "snake_case" in await fail(client, "neighbors", id="python", rel="Bad Rel")
        assert await fail(client, "neighbors", id="python", depth=9)  # schema bound


async def test_find_path_follows_relations_either_way(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await seed(client)
        path = await call(client, "find_path", src="fastapi", dst="guido")
        assert path["found"] and path["hops"] == 3
        assert path["entities"] == ["fastapi", "asyncio-lib", "python", "guido"]
        assert [s["walked"] for s in path["steps"]] == ["forward", "forward", "backward"]
        assert path["message"] == "fastapi -uses-> asyncio-lib -written_in-> python <-created- guido"
        short = await call(client, "find_path", src="fastapi", dst="guido", max_depth=2)
        assert short["found"] is False and "at most 2 hops" in short["message"]
        none = await call(client, "find_path", src="rust", dst="python")
        assert none["found"] is False and none["steps"] == []
        assert "does not exist" in await fail(client, "find_path", src="rust", dst="nowhere")


async def test_export_mermaid_and_json(graph_host) -> None:
    async with Client(graph_host().server) as client:
        await seed(client)
        await add(client, "quotes", 'Say "hi" <b>', "concepts")
        mermaid = await call(client, "export_graph", format="mermaid")
        text = mermaid["content"]
        assert text.startswith("flowchart LR\n") and mermaid["entities"] == 6 and mermaid["relations"] == 3
        assert "-->|written_in|" in text and "-->|created|" in text
        assert "#quot;hi#quot; &lt;b&gt;" in text and '"hi"' not in text  # labels cannot break out
        assert "classDef tech_stack" in text
        data = json.loads((await call(client, "export_graph", format="json"))["content"])
        assert {e["id"] for e in data["entities"]} == {"python", "asyncio-lib", "guido", "fastapi", "rust", "quotes"}
        assert {(r["src"], r["rel"], r["dst"]) for r in data["relations"]} >= {("guido", "created", "python")}
        around = await call(client, "export_graph", format="json", root="guido", depth=1)
        assert {e["id"] for e in json.loads(around["content"])["entities"]} == {"guido", "python"}
        capped = await call(client, "export_graph", format="mermaid", max_nodes=2)
        assert capped["truncated"] is True and capped["entities"] == 2 and "truncated" in capped["content"]
        assert await fail(client, "export_graph", format="dot")


async def test_import_from_the_reference_memory_server(graph_host, graph_dir: Path, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    memory.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"type": "entity", "name": "John_Smith", "entityType": "person", "observations": ["Speaks Spanish"]},
                {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
                {
                    "type": "entity",
                    "name": "Claude Code",
                    "entityType": "project",
                    "observations": ["a CLI", "agentic"],
                },
                {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works at"},
                {"type": "relation", "from": "Anthropic", "to": "Claude Code", "relationType": "buildsProduct"},
            ]
        )
        + "\n"
    )
    async with Client(graph_host().server) as client:
        await add(client, "anthropic", "Anthropic (existing)", "concepts")
        result = await call(client, "import_graph", path="memory.jsonl")
        assert result["entities_added"] == 2 and result["relations_added"] == 2
        assert result["ids"] == {"John_Smith": "john-smith", "Anthropic": "anthropic", "Claude Code": "claude-code"}
        assert any("'anthropic' already exists" in s for s in result["skipped"])
        john = await call(client, "get_entity", id="john-smith")
        assert john["entity"]["category"] == "people" and john["entity"]["observations"] == ["Speaks Spanish"]
        assert john["outgoing"][0]["rel"] == "works_at" and john["outgoing"][0]["dst"] == "anthropic"
        project = await call(client, "get_entity", id="claude-code")
        assert project["entity"]["category"] == "projects" and project["incoming"][0]["rel"] == "builds_product"
        assert (await call(client, "get_entity", id="anthropic"))["entity"]["name"] == "Anthropic (existing)"
        again = await call(client, "import_graph", path=str(memory), category="concepts")
        assert again["entities_added"] == 0 and again["relations_added"] == 0  # idempotent
    assert len(lines(graph_dir / "people" / "entities.jsonl")) == 1


async def test_import_refuses_bad_files_and_paths_and_writes_nothing(
    graph_host, graph_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "entity", "name": "A", "entityType": "x", "observations": []}\nnot json\n{"type": "x"}\n')
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    outside.write_text('{"type": "entity", "name": "A", "entityType": "x", "observations": []}\n')
    try:
        async with Client(graph_host().server) as client:
            error = await fail(client, "import_graph", path="bad.jsonl")
            assert "line 2" in error and "line 3" in error and "nothing was imported" in error
            assert "outside the allowed roots" in await fail(client, "import_graph", path=str(outside))
            assert "permission denied" in await fail(client, "import_graph", path="../" + outside.name)
            assert "not a file" in await fail(client, "import_graph", path=".")
            assert "unknown category" in await fail(client, "import_graph", path="bad.jsonl", category="nope")
    finally:
        outside.unlink()
    assert not list(graph_dir.glob("*/entities.jsonl"))


async def test_write_tools_are_off_by_default_and_annotated(make_host, graph_dir: Path) -> None:
    import nexus_graph

    host = make_host({"graph": nexus_graph}, {"plugins": {"graph": {"graph_dir": str(graph_dir)}}})
    async with Client(host.server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "search_knowledge",
            "get_entity",
            "neighbors",
            "find_path",
            "export_graph",
            "get_entropy_report",
        }
        assert all(t.annotations.read_only_hint for t in tools.values())
        error = await fail(client, "add_entity", category="concepts", id="x", type="t", name="X", desc="")
        assert "'write' category" in error
    granted = make_host(
        {"graph": nexus_graph}, {"plugins": {"graph": {"graph_dir": str(graph_dir), "categories": ["read", "write"]}}}
    )
    async with Client(granted.server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("add_entity", "connect_entities", "import_graph"):
            hints = tools[name].annotations
            assert hints.read_only_hint is False and hints.destructive_hint is False
        assert tools["connect_entities"].annotations.idempotent_hint is True
