"""The example plugin a third party copies: every hook it shows works."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

import nexus_hello

pytestmark = pytest.mark.anyio


async def test_hello_with_its_config_resources_and_prompt(make_host, tmp_path: Path) -> None:
    (tmp_path / "poem.txt").write_text("a\nb\n")
    host = make_host(
        {"hello": nexus_hello},
        {"plugins": {"hello": {"greeting": "Hej", "categories": ["greet", "files"], "roots": [str(tmp_path)]}}},
    )
    async with Client(host.server) as client:
        assert (await client.call_tool("hello", {"name": "Ada"})).structured_content == {
            "text": "Hej, Ada!",
            "count": 1,
        }
        assert (await client.call_tool("hello", {"name": "Bo"})).structured_content["count"] == 2
        lines = await client.call_tool("count_lines", {"path": "poem.txt"})
        assert lines.structured_content == {"path": "poem.txt", "lines": 2}
        missing = await client.call_tool("count_lines", {"path": "nope.txt"})
        assert missing.is_error and "'nope.txt' is not a file" in missing.content[0].text
        assert (await client.read_resource("hello://greeting")).contents[0].text == "Hej"
        assert (await client.read_resource("hello://greeting/Ada")).contents[0].text == "Hej, Ada!"
        prompt = await client.get_prompt("welcome", {"name": "Ada"})
        assert "welcome for Ada" in prompt.messages[0].content.text
