"""``nexus doctor``: what can stop a client from getting its tools, and the exact fix for each.

For each client whose config file exists: the file parses, it has a Nexus
entry, the entry's command resolves, the config it names (or the one it
would find) is valid (every error), its roots and profile exist, every
plugin loads with that install and config, the server it starts lists its
tools within the time a client waits, and the client's own gate lets it
through (Gemini CLI's folder trust). Then across clients: two installs
serving the same stores. Then the shared servers: running or not, two on
the same config, their plugins and the errors in their log. Exits 1 when
something is wrong.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from nexus_core.clients import installers, text_edit
from nexus_core.config import folders, lookup
from nexus_core.errors import ConfigError, NexusError
from nexus_core.serve import rendezvous
from nexus_core.serve.options import CONFIG, PROFILE, ROOT, SET, ServeOptions, parser

CLIENT_TIMEOUT = 60.0  # seconds a desktop client waits for a server's tools (Claude Desktop: about a minute)


@dataclass
class Check:
    """What was found for one client: lines that passed, problems each with its fix."""

    name: str
    ok: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    skipped: str | None = None
    commands: set[str] = field(default_factory=set)  # the Nexus installs its entries start (resolved paths)
    configs: set[str] = field(default_factory=set)  # the config files they serve


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


NEXUS_COMMANDS = ("nexus", "nexus.exe", "nexus-mcp-server", "nexus-mcp-server.exe")  # the last: design 001's name


def _runs_nexus(command: Any, args: Any) -> bool:
    words = [str(command or ""), *map(str, args if isinstance(args, list) else [])]
    return Path(words[0]).name in NEXUS_COMMANDS or "nexus_core" in words


def _nexus_beside(command: str) -> str:
    """The ``nexus`` command of the install an entry starts: ``nexus-mcp-server`` is its ``nexus serve``."""
    path = Path(command)
    return str(path.with_name(path.name.replace("nexus-mcp-server", "nexus")))


def check_client(name: str, client: installers.Client, workspace: Path | None = None) -> Check:
    """The client's user file, or (``workspace``) a folder's own file that ``nexus install --workspace`` wrote."""
    check = Check(f"{name} ({workspace})" if workspace else name)
    path, install = (workspace, f"{name} --workspace") if workspace else (client.file(), name)
    if not path.exists():
        check.skipped = f"not installed ({path} does not exist)"
        return check
    try:
        found = entries(client, path)
    except (ValueError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        fix = f"fix the file by hand, then `nexus install {install}`"
        check.problems.append((f"{path} does not parse: {exc}", fix))
        return check
    if not found:
        check.skipped = f"no Nexus entry in {path} (`nexus install {install}` adds one)"
        return check
    for server_name, entry in found.items():
        _check_entry(check, install, server_name, entry)
    if name == "gemini":
        _check_gemini_trust(check, Path.cwd())
    return check


def _workspace_files() -> list[tuple[str, installers.Client, Path]]:
    """This folder's own client files (``nexus install CLIENT --workspace``), other than the user's."""
    found = []
    for name, client in installers.CLIENTS.items():
        path = Path.cwd() / client.workspace if client.workspace else None
        if path is not None and path.is_file() and path.resolve() != client.file().resolve():
            found.append((name, client, path))
    return found


def _check_gemini_trust(check: Check, folder: Path) -> None:
    """Gemini CLI with folder trust on shows every MCP server as Disabled in a folder not trusted."""
    gemini = Path.home() / ".gemini"
    try:
        settings = text_edit.parse_json((gemini / "settings.json").read_text(encoding="utf-8-sig"), True).value
        enabled = bool(settings.get("security", {}).get("folderTrust", {}).get("enabled"))
    except (OSError, ValueError, AttributeError):
        return
    if not enabled:
        check.ok.append("Gemini CLI's folder trust is off: Nexus is enabled in every folder")
        return
    try:
        rules = json.loads((gemini / "trustedFolders.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rules = {}
    if _gemini_trusts(rules if isinstance(rules, dict) else {}, folder):
        check.ok.append(f"Gemini CLI trusts {folder}")
    else:
        check.problems.append(
            (
                f"Gemini CLI shows Nexus as Disabled in {folder}: folder trust is on and this folder is not trusted",
                'start `gemini` in the folder and choose "Trust folder" (or "Trust parent folder")',
            )
        )


def _gemini_trusts(rules: dict[str, Any], folder: Path) -> bool:
    """Gemini's trustedFolders.json: a path marked TRUST_FOLDER, or TRUST_PARENT on a folder inside it."""
    for path, rule in rules.items():
        marked = Path(path).expanduser()
        if rule == "TRUST_FOLDER" and (folder == marked or marked in folder.parents):
            return True
        if rule == "TRUST_PARENT" and (folder == marked.parent or marked.parent in folder.parents):
            return True
    return False


