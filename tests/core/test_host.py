"""The host through the official MCP client, in-process: registration, permissions, audit, lifecycle."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from mcp import Client, MCPError

from nexus_core import hookimpl
from nexus_core.access import audit
from nexus_core.errors import NexusError, PluginError
from tests.core.fakes import (
    BrokenRegistration,
    Calculator,
    Echo,
    FailingStartup,
    Lifecycle,
    TraceReader,
    UndeclaredCategory,
)

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]  # the classic initialize handshake, and the 2026-07-28 protocol


def audit_lines(data_dir: Path) -> list[dict]:
    path = data_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("mode", MODES)
async def test_tools_carry_schemas_annotations_and_titles(make_host, mode: str) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"add", "fail", "read_path"}  # `wipe` is in `danger`, off by default
        add = tools["add"]
        assert add.title == "Add"
        assert add.input_schema["properties"]["b"]["type"] == "integer"  # its bound is checked on call, not listed
        assert add.output_schema["properties"]["total"]["type"] == "integer"
        assert add.annotations.read_only_hint is True and add.annotations.idempotent_hint is True
        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert result.structured_content == {"total": 42}
        assert not result.is_error


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_whose_category_is_not_granted_is_refused_naming_the_grant(make_host, mode: str) -> None:
    calc = Calculator()
    host = make_host({"calc": calc})
    async with Client(host.server, mode=mode) as client:
        result = await client.call_tool("wipe", {})
    assert result.is_error
    text = result.content[0].text
    assert "'danger' category" in text and "[plugins.calc]" in text
    assert "wiped" not in calc.events  # refused means nothing ran


async def test_granting_the_category_lists_and_runs_the_tool(make_host) -> None:
    calc = Calculator()
    host = make_host({"calc": calc}, {"plugins": {"calc": {"categories": ["math", "danger"]}}})
    async with Client(host.server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["wipe"].annotations.destructive_hint is True
        assert (await client.call_tool("wipe", {})).structured_content == {"result": "wiped"}
    assert "wiped" in calc.events


async def test_allow_tools_narrows_and_deny_tools_removes(make_host) -> None:
    host = make_host(
        {"calc": Calculator()}, {"plugins": {"calc": {"allow_tools": ["add", "fail"], "deny_tools": ["fail"]}}}
    )
    async with Client(host.server) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["add"]
        denied = await client.call_tool("fail", {"message": "x"})
        not_allowed = await client.call_tool("read_path", {"path": "x"})
    assert denied.is_error and "deny_tools" in denied.content[0].text
    assert not_allowed.is_error and "allow_tools" in not_allowed.content[0].text


async def test_argument_validation_and_tool_errors_are_readable_results(make_host) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server) as client:
        invalid = await client.call_tool("add", {"a": 1, "b": -5})
        failed = await client.call_tool("fail", {"message": "the disk is full"})
        unknown = await client.call_tool("nope", {})
        still_serving = await client.call_tool("add", {"a": 1, "b": 1})
    assert invalid.is_error and invalid.content[0].text == "invalid arguments for add: b must be at least 0, got -5"
    assert failed.is_error and "the disk is full" in failed.content[0].text
    assert unknown.is_error and "Unknown tool: nope" in unknown.content[0].text
    assert still_serving.structured_content == {"total": 2}


@pytest.mark.parametrize("mode", MODES)
async def test_a_clients_trace_context_reaches_the_tool_with_no_tracer_configured(make_host, mode: str) -> None:
    """The SDK's tracing middleware is passed over only when it can change nothing: a traceparent still counts."""
    host = make_host({"tracer": TraceReader()})
    parent = "0af7651916cd43dd8448eb211c80319c"
    async with Client(host.server, mode=mode) as client:
        traced = await client.call_tool("trace_id", {}, meta={"traceparent": f"00-{parent}-b7ad6b7169203331-01"})
        untraced = await client.call_tool("trace_id", {})
    assert traced.structured_content == {"result": parent}
    assert untraced.structured_content == {"result": "0" * 32}


async def test_every_call_is_audited_without_arguments_by_default(make_host, data_dir: Path) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        await client.call_tool("fail", {"message": "no"})
        await client.call_tool("wipe", {})
    records = audit_lines(data_dir)
    assert [(r["tool"], r["outcome"]) for r in records] == [("add", "ok"), ("fail", "error"), ("wipe", "denied")]
    assert all(r["plugin"] == "calc" and r["duration_ms"] >= 0 and "time" in r for r in records)
    assert all("arguments" not in r for r in records)
    assert "no" in records[1]["error"] and "danger" in records[2]["error"]


