"""The read category through the MCP client: happy paths and every refusal."""

from __future__ import annotations

import re

import pytest

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio


async def test_read_file_numbers_lines_and_pages(files_client, repo):
    async with files_client() as client:
        whole = await call(client, "read_file", path="src/app.py")
        assert whole["content"].splitlines()[4] == '     5      print("Hello, world")'
        assert whole["total_lines"] == 7 and not whole["truncated"]
        part = await call(client, "read_file", path=str(repo / "src" / "app.py"), offset=2, limit=3)
        assert [line[:6].strip() for line in part["content"].splitlines()] == ["3", "4", "5"]
        assert (part["start_line"], part["end_line"]) == (3, 5)
        assert part["truncated"] and part["next_offset"] == 5 and "offset=5" in part["note"]


async def test_read_file_offset_is_zero_indexed_and_next_offset_reads_every_line_once(files_client, repo):
    (repo / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    async with files_client() as client:
        first = await call(client, "read_file", path="ten.txt", offset=0, limit=1)
        assert first["content"] == "     1  line 1\n" and first["next_offset"] == 1
        seen, offset = [], 0
        while offset is not None:
            page = await call(client, "read_file", path="ten.txt", offset=offset, limit=3)
            seen += [line[8:] for line in page["content"].splitlines()]
            offset = page["next_offset"]
        assert seen == [f"line {i}" for i in range(1, 11)]
        assert (await call(client, "read_file", path="ten.txt", limit=0))["end_line"] == 10  # 0: no line limit
        last = await call(client, "read_file", path="ten.txt", offset=9)
        assert last["content"] == "    10  line 10\n" and last["next_offset"] is None
        for beyond in (10, 11, 1000):  # the design: an offset past the end reads nothing, no error
            past = await call(client, "read_file", path="ten.txt", offset=beyond)
            assert past["content"] == "" and past["total_lines"] == 10 and past["next_offset"] is None
            assert past["note"] == f"offset {beyond} is past the end: 'ten.txt' has 10 lines"
        assert "offset" in await fail(client, "read_file", path="ten.txt", offset=-1)
        (repo / "empty.txt").write_text("")
        empty = (await client.call_tool("read_file", {"path": "empty.txt"})).structured_content
        assert empty["total_lines"] == 0 and empty["content"] == "" and empty["next_offset"] is None


async def test_read_file_byte_cap_says_where_to_continue(files_client, repo):
    (repo / "long.txt").write_text("".join(f"line {i:05d} " + "x" * 90 + "\n" for i in range(100)))
    async with files_client(max_output_bytes=1000) as client:
        result = await call(client, "read_file", path="long.txt")
        assert len(result["content"].encode()) <= 1000
        assert result["truncated"] and result["end_line"] < 100
        assert result["next_offset"] == result["end_line"] and "1000 bytes" in result["note"]
        assert f"offset={result['end_line']}" in result["note"]
        more = await call(client, "read_file", path="long.txt", offset=result["next_offset"])
        assert more["content"].startswith(f"{result['end_line'] + 1:>6}  line {result['end_line']:05d} ")


async def test_read_many_files_reports_each_file(files_client):
    async with files_client() as client:
        result = await call(client, "read_many_files", paths=["README.md", "docs/guide.md", ".env", "missing.txt"])
        by_path = {f["path"]: f for f in result["files"]}
        assert by_path["README.md"]["content"].startswith("# Demo")
        assert by_path["docs/guide.md"]["lines"] == 1
        assert "deny_paths" in by_path[".env"]["error"]
        assert by_path["missing.txt"]["error"]


async def test_tail_shows_the_end(files_client, repo):
    (repo / "log.txt").write_text("".join(f"entry {i}\n" for i in range(1, 101)))
    async with files_client() as client:
        result = await call(client, "tail", path="log.txt", lines=3)
        assert result["content"].splitlines() == ["    98  entry 98", "    99  entry 99", "   100  entry 100"]
        assert result["start_line"] == 98 and result["total_lines"] == 100


async def test_tail_cut_by_the_byte_cap_names_the_read_file_offset_of_what_it_left_out(files_client, repo):
    (repo / "log.txt").write_text("".join(f"entry {i:03d} " + "x" * 90 + "\n" for i in range(1, 101)))
    async with files_client(max_output_bytes=1000) as client:
        result = await call(client, "tail", path="log.txt", lines=20)
        assert result["truncated"] and result["end_line"] == 100 and result["start_line"] > 81
        offset, limit = (int(v) for v in re.search(r"offset=(\d+) limit=(\d+)", result["note"]).groups())
        assert offset == 80 and limit == result["start_line"] - 81
        omitted = await call(client, "read_file", path="log.txt", offset=offset, limit=limit)
        assert omitted["start_line"] == 81 and omitted["content"].startswith("    81  entry 081 ")


async def test_file_info_text_binary_folder_and_symlink(files_client, repo):
    async with files_client() as client:
        text = await call(client, "file_info", path="src/app.py")
        assert text["type"] == "file" and text["is_text"] and text["line_count"] == 7
        assert text["size"] == (repo / "src" / "app.py").stat().st_size and text["permissions"].startswith("-rw")
        binary = await call(client, "file_info", path="image.bin")
        assert binary["is_text"] is False and binary["line_count"] is None
        big = await call(client, "file_info", path="big.dat")
        assert big["size"] == 60 * 1024 * 1024
        folder = await call(client, "file_info", path="src")
        assert folder["type"] == "directory"
        link = await call(client, "file_info", path="link_to_readme")
        assert link["type"] == "symlink" and link["symlink_target"] == "README.md"


async def test_list_directory_hides_ignored_denied_and_escaping_entries(files_client):
    async with files_client() as client:
        listing = await call(client, "list_directory")
        names = {e["name"] for e in listing["entries"]}
        assert {"README.md", "src", "docs", ".gitignore", "image.bin", "big.dat", "link_to_readme"} <= names
        assert not names & {".env", "build", "debug.log", ".git", "escape", "escape_dir"}
        sizes = {e["name"]: e["size"] for e in listing["entries"]}
        assert sizes["README.md"] == len("# Demo\n\nA demo project.\n") and sizes["src"] is None
        deep = await call(client, "list_directory", depth=3)
        paths = {e["path"] for e in deep["entries"]}
        assert "src/pkg/util.py" in paths and "src/.env" not in paths
        with_ignored = await call(client, "list_directory", include_ignored=True)
        assert {"build", "debug.log"} <= {e["name"] for e in with_ignored["entries"]}
        assert ".env" not in {e["name"] for e in with_ignored["entries"]}  # deny_paths still win


async def test_directory_tree_nests_and_draws(files_client):
    async with files_client() as client:
        result = await client.call_tool("directory_tree", {"depth": 2})
        tree = result.structured_content["tree"]
        src = next(c for c in tree["children"] if c["name"] == "src")
        assert {c["name"] for c in src["children"]} == {"app.py", "pkg"}
        text = result.content[0].text
        assert "├── " in text and "pkg/" in text and ".env" not in text and "build" not in text


async def test_refuses_paths_outside_the_roots(files_client, outside):
    async with files_client() as client:
        assert "outside the allowed roots" in await fail(client, "read_file", path=str(outside / "secret.txt"))
        assert "outside the allowed roots" in await fail(client, "read_file", path="../outside/secret.txt")
        assert "outside the allowed roots" in await fail(client, "list_directory", path=str(outside))


async def test_refuses_symlink_escapes(files_client):
    async with files_client() as client:
        assert "symlink" in await fail(client, "read_file", path="escape")
        assert "symlink" in await fail(client, "list_directory", path="escape_dir")
        assert "symlink" in await fail(client, "file_info", path="escape_dir/secret.txt")


async def test_refuses_deny_listed_paths(files_client):
    async with files_client() as client:
        message = await fail(client, "read_file", path=".env")
        assert "deny_paths" in message and "**/.env" in message
        assert "deny_paths" in await fail(client, "tail", path="src/.env")
        assert "deny_paths" in await fail(client, "file_info", path="src/.env")


async def test_refuses_large_and_binary_files(files_client):
    async with files_client() as client:
        message = await fail(client, "read_file", path="big.dat")
        assert "62914560 bytes" in message and "max_file_size" in message and "52428800" in message
        assert "binary" in await fail(client, "read_file", path="image.bin")
        assert "is a directory" in await fail(client, "read_file", path="src")
        assert "does not exist" in await fail(client, "read_file", path="nope.txt")


async def test_category_off_hides_and_refuses(files_client):
    async with files_client(categories=["search"]) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "read_file" not in names and "grep" in names
        message = await fail(client, "read_file", path="README.md")
        assert "'read' category" in message
