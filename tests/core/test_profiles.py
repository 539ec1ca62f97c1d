"""Profiles: a client served only a named set of plugins and tools, with the permission gate still inside it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import nexus_command, server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[plugins.bridge]\nenabled = false\n'
        '[profiles.reader]\ndescription = "Only reading files."\nplugins = ["files"]\ntools = ["read_file", "glob"]\n',
    )


@pytest.mark.parametrize("mode", ["relay", "standalone"])
async def test_a_profile_serves_exactly_its_plugins_and_the_gate_still_applies(
    config: Path, tmp_path: Path, mode: str
) -> None:
    extra = ["--standalone"] if mode == "standalone" else []
    async with stdio_session("--config", str(config), "--profile", "coding", *extra, cwd=tmp_path) as coding:
        tools = {t.meta["nexus/plugin"] for t in (await coding.list_tools()).tools}  # type: ignore[index]
        names = {t.name for t in (await coding.list_tools()).tools}
        prompts = {p.name for p in (await coding.list_prompts()).prompts}
        assert tools == {"files", "memory"}
        assert "write_file" not in names and "delete_memory" not in names  # not granted: a profile grants nothing
        assert "record_fix" in prompts and "explain_file" in prompts
        refused = await coding.call_tool("search_knowledge", {"query": "x"})
        assert refused.is_error and "not in the profile 'coding'" in refused.content[0].text  # type: ignore[union-attr]
        async with stdio_session("--config", str(config), "--profile", "reader", *extra, cwd=tmp_path) as reader:
            assert {t.name for t in (await reader.list_tools()).tools} == {"read_file", "glob"}
            tail = await reader.call_tool("tail", {"path": "nexus.toml"})
            assert tail.is_error and "not in the profile 'reader'" in tail.content[0].text  # type: ignore[union-attr]
        everything = {t.name for t in (await coding.list_tools()).tools}
        assert everything == names  # another client's profile changes nothing for this one


@pytest.mark.parametrize("mode", ["relay", "standalone"])
def test_an_unknown_profile_is_a_clear_error(config: Path, tmp_path: Path, mode: str) -> None:
    proc = subprocess.run(
        nexus_command(
            "serve", "--config", str(config), "--profile", "nope", *(["--standalone"] if mode == "standalone" else [])
        ),
        capture_output=True,
        timeout=120,
        env=server_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "profiles.nope: no such profile (known: coding, notes, reader)" in proc.stderr.decode()
