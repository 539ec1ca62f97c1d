"""Progress of long calls (the skills design's v2 streaming): notifications/progress while grep, glob,
concat_files, run_python and bash_safe run, when the client's request carries a progress token, and none without one.

Through the real relay and shared server (`nexus serve`) and over Streamable HTTP, in both protocol eras.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import HTTP_TOKEN, HeardProgress, nexus_command, server_env, write_config

pytestmark = pytest.mark.anyio

FAST = "0.01"  # NEXUS_PROGRESS_INTERVAL for the servers of these tests: even a short walk sends some
SCRIPT = "import time\nfor i in range(6):\n    print('step', i, flush=True)\n    time.sleep(0.1)\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """3,000 small files: a walk long enough to report on, quick to make."""
    root = tmp_path / "tree"
    for d in range(30):
        folder = root / f"d{d:02}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"f{f:03}.py").write_text(f"value = {f}\nneedle_{d}\n")
    return root


def config(tmp_path: Path, root: Path) -> Path:
    # Only the files plugin, its Python engine (it reports every few hundred files), execute for run_python.
    others = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("memory", "graph", "manual", "hello", "bridge"))
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n{others}'
        f'[plugins.files]\nroots = ["{root}"]\nuse_ripgrep = "never"\ncategories = ["read", "search", "execute"]\n'
        'allowed_commands = ["echo", "sleep"]\n',
    )


async def with_progress(client: Client, tool: str, arguments: dict[str, Any]) -> list[tuple[float, Any, Any]]:
    """Call ``tool`` with a progress token; the progress it got, after checking the call succeeded."""
    got: list[tuple[float, Any, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append((progress, total, message))

    result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    assert not result.is_error, result.content[0].text
    values = [p for p, _, _ in got]
    assert values == sorted(set(values)), f"progress must grow at every notification: {values}"
    return got


async def check_a_command(client: Client, heard: HeardProgress) -> list[tuple[float, Any, Any]]:
    """run_python (granted by execute, as 001 has it) streams its output as progress with a token, and sends none
    without one; bash_safe reports too."""
    ran = await with_progress(client, "run_python", {"code": SCRIPT})
    assert any("step " in m for _, _, m in ran), ran  # the command's last line of output, as it comes
    slept = await with_progress(client, "bash_safe", {"command": "echo waiting && sleep 0.4"})
    assert slept and any("waiting" in m for _, _, m in slept), slept
    before = len(heard.progress)
    assert not (await client.call_tool("run_python", {"code": SCRIPT})).is_error
    assert len(heard.progress) == before, "progress sent to a request that carried no progress token"
    return ran


async def test_long_calls_report_progress_through_the_relay_in_both_eras(tmp_path: Path, tree: Path) -> None:
    command = nexus_command("serve", "--config", str(config(tmp_path, tree)))
    env = server_env(NEXUS_PROGRESS_INTERVAL=FAST)
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=tmp_path)
    heard = HeardProgress()
    async with Client(params, mode="legacy", message_handler=heard) as client:
        grep = await with_progress(client, "grep", {"pattern": "needle", "max_results": 5000})
        assert grep and all("files searched" in m for _, _, m in grep), grep
        glob = await with_progress(client, "glob", {"pattern": "*.py"})
        # Listing (no total yet), then matching, out of twice the files; matching is short, so under load the
        # pump may not wake during it (a phase shorter than the interval sends nothing).
        assert glob and all(t in (None, 6_000) for _, t, _ in glob), glob
        concat = await with_progress(client, "concat_files", {"paths": ["."]})
        assert concat and any("files listed" in m for _, _, m in concat), concat
        await check_a_command(client, heard)
    async with Client(params, mode="2026-07-28", message_handler=heard) as client:  # the same shared server
        await check_a_command(client, heard)


async def test_long_calls_report_progress_over_http_in_both_eras(tmp_path: Path, tree: Path, http_server: Any) -> None:
    """At the default rate: run_python reports at every look at its child (20 a second), the client hears 4."""
    url = http_server("--config", str(config(tmp_path, tree)))
    for mode in ("legacy", "auto"):
        heard = HeardProgress()
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=60)
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, mode=mode, message_handler=heard) as client:
            started = time.monotonic()
            got = await check_a_command(client, heard)
            seconds = time.monotonic() - started
        assert len(got) <= seconds / 0.25 + 1, (mode, len(got), seconds)
