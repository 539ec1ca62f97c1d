"""Files a served Nexus guards, through a real `nexus serve` and the official MCP client: tool files named
``_*`` or ``.*`` are never loaded, the audit log is created 0600, and no tool writes Nexus's or a plugin's code."""

from __future__ import annotations

import os
import stat
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

import nexus_core
import nexus_files
from tests.conftest import server_env, stdio_session, write_config

pytestmark = pytest.mark.anyio

OFF = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("memory", "graph", "manual", "bridge"))
REFUSED = "is Nexus's own configuration, data or code"

TOOL = '''
from pathlib import Path

Path(__file__).with_suffix(".ran").write_text("imported")  # proof that the file was run at all

def {name}() -> str:
    """A tool of {file}."""
    return "{name}"

TOOLS = [{name}]
'''


def text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined]


async def tool_names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def test_tool_files_named_with_a_leading_underscore_or_dot_are_not_loaded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".config" / "nexus" / "tools"  # the default tool folder, found through HOME
    folder.mkdir(parents=True)
    for file, name in (("shown.py", "shown"), ("_helpers.py", "underscored"), (".draft.py", "dotted")):
        (folder / file).write_text(textwrap.dedent(TOOL.format(name=name, file=file)))
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n' + OFF)
    env = {k: v for k, v in server_env(HOME=str(home)).items() if k != "XDG_CONFIG_HOME"}
    async with stdio_session("--standalone", "--config", str(config), env=env, cwd=tmp_path) as session:
        with anyio.fail_after(30):
            while "shown" not in (names := await tool_names(session)):  # every file is read in one pass, in order
                await anyio.sleep(0.05)
        assert (await session.call_tool("shown", {})).structured_content == {"result": "shown"}
    assert not {"underscored", "dotted"} & names
    assert sorted(p.name for p in folder.glob("*.ran")) == ["shown.ran"]  # the others were never even run


@contextmanager
def umask(mask: int) -> Iterator[None]:
    """The umask the servers started inside inherit: one that would leave a new file readable by all."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


async def test_the_audit_log_is_created_readable_only_by_its_owner(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = write_config(
        tmp_path / "nexus.toml", f'[server]\ndata_dir = "{data}"\n[plugins.files]\nenabled = false\n' + OFF
    )
    env = server_env(HOME=str(tmp_path / "home"))
    with umask(0o022):
        async with stdio_session("--standalone", "--config", str(config), env=env, cwd=tmp_path) as session:
            result = await session.call_tool("hello", {"name": "Ada"})
    assert not result.is_error, text(result)
    log = data / "audit.jsonl"
    assert '"tool":"hello"' in log.read_text().replace(" ", "")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


async def test_no_tool_writes_the_installed_code_of_nexus_or_a_plugin(tmp_path: Path) -> None:
    core, plugin = Path(nexus_core.__file__).parent, Path(nexus_files.__file__).parent  # what the server imports
    root = Path(os.path.commonpath([core, plugin]))  # a root a user may well give: it covers both
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nroots = ["{root}"]\n'
        '[plugins.files]\ncategories = ["read", "write"]\n[plugins.hello]\nenabled = false\n' + OFF,
    )
    new_files = [core / "nexus-write-probe.py", plugin / "nexus-write-probe.py"]
    assert not any(p.exists() for p in new_files)
    env = server_env(HOME=str(tmp_path / "home"))
    try:
        async with stdio_session("--standalone", "--config", str(config), env=env, cwd=tmp_path) as session:
            readable = await session.call_tool("read_file", {"path": str(core / "__init__.py")})
            written = [await session.call_tool("write_file", {"path": str(p), "content": "x = 1\n"}) for p in new_files]
            # old_text that is nowhere in the file: were the edit let through, it would change nothing anyway
            edit = {
                "path": str(plugin / "__init__.py"),
                "edits": [{"old_text": "text found in no module", "new_text": "x"}],
            }
            edited = await session.call_tool("edit_file", edit)
        assert not readable.is_error, text(readable)  # the root covers the code: only writing is refused
        for result in [*written, edited]:
            assert result.is_error and REFUSED in text(result), text(result)
        assert not any(p.exists() for p in new_files)
    finally:
        for path in new_files:  # should a broken check let a write through, the checkout stays clean
            path.unlink(missing_ok=True)