def test_an_audit_record_is_one_line_as_json_dumps_writes_it_stamped_to_the_millisecond(tmp_path, monkeypatch) -> None:
    clock = iter([1000.25, 1000.9999, 1001.5])  # two records in one second, then one in the next
    monkeypatch.setattr(audit, "time", SimpleNamespace(time=lambda: next(clock)))
    log = audit.AuditLog(tmp_path / "audit.jsonl", include_arguments=True)
    for _ in range(3):
        log.record(
            plugin="p", tool="t", outcome="error", duration_ms=1.23456, arguments={"path": "é/\n", "n": [1, None]},
            error='said "no"\u2028', client="c", session="s",
        )  # fmt: skip
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").split("\n")[:-1]  # (U+2028 is kept raw)
    records = [json.loads(line) for line in lines]
    assert lines == [json.dumps(record, ensure_ascii=False) for record in records]
    keys = ["time", "client", "session", "kind", "plugin", "tool", "outcome", "duration_ms", "error", "arguments"]
    assert all(list(record) == keys for record in records) and records[0]["duration_ms"] == 1.235
    expected = ["1970-01-01T00:16:40.250+00:00", "1970-01-01T00:16:40.999+00:00", "1970-01-01T00:16:41.500+00:00"]
    assert [record["time"] for record in records] == expected


async def test_a_call_to_an_unknown_tool_is_audited_as_unknown(make_host, data_dir: Path) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server) as client:
        result = await client.call_tool("nope", {"a": 1})
    assert result.is_error and "nope" in result.content[0].text  # type: ignore[union-attr]
    records = audit_lines(data_dir)
    assert [(r["tool"], r["outcome"], r["plugin"]) for r in records] == [("nope", "unknown", "")]
    assert records[0]["error"] == "unknown tool 'nope'" and records[0]["client"]


async def test_audit_includes_arguments_when_configured(make_host, data_dir: Path) -> None:
    host = make_host({"calc": Calculator()}, {"server": {"audit": {"include_arguments": True}}})
    async with Client(host.server) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    assert audit_lines(data_dir)[0]["arguments"] == {"a": 1, "b": 2}


async def test_prefix_renames_tools_and_prompts(make_host) -> None:
    host = make_host({"calc": Calculator(), "echo": Echo()}, {"plugins": {"echo": {"prefix": "echo"}}})
    async with Client(host.server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"add", "echo_add"} <= names
        assert (await client.call_tool("echo_add", {"a": 1, "b": 2})).structured_content == {"result": 3}


def test_duplicate_tool_names_stop_the_server_naming_both_plugins(make_host) -> None:
    with pytest.raises(NexusError) as err:
        make_host({"calc": Calculator(), "echo": Echo()})
    message = str(err.value)
    assert "tool 'add'" in message and "'calc'" in message and "'echo'" in message and "prefix" in message


async def test_a_broken_plugin_is_reported_and_the_others_serve(make_host, caplog) -> None:
    with caplog.at_level(logging.ERROR):
        host = make_host({"broken": BrokenRegistration(), "calc": Calculator()})
    assert host.plugins["broken"].status == "failed: RuntimeError: cannot reach the database"
    assert "plugin 'broken' not loaded" in caplog.text and "cannot reach the database" in caplog.text
    async with Client(host.server) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"total": 2}


def test_a_required_plugin_that_fails_stops_the_server(make_host) -> None:
    with pytest.raises(PluginError, match=r"broken.*cannot reach the database.*required"):
        make_host({"broken": BrokenRegistration()}, {"plugins": {"broken": {"required": True}}})


def test_a_tool_in_an_undeclared_category_fails_its_plugin(make_host) -> None:
    host = make_host({"sneaky": UndeclaredCategory()})
    assert "undeclared category 'write'" in host.plugins["sneaky"].status
    assert host.tools == {}


def test_invalid_plugin_config_is_reported_with_the_key(make_host) -> None:
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"start": -1, "colour": "red"}}})
    status = host.plugins["calc"].status
    assert status.startswith("failed: test.toml: plugins.calc.start") and "greater than or equal to 0" in status
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"colour": "red"}}})
    assert host.plugins["calc"].status == "failed: test.toml: plugins.calc.colour: unknown key (got 'red')"


def test_an_unknown_granted_category_is_reported(make_host) -> None:
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"categories": ["math", "wirte"]}}})
    assert "unknown category 'wirte'" in host.plugins["calc"].status
    assert "declares: math, danger" in host.plugins["calc"].status


def test_a_disabled_plugin_contributes_nothing(make_host) -> None:
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"enabled": False}}})
    assert host.tools == {}


