"""Design 001's command line as written: `nexus-mcp-server`, `--enable`, `--http --port`, `--config FILE.json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment

from nexus_core.config.model import read_config
from nexus_core.errors import ConfigError
from tests.conftest import HTTP_TOKEN, config_dir, free_port, http_client, server_env, wait_listening, write_config

pytestmark = pytest.mark.anyio

BIN = Path(sys.executable).parent  # the venv's own console scripts: nexus, nexus-mcp-server


def test_the_command_is_installed() -> None:
    assert (BIN / "nexus-mcp-server").is_file(), "run scripts/setup: pyproject.toml's [project.scripts] changed"


async def test_the_claude_desktop_entry_of_design_001_runs_as_written(
    isolated_user_dirs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Launched as Claude Desktop launches it: the command on the PATH, the SDK's default environment (HOME, PATH,
    SHELL, TERM, USER, LOGNAME), from /. / is no project, so the folder to work in is the user's config's root."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "a.txt").write_text("one\n")
    config_dir(isolated_user_dirs).mkdir(parents=True)
    write_config(
        config_dir(isolated_user_dirs) / "nexus.toml",  # the user's own config: the entry names none
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nroots = ["{project}"]\n'
        "[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    entry = {"command": "nexus-mcp-server", "args": ["--enable", "read,search,vcs"]}  # claude_desktop_config.json
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")  # where the install put it
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd="/")  # env: the SDK's default
    assert set(get_default_environment()) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"read_file", "tail", "file_info", "list_directory", "glob", "grep", "concat_files", "git"} <= names
        assert not names & {"write_file", "edit_file", "bash_safe", "run_python", "hello"}
        read = await session.call_tool("read_file", {"path": "a.txt"})
        assert not read.is_error and read.content[0].text.strip().endswith("one")  # type: ignore[union-attr]
        status = await session.call_tool("git", {"command": "status"})
        assert [e["path"] for e in status.structured_content["entries"]] == ["a.txt"]  # type: ignore[index]
        refused = await session.call_tool("write_file", {"path": "b.txt", "content": "x"})
        assert refused.is_error and "--enable read,search,vcs does not grant" in refused.content[0].text  # type: ignore[union-attr]
    assert not (project / "b.txt").exists()
    env = server_env(PATH=os.environ["PATH"])
    claude = isolated_user_dirs / ".config" / "Claude" / "claude_desktop_config.json"
    claude.parent.mkdir(parents=True)
    claude.write_text(json.dumps({"mcpServers": {"nexus": entry}}))
    doctor = subprocess.run(
        [str(BIN / "nexus"), "doctor"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert "entry 'nexus': nexus-mcp-server --enable read,search,vcs" in doctor.stdout  # doctor knows the entry
    assert "the server started and listed" in doctor.stdout and "[FAIL] claude" not in doctor.stdout, doctor.stdout
    starts = next(line for line in doctor.stdout.splitlines() if "every client starts" in line)
    assert starts.endswith(str((BIN / "nexus").resolve()))  # the install's nexus: one install, not two


async def test_http_port_and_a_json_config(isolated_user_dirs: Path, tmp_path: Path) -> None:
    """`nexus-mcp-server --http --port P --config config.json`: Streamable HTTP, the config read from JSON."""
    token = config_dir(isolated_user_dirs) / "http-token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(HTTP_TOKEN + "\n")
    config = tmp_path / "config.json"
    plugins = {"memory": {"enabled": False}, "bridge": {"enabled": False}, "files": {"categories": ["read", "write"]}}
    config.write_text(json.dumps({"server": {"data_dir": str(tmp_path / "data")}, "plugins": plugins}))
    port = free_port()
    command = [str(BIN / "nexus-mcp-server"), "--http", "--port", str(port), "--config", str(config)]
    proc = subprocess.Popen(command, env=server_env(), cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        wait_listening(proc, port)
        async with http_client(f"http://127.0.0.1:{port}/mcp") as client:
            written = await client.call_tool("write_file", {"path": "j.txt", "content": "granted by JSON\n"})
            assert not written.is_error and (tmp_path / "j.txt").read_text() == "granted by JSON\n"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_a_config_json_in_design_001s_own_keys_works_as_written(tmp_path: Path) -> None:
    """Design 001's ServerConfig keys in config.json: working_directory, allowed_paths, blocked_paths,
    enabled_categories and max_file_size become the roots, deny_paths and the files plugin's grants and limit."""
    work = tmp_path / "work"
    (work / "private").mkdir(parents=True)
    (work / "private" / "key.txt").write_text("hidden\n")
    (work / "big.txt").write_text("x" * 200)
    design = {"working_directory": str(work), "blocked_paths": ["private"], "enabled_categories": ["read", "write"]}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(design | {"max_file_size": 100, "server": {"data_dir": str(tmp_path / "data")}}))
    loaded = read_config(config)
    assert loaded.server.roots == [work] and loaded.server.deny_paths == ["private"]
    assert loaded.table("files").categories == ["read", "write"]
    env = server_env(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    plugins = ["--set", "plugins.memory.enabled=false", "--set", "plugins.bridge.enabled=false"]
    params = StdioServerParameters(
        command="nexus-mcp-server", args=["--config", str(config), *plugins], env=env, cwd=tmp_path
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        written = await session.call_tool("write_file", {"path": "new.txt", "content": "granted\n"})
        assert not written.is_error and (work / "new.txt").read_text() == "granted\n"  # relative to working_directory
        for path, reason in (("private/key.txt", "denied"), ("big.txt", "above max_file_size of 100 bytes")):
            refused = await session.call_tool("read_file", {"path": path})
            assert refused.is_error and reason in refused.content[0].text, refused.content  # type: ignore[union-attr]


def test_a_design_key_of_the_wrong_shape_is_named(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"allowed_paths": "/srv"}))
    with pytest.raises(ConfigError, match="allowed_paths: expected a list of strings"):
        read_config(config)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"server": {"data_dir": 3,}}', "not valid JSON: Expecting property name"),
        ("[1]", "expected a JSON object of tables, got list"),
        ('{"server": {"idle_timeout": -1}}', "server.idle_timeout: Input should be greater than 0 (got -1)"),
    ],
)
def test_a_bad_json_config_is_one_clear_error(tmp_path: Path, text: str, reason: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_config(config)
    assert reason in str(caught.value) and str(config) in str(caught.value)


def test_the_server_stops_on_a_bad_json_config_with_the_reason(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"server": {"data_dir": 3,}}')
    proc = subprocess.run(
        [str(BIN / "nexus-mcp-server"), "--config", str(config)],
        capture_output=True,
        text=True,
        env=server_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert proc.returncode == 2 and "not valid JSON: Expecting property name" in proc.stderr


def test_its_help_names_it() -> None:
    proc = subprocess.run([str(BIN / "nexus-mcp-server"), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: nexus-mcp-server [OPTIONS]")
    assert "--enable CATEGORY,..." in proc.stdout and "--http" in proc.stdout
