"""Export and import (JSON Lines): a full round trip, refusals, and the click group."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from nexus_memory.embed import create
from nexus_memory.store import ChromaStore
from nexus_memory.transfer import export_memories, import_memories, memory_cli
from tests.memory.conftest import service_in
from tests.memory.helpers import call, store

pytestmark = pytest.mark.anyio


async def _fill(client: Client) -> tuple[str, str, str]:
    a = await store(client, "Postgres ECONNREFUSED: compose published 5433.", "billing", ["postgres"], "failure")
    b = await store(client, "Compose maps 5432:5432 now; **fixed**.", "billing", ["postgres", "docker"], "success")
    c = await store(client, "Keep money as integer cents — never floats.", "billing", [], "decision")
    await call(client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="the fix")
    await call(client, "link_memories", source_id=c, target_id=a, relation_type="related", reason="same service")
    return a, b, c


def _snapshot(st: ChromaStore) -> tuple[dict, list]:
    records = {i: vars(r) for i, r in st.get([i for i, _ in st.all_metadata()]).items()}
    links = sorted(lk.metadata().items() for lk in st.links.all())
    return records, links


async def test_the_export_tool_pages_through_the_same_lines_as_a_whole_export(memory_host) -> None:
    """Each page reads only its own memories and links (`nexus memory export` asks for 50 lines a call)."""
    host = memory_host()
    async with Client(host.server) as client:
        await _fill(client)
        whole = io.StringIO()
        export_memories(service_in(host).store, whole)
        for limit in (1, 2, 4, 10):
            lines, offset = [], 0
            while offset is not None:
                page = await call(client, "export_memories", offset=offset, limit=limit)
                assert page["total_lines"] == 6 and len(page["lines"]) <= limit
                lines, offset = lines + page["lines"], page["next_offset"]
            assert lines == whole.getvalue().splitlines(), limit


async def test_round_trip_keeps_everything(memory_host, tmp_path: Path) -> None:
    host = memory_host()
    async with Client(host.server) as client:
        a, _, _ = await _fill(client)
        assert service_in(host).parts.drain(timeout=60)  # the first memory has two clauses
    src = ChromaStore(tmp_path / "data" / "memory", "nexus_memories", create("minilm"))
    buf = io.StringIO()
    counts = export_memories(src, buf)
    assert (counts.memories, counts.links) == (3, 2)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert lines[0]["kind"] == "header" and len(lines[1]["embedding"]) == 384

    dst = ChromaStore(tmp_path / "copy", "nexus_memories", create("minilm"))
    got = import_memories(dst, io.StringIO(buf.getvalue()))
    assert (got.memories, got.links, got.re_embedded) == (3, 2, 0)
    assert _snapshot(dst) == _snapshot(src)
    before = src.vectors([a])[a]
    assert dst.vectors([a])[a] == pytest.approx(before, abs=1e-6)
    again = import_memories(dst, io.StringIO(buf.getvalue()))
    assert (again.memories, again.skipped, again.links) == (0, 3, 0)


async def test_bad_file_imports_nothing(tmp_path: Path) -> None:
    dst = ChromaStore(tmp_path / "copy", "nexus_memories", create("minilm"))
    good = {"kind": "memory", "id": "1", "content": "x", "memory_type": "note", "context": "a", "tags": []}
    bad = [json.dumps(good), "{not json"]
    with pytest.raises(ValueError, match="line 2: not JSON"):
        import_memories(dst, io.StringIO("\n".join(bad)))
    with pytest.raises(ValueError, match="memory_type"):
        import_memories(dst, io.StringIO(json.dumps(good | {"memory_type": "idea"})))
    assert dst.count() == 0


async def test_cli_export_then_import_into_another_store(memory_host, tmp_path: Path) -> None:
    async with Client(memory_host().server) as client:
        await _fill(client)
    src_cfg = tmp_path / "src.toml"
    src_cfg.write_text(f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    dst_cfg = tmp_path / "dst.toml"
    dst_cfg.write_text(
        f'[server]\ndata_dir = "{tmp_path / "other"}"\n[plugins.memory]\ncollection = "moved"\nembedder = "minilm"\n'
    )
    runner = CliRunner()
    out = tmp_path / "mem.jsonl"
    res = runner.invoke(memory_cli, ["--config", str(src_cfg), "--standalone", "export", str(out)])
    assert res.exit_code == 0, res.output
    assert "exported 3 memories and 2 links" in res.output
    assert res.output.startswith("export: 5/5 lines in ") and "\r" not in res.output  # not a terminal: one line
    assert out.stat().st_mode & 0o777 == 0o600  # it holds every memory, whatever the umask
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left
    stopped = runner.invoke(
        memory_cli, ["--config", str(src_cfg), "--standalone", "export", str(tmp_path / "gone" / "x")]
    )
    assert stopped.exit_code != 0 and not (tmp_path / "gone").exists()
    res = runner.invoke(memory_cli, ["--config", str(dst_cfg), "--standalone", "import", str(out)])
    assert res.exit_code == 0, res.output
    assert "imported 3 memories (0 re-embedded, 0 already present) and 2 links" in res.output
    dst = ChromaStore(tmp_path / "other" / "memory", "moved", create("minilm"))
    assert dst.count() == 3 and len(dst.links.all()) == 2
    (tmp_path / "broken.jsonl").write_text('{"kind": "spaceship"}\n')
    res = runner.invoke(
        memory_cli, ["--config", str(dst_cfg), "--standalone", "import", str(tmp_path / "broken.jsonl")]
    )
    assert res.exit_code != 0 and "unknown kind 'spaceship'" in res.output


def test_nexus_memory_export_and_import_from_the_command_line(tmp_path: Path) -> None:
    """The core CLI mounts the plugin's commands (entry point group nexus.cli): a round trip through files."""
    from click.testing import CliRunner

    from nexus_core.cli.main import cli

    source, target = tmp_path / "source.toml", tmp_path / "target.toml"
    source.write_text(f'[server]\ndata_dir = "{tmp_path / "a"}"\n')
    target.write_text(f'[server]\ndata_dir = "{tmp_path / "b"}"\n')
    runner = CliRunner()
    stored = runner.invoke(
        cli,
        [
            "call",
            "--config",
            str(source),
            "store_memory",
            "content=Fixed E11000 by dropping the index",
            "context_name=api",
            'tags=["mongo"]',
        ],
    )
    assert stored.exit_code == 0, stored.output
    dump = tmp_path / "memories.jsonl"
    exported = runner.invoke(cli, ["memory", "--config", str(source), "export", str(dump)])
    assert exported.exit_code == 0, exported.output
    progress, summary = exported.output.splitlines()  # not a terminal: the bar's final line, then the command's
    assert progress.startswith("export: 1/1 lines in ") and summary == "exported 1 memories and 0 links"
    assert "E11000" in dump.read_text()
    imported = runner.invoke(cli, ["memory", "--config", str(target), "import", str(dump)])
    assert imported.exit_code == 0, imported.output
    listed = runner.invoke(cli, ["call", "--config", str(target), "list_memories"])
    assert "E11000" in listed.stdout
    broken = tmp_path / "broken.toml"
    broken.write_text("[plugins.memory]\ncolour = 1\n")
    failed = runner.invoke(cli, ["memory", "--config", str(broken), "export", "-"])
    assert failed.exit_code == 1 and "plugins.memory.colour: unknown key" in failed.output