def _check_entry(check: Check, client: str, server_name: str, entry: dict[str, Any]) -> None:
    command, args = str(entry.get("command") or ""), [str(a) for a in entry.get("args") or []]
    again = f"`nexus install {client}` (with the same --root/--profile/--config)"
    resolved = shutil.which(command)
    if resolved is None:
        check.problems.append((f"entry '{server_name}': its command {command!r} does not exist", f"run {again}"))
        return
    check.ok.append(f"entry '{server_name}': {command} {' '.join(args)}")
    nexus = _nexus_beside(resolved)
    check.commands.add(str(Path(nexus).resolve()))
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
        check.configs.add(str(config.path or "defaults"))
    except ConfigError as exc:
        for key, reason in exc.problems:
            check.problems.append((f"config {exc.source}: {key}: {reason}", f"fix `{key}` in {exc.source}"))
        return
    except (NexusError, FileNotFoundError) as exc:
        check.problems.append((f"config: {exc}", "fix the file (`nexus config check` lists every error)"))
        return
    failed = _failed_plugins(nexus, options.config, options.overrides)
    if not failed:  # a plugin's table is part of the config: valid only when every plugin takes its own
        check.ok.append(f"config {config.source} is valid")
    for plugin, reasons in failed.items():
        for reason in reasons:
            check.problems.append(
                (
                    f"plugin {plugin} does not load, so its tools are missing: {reason}",
                    f"fix [plugins.{plugin}] in {config.source} (`nexus config check` lists every error)",
                )
            )
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
    known, _ = parser((CONFIG, SET, ROOT, PROFILE), "nexus serve").parse_known_args(args)
    return ServeOptions.of(vars(known))


@functools.cache  # clients whose entries share a command and config share one check (each builds every plugin)
def _failed_plugins(command: str, config: str | None, overrides: tuple[str, ...]) -> dict[str, list[str]]:
    """The plugins that install fails to load with that config (``nexus config check``), each with its errors."""
    args = [command, "config", "check"]
    args += ["--config", config] if config else []
    for item in overrides:
        args += ["--set", item]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, cwd=Path.home())
    except (OSError, subprocess.TimeoutExpired):
        return {}
    failed: dict[str, list[str]] = {}
    plugin = None
    for line in done.stdout.splitlines():
        if line.startswith("[plugins.") and line.endswith("] failed:"):
            plugin = line.removeprefix("[plugins.").removesuffix("] failed:")
            failed[plugin] = []
        elif plugin and line.startswith("  error: "):
            failed[plugin].append(line.removeprefix("  error: "))
        else:
            plugin = None
    return failed


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
    running = _running_servers()
    if not any(s.get("key") == key for s in running):
        check.ok.append("not running for this install and config (the first client starts it)")
    for found in running:
        check.ok.append(
            f"pid {found['pid']} serves {found['config']}: up {found['uptime_s']:.0f} s, "
            f"{len(found['sessions'])} session(s), {found['rss_mb']} MB; log {found['log']}"
        )
        for plugin in found["plugins"]:
            if plugin["status"] not in ("ok", "disabled"):
                check.problems.append((f"plugin {plugin['name']}: {plugin['status']}", f"see the log: {found['log']}"))
        if last := _last_error(Path(found["log"])):
            check.ok.append(f"last error in its log: {last}")
    by_config: dict[str, list[int]] = {}
    for found in running:
        by_config.setdefault(found["config"], []).append(found["pid"])
    for config, pids in by_config.items():
        if len(pids) > 1:
            check.problems.append(
                (
                    f"{len(pids)} shared servers (pids {', '.join(map(str, pids))}) serve {config}: "
                    "their plugins share one set of stores",
                    "install every client from one Nexus (`nexus install CLIENT`), then `nexus server stop` "
                    "with each of the others",
                )
            )
    return check


def _running_servers() -> list[dict[str, Any]]:
    """The status of every shared server of this user that answers."""
    found = []
    for description in sorted(folders.runtime_dir().glob("*.json")):
        status = rendezvous.ask(description.stem, "status", timeout=3)
        if status is not None:
            found.append(status)
    return found


def _last_error(log: Path) -> str | None:
    """The last ERROR line in the log's last 64 KiB, if any."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - 65536))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    errors = [line for line in lines if " ERROR " in line]
    return errors[-1][:300] if errors else None


def check_installs(results: list[Check]) -> Check:
    """Two Nexus installs started by clients on the same config: two shared servers, one set of stores."""
    check = Check("installs")
    commands = {c for r in results for c in r.commands}
    if len(commands) > 1:
        check.problems.append(
            (
                f"clients start {len(commands)} different Nexus installs ({', '.join(sorted(commands))}): each runs "
                "its own shared server on the same stores",
                "run `nexus install CLIENT` for every client with the one nexus you keep",
            )
        )
    elif commands:
        check.ok.append(f"every client starts {next(iter(commands))}")
    else:
        check.skipped = "no client starts Nexus"
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
    _failed_plugins.cache_clear()  # a run's own: the files may have changed since the last (a test's process)
    results = [check_client(name, client) for name, client in installers.CLIENTS.items()]
    results += [check_client(name, client, path) for name, client, path in _workspace_files()]
    results.append(check_installs(results))
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
