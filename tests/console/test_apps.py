"""Console views inside the assistant (MCP Apps), and how plugins add pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

import nexus_graph
import nexus_memory
from nexus_core import PluginError, hookimpl
from nexus_core.console import collect_pages
from nexus_core.console.pages import PageRegistrar

pytestmark = pytest.mark.anyio

VIEWS = {
    "recall_memories": "ui://nexus/memory/search.html",
    "get_memory": "ui://nexus/memory/memory.html",
    "neighbors": "ui://nexus/graph/neighbourhood.html",
}


class AppsClient(ClientExtension):
    """A client that renders MCP Apps views."""

    identifier = EXTENSION_ID

    def settings(self) -> dict[str, Any]:
        return {"mimeTypes": [APP_MIME_TYPE]}


async def test_clients_that_render_views_see_them_and_others_see_the_tools_unchanged(make_host: Any) -> None:
    host = make_host({"memory": nexus_memory, "graph": nexus_graph}, {"plugins": {"graph": {"categories": ["read"]}}})
    async with Client(host.server, extensions=[AppsClient()], mode="legacy") as apps, Client(host.server) as plain:
        with_views = {t.name: t for t in (await apps.list_tools()).tools}
        without = {t.name: t for t in (await plain.list_tools()).tools}
        for tool, uri in VIEWS.items():
            assert with_views[tool].meta["ui"] == {"resourceUri": uri}
            assert "ui" not in (without[tool].meta or {})
        assert "ui" not in with_views["list_memories"].meta
        page = (await apps.read_resource(VIEWS["neighbors"])).contents[0]
    assert page.mime_type == APP_MIME_TYPE
    assert 'Nexus.bootView("graph/graph", "neighbourhood", {});' in page.text
    assert 'Nexus.page("graph/graph"' in page.text and "Nexus.graph = " in page.text  # self-contained
    assert page.text.count("</script") == 1  # the inlined code cannot end its element early


async def test_a_view_is_refused_wherever_its_tool_is(make_host: Any) -> None:
    host = make_host({"graph": nexus_graph}, {"plugins": {"graph": {"deny_tools": ["neighbors"]}}})
    async with Client(host.server, extensions=[AppsClient()], mode="legacy") as apps:
        listed = {str(r.uri) for r in (await apps.list_resources()).resources}
        assert VIEWS["neighbors"] not in listed
        with pytest.raises(Exception, match="deny_tools"):
            await apps.read_resource(VIEWS["neighbors"])


def test_a_page_is_checked_when_registered(tmp_path: Path) -> None:
    script = tmp_path / "page.js"
    script.write_text('Nexus.page("x/p", {render() {}});')
    register = PageRegistrar("x")
    register("p", title="P", script=script, data={"n": 1})
    assert register.pages[0].key == "x/p" and register.pages[0].scripts == (script,)
    for bad, reason in [
        ({"id": "Bad Id", "script": script}, "lowercase"),
        ({"id": "q", "script": tmp_path / "missing.js"}, "is not a .js file"),
        ({"id": "p", "script": script}, "registered twice"),
        ({"id": "r", "script": script, "data": {"x": object()}}, "not JSON"),
    ]:
        with pytest.raises(PluginError, match=reason):
            register(bad.pop("id"), title="T", **bad)


class BrokenPages:
    @hookimpl
    def nexus_console_pages(self, register: Any) -> None:
        raise RuntimeError("boom")


def test_a_plugin_whose_pages_fail_loses_only_its_pages(make_host: Any, caplog: pytest.LogCaptureFixture) -> None:
    host = make_host({"broken": BrokenPages(), "graph": nexus_graph})
    keys = [p.key for p in collect_pages(host)]
    assert keys == ["graph/graph", "core/activity"]
    assert "plugin 'broken': console pages not added: boom" in caplog.text


def test_the_health_page_has_a_title_and_advice_in_words_for_every_issue_type() -> None:
    """analyze_knowledge's advice names tools (for an assistant); the health page says what a person does
    instead, for each issue type the tool can report (a new one without words here fails this test)."""
    from typing import get_args

    from nexus_memory.models import IssueType

    page = (Path(nexus_memory.__file__).parent / "console" / "health.js").read_text(encoding="utf-8")
    tables = {name: page.split(f"const {name} = {{", 1)[1].split("};", 1)[0] for name in ("TITLES", "ADVICE")}
    for issue in get_args(IssueType):
        for name, table in tables.items():
            words = table.split(f"{issue}: ", 1)[1].split("\n", 1)[0] if f"{issue}: " in table else ""
            assert words.startswith('"') and "_" not in words, f"{name} has no words for {issue}"
