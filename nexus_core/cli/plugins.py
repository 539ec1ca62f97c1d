"""``nexus plugins``, ``nexus tools`` and ``nexus call``: through the user's shared server, like every client.

The shared server owns the stores: a second host in this process would find them in use. So these commands
ask the shared server (starting it if none runs); ``--standalone`` builds the host in this process instead.
``nexus call`` is a client session like any other (launched here, with this folder, ``--root`` and
``--profile``): it goes through a relay, the gate and the audit log.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from nexus_core.cli.options import flags
from nexus_core.cli.output import fail, table
from nexus_core.errors import ConfigError, NexusError
from nexus_core.serve import rendezvous
from nexus_core.serve.client import shared_session
from nexus_core.serve.options import CONFIG_FLAGS, LIBRARIES, NAME, PROFILE, ROOT, STANDALONE, ServeOptions

if TYPE_CHECKING:
    from nexus_core.host.build import Host

LISTING_FLAGS = (*CONFIG_FLAGS, LIBRARIES, NAME, STANDALONE)
CALL_FLAGS = (*LISTING_FLAGS, ROOT, PROFILE)


def built_host(values: dict[str, Any]) -> Host:
    """The host for the config these options name (the SDK and the plugins are imported here, not before)."""
    from nexus_core.assembly import build_host
    from nexus_core.config.effective import load, with_libraries

    options = ServeOptions.of(values)
    try:
        return build_host(with_libraries(load(options.config, options.overrides, options.verbose), options.libraries))
    except ConfigError as exc:
        fail("\n".join(exc.lines()))
    except NexusError as exc:
        fail(str(exc))


def shared_answer(values: dict[str, Any], request: str) -> dict[str, Any]:
    """The shared server's answer to a control line (the server is started if none runs)."""
    from nexus_core.cli.server import ensure_running

    key = ensure_running(ServeOptions.of(values))
    answer = rendezvous.ask(key, request, timeout=60)
    if not answer or answer.get("nexus") != request:
        fail(f"the shared server did not answer `{request}`: {answer} (see `nexus server status`)", code=1)
    return answer


@click.command()
@flags(*LISTING_FLAGS)
def plugins(**values: Any) -> None:
    """List plugins: version, status, categories granted out of those available, and what they report at run time."""
    if values.get("standalone"):
        import anyio

        from nexus_core.host import catalog

        host = built_host(values)
        answer = anyio.run(_running_answer, host, catalog.plugins_answer)
    else:
        answer = shared_answer(values, "plugins")
    table([("PLUGIN", "VERSION", "STATUS", "GRANTED", "AVAILABLE", "SOURCE"), *map(tuple, answer["plugins"])])
    for plugin, lines in sorted(answer["report"].items()):
        if lines:
            click.echo(f"\n{plugin}:")
            for line in lines:
                click.echo(f"  {line}")


@click.command()
@flags(*LISTING_FLAGS)
def tools(**values: Any) -> None:
    """List every tool with its plugin, category and whether it is granted (bridged servers' tools too)."""
    if values.get("standalone"):
        import anyio

        host = built_host(values)
        rows = anyio.run(_running_answer, host, _settled_rows)
    else:
        rows = shared_answer(values, "tools")["tools"]
    table([("TOOL", "PLUGIN", "CATEGORY", "STATUS"), *map(tuple, rows)])


async def _running_answer(host: Host, answer: Any) -> Any:
    async with host.running():
        return await answer(host)


async def _settled_rows(host: Host) -> list[list[str]]:
    """The tool rows once what the plugins publish at run time has arrived (within their limits)."""
    from nexus_core.host import catalog

    await host.settle()
    return catalog.tool_rows(host)


@click.command(context_settings={"ignore_unknown_options": True})
@flags(*CALL_FLAGS)
@click.argument("tool")
@click.argument("arguments", nargs=-1)
@click.option("--json", "json_args", help="All arguments as one JSON object.")
def call(tool: str, arguments: tuple[str, ...], json_args: str | None, **values: Any) -> None:
    """Call one tool and print its result: nexus call TOOL key=value ... (a session of the shared server)."""
    import anyio

    runner = _call_standalone if values.get("standalone") else _call_shared
    try:
        given = json_object(json_args)
        for pair in arguments:  # checked here: inside the session an error would arrive wrapped
            if "=" not in pair:
                raise NexusError(f"expected key=value, got '{pair}'")
        result = anyio.run(runner, ServeOptions.of(values), tool, arguments, given)
    except NexusError as exc:
        fail(str(exc))
    except Exception as exc:  # the relay could not reach a server: it said why on stderr, above
        fail(f"no answer from the shared server ({type(exc).__name__}); its reason is above", code=2)
    if result is None:
        sys.exit(1)
    text = "\n".join(getattr(block, "text", None) or block.model_dump_json() for block in result.content)
    if result.is_error:
        fail(text, code=1)
    if result.structured_content is not None:
        text = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
    click.echo(text)


async def _call_shared(options: ServeOptions, tool: str, pairs: tuple[str, ...], given: dict[str, Any]) -> Any:
    async with shared_session(options=options) as session:
        listed = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        args = given | typed_pairs(listed.get(tool, {}).get("properties", {}), pairs)
        return await session.call_tool(tool, args)


async def _call_standalone(options: ServeOptions, tool: str, pairs: tuple[str, ...], given: dict[str, Any]) -> Any:
    host = built_host(vars(options))
    entry = host.tools.get(tool)
    args = given | typed_pairs(entry.sdk.parameters.get("properties", {}) if entry and entry.sdk else {}, pairs)
    async with host.running():
        try:
            return await host.server.call_tool(tool, args)
        except Exception as exc:  # the same text a client would see in the isError result
            click.echo(f"nexus: {exc}", err=True)
            return None


def json_object(json_args: str | None) -> dict[str, Any]:
    """``--json``: all arguments as one JSON object."""
    if not json_args:
        return {}
    try:
        args = json.loads(json_args)
    except json.JSONDecodeError as exc:
        raise NexusError(f"--json is not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise NexusError("--json must be a JSON object")
    return args


def typed_pairs(properties: dict[str, Any], pairs: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs typed by the tool's input schema (strings stay strings)."""
    args: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        args[key] = raw if properties.get(key, {}).get("type") == "string" else _json_or_text(raw)
    return args


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw
