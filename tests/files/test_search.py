"""The search category: glob, grep (both engines, same results) and concat_files."""

from __future__ import annotations

import functools
import shutil
import subprocess

import anyio
import pytest

import nexus_files.walk
from nexus_core import PathPolicy
from nexus_files import grep_engine
from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

ENGINES = ["always", "never"]  # ripgrep, pure Python


@pytest.fixture(autouse=True)
def needs_rg():
    # The ripgrep wheel is a dependency of the plugin, so rg must be found; the fallback is tested with "never".
    assert nexus_files.walk.ripgrep("auto", None), "rg not found; install ripgrep==14.1.0"


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_is_sorted_gitignore_aware_and_hides_denied(files_client, engine):
    async with files_client(use_ripgrep=engine) as client:
        result = await call(client, "glob", pattern="*.py")
        assert result["files"] == ["src/app.py", "src/pkg/util.py"]
        assert result["engine"] == ("ripgrep" if engine == "always" else "python")
        everything = await call(client, "glob", pattern="*", limit=1000)
        assert ".env" not in everything["files"] and "src/.env" not in everything["files"]
        assert not any(f.startswith(("build/", ".git/")) or f.endswith(".log") for f in everything["files"])
        assert "escape" not in everything["files"]
        ignored = await call(client, "glob", pattern="*.py", include_ignored=True)
        assert ignored["files"] == ["build/out.py", "src/app.py", "src/pkg/util.py"]
        top = await call(client, "glob", pattern="/*.md")
        assert top["files"] == ["README.md"]
        under = await call(client, "glob", pattern="*.md", path="docs")
        assert under["files"] == ["docs/guide.md"]


async def test_glob_pages_with_a_cursor(files_client, repo):
    for i in range(25):
        (repo / "docs" / f"note{i:02d}.txt").write_text("x\n")
    async with files_client() as client:
        seen, cursor = [], None
        while True:
            page = await call(client, "glob", pattern="docs/*.txt", limit=10, **({"cursor": cursor} if cursor else {}))
            assert page["total"] == 25
            seen += page["files"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [f"docs/note{i:02d}.txt" for i in range(25)]
        first = await call(client, "glob", pattern="docs/*.txt", limit=10)
        assert "other arguments" in await fail(client, "glob", pattern="*.md", limit=10, cursor=first["next_cursor"])
        assert "invalid cursor" in await fail(client, "glob", pattern="*.md", cursor="garbage")


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_groups_by_file_and_skips_binary_ignored_denied(files_client, engine):
    async with files_client(use_ripgrep=engine) as client:
        result = await call(client, "grep", pattern="helper")
        paths = [f["path"] for f in result["files"]]
        assert paths == ["docs/guide.md", "src/pkg/util.py"]  # not .env, build/, debug.log, image.bin
        util = result["files"][1]
        assert util["matches"] == 2 and [row["line"] for row in util["lines"]] == [1, 5]
        assert all(row["match"] for row in util["lines"])
        assert result["total_matches"] == 3 and not result["truncated"]


async def test_grep_engines_give_identical_results(files_client, repo):
    (repo / "src" / "many.py").write_text("".join(f"value_{i} = {i}  # Value\n" for i in range(40)))
    queries = [
        {"pattern": "value_1\\d", "context": 2},
        {"pattern": "VALUE", "case": "insensitive", "max_results": 7},
        {"pattern": "Value", "case": "smart"},
        {"pattern": "print(", "literal": True, "context": 1},
        {"pattern": "def \\w+", "include": ["src/**"], "exclude": ["util.py"]},
        {"pattern": "helper", "include_ignored": True},
        {"pattern": "helper", "include": ["*.py", "*.md"], "exclude": ["docs/"]},
        {"pattern": "=", "max_results": 5, "context": 3},
    ]
    for query in queries:
        outputs = []
        for engine in ENGINES:
            async with files_client(use_ripgrep=engine) as client:
                result = await call(client, "grep", **query)
                result.pop("engine")
                outputs.append(result)
        assert outputs[0] == outputs[1], query
        assert outputs[0]["total_matches"] > 0, query


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_options(files_client, engine):
    async with files_client(use_ripgrep=engine) as client:
        ctx = await call(client, "grep", pattern="print(os", literal=True, context=1)
        rows = ctx["files"][0]["lines"]
        assert [(r["line"], r["match"]) for r in rows] == [(5, False), (6, True), (7, False)]
        sensitive = await call(client, "grep", pattern="hello", case="sensitive")
        assert sensitive["total_matches"] == 0
        smart = await call(client, "grep", pattern="hello")
        assert smart["total_matches"] == 1  # lowercase pattern: case-insensitive
        capped = await call(client, "grep", pattern="e", max_results=2)
        assert capped["total_matches"] == 2 and capped["truncated"]
        only_py = await call(client, "grep", pattern="helper", include=["*.py"])
        assert [f["path"] for f in only_py["files"]] == ["src/pkg/util.py"]  # include does not undo .gitignore
        only_md = await call(client, "grep", pattern="helper", include=["*.md"])
        assert [f["path"] for f in only_md["files"]] == ["docs/guide.md"]
        one_file = await call(client, "grep", pattern="def", path="src/app.py")
        assert [f["path"] for f in one_file["files"]] == ["src/app.py"]


async def test_grep_python_fallback_when_rg_is_absent(files_client, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    async with files_client(ripgrep_path="rg-that-does-not-exist") as client:
        result = await call(client, "grep", pattern="helper")
        assert result["engine"] == "python" and result["total_matches"] == 3


async def test_grep_refusals(files_client, outside):
    async with files_client() as client:
        assert "invalid regular expression" in await fail(client, "grep", pattern="(unclosed", path="src/app.py")
        assert "ripgrep" in await fail(client, "grep", pattern="(unclosed")
        assert "outside the allowed roots" in await fail(client, "grep", pattern="secret", path=str(outside))
        assert "symlink" in await fail(client, "grep", pattern="secret", path="escape_dir")
        assert "deny_paths" in await fail(client, "grep", pattern="API", path=".env")
    async with files_client(use_ripgrep="never") as client:
        assert "invalid regular expression" in await fail(client, "grep", pattern="(unclosed")


async def test_concat_files(files_client):
    async with files_client() as client:
        result = await call(client, "concat_files", paths=["README.md", "src"], include=["*.py", "*.md"])
        assert result["files"] == ["README.md", "src/app.py", "src/pkg/util.py"]
        assert "==> src/app.py <==\nimport os" in result["text"]
        mixed = await call(client, "concat_files", paths=["image.bin", "big.dat", "docs"])
        assert {s["path"]: s["reason"] for s in mixed["skipped"]}.keys() == {"image.bin", "big.dat"}
        assert mixed["files"] == ["docs/guide.md"]
        assert "deny_paths" in await fail(client, "concat_files", paths=[".env"])


async def test_concat_files_byte_cap(files_client, repo):
    (repo / "docs" / "huge.md").write_text("word " * 2000)
    async with files_client(max_output_bytes=1000) as client:
        result = await call(client, "concat_files", paths=["docs"])
        assert result["truncated"] and len(result["text"].encode()) <= 1100


def test_rg_binary_comes_from_the_wheel():
    found = nexus_files.walk.ripgrep("auto", None)
    assert found and shutil.which(found)


async def test_a_catastrophic_regex_stays_within_search_timeout_and_blocks_nothing(files_client, repo):
    """``(a+)+$`` ran 33 s in Python's backtracking engine, holding the GIL; RE2 is linear in the text."""
    (repo / "docs" / "as.txt").write_text(("a" * 26 + "!\n") * 20)
    async with files_client(use_ripgrep="never", search_timeout=5) as client:
        timings: dict[str, float] = {}

        async def timed(name: str, tool: str, **args) -> None:
            started = anyio.current_time()
            await call(client, tool, **args)
            timings[name] = anyio.current_time() - started

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(timed, "grep", "grep", pattern="(a+)+$", path="docs"))
                await anyio.sleep(0.05)
                tg.start_soon(functools.partial(timed, "read", "read_file", path="README.md"))
    assert timings["grep"] < 5 and timings["read"] < 2, timings


async def test_the_python_engine_stops_at_search_timeout_while_other_calls_go_on(files_client, repo):
    folder = repo / "data"
    folder.mkdir()
    for i in range(40):
        (folder / f"f{i:02d}.txt").write_text(("x" * 120 + "\n") * 2000)  # 40 x 240 KB
    async with files_client(use_ripgrep="never", search_timeout=0.01) as client:
        started = anyio.current_time()
        async with anyio.create_task_group() as tg:
            messages: list[str] = []

            async def slow() -> None:
                messages.append(await fail(client, "grep", pattern="(x+x+)+y", path="data"))

            tg.start_soon(slow)
            read = await call(client, "read_file", path="README.md")
        elapsed = anyio.current_time() - started
    assert "took longer than search_timeout (0.01 s)" in messages[0]
    assert read["content"].startswith("     1  # Demo") and elapsed < 3


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_never_shows_a_file_above_max_file_size(files_client, repo, engine):
    # rg runs without --max-filesize (it would stat every file); what it reports from a big file is dropped.
    (repo / "docs" / "huge.md").write_text("helper in a big file\n" + "filler line\n" * 200_000)
    async with files_client(use_ripgrep=engine, max_file_size=1 << 20) as client:
        result = await call(client, "grep", pattern="helper")
        assert [f["path"] for f in result["files"]] == ["docs/guide.md", "src/pkg/util.py"]
        assert result["total_matches"] == 3


def test_the_watch_sees_a_big_file_a_process_has_open(tmp_path):
    big, small = tmp_path / "big.txt", tmp_path / "small.txt"
    big.write_bytes(b"x\n" * 600_000)
    small.write_text("x\n")
    for path, expected in ((big, True), (small, False)):
        with open(path, "rb") as held:
            proc = subprocess.Popen(["sleep", "30"], stdin=held)
        try:
            assert grep_engine.reading_a_huge_file(proc.pid, 1 << 20) is expected
        finally:
            proc.kill()
            proc.wait()
    assert not grep_engine.reading_a_huge_file(proc.pid, 1 << 20)  # gone


def test_rg_reading_a_big_file_is_stopped_and_the_folder_searched_with_the_cap(tmp_path, monkeypatch):
    # A pattern without a literal makes rg scan the 40 MB file slowly enough for a watch every 2 ms to see it.
    (tmp_path / "big.log").write_bytes(b"ab 12345 lines of text, no match\n" * 1_300_000)
    (tmp_path / "small.txt").write_text("cd 654321\n")
    monkeypatch.setattr(grep_engine, "WATCH_EVERY", 0.002)
    monkeypatch.setattr(grep_engine, "_huge_under", {})
    query = grep_engine.Query(r"[a-z]+ [0-9]{6}", False, True, 0, [], [], 200, False, 1 << 20)
    rg = nexus_files.walk.ripgrep("always", None)
    assert rg
    hits = grep_engine.rg_grep(rg, tmp_path, PathPolicy([str(tmp_path)]), query, 60.0)
    assert [f.rel for f in hits] == ["small.txt"]  # the rerun with --max-filesize skipped big.log
    assert list(grep_engine._huge_under) == [str(tmp_path)]
