"""The console in a real headless chromium, against a real shared server opened with `nexus console`.

Each test logs a fresh browser profile in with a one-time link, works the page as a person would, and
checks the outcome through the official MCP client of the same server (and its audit log).
"""

from __future__ import annotations

import http.server
import re
import threading
from pathlib import Path
from typing import Any

from tests.console.conftest import ConsoleServer, screenshot


def test_search_open_edit_tags_and_a_refused_delete(page: Any, console_server: ConsoleServer, tmp_path: Path) -> None:
    page.fill("input[name=q]", "database migration lock timeout")
    page.click("form[role=search] button[type=submit]")
    first = page.locator("ul.results > li").first
    page.locator("ul.results > li .score").first.wait_for()  # the search's results (scored), not the listing
    assert "Alembic migration deadlock" in first.inner_text()
    assert float(first.locator(".score").inner_text().split()[0]) > 0.2  # recall's similarity, shown
    screenshot(page, "memories", tmp_path)

    first.locator("a").first.click()
    page.wait_for_selector("h1[data-memory]")
    content = page.locator(".content")
    assert content.locator("h1").inner_text() == "Alembic migration deadlock"  # Markdown, rendered
    assert content.locator("strong").inner_text() == "migration lock"
    assert content.locator("a").get_attribute("rel") == "noopener noreferrer nofollow"

    page.click("details.panel summary:has-text('Edit')")
    page.fill("input[name=tags]", "postgres, alembic, deploy")
    page.click("button:has-text('Save changes')")
    page.wait_for_selector(".tags .chip:has-text('deploy')")
    memory_id = page.get_attribute("h1[data-memory]", "data-memory")
    assert console_server.call("get_memory", {"memory_id": memory_id})["tags"] == ["postgres", "alembic", "deploy"]

    page.click("summary:has-text('Delete or merge')")
    delete = page.locator("button:has-text('Delete this memory')")
    delete.click()
    page.click("button:has-text('Click again to delete')")
    refusal = page.locator(".problem.refused")
    refusal.wait_for()
    assert "permission denied" in refusal.inner_text() and "'delete' category" in refusal.inner_text()
    screenshot(page, "memory", tmp_path)
    assert console_server.call("get_memory", {"memory_id": memory_id})["id"] == memory_id  # still there

    calls = [(e["client"], e["tool"], e["outcome"]) for e in console_server.audit()]
    assert ("console", "update_memory", "ok") in calls and ("console", "delete_memory", "denied") in calls


def test_memory_content_cannot_run_in_the_console(page: Any, console_server: ConsoleServer) -> None:
    hostile = console_server.memory_ids[3]
    page.goto(page.url.split("#")[0] + f"#/memory/memories/m/{hostile}")
    page.wait_for_selector(".content strong")
    assert page.evaluate("window.pwned") is None
    content = page.locator(".content")
    assert "<script>" in content.inner_text()  # shown as text
    assert content.locator("script, img").count() == 0
    assert content.locator("a").count() == 0  # the javascript: link is not a link
    assert content.locator(".unsafe-link").inner_text() == "click"


def test_a_graph_entity_and_its_neighbours(page: Any, console_server: ConsoleServer, tmp_path: Path) -> None:
    page.click("#nav a:has-text('Graph')")
    graph = "[data-page='graph/graph']"  # the memories page, shown first, has a search box too: wait for this one
    page.fill(f"{graph} input[name=q]", "anyio")
    page.click(f"{graph} form[role=search] button[type=submit]")
    page.click("li[data-entity=anyio] a")
    page.wait_for_selector("svg.graph .node[data-id=asyncio]")
    drawn = set(page.eval_on_selector_all("svg.graph .node", "nodes => nodes.map(n => n.dataset.id)"))
    assert drawn == {"anyio", "asyncio", "trio", "starlette"}  # one hop, both directions
    assert page.locator("h2[data-entity=anyio]").inner_text() == "AnyIO"
    assert page.locator(".relations.out li").count() == 2 and page.locator(".relations.in li").count() == 1
    page.select_option("select[name=depth]", "2")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("svg.graph .node[data-id=fastapi]")
    page.wait_for_selector("h2[data-entity=anyio]")
    screenshot(page, "graph", tmp_path)

    page.click("svg.graph .node[data-id=starlette]")  # a click opens that entity's neighbourhood
    page.wait_for_selector("h2[data-entity=starlette]")
    assert {"fastapi", "uvicorn", "anyio"} <= {li.split()[-1] for li in page.locator(".relations li").all_inner_texts()}
    page.click(".tabs a:has-text('Mermaid')")
    assert "Starlette" in page.locator("pre.mermaid-source").inner_text()


