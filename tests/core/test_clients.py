"""`nexus install|uninstall CLIENT` against a real config file of each client, and the entry really serving."""

from __future__ import annotations

import difflib
import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client

from nexus_core.cli.main import cli
from nexus_core.clients.installers import CLIENTS
from nexus_core.clients.text_edit import parse_json
from tests.conftest import server_env, write_config

FILES = Path(__file__).parent / "client_files"
FIXTURE = {
    "claude": "claude_desktop_config.json",
    "claude-code": "claude.json",
    "cursor": "cursor_mcp.json",
    "vscode": "vscode_mcp.json",
    "windsurf": "windsurf_mcp_config.json",
    "codex": "codex_config.toml",
    "gemini": "gemini_settings.json",
    "zed": "zed_settings.json",
    "cline": "cline_mcp_settings.json",
    "cline-cli": "cline_mcp_settings.json",
}
# Where each client reads its servers on Linux, under HOME=~ and XDG_CONFIG_HOME=~/.config (its documentation).
DEFAULT = {
    "claude": ".config/Claude/claude_desktop_config.json",
    "claude-code": ".claude.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".config/Code/User/mcp.json",
    "windsurf": ".codeium/windsurf/mcp_config.json",
    "codex": ".codex/config.toml",
    "gemini": ".gemini/settings.json",
    "zed": ".config/zed/settings.json",
    "cline": ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
    "cline-cli": ".cline/data/settings/cline_mcp_settings.json",
}
# What an entry carries besides command and args, in each client's own keys.
EXTRA = {
    "claude-code": {"type": "stdio", "env": {}},
    "vscode": {"type": "stdio"},
    "zed": {"source": "custom", "env": {}},
    "cline": {"disabled": False, "autoApprove": []},
    "cline-cli": {"disabled": False, "autoApprove": []},
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def read(client: str, path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if CLIENTS[client].format == "toml" else parse_json(text, jsonc=True).value


def servers(client: str, path: Path) -> dict[str, Any]:
    return read(client, path)[CLIENTS[client].table]


def only_added(before: str, after: str) -> bool:
    """Every line of ``before`` is in ``after`` unchanged, but for one that may have gained a comma."""
    old, new = before.splitlines(), after.splitlines()
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, _ in ops:
        if tag == "replace" and i2 - i1 == 1 and _gained_a_comma(old[i1], new[j1]):
            continue
        if tag not in ("equal", "insert"):
            return False
    return True


def _gained_a_comma(old: str, new: str) -> bool:
    return any(new[:i] + new[i + 1 :] == old for i, char in enumerate(new) if char == ",")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path


@pytest.mark.parametrize("client", list(FIXTURE))
def test_install_adds_one_entry_in_the_clients_format_and_uninstall_removes_exactly_it(client: str, work: Path) -> None:
    original = (FILES / FIXTURE[client]).read_text(encoding="utf-8")
    target = work / FIXTURE[client]
    target.write_text(original, encoding="utf-8")
    others = servers(client, target)
    config = write_config(work / "nexus.toml", "")

    code, out, err = run(
        "install", client, "--file", str(target), "--config", str(config), "--root", str(work / "project"),
        "--profile", "coding",
    )  # fmt: skip
    assert code == 0, err
    assert f"updated {target}; restart {CLIENTS[client].title}" in out and out.startswith(f"--- {target} (before)")
    after = target.read_text(encoding="utf-8")
    assert only_added(original, after)
    entry = servers(client, target)["nexus"]
    assert {k: v for k, v in servers(client, target).items() if k != "nexus"} == others
    assert Path(entry["command"]).name == "nexus" and Path(entry["command"]).is_absolute()
    assert entry["args"] == ["serve", "--config", str(config), "--root", str(work / "project"), "--profile", "coding"]
    assert {k: v for k, v in entry.items() if k not in ("command", "args")} == EXTRA.get(client, {})

    code, out, _ = run("install", client, "--file", str(target), "--config", str(config), "--root",
                       str(work / "project"), "--profile", "coding")  # fmt: skip
    assert code == 0 and "nothing to do" in out and target.read_text(encoding="utf-8") == after

    code, out, _ = run("uninstall", client, "--file", str(target))
    assert code == 0 and f"removed 'nexus' from {target}" in out
    assert target.read_text(encoding="utf-8") == original  # byte for byte
    code, out, _ = run("uninstall", client, "--file", str(target))
    assert code == 0 and "nothing to do" in out and target.read_text(encoding="utf-8") == original


@pytest.mark.parametrize("client", list(DEFAULT))
def test_each_client_writes_where_it_reads(client: str, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(work))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(work / ".config"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLINE_MCP_SETTINGS_PATH", raising=False)
    (work / "work").mkdir()
    monkeypatch.chdir(work / "work")
    code, out, err = run("install", client)
    assert code == 0, err
    assert list(servers(client, work / DEFAULT[client])) == ["nexus"]
    assert ("next: " in out) == bool(CLIENTS[client].next_step)


@pytest.mark.parametrize(
    ("client", "step"),
    [
        ("vscode", "start 'nexus'"),
        ("gemini", "Disabled until you trust the folder"),
        ("cline", "nexus install cline-cli"),
        ("cline-cli", "nexus install cline`"),
    ],
)
def test_install_says_the_step_left_in_the_client(client: str, step: str, work: Path) -> None:
    code, out, err = run("install", client, "--file", str(work / "f.json"))
    assert code == 0, err
    assert out.splitlines()[-1].startswith("next: ") and step in out


def test_workspace_writes_the_folders_file_not_the_users(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(work))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(work / ".config"))
    monkeypatch.chdir(work / "project")
    code, _, err = run("install", "vscode", "--workspace")
    assert code == 0, err
    assert list(servers("vscode", work / "project/.vscode/mcp.json")) == ["nexus"]
    assert not (work / ".config/Code/User/mcp.json").exists()
    code, _, err = run("install", "windsurf", "--workspace")
    assert code == 2 and "has no per-folder file" in err


@pytest.mark.parametrize("client", list(FIXTURE))
def test_print_shows_the_entry_in_the_clients_format_and_writes_nothing(client: str, work: Path) -> None:
    code, out, _ = run("install", client, "--print", "--root", str(work), "--name", "nx")
    assert code == 0
    data = tomllib.loads(out) if CLIENTS[client].format == "toml" else json.loads(out)
    assert data[CLIENTS[client].table]["nx"]["args"] == ["serve", "--root", str(work)]
    assert list(work.iterdir()) == [work / "project"]


def test_a_file_that_cannot_be_read_is_left_untouched_with_the_reason(work: Path) -> None:
    broken = work / "mcp.json"
    broken.write_text('{"mcpServers": {"a": 1,}}')  # a trailing comma: not JSON, which Cursor reads
    code, _, err = run("install", "cursor", "--file", str(broken))
    assert code == 2 and "not valid JSON (line 1, column 24: trailing comma); nothing was written" in err
    assert broken.read_text() == '{"mcpServers": {"a": 1,}}'
    commented = work / "claude_desktop_config.json"
    commented.write_text('{\n  // mine\n  "mcpServers": {}\n}\n')
    code, _, err = run("install", "claude", "--file", str(commented))
    assert code == 2 and "comments are not allowed in this file" in err
    toml = work / "config.toml"
    toml.write_text('mcp_servers = { nexus = { command = "old" } }\n')
    code, _, err = run("install", "codex", "--file", str(toml))
    assert code == 2 and "not written as a [mcp_servers.nexus] table here; edit it by hand" in err
    assert toml.read_text() == 'mcp_servers = { nexus = { command = "old" } }\n'


def test_a_changed_entry_is_replaced_in_place(work: Path) -> None:
    target = work / "zed_settings.json"
    shutil.copy(FILES / "zed_settings.json", target)
    assert run("install", "zed", "--file", str(target))[0] == 0
    first = target.read_text()
    code, out, _ = run("install", "zed", "--file", str(target), "--root", str(work / "project"))
    assert code == 0 and f'+        "{work / "project"}"' in out
    assert servers("zed", target)["nexus"]["args"] == ["serve", "--root", str(work / "project")]
    assert target.read_text().count('"nexus"') == first.count('"nexus"') == 1


@pytest.mark.anyio
async def test_every_clients_entry_starts_a_server_that_lists_tools(work: Path) -> None:
    """Each entry's command and arguments, run as the client would (its own cwd, a small environment)."""
    config = write_config(work / "nexus.toml", "[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n")
    for client, name in FIXTURE.items():
        target = work / name
        shutil.copy(FILES / name, target)
        code, _, err = run("install", client, "--file", str(target), "--config", str(config),
                           "--root", str(work / "project"), "--profile", "coding")  # fmt: skip
        assert code == 0, err
        entry = servers(client, target)["nexus"]
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=server_env(), cwd="/")
        async with (
            stdio_client(params) as (read_stream, write_stream),
            ClientSession(read_stream, write_stream) as session,
        ):
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
        assert "read_file" in tools and "hello" not in tools, client  # the profile 'coding': files and memory
