"""What plugins publish at run time (ctx.publish): grants, prefix, collisions, audit and change events."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from nexus_core import Category, LivePrompt, LiveResource, LiveTool, PluginContext, PluginError, hookimpl
from nexus_core.host.build import Host

pytestmark = pytest.mark.anyio


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


class Relay:
    """Publishes, from a background task, the tools it is told to (as the bridge does for an upstream)."""

    def __init__(self) -> None:
        self.ctx: PluginContext | None = None
        self.problems: list[str] = []

    @hookimpl
    def nexus_permission_categories(self) -> list[Category]:
        return [Category(name="read", description="Reads.", default=True), Category(name="write", description="W.")]

    @hookimpl
    def nexus_register_tools(self, register: Any) -> None:
        def native() -> str:
            """A tool registered the usual way."""
            return "native"

        register(native, category="read")

    @hookimpl
    def nexus_startup(self, ctx: PluginContext) -> None:
        self.ctx = ctx

    async def publish(self, *names: str, category: str = "read") -> list[str]:
        assert self.ctx is not None
        tools = [self.tool(name, category) for name in names]
        resource = LiveResource(types.Resource(name="doc", uri="relay://doc"), self.read, "read")  # a concrete resource
        template = LiveResource(types.ResourceTemplate(name="page", uri_template="relay://pages/{n}"), self.read)
        prompt = LivePrompt(types.Prompt(name="ask"), self.prompt)
        return await self.ctx.publish("upstream", tools=tools, resources=[resource, template], prompts=[prompt])

    @staticmethod
    def tool(name: str, category: str) -> LiveTool:
        async def call(arguments: dict[str, Any]) -> types.CallToolResult:
            return text_result(f"{name} got {arguments}")

        schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
        return LiveTool(types.Tool(name=name, input_schema=schema), call, category)

    @staticmethod
    async def read(uri: str) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"read {uri}")])

    @staticmethod
    async def prompt(arguments: dict[str, str] | None) -> types.GetPromptResult:
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text="asked"))
        return types.GetPromptResult(messages=[message])


async def names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_published_tools_are_listed_called_and_audited(make_host: Callable[..., Host], data_dir: Path) -> None:
    relay = Relay()
    host = make_host({"relay": relay}, {"plugins": {"relay": {"prefix": "r", "deny_tools": ["r_secret"]}}})
    async with Client(host.server) as client:
        assert await relay.publish("lookup", "secret", "erase", category="read") == []
        assert {"r_native", "r_lookup"} <= await names(client)
        assert "r_secret" not in await names(client)  # deny_tools names live tools too
        result = await client.call_tool("r_lookup", {"x": 1})
        assert result.content[0].text == "lookup got {'x': 1}"  # type: ignore[union-attr]
        refused = await client.call_tool("r_secret", {})
        assert refused.is_error and "deny_tools" in refused.content[0].text  # type: ignore[union-attr]

        await relay.publish("lookup")  # republishing replaces the group
        assert "r_erase" not in await names(client)
        gone = await client.call_tool("r_erase", {})
        assert gone.is_error and "Unknown tool" in gone.content[0].text  # type: ignore[union-attr]

    records = [json.loads(line) for line in (data_dir / "audit.jsonl").read_text().splitlines()]
    expected = [("r_lookup", "ok"), ("r_secret", "denied"), ("r_erase", "unknown")]  # withdrawn: unknown now
    assert [(r["tool"], r["outcome"]) for r in records] == expected


async def test_ungranted_categories_refuse_live_tools(make_host: Callable[..., Host]) -> None:
    relay = Relay()
    host = make_host({"relay": relay})
    async with Client(host.server) as client:
        await relay.publish("drop", category="write")
        assert "drop" not in await names(client)
        refused = await client.call_tool("drop", {})
        assert refused.is_error and "'write' category" in refused.content[0].text  # type: ignore[union-attr]


async def test_a_name_another_plugin_serves_is_refused_and_reported(make_host: Callable[..., Host]) -> None:
    relay = Relay()
    host = make_host({"relay": relay})
    async with Client(host.server) as client:
        problems = await relay.publish("native", "fresh")
        assert problems == ["tool 'native' is not served: plugin 'relay' already serves that name"]
        assert (await client.call_tool("native", {})).content[0].text == "native"  # type: ignore[union-attr]
        assert "fresh" in await names(client)


async def test_resources_templates_and_prompts_are_served(make_host: Callable[..., Host]) -> None:
    relay = Relay()
    host = make_host({"relay": relay}, {"plugins": {"relay": {"prefix": "r"}}})
    async with Client(host.server) as client:
        await relay.publish()
        assert "relay://doc" in {str(r.uri) for r in (await client.list_resources()).resources}
        templates = (await client.list_resource_templates()).resource_templates
        assert "relay://pages/{n}" in {t.uri_template for t in templates}
        page = await client.read_resource("relay://pages/7")
        assert page.contents[0].text == "read relay://pages/7"  # type: ignore[union-attr]
        assert (await client.get_prompt("r_ask")).messages[0].content.text == "asked"  # type: ignore[union-attr]


async def test_clients_hear_of_changes_on_a_listen_stream(make_host: Callable[..., Host]) -> None:
    """2026-07-28 clients get list changes as subscriptions/listen events (stdio tests cover notifications)."""
    relay = Relay()
    host = make_host({"relay": relay})
    async with Client(host.server) as client, client.listen(tools_list_changed=True) as events:
        await relay.publish("lookup")
        with anyio.fail_after(5):
            event = await events.__anext__()
        assert type(event).__name__ == "ToolsListChanged"


async def test_background_tasks_run_while_serving_and_stop_at_shutdown(make_host: Callable[..., Host]) -> None:
    relay = Relay()
    host = make_host({"relay": relay})
    ticks: list[str] = []

    async def forever() -> None:
        ticks.append("started")
        try:
            await anyio.sleep_forever()
        finally:
            ticks.append("cancelled")

    async def broken() -> None:
        raise RuntimeError("boom")

    async with Client(host.server):
        assert relay.ctx is not None
        relay.ctx.start_background(forever, name="forever")
        relay.ctx.start_background(broken, name="broken")  # logged; the server goes on
        await anyio.sleep(0.05)
        assert ticks == ["started"]
    assert ticks == ["started", "cancelled"]
    with pytest.raises(PluginError, match="not running"):
        relay.ctx.start_background(forever, name="late")
