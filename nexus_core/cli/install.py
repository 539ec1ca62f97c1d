"""``nexus install CLIENT`` and ``nexus uninstall CLIENT``: Nexus in a client's MCP servers, or not."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import click

from nexus_core.cli.output import fail
from nexus_core.clients import installers
from nexus_core.errors import NexusError
from nexus_core.fs.atomic import atomic_write
from nexus_core.fs.locks import locked

BOM = "\ufeff"  # some Windows editors start a UTF-8 file with one; it is kept


def _target(client: str, file: str | None, workspace: bool = False) -> tuple[installers.Client, Path]:
    target = installers.client(client)
    if file:
        return target, Path(file).expanduser()
    if workspace:
        if target.workspace is None:
            raise NexusError(f"{target.title} has no per-folder file; drop --workspace")
        return target, Path.cwd() / target.workspace
    return target, target.file()


def nexus_command() -> str:
    """The ``nexus`` of this environment, so the client starts the install that wrote its entry."""
    beside = Path(sys.executable).parent / ("nexus.exe" if sys.platform == "win32" else "nexus")
    if beside.is_file():
        return str(beside)
    found = shutil.which("nexus")
    if found is None:
        raise NexusError("cannot find the nexus command on PATH; run this with the nexus you want clients to start")
    return str(Path(found).absolute())


def serve_args(config_path: str | None, roots: tuple[str, ...], profile: str | None) -> list[str]:
    """``nexus serve`` with absolute paths: a client starts it from a folder of its own choosing."""
    args = ["serve"]
    if config_path:
        args += ["--config", str(Path(config_path).expanduser().resolve())]
    for root in roots:
        args += ["--root", str(Path(root).expanduser().resolve())]
    return args + (["--profile", profile] if profile else [])


def _edit(path: Path, change: Callable[[str], str | None]) -> tuple[str, str | None]:
    """Under the file's lock: its text, and the new text from ``change(text)`` written if it differs."""
    with locked(path):
        raw = path.read_bytes().decode("utf-8") if path.exists() else ""
        bom = BOM if raw.startswith(BOM) else ""
        before = raw.removeprefix(BOM)
        after = change(before)
        if after is not None and after != before:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path.resolve(), bom + after)  # a symlinked file stays a link: its target is replaced
        return before, after


_client_argument = click.argument("client", metavar="CLIENT", type=click.Choice(list(installers.CLIENTS)))
_name_option = click.option("--name", "server_name", default="nexus", show_default=True, help="The entry's name.")
_file_option = click.option(
    "--file", type=click.Path(dir_okay=False), help="The client's config file (default: the user's, that it reads)."
)
_workspace_option = click.option(
    "--workspace",
    is_flag=True,
    help="This folder's file instead of the user's (vscode: .vscode/mcp.json; cursor, gemini).",
)


@click.command()
@_client_argument
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="The config file the client passes.")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder this client may work in, passed to `nexus serve --root` (repeatable).",
)
@click.option("--profile", help="The profile this client is served, passed to `nexus serve --profile`.")
@_name_option
@_file_option
@_workspace_option
@click.option("--print", "print_only", is_flag=True, help="Only print the entry; write nothing.")
def install(
    client: str,
    config_path: str | None,
    roots: tuple[str, ...],
    profile: str | None,
    server_name: str,
    file: str | None,
    workspace: bool,
    print_only: bool,
) -> None:
    """Add Nexus to a client's MCP servers, in its own file and format (the rest is kept; the diff is shown)."""
    try:
        target, path = _target(client, file, workspace)
        entry = target.entry(nexus_command(), serve_args(config_path, roots, profile))
        if print_only:
            click.echo(installers.snippet(target, server_name, entry), nl=False)
            return
        before, after = _edit(path, lambda text: installers.with_entry(target, text, server_name, entry, path))
    except (NexusError, OSError) as exc:
        fail(str(exc))
        return
    if before == after:
        click.echo(f"{path} already has this entry; nothing to do")
    else:
        click.echo(installers.diff(path, before, after or ""), nl=False)
        click.echo(f"updated {path}; restart {target.title} to load Nexus")
    if target.next_step:
        click.echo(f"next: {target.next_step}")


@click.command()
@_client_argument
@_name_option
@_file_option
@_workspace_option
def uninstall(client: str, server_name: str, file: str | None, workspace: bool) -> None:
    """Remove Nexus's entry, and nothing else, from a client's MCP servers (the diff is shown)."""
    try:
        target, path = _target(client, file, workspace)
        before, after = _edit(path, lambda text: installers.without_entry(target, text, server_name, path))
    except (NexusError, OSError) as exc:
        fail(str(exc))
        return
    if after is None:
        click.echo(f"{path} has no '{server_name}' entry; nothing to do")
        return
    click.echo(installers.diff(path, before, after), nl=False)
    click.echo(f"removed '{server_name}' from {path}; restart {target.title} to unload Nexus")