def test_a_library_section_its_contents_and_backlinks(page: Any, console_server: ConsoleServer, tmp_path: Path) -> None:
    page.click("#nav a:has-text('Libraries')")
    page.click("ul.entities a:has-text('Deploy')")
    page.wait_for_selector(".toc a:has-text('Rollback')")
    assert page.locator(".entity-body h2").all_inner_texts() == ["Steps", "Rollback"]
    assert page.locator(".relations.out li").inner_text().startswith("→ uses Docker")
    page.click(".toc a:has-text('Rollback')")
    section = page.locator("section[data-heading=Rollback]")
    section.wait_for()
    assert "kubectl rollout undo" in section.inner_text() and "Build the" not in section.inner_text()
    section.locator("a:has-text('Docker')").click()  # a [[wikilink]]
    page.wait_for_selector(".relations.in li:has-text('Deploy')")  # Docker's backlink
    screenshot(page, "libraries", tmp_path)


def test_health_fixes_look_alike_tags_in_one_click(page: Any, console_server: ConsoleServer, tmp_path: Path) -> None:
    page.click("#nav a:has-text('Health')")
    issue = page.locator("[data-issue=similar_tags]")
    issue.wait_for()
    screenshot(page, "health", tmp_path)
    issue.locator("button:text-is('Use “python” for all')").click()  # the most used spelling
    page.wait_for_selector(".notice:has-text('now use')")
    tags = console_server.call("get_memory", {"memory_id": console_server.memory_ids[1]})["tags"]
    assert tags == ["python", "uvicorn"]
    assert page.locator("[data-issue=similar_tags]").count() == 0


def test_the_activity_table_shows_the_calls_just_made(page: Any, console_server: ConsoleServer, tmp_path: Path) -> None:
    console_server.call("recall_memories", {"query": "numpy pin"})  # an assistant's call, not the console's

    async def refused_delete(session: Any) -> Any:  # a denied row of its own: not one another test left
        return await session.call_tool("delete_memory", {"memory_id": console_server.memory_ids[0]})

    assert console_server.mcp(refused_delete).is_error  # the delete category is off
    page.click("#nav a:has-text('Activity')")
    page.wait_for_selector("table.activity tbody tr")
    rows = page.locator("table.activity tbody tr").all_inner_texts()
    assert any("recall_memories" in r and "console" not in r for r in rows)
    denied = page.locator("tr.outcome-denied")
    assert denied.count() >= 1 and "delete_memory" in denied.first.inner_text()
    page.wait_for_selector("table.plugins td:has-text('memory')")
    memory_row = page.locator("table.plugins tr:has-text('memory')").first.inner_text()
    assert "delete" in memory_row and "read" in memory_row
    screenshot(page, "activity", tmp_path)

    console_server.call("get_stats", {})  # live: appears without a reload
    page.wait_for_function(
        "() => [...document.querySelectorAll('table.activity tbody tr')].some(r => r.innerText.includes('get_stats'))"
    )


class _AttackerPage(http.server.BaseHTTPRequestHandler):
    """Another origin on this machine (same site, other port), whose page calls the console with the cookie."""

    target = ""

    def do_GET(self) -> None:
        script = f"""<script>
          fetch({self.target!r}, {{method: "POST", mode: "no-cors", credentials: "include",
            headers: {{"content-type": "text/plain"}},
            body: JSON.stringify({{tool: "update_memory", arguments: {{memory_id: "x", tags: ["pwned"]}}}})}})
            .then(() => document.title = "sent", () => document.title = "sent");
        </script>"""
        body = script.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_another_origin_cannot_use_the_logged_in_browser(page: Any, console_server: ConsoleServer) -> None:
    origin = page.url.split("/console")[0]
    page.wait_for_load_state("networkidle")  # the console's own first calls are audited before the count
    before = len(console_server.audit())
    _AttackerPage.target = f"{origin}/console/api/call"
    attacker = http.server.HTTPServer(("127.0.0.1", 0), _AttackerPage)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        responses: list[int] = []
        page.on("response", lambda r: "/console/api/call" in r.url and responses.append(r.status))
        page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
        page.wait_for_function("document.title === 'sent'")
        page.wait_for_timeout(300)
    finally:
        attacker.shutdown()
    assert responses == [403]
    assert len(console_server.audit()) == before  # nothing reached the gate


