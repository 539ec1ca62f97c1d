"""`--enable read,search,vcs` (design 001): one client's categories, granted and withheld, on the shared server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nexus_core.access.enable import parse_enable
from nexus_core.access.grants import Category
from tests.conftest import http_client, nexus_command, server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Files (read, search, vcs on; write off) with delete_file denied, and the example plugin (greet on)."""
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n'
        "[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n"
        '[plugins.files]\ndeny_tools = ["delete_file"]\n',
    )


def _text(result: Any) -> str:
    return result.content[0].text


async def _names(session: Any) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}


async def test_each_client_gets_exactly_its_categories_and_the_config_still_applies(
    config: Path, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    base = ("--config", str(config))
    async with (
        stdio_session(*base, "--enable", "read,search,vcs", cwd=tmp_path) as reader,
        stdio_session(*base, "--enable", "read,write", cwd=tmp_path) as writer,
        stdio_session(*base, cwd=tmp_path) as plain,
    ):
        status = json.loads(
            subprocess.run(
                nexus_command("server", "status", "--json", *base), capture_output=True, text=True, check=True
            ).stdout
        )
        assert len(status["sessions"]) == 3  # one shared server holds all three

        names = await _names(reader)
        assert {"read_file", "grep", "git_status"} <= names
        assert not names & {"write_file", "hello"}  # write not listed; greet (on by default) withheld
        refused = await reader.call_tool("write_file", {"path": "b.txt", "content": "x"})
        assert refused.is_error and "--enable read,search,vcs does not grant" in _text(refused)
        assert "'greet' category" in _text(await reader.call_tool("hello", {"name": "Ada"}))

        names = await _names(writer)
        assert {"read_file", "write_file"} <= names and not names & {"grep", "hello"}  # write granted, search not
        written = await writer.call_tool("write_file", {"path": "b.txt", "content": "from the writer\n"})
        assert not written.is_error and (tmp_path / "b.txt").read_text() == "from the writer\n"
        denied = await writer.call_tool("delete_file", {"path": "b.txt"})
        assert denied.is_error and "deny_tools" in _text(denied)  # the config's deny_tools still holds
        assert (tmp_path / "b.txt").exists()

        names = await _names(plain)
        assert "write_file" not in names and "hello" in names  # no --enable: the config's grants
        refused = await plain.call_tool("write_file", {"path": "c.txt", "content": "x"})
        assert refused.is_error and "not granted" in _text(refused) and not (tmp_path / "c.txt").exists()


@pytest.mark.parametrize("mode", ["relay", "standalone"])
def test_a_category_no_plugin_declares_is_a_clear_error(config: Path, tmp_path: Path, mode: str) -> None:
    extra = ["--standalone"] if mode == "standalone" else []
    proc = subprocess.run(
        nexus_command("serve", "--config", str(config), "--enable", "read,reed", *extra),
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "no plugin declares the category 'reed' (did you mean 'read'?)" in proc.stderr


async def test_standalone_and_http_sessions_get_the_commands_categories(
    config: Path, tmp_path: Path, http_server: Any
) -> None:
    async with stdio_session("--config", str(config), "--standalone", "--enable", "files.write", cwd=tmp_path) as one:
        names = await _names(one)
        assert "write_file" in names and not names & {"read_file", "delete_file", "hello"}  # files.write alone
        assert not (await one.call_tool("write_file", {"path": "s.txt", "content": "s"})).is_error
    url = http_server("--config", str(config), "--enable", "read,files.write", cwd=tmp_path)
    async with http_client(url) as client:
        written = await client.call_tool("write_file", {"path": "h.txt", "content": "over http\n"})
        assert not written.is_error and (tmp_path / "h.txt").read_text() == "over http\n"
        assert "hello" not in {t.name for t in (await client.list_tools()).tools}


def test_names_are_read_against_what_each_plugin_declares() -> None:
    declared = {
        "files": {c.name: c for c in [Category(name="read", description=""), Category(name="write", description=""),
                                      Category(name="execute", description="", includes=("python",)),
                                      Category(name="python", description="")]},
        "memory": {c.name: c for c in [Category(name="read", description=""), Category(name="write", description="")]},
    }  # fmt: skip
    enabled = parse_enable(" read , files.execute ,", declared, {"tool_search": frozenset({"search"})})
    assert enabled.plugins == {
        "files": frozenset({"read", "execute", "python"}),  # execute includes python, as design 001 has it
        "memory": frozenset({"read"}),  # a bare name in every plugin that declares it; files.execute in files only
        "tool_search": frozenset({"search"}),
    }
    assert enabled.refusal("memory", "store_memory", "write") is not None
    assert enabled.refusal("memory", "recall_memories", "read") is None
    with pytest.raises(ValueError, match=r"'memory.execute'"):
        parse_enable("memory.execute", declared, {})
    with pytest.raises(ValueError, match="names no category"):
        parse_enable(" , ", declared, {})