async def test_plugin_config_reaches_the_plugin(make_host) -> None:
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"start": 100}}})
    async with Client(host.server) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"total": 102}


async def test_lifecycle_runs_startup_then_shutdown(make_host) -> None:
    calc = Calculator()
    host = make_host({"calc": calc})
    async with Client(host.server) as client:
        assert calc.events == ["start calc"]
        await client.list_tools()
    assert calc.events == ["start calc", "stop calc"]


async def test_plugins_stop_in_the_reverse_of_their_start_order(make_host) -> None:
    events: list[str] = []
    host = make_host({name: Lifecycle(events) for name in ("first", "second", "third")})
    async with Client(host.server) as client:
        await client.list_tools()
        started = list(events)
    assert sorted(started) == ["start first", "start second", "start third"]
    stopped = [event.replace("start", "stop") for event in reversed(started)]
    assert events == started + stopped  # a plugin may rely on those started before it, until it stops


async def test_a_plugin_whose_startup_fails_answers_with_an_error(make_host) -> None:
    host = make_host({"flaky": FailingStartup(), "calc": Calculator()})
    async with Client(host.server) as client:
        result = await client.call_tool("status", {})
        assert result.is_error and "database is down" in result.content[0].text
        assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error


@pytest.mark.parametrize("mode", MODES)
async def test_resources_templates_and_prompts(make_host, mode: str) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server, mode=mode) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert uris == {"calc://answer"}  # calc://danger is gated by the `danger` category
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["calc://square/{n}"]
        assert (await client.read_resource("calc://answer")).contents[0].text == "42"
        assert (await client.read_resource("calc://square/12")).contents[0].text == "144"
        prompt = await client.get_prompt("explain", {"expression": "2+2"})
        assert "Explain 2+2" in prompt.messages[0].content.text


async def test_paths_outside_the_roots_are_refused_in_tools(make_host, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("TOPSECRET")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"roots": [str(root)]}}})
    async with Client(host.server) as client:
        ok = await client.call_tool("read_path", {"path": "ok.txt"})
        dotdot = await client.call_tool("read_path", {"path": "../secret.txt"})
        absolute = await client.call_tool("read_path", {"path": str(tmp_path / "secret.txt")})
        link = await client.call_tool("read_path", {"path": "link.txt"})
    assert ok.structured_content == {"result": "inside"}
    assert dotdot.is_error and "outside the allowed roots" in dotdot.content[0].text
    assert absolute.is_error and "outside the allowed roots" in absolute.content[0].text
    assert link.is_error and "symlink" in link.content[0].text
    assert all("TOPSECRET" not in r.content[0].text for r in (dotdot, absolute, link))


@pytest.mark.parametrize("mode", MODES)
async def test_prompt_failures_say_why_unless_they_are_crashes(make_host, tmp_path: Path, mode: str) -> None:
    host = make_host({"calc": Calculator()}, {"plugins": {"calc": {"roots": [str(tmp_path)]}}})
    async with Client(host.server, mode=mode) as client:
        for name, args, expected in (
            ("explain_file", {"path": "../etc/passwd"}, "outside the allowed roots"),
            ("no_such_prompt", {}, "Unknown prompt: no_such_prompt"),
            ("explain", {}, "Missing required arguments"),
        ):
            with pytest.raises(MCPError) as err:
                await client.get_prompt(name, args)
            assert err.value.error.code == -32602 and expected in err.value.error.message
        with pytest.raises(MCPError) as err:
            await client.get_prompt("crash", {})
        assert "secret" not in err.value.error.message
        assert "Explain 1+1" in (await client.get_prompt("explain", {"expression": "1+1"})).messages[0].content.text


class AsyncPing:
    @hookimpl
    def nexus_register_tools(self, register) -> None:
        async def ping() -> str:
            return "pong"

        register(ping, category="default", read_only=True)


async def test_a_call_takes_a_free_place_of_its_plugin_without_a_turn_of_the_event_loop(make_host) -> None:
    """Each call holds one of its plugin's NEXUS_PLUGIN_THREADS places; a free one is taken at once (waiting
    for it, as ``async with limiter`` does, costs a turn of the event loop on every call)."""
    host = make_host({"ping": AsyncPing()})
    ran: list[str] = []

    async def other() -> None:
        ran.append("other task")

    async with host.running(), anyio.create_task_group() as tg:
        tg.start_soon(other)
        result = await host.server.call_tool("ping", {})
        assert ran == [] and "pong" in str(result)  # the call never let another task run
        await anyio.sleep(0)
        assert ran == ["other task"]