HOST_PAGE = """<!doctype html><html><body>
<iframe id="view" sandbox="allow-scripts" style="width: 1000px; height: 700px"></iframe>
<script>
  const frame = document.getElementById("view");
  const send = (message) => frame.contentWindow.postMessage(message, "*");
  window.addEventListener("message", async (event) => {
    const m = event.data;
    if (m.method === "ui/initialize") {
      send({jsonrpc: "2.0", id: m.id, result: {protocolVersion: "2026-01-26",
            hostInfo: {name: "test host", version: "1"}, hostCapabilities: {serverTools: {}},
            hostContext: {theme: "light"}}});
    } else if (m.method === "ui/notifications/initialized") {
      send({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: window.toolResult});
    } else if (m.method === "tools/call") {
      window.proxied = (window.proxied || []).concat([m.params.name]);
      send({jsonrpc: "2.0", id: m.id, result: await window.callTool(m.params.name, m.params.arguments)});
    }
  });
</script></body></html>"""


def test_the_memory_search_view_inside_an_mcp_apps_client(browser: Any, console_server: ConsoleServer) -> None:
    """A stand-in for a client that renders MCP Apps: it shows the ui:// resource of recall_memories with the
    tool's result, and relays the view's tools/call to the server (through the official MCP client)."""

    async def fetch(session: Any) -> tuple[str, dict[str, Any]]:
        html = (await session.read_resource("ui://nexus/memory/search.html")).contents[0].text
        result = await session.call_tool("recall_memories", {"query": "uvicorn graceful shutdown", "limit": 3})
        return html, result.model_dump(by_alias=True, exclude_none=True, mode="json")

    view, result = console_server.mcp(fetch)

    def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async def work(session: Any) -> dict[str, Any]:
            answer = await session.call_tool(name, arguments)
            return answer.model_dump(by_alias=True, exclude_none=True, mode="json")

        return console_server.mcp(work)

    context = browser.new_context()
    page = context.new_page()
    try:
        page.expose_function("callTool", call_tool)
        page.set_content(HOST_PAGE)
        page.evaluate("([html, result]) => { window.toolResult = result; view.srcdoc = html; }", [view, result])
        frame = page.frame_locator("#view")
        first = frame.locator("ul.results > li").first
        first.wait_for(timeout=30_000)
        assert "SIGTERM" in first.inner_text()
        first.locator("a").first.click()  # opens the memory in place, through the client's tools/call
        frame.locator("h1[data-memory]").wait_for(timeout=60_000)
        frame.locator("h3:has-text('From this memory')").wait_for(timeout=60_000)  # its links, fetched too
        assert "timeout-graceful-shutdown" in frame.locator(".content").inner_text()
        assert {"get_memory", "get_memory_links"} <= set(page.evaluate("window.proxied"))
    finally:
        context.close()


def test_a_link_behind_a_control_character_is_not_followed_in_a_view(browser: Any) -> None:
    """An MCP Apps view runs the console's scripts inline, under the client's policy (not the console's CSP):
    the renderer alone must keep ``\\x01javascript:`` (which the URL parser reads as javascript:) from a link."""
    from nexus_core.console.pages import STATIC

    code = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in ("nexus.js", "markdown.js"))
    page = browser.new_page()
    try:
        page.set_content('<!doctype html><html><body><main id="main"></main></body></html>')
        page.add_script_tag(content=code)
        for prefix in ("\x00", "\x01", "\x1f", "\x7f"):
            clicked = page.evaluate(
                """(text) => {
                    const main = document.getElementById("main");
                    main.replaceChildren(Nexus.markdown(text));
                    main.querySelectorAll("a").forEach((a) => a.click());
                    return main.querySelectorAll("a").length;
                }""",
                f"[click]({prefix}javascript:window.pwned=1) and **bold**",
            )
            page.wait_for_timeout(100)  # a javascript: navigation runs after the click returns
            assert clicked == 0, repr(prefix)
            assert page.evaluate("window.pwned") is None, repr(prefix)
            assert page.locator("#main .unsafe-link").inner_text() == "click"
    finally:
        page.close()


