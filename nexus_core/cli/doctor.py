"""``nexus doctor``: when a client says "server failed to start", what is wrong and the exact fix.

For each client whose config file exists: the file parses, it has a Nexus
entry, the entry's command resolves, the config it names (or the one it
would find) is valid, its roots and profile exist, and the server it starts
lists its tools within the time a client waits. Then the shared server:
running or not, and whether it is healthy. Exits 1 when something is wrong.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from nexus_core.clients import installers, text_edit
from nexus_core.config import lookup
from nexus_core.errors import NexusError
from nexus_core.serve import rendezvous
from nexus_core.serve.options import CONFIG, PROFILE, ROOT, ServeOptions, parser

CLIENT_TIMEOUT = 60.0  # seconds a desktop client waits for a server's tools (Claude Desktop: about a minute)


@dataclass
class Check:
    """What was found for one client: lines that passed, problems each with its fix."""

    name: str
    ok: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    skipped: str | None = None


def entries(client: installers.Client, path: Path) -> dict[str, dict[str, Any]]:
    """The client's servers that run Nexus (by name), from its file; ValueError when the file does not parse."""
    text = path.read_text(encoding="utf-8-sig")
    data = (
        tomllib.loads(text) if client.format == "toml" else text_edit.parse_json(text, client.format == "jsonc").value
    )
    servers = data.get(client.table) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}
    return {
        name: entry
        for name, entry in servers.items()
        if isinstance(entry, dict) and _runs_nexus(entry.get("command"), entry.get("args"))
    }


def _runs_nexus(command: Any, args: Any) -> bool:
    words = [str(command or ""), *map(str, args if isinstance(args, list) else [])]
    return Path(words[0]).name in ("nexus", "nexus.exe") or "nexus_core" in words


def check_client(name: str, client: installers.Client) -> Check:
    check = Check(name)
    path = client.file()
    if not path.exists():
        check.skipped = f"not installed ({path} does not exist)"
        return check
    try:
        found = entries(client, path)
    except (ValueError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        check.problems.append((f"{path} does not parse: {exc}", f"fix the file by hand, then `nexus install {name}`"))
        return check
    if not found:
        check.skipped = f"no Nexus entry in {path} (`nexus install {name}` adds one)"
        return check
    for server_name, entry in found.items():
        _check_entry(check, name, server_name, entry)
    return check


def _check_entry(check: Check, client: str, server_name: str, entry: dict[str, Any]) -> None:
    command, args = str(entry.get("command") or ""), [str(a) for a in entry.get("args") or []]
    again = f"`nexus install {client}` (with the same --root/--profile/--config)"
    resolved = shutil.which(command)
    if resolved is None:
        check.problems.append((f"entry '{server_name}': its command {command!r} does not exist", f"run {again}"))
        return
    check.ok.append(f"entry '{server_name}': {command} {' '.join(args)}")
    options = _serve_options(args)
    for root in options.roots:
        if not Path(root).is_dir():
            check.problems.append(
                (f"root {root} does not exist", f"create it, or run `nexus install {client} --root <a folder>`")
            )
    try:
        config = _config(options.config)
        if options.profile:
            config.profile(options.profile)
        check.ok.append(f"config {config.source} is valid")
    except (NexusError, FileNotFoundError) as exc:
        check.problems.append((f"config: {exc}", "fix the file (`nexus config check` shows every error)"))
        return
    started = time.monotonic()
    try:
        import anyio  # only for a client whose entry is worth starting

        tools = anyio.run(_list_tools, [resolved, *args])
    except Exception as exc:
        check.problems.append(
            (f"the server did not start: {_reason(exc)}", "see `nexus server status` and the log it names")
        )
        return
    elapsed = time.monotonic() - started
    if elapsed > CLIENT_TIMEOUT:
        check.problems.append(
            (f"the server took {elapsed:.0f} s to list its tools", "a client gives up sooner: see the server log")
        )
    else:
        check.ok.append(f"the server started and listed {tools} tools in {elapsed:.1f} s")


def _serve_options(args: list[str]) -> ServeOptions:
    """What a client's entry passes to ``nexus serve`` that decides its config, roots and profile."""
    known, _ = parser((CONFIG, ROOT, PROFILE), "nexus serve").parse_known_args(args)
    return ServeOptions.of(vars(known))


def _config(path: str | None) -> Any:
    from nexus_core.config.model import read_config

    return read_config(lookup.find_config(path).path)


async def _list_tools(command: list[str]) -> int:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ), cwd=Path.home())
    with anyio.fail_after(CLIENT_TIMEOUT * 2):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return len((await session.list_tools()).tools)


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def check_shared_server() -> Check:
    check = Check("shared server")
    try:
        choice = lookup.find_config(None)
    except FileNotFoundError as exc:
        check.problems.append((f"config {exc} not found", "set NEXUS_CONFIG to an existing file or unset it"))
        return check
    _check_code_folders(check, str(choice.path))
    key = rendezvous.server_key(choice.path, ServeOptions().server_args(choice.path))
    status = rendezvous.ask(key, "status")
    if status is None:
        check.ok.append("not running (the first client starts it)")
        return check
    check.ok.append(
        f"pid {status['pid']}, up {status['uptime_s']:.0f} s, {len(status['sessions'])} session(s), "
        f"{status['rss_mb']} MB"
    )
    for plugin in status["plugins"]:
        if plugin["status"] not in ("ok", "disabled"):
            check.problems.append((f"plugin {plugin['name']}: {plugin['status']}", f"see the log: {status['log']}"))
    return check


def _check_code_folders(check: Check, config_path: str) -> None:
    """The tool folder and plugin folders another user could put code in (the server refuses them)."""
    from nexus_core.fs.trust import findings

    try:
        config = _config(config_path)
    except (NexusError, OSError, ValueError):
        return  # the client checks report an invalid config
    server = config.server
    for line in findings([config.resolve_path(f) for f in [*server.tool_dirs, *server.plugin_dirs]]):
        check.problems.append((line, "chmod go-w it, or chown it to yourself"))


@click.command()
def doctor() -> None:
    """Check every installed client's Nexus entry and the shared server; print each problem with its fix."""
    results = [check_client(name, client) for name, client in installers.CLIENTS.items()]
    results.append(check_shared_server())
    for check in results:
        mark = "SKIP" if check.skipped else "FAIL" if check.problems else "ok"
        click.echo(f"[{mark:>4}] {check.name}" + (f": {check.skipped}" if check.skipped else ""))
        for line in check.ok:
            click.echo(f"       {line}")
        for problem, fix in check.problems:
            click.echo(f"       problem: {problem}")
            click.echo(f"       fix: {fix}")
    failed = sum(bool(c.problems) for c in results)
    click.echo(f"\n{failed} problem(s) found" if failed else "\nno problems found")
    sys.exit(1 if failed else 0)
