"""The tool folder while serving: a real ``nexus serve`` (standalone, and the default relay to the shared server),
the official MCP client, and tool files added, edited, broken and deleted under it."""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.conftest import config_dir, http_client, logs_dir, nexus_command, server_env, write_config
from tests.core.test_tool_files import DESIGN_GET_TIME

pytestmark = pytest.mark.anyio

CONFIG = '[server]\ndata_dir = "data"\ntool_dirs = ["tools"]\n[plugins.tools]\npoll_interval = 0.2\n' + "".join(
    f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "hello", "bridge")
)

GREET = '''
"""Say hello."""
parameters = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}

def execute(args, context):
    return "Hello, " + args["who"]
'''

ADD = '''
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

TOOLS = [add]
'''


class Client:
    """A client session that counts the tools/list_changed notifications it receives."""

    def __init__(self, session: ClientSession, changes: list[str]) -> None:
        self.session, self.changes = session, changes

    async def tools(self) -> dict[str, types.Tool]:
        return {tool.name: tool for tool in (await self.session.list_tools()).tools}

    async def text(self, tool: str, arguments: dict[str, Any]) -> str:
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result
        return result.content[0].text  # type: ignore[union-attr]

    async def wait_for_changes(self, count: int, timeout: float = 15) -> None:
        with anyio.fail_after(timeout):
            while len(self.changes) < count:
                await anyio.sleep(0.02)


@asynccontextmanager
async def nexus(config: Path, *args: str, errlog: Path) -> AsyncIterator[Client]:
    changes: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append("tools")

    command = nexus_command("serve", *args, "--config", str(config))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=config.parent)
    with errlog.open("w") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            await session.initialize()
            yield Client(session, changes)


def write(path: Path, source: str) -> None:
    path.write_text(textwrap.dedent(source), encoding="utf-8")


async def wait_for(condition: Callable[[], bool], timeout: float = 15) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.05)


@pytest.mark.parametrize("args", [["--standalone"], []], ids=["standalone", "shared-server"])
async def test_tool_files_are_added_edited_broken_and_deleted_while_a_client_is_connected(
    tmp_path: Path, isolated_user_dirs: Path, args: list[str]
) -> None:
    config = write_config(tmp_path / "nexus.toml", CONFIG)
    folder = tmp_path / "tools"
    folder.mkdir()
    write(folder / "greet.py", GREET)  # a JSON-schema tool
    write(folder / "maths.py", ADD)  # a typed one
    shout = folder / "shout.py"
    stderr = tmp_path / "stderr.log"

    def server_log() -> str:  # standalone: its stderr; shared: the shared server's log file
        found = [stderr, *logs_dir(isolated_user_dirs).glob("*.log")]
        return "".join(path.read_text(errors="replace") for path in found if path.exists())

    async with nexus(config, *args, errlog=stderr) as client:
        tools = await client.tools()
        assert {"greet", "add"} <= set(tools)
        assert tools["greet"].input_schema["required"] == ["who"]
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert await client.text("greet", {"who": "Ada"}) == "Hello, Ada"
        assert (await client.session.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        base = len(client.changes)  # the first load, announced to a client connected before it ended

        write(
            shout, 'def shout(text: str) -> str:\n    """Shout."""\n    return text.upper() + "!"\n\nTOOLS = [shout]\n'
        )
        await client.wait_for_changes(base + 1)
        assert "shout" in await client.tools()
        assert await client.text("shout", {"text": "hi"}) == "HI!"

        write(
            shout,
            'def shout(text: str) -> str:\n    """Shout twice."""\n    return text.upper() * 2\n\nTOOLS = [shout]\n',
        )
        await client.wait_for_changes(base + 2)
        assert (await client.tools())["shout"].description == "Shout twice."
        assert await client.text("shout", {"text": "hi"}) == "HIHI"

        write(shout, "def shout(text:\n")
        await wait_for(lambda: "shout.py failed to load: SyntaxError at line 1" in server_log())
        assert "its previous version keeps serving (shout)" in server_log()
        assert "shout" in await client.tools()
        assert await client.text("shout", {"text": "hi"}) == "HIHI"  # the last good version
        assert len(client.changes) == base + 2  # nothing changed for clients

        shout.unlink()
        await client.wait_for_changes(base + 3)
        assert "shout" not in await client.tools()
        gone = await client.session.call_tool("shout", {"text": "hi"})
        assert gone.is_error and gone.content[0].text == "Unknown tool: shout"  # type: ignore[union-attr]
        assert await client.text("greet", {"who": "Grace"}) == "Hello, Grace"  # the other files were left alone


def test_nexus_plugins_and_tools_report_a_file_that_fails_to_load(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", CONFIG)
    (tmp_path / "tools").mkdir()
    write(tmp_path / "tools" / "greet.py", GREET)
    write(tmp_path / "tools" / "broken.py", "def execute(:\n")

    plugins = subprocess.run(
        nexus_command("plugins", "--config", str(config)), capture_output=True, text=True, env=server_env(), timeout=60
    )
    assert plugins.returncode == 0, plugins.stderr
    assert "\ntools:\n" in plugins.stdout
    assert f"  {tmp_path / 'tools'}: 2 files, 1 tool\n" in plugins.stdout
    assert "  broken.py: failed to load: SyntaxError at line 1: invalid syntax; no tools served\n" in plugins.stdout

    tools = subprocess.run(
        nexus_command("tools", "--config", str(config)), capture_output=True, text=True, env=server_env(), timeout=60
    )
    assert tools.returncode == 0, tools.stderr
    assert [line.split()[:4] for line in tools.stdout.splitlines()[1:]] == [["greet", "tools", "custom", "granted"]]
    status = subprocess.run(
        nexus_command("server", "status", "--json", "--config", str(config)), capture_output=True, text=True
    )
    log = Path(json.loads(status.stdout)["log"]).read_text()  # the shared server answered both: its log says why
    assert f"tool file {tmp_path / 'tools' / 'broken.py'} failed to load: SyntaxError at line 1" in log


async def test_003s_get_time_with_category_basic_as_written_over_stdio_and_http(
    isolated_user_dirs: Path, http_server: Callable[..., str]
) -> None:
    """The design's tool file, category 'basic', in the user's tool folder, granted by the user's nexus.toml
    (`categories = ["custom", "basic"]`): `nexus serve` on stdio and over Streamable HTTP list and run it."""
    tools = config_dir(isolated_user_dirs) / "tools"
    tools.mkdir(parents=True)
    write(tools / "get_time.py", DESIGN_GET_TIME)
    others = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "bridge"))
    grant = '[plugins.tools]\ncategories = ["custom", "basic"]\n'
    write_config(config_dir(isolated_user_dirs) / "nexus.toml", grant + others)
    command = nexus_command("serve")
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=isolated_user_dirs)
    async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as stdio:
        await stdio.initialize()
        async with http_client(http_server()) as http:
            for client in (stdio, http):
                with anyio.fail_after(15):  # the folder's first load
                    while not (listed := {t.name: t for t in (await client.list_tools()).tools}).get("get_time"):
                        await anyio.sleep(0.05)
                assert listed["get_time"].meta["nexus/category"] == "basic"  # type: ignore[index]
                result = await client.call_tool("get_time", {"timezone": "Asia/Shanghai"})
                assert not result.is_error and result.content[0].text == "CST"  # type: ignore[union-attr]