def test_every_page_at_desktop_and_phone_width_with_an_icon(
    page: Any, console_server: ConsoleServer, tmp_path: Path
) -> None:
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    page.reload()
    page.wait_for_selector("#nav a")
    assert page.locator("link[rel=icon]").count() == 1
    pages = page.eval_on_selector_all("#nav a", "links => links.map(a => [a.textContent.trim(), a.href])")
    assert len(pages) >= 4
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 860})
        for name, href in pages:
            page.goto(href)
            page.wait_for_selector("#main h1")
            page.wait_for_load_state("networkidle")
            page.wait_for_function("() => !document.querySelector('#main').innerText.includes('Loading')")
            shot = screenshot(page, f"{name.lower()}-{width}", tmp_path)
            assert shot.stat().st_size > 5000
            # nothing wider than the window: no sideways scrolling of the whole page
            assert page.evaluate("document.documentElement.scrollWidth") <= width + 1, (name, width)
    assert missing == []  # favicon.ico included


def test_activity_leaves_out_the_consoles_own_reads_unless_asked(page: Any, console_server: ConsoleServer) -> None:
    page.click("#nav a:has-text('Health')")
    page.wait_for_selector("#main h1")
    page.wait_for_load_state("networkidle")
    page.click("#nav a:has-text('Activity')")
    page.wait_for_selector("table.activity tbody tr")
    rows = page.locator("table.activity tbody tr").all_inner_texts()
    reads = {"analyze_knowledge", "get_memory", "recall_memories", "list_memories", "explore_related", "get_stats"}
    own_reads = [r for r in rows if r.split("\t")[1:2] == ["console"] and r.split("\t")[3] in reads]
    assert not own_reads, own_reads
    page.check("input[name=own]")
    page.click("form.filters button[type=submit]")
    page.wait_for_function(
        "() => [...document.querySelectorAll('table.activity tbody tr')].some(r => r.innerText.includes('console'))"
    )
    assert "own=1" in page.url


def test_health_says_what_its_score_is_and_what_to_do(page: Any, console_server: ConsoleServer) -> None:
    page.click("#nav a:has-text('Health')")
    page.locator(".issue").first.wait_for()
    assert "health score" in page.locator(".health-score-box").inner_text().lower()
    assert "/ 100" in page.locator(".health-score").inner_text()
    page.locator("h2:text-is('Tips')").wait_for()
    text = page.locator("#main").inner_text()
    assert "issues above" not in text
    assert "[object" not in text, text  # every part of the page drawn as itself, none as a JavaScript object's name
    assert not re.search(r"\b(store|update|link|explore|recall|list|get|delete)_\w+", text), text  # no tool names
    severities = page.eval_on_selector_all(".issue h3 .badge", "b => b.map(x => x.textContent)")
    rank = {"high severity": 0, "medium severity": 1, "low severity": 2}
    assert len(set(severities)) > 1 and [rank[s] for s in severities] == sorted(rank[s] for s in severities)
    for advice in page.locator(".issue .advice").all_inner_texts():  # words, not tool names
        assert "_" not in advice and advice.startswith("What to do: ")


def test_weak_search_results_are_folded_away(page: Any, console_server: ConsoleServer) -> None:
    page.fill("input[name=q]", "numpy pin reporting job")
    page.click("form[role=search] button[type=submit]")
    page.locator(".results-area .score").first.wait_for()
    shown = page.eval_on_selector_all(".results-area > ul.results .score", "s => s.map(x => parseFloat(x.textContent))")
    assert shown and min(shown) >= 0.2
    folded = page.locator(".results-area details.weak")
    assert folded.count() == 1 and "weaker match" in folded.locator("summary").inner_text()


def test_a_memory_is_archived_and_brought_back_from_its_edit_form(page: Any, console_server: ConsoleServer) -> None:
    """What the health page advises for old memories ("archive it under Edit") can be done there."""
    memory_id = console_server.memory_ids[2]
    page.goto(page.url.split("#")[0] + f"#/memory/memories/m/{memory_id}")
    page.wait_for_selector("h1[data-memory]")
    for archived in (True, False):
        page.click("details.panel summary:has-text('Edit')")
        page.set_checked("input[name=archived]", archived)
        page.click("button:has-text('Save changes')")
        page.wait_for_selector(".meta .chip.archived", state="visible" if archived else "detached")
        assert console_server.call("get_memory", {"memory_id": memory_id})["archived"] is archived
