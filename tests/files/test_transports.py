"""The plugin as installed (entry point), over real stdio and Streamable HTTP, plus resources and prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import http_client, stdio_session, write_config
from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio


def config_file(tmp_path: Path, repo: Path) -> Path:
    # A prefix keeps these names apart from any other installed plugin's tools.
    return write_config(
        tmp_path / "nexus.toml",
        f"""
[server]
data_dir = "{tmp_path / "data"}"

[plugins.files]
prefix = "fs"
roots = ["{repo}"]
deny_paths = ["**/.env"]
""",
    )


async def test_over_stdio(tmp_path, repo):
    async with stdio_session("--config", str(config_file(tmp_path, repo))) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"fs_read_file", "fs_grep", "fs_git_log"} <= names and "fs_write_file" not in names
        result = await session.call_tool("fs_grep", {"pattern": "helper", "literal": True})
        assert not result.is_error
        assert [f["path"] for f in result.structured_content["files"]] == ["docs/guide.md", "src/pkg/util.py"]
        denied = await session.call_tool("fs_read_file", {"path": ".env"})
        assert denied.is_error and "deny_paths" in denied.content[0].text
        # The designs' API over real stdio: the one git tool, read_file's numbering and its end.
        assert "fs_git" in names
        log = await session.call_tool("fs_git", {"command": "log", "args": ["-n", "1"]})
        assert [c["subject"] for c in log.structured_content["commits"]] == ["Print the cwd"]
        read = await session.call_tool("fs_read_file", {"path": "README.md", "limit": 1})
        assert read.structured_content["content"] == "     1  # Demo\n"
        past = await session.call_tool("fs_read_file", {"path": "README.md", "offset": 99})
        assert not past.is_error and past.structured_content["content"] == ""
        big = await session.call_tool("fs_read_file", {"path": "big.dat"})  # 60 MB, over the 50 MB default
        assert big.is_error and "max_file_size of 52428800 bytes" in big.content[0].text


async def test_over_streamable_http(tmp_path, repo, http_server):
    url = http_server("--config", str(config_file(tmp_path, repo)))
    async with http_client(url) as client:
        log = await call(client, "fs_git_log", max=5)
        assert [c["subject"] for c in log["commits"]] == ["Print the cwd", "Initial commit"]
        assert "symlink" in await fail(client, "fs_read_file", path="escape")
        shown = await call(client, "fs_git", command="show", args=["HEAD~1"])
        assert shown["commit"]["subject"] == "Initial commit"
        assert "not one of the read-only commands" in await fail(client, "fs_git", command="push")
        # read_file as the design has it: its numbering, nothing past the end, max_file_size 50 MB
        assert (await call(client, "fs_read_file", path="README.md", limit=1))["content"] == "     1  # Demo\n"
        assert (await call(client, "fs_read_file", path="README.md", offset=99))["content"] == ""
        assert "max_file_size of 52428800 bytes" in await fail(client, "fs_read_file", path="big.dat")


async def test_file_resource_template(files_client, repo):
    async with files_client() as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert any(t.uri_template == "file:///{+path}" for t in templates)
        text = await client.read_resource("file:///src/pkg/util.py")
        assert text.contents[0].text.startswith("def helper(x):")
        binary = await client.read_resource("file:///image.bin")
        assert binary.contents[0].blob  # base64 bytes
        for uri, reason in [
            ("file:///.env", "deny_paths"),
            ("file:///escape", "symlink"),
            ("file:///big.dat", "max_file_size"),
            ("file:///missing.txt", "no file"),
        ]:
            with pytest.raises(MCPError, match=reason):
                await client.read_resource(uri)


async def test_prompts(files_client, repo):
    (repo / "src" / "app.py").write_text("print('changed')\n")
    async with files_client() as client:
        names = {p.name for p in (await client.list_prompts()).prompts}
        assert {"review_diff", "explain_file"} <= names
        review = await client.get_prompt("review_diff", {})
        text = review.messages[0].content.text
        assert "+print('changed')" in text and "Review" in text
        explain = await client.get_prompt("explain_file", {"path": "src/pkg/util.py"})
        assert "def helper(x):" in explain.messages[0].content.text
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("explain_file", {"path": ".env"})
        assert "API_KEY" not in str(refused.value)


async def test_explain_file_cut_names_the_read_file_offset_of_the_rest(files_client, repo):
    (repo / "long.txt").write_text("".join(f"line {i:03d} " + "y" * 50 + "\n" for i in range(100)))
    async with files_client(max_output_bytes=1000) as client:
        prompt = await client.get_prompt("explain_file", {"path": "long.txt"})
        text = prompt.messages[0].content.text
        offset = int(text.rsplit("read_file offset=", 1)[1].rstrip("]"))
        shown = [line for line in text.splitlines() if line.startswith("line ") and len(line) == 59]
        rest = await client.call_tool("read_file", {"path": "long.txt", "offset": offset, "limit": 1})
    assert offset == len(shown) == 16  # 16 whole lines fit in 1000 bytes
    assert rest.structured_content["content"] == f"    17  line 016 {'y' * 50}\n"
