"""Code another user could have written never runs: the tool folder and plugin folders are checked like sshd's
StrictModes (group- or other-writable, or another user's, is refused), through a real `nexus serve`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from tests.conftest import nexus_command, server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio

OFF = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "hello", "bridge"))
CONFIG = '[server]\ndata_dir = "data"\ntool_dirs = ["tools"]\n[plugins.tools]\npoll_interval = 0.2\n' + OFF


def tool_file(name: str) -> str:
    return f'def {name}() -> str:\n    """Run as the server\'s user."""\n    return "ran"\n\nTOOLS = [{name}]\n'


async def tool_names(session: object) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}  # type: ignore[attr-defined]


async def test_a_tool_folder_others_can_write_serves_nothing_and_a_file_others_can_write_is_skipped(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    tools.chmod(0o777)  # anyone may drop a file here
    (tools / "dropped.py").write_text(tool_file("dropped"))
    config = write_config(tmp_path / "nexus.toml", CONFIG)
    async with stdio_session("--config", str(config), cwd=tmp_path, env=server_env()) as session:
        await anyio.sleep(1)  # five polls
        assert "dropped" not in await tool_names(session)
        tools.chmod(0o755)  # the folder is the user's alone again; one file in it is still writable by all
        (tools / "mine.py").write_text(tool_file("mine"))
        (tools / "dropped.py").chmod(0o666)
        with anyio.fail_after(15):
            while "mine" not in (names := await tool_names(session)):
                await anyio.sleep(0.1)
        assert "dropped" not in names
        (tools / "dropped.py").chmod(0o644)  # fixed: it is served after all
        with anyio.fail_after(15):
            while "dropped" not in await tool_names(session):
                await anyio.sleep(0.1)
        (tools / "dropped.py").chmod(0o646)  # writable again: its tools are withdrawn, not kept serving
        with anyio.fail_after(15):
            while "dropped" in await tool_names(session):
                await anyio.sleep(0.1)


def test_a_plugin_folder_others_can_write_is_never_imported_and_doctor_says_so(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marker = tmp_path / "RAN"
    (plugins / "dropped.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    config = write_config(tmp_path / "nexus.toml", '[server]\ndata_dir = "data"\nplugin_dirs = ["plugins"]\n' + OFF)
    env = server_env(NEXUS_CONFIG=str(config))
    plugins.chmod(0o777)
    plugins_here = nexus_command("plugins", "--standalone")  # a host built anew each time: no server to restart
    listed = subprocess.run(plugins_here, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert not marker.exists()
    assert "writable by other users" in listed.stdout + listed.stderr
    doctor = subprocess.run(nexus_command("doctor"), capture_output=True, text=True, cwd=tmp_path, env=env)
    assert "refused" in doctor.stdout and str(plugins) in doctor.stdout
    plugins.chmod(0o755)
    (plugins / "dropped.py").chmod(0o662)  # only the file: it alone is skipped
    subprocess.run(plugins_here, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert not marker.exists()
    (plugins / "dropped.py").chmod(0o644)
    subprocess.run(plugins_here, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert marker.exists()  # the same file, once only its owner can write it, is loaded
