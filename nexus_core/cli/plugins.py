"""``nexus plugins``, ``nexus tools`` and ``nexus call``: the plugins built in this process, listed or called."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from nexus_core.cli.options import flags
from nexus_core.cli.output import fail, table
from nexus_core.errors import ConfigError, NexusError
from nexus_core.serve.options import CONFIG_FLAGS, ServeOptions

if TYPE_CHECKING:
    from nexus_core.host.build import Host


def built_host(values: dict[str, Any]) -> Host:
    """The host for the config these options name (the SDK and the plugins are imported here, not before)."""
    from nexus_core.assembly import build_host
    from nexus_core.config.effective import load

    options = ServeOptions.of(values)
    try:
        return build_host(load(options.config, options.overrides, options.verbose))
    except ConfigError as exc:
        fail("\n".join(exc.lines()))
    except NexusError as exc:
        fail(str(exc))


@click.command()
@flags(*CONFIG_FLAGS)
def plugins(**values: Any) -> None:
    """List plugins: version, status, categories granted out of those available, and what they report at run time."""
    import anyio

    host = built_host(values)
    report = anyio.run(_status, host)
    rows = [("PLUGIN", "VERSION", "STATUS", "GRANTED", "AVAILABLE", "SOURCE")]
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        granted = sorted(state.grants.categories) if state.grants else []
        rows.append(
            (
                state.name,
                state.record.version or "-",
                state.status,
                ",".join(granted) or "-",
                ",".join(state.categories) or "-",
                state.record.source,
            )
        )
    table(rows)
    for plugin, lines in sorted(report.items()):
        if lines:
            click.echo(f"\n{plugin}:")
            for line in lines:
                click.echo(f"  {line}")


async def _status(host: Host) -> dict[str, list[str]]:
    async with host.running():
        return await host.status()


@click.command()
@flags(*CONFIG_FLAGS)
def tools(**values: Any) -> None:
    """List every tool with its plugin, category and whether it is granted (bridged servers' tools too)."""
    import anyio

    host = built_host(values)
    anyio.run(_settled, host)
    found = [(e.plugin, e.name, e.spec.category, e.refusal) for e in host.tools.values()]
    found += [(e.plugin, e.key, e.item.category, e.refusal) for e in host.live.entries["tool"].values()]  # type: ignore[union-attr]
    rows = [("TOOL", "PLUGIN", "CATEGORY", "STATUS")]
    for plugin, name, category, refusal in sorted(found):
        status = "granted" if refusal is None else "refused: " + refusal.split(": ", 1)[-1]
        rows.append((name, plugin, category, status))
    table(rows)


async def _settled(host: Host) -> None:
    """Start the plugins until what they publish at run time has arrived (within their limits)."""
    async with host.running():
        await host.settle()


@click.command(context_settings={"ignore_unknown_options": True})
@flags(*CONFIG_FLAGS)
@click.argument("tool")
@click.argument("arguments", nargs=-1)
@click.option("--json", "json_args", help="All arguments as one JSON object.")
def call(tool: str, arguments: tuple[str, ...], json_args: str | None, **values: Any) -> None:
    """Run one tool in-process and print its result: nexus call TOOL key=value ..."""
    import anyio

    host = built_host(values)
    try:
        args = _call_arguments(host, tool, arguments, json_args)
    except NexusError as exc:
        fail(str(exc))
    result = anyio.run(_call, host, tool, args)
    if result is None:
        sys.exit(1)
    text = "\n".join(getattr(block, "text", None) or block.model_dump_json() for block in result.content)
    if result.is_error:
        fail(text, code=1)
    if result.structured_content is not None:
        text = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
    click.echo(text)


async def _call(host: Host, tool: str, args: dict[str, Any]) -> Any:
    async with host.running():
        try:
            return await host.server.call_tool(tool, args)
        except Exception as exc:  # the same text a client would see in the isError result
            click.echo(f"nexus: {exc}", err=True)
            return None


def _call_arguments(host: Host, tool: str, pairs: tuple[str, ...], json_args: str | None) -> dict[str, Any]:
    """``key=value`` pairs typed by the tool's input schema (strings stay strings), or ``--json``."""
    args: dict[str, Any] = {}
    if json_args:
        try:
            args = json.loads(json_args)
        except json.JSONDecodeError as exc:
            raise NexusError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(args, dict):
            raise NexusError("--json must be a JSON object")
    entry = host.tools.get(tool)
    properties = entry.sdk.parameters.get("properties", {}) if entry and entry.sdk else {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise NexusError(f"expected key=value, got '{pair}'")
        args[key] = raw if properties.get(key, {}).get("type") == "string" else _json_or_text(raw)
    return args


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw
