"""Everything Nexus creates is its user's alone: 0600 files, 0700 folders, set per path (never through the
umask), through a real `nexus serve` and each plugin's writing tool; folders it did not create keep their mode."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import home_env, nexus_command, stdio_session, stop_shared_servers, write_config

pytestmark = pytest.mark.anyio

TOOL = '''
def cache(context) -> str:
    """Build a cache in the tool's data folder."""
    return str(context.data_dir)

TOOLS = [cache]
'''


def loose(top: Path) -> list[str]:
    """Each folder or file below ``top`` (and ``top``) that group or other may read, write or enter."""
    found = []
    for folder, _, files in os.walk(top):
        for path in [folder, *(os.path.join(folder, f) for f in files)]:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o077 and not stat.S_ISLNK(os.lstat(path).st_mode):
                found.append(f"{path} {mode:o}")
    return found


async def test_what_nexus_creates_is_private_and_folders_it_did_not_create_keep_their_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    share, library, tools, project = home / ".local" / "share", home / "notes", tmp_path / "tools", tmp_path / "p"
    for folder in (share, library, tools, project):
        folder.mkdir(parents=True, mode=0o755)
        folder.chmod(0o755)
    (tools / "cache.py").write_text(TOOL)
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\nroots = ["{project}", "{library}"]\ntool_dirs = ["{tools}"]\n'
        f'[plugins.manual]\nlibraries = {{ work = "{library}" }}\ncategories = ["read", "write"]\n'
        + "".join(f'[plugins.{p}]\ncategories = ["read", "write"]\n' for p in ("files", "memory", "graph")),
    )
    env = home_env(home)
    subprocess.run(nexus_command("server", "token", "--rotate"), env=env, check=True, capture_output=True)
    async with stdio_session("--config", str(config), cwd=project, env=env) as session:
        calls = {
            "write_file": {"path": str(project / "x.txt"), "content": "x"},
            "store_memory": {"content": "The deploy key lives in the vault.", "context_name": "ops", "tags": ["ops"]},
            "add_entity": {"category": "projects", "id": "d", "type": "decision", "name": "D", "desc": "d"},
            "add_entities": {"library_name": "work", "entities": [{"name": "n", "entity_type": "note"}]},
            "cache": {},
        }
        for tool, arguments in calls.items():
            result = await session.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content)
    stop_shared_servers(home / ".local" / "state" / "nexus" / "run")  # its last writes (the audit log) done
    nexus_made = [share / "nexus", home / ".local" / "state" / "nexus", home / ".config" / "nexus"]
    assert all(folder.is_dir() for folder in nexus_made)
    assert [line for folder in nexus_made for line in loose(folder)] == []
    assert stat.S_IMODE((library / "n.md").stat().st_mode) == 0o600  # the note it created
    for folder in (share, library, home / ".local"):  # not Nexus's: never changed
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder
