"""The console's fixtures: one shared server with known content, opened with `nexus console`, and one browser.

The browser is Debian's chromium driven by Playwright (never a downloaded one). Where neither can be had,
the browser tests are skipped with the reason in the summary (and `.ci/run` says so too).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.conftest import (
    free_port,
    home_env,
    nexus_command,
    run_dir,
    stdio_session,
    stop_shared_servers,
    write_config,
)

CHROMIUM = os.environ.get("NEXUS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("NEXUS_SCREENSHOTS")  # e.g. docs/console: where the tests leave their screenshots

NOTES = {
    "Deploy": """---
entity type: process
relations:
- type: uses
  to: Docker
---
# Deploy

How the service reaches production.

## Steps

1. Build the **image** with `make image`.
2. Push it, then roll it out.

## Rollback

Roll back with `kubectl rollout undo`; see [[Docker]] for the image tags.
""",
    "Docker": """---
entity type: tool
relations: []
---
# Docker

Images are tagged with the git commit.
""",
}
MANUAL = "# Notes manual\n\n## Conventions\n\nOne entity per process or tool.\n"

GRAPH = {
    "entities": [
        ("python", "language", "Python"),
        ("asyncio", "library", "asyncio"),
        ("anyio", "library", "AnyIO"),
        ("trio", "library", "Trio"),
        ("starlette", "framework", "Starlette"),
        ("uvicorn", "server", "Uvicorn"),
        ("fastapi", "framework", "FastAPI"),
    ],
    "relations": [
        ("asyncio", "part_of", "python"),
        ("anyio", "runs_on", "asyncio"),
        ("anyio", "runs_on", "trio"),
        ("starlette", "uses", "anyio"),
        ("fastapi", "built_on", "starlette"),
        ("uvicorn", "serves", "starlette"),
    ],
}

MEMORIES = [
    {
        "content": "# Alembic migration deadlock\n\nThe **migration lock** times out when two pods run "
        "`alembic upgrade` at once.\n\n- Fix: run migrations in a one-off job\n- See [the runbook](https://example.com/runbook)",
        "context_name": "billing",
        "tags": ["postgres", "alembic"],
        "memory_type": "success",
    },
    {
        "content": "Uvicorn workers ignore SIGTERM while a request streams; use --timeout-graceful-shutdown.",
        "context_name": "gateway",
        "tags": ["Python", "uvicorn"],
        "memory_type": "insight",
    },
    {
        "content": "Pin numpy below 2 for the reporting job: its C extension is built against 1.x.",
        "context_name": "reports",
        "tags": ["python", "numpy"],
        "memory_type": "decision",
    },
    {
        "content": 'Hostile note <script>window.pwned = 1</script> <img src=x onerror="window.pwned = 2"> '
        "[click](javascript:window.pwned=3) and **bold** text.",
        "context_name": "billing",
        "tags": ["security", "python"],
        "memory_type": "note",
    },
    {  # untagged: a low-severity issue the tool reports before a high one (the health page puts it after)
        "content": "Release notes are drafted from the merged pull requests' titles every Friday.",
        "context_name": "reports",
        "tags": [],
        "memory_type": "note",
    },
]


@dataclass
class ConsoleServer:
    """A shared server with the content above, its config, and the environment its clients run in."""

    config: Path
    env: dict[str, str]
    home: Path
    memory_ids: list[str]

    def login_url(self) -> str:
        """A fresh one-time login link, exactly as `nexus console --no-open` prints it."""
        out = subprocess.run(
            nexus_command("console", "--no-open", "--config", str(self.config)),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        match = re.search(r"(http://127\.0\.0\.1:\d+/console/login\?token=\S+)", out.stdout)
        assert match, out.stdout
        return match.group(1)

    def mcp(self, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
        """Run ``work`` with an MCP client (the official one, over stdio through the relay) of this server."""

        async def run() -> Any:
            async with stdio_session("--config", str(self.config), env=self.env, cwd=self.home) as session:
                return await work(session)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # outside the browser driver's event loop
            return pool.submit(anyio.run, run).result(timeout=180)

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        async def work(session: ClientSession) -> Any:
            result = await session.call_tool(tool, arguments)
            assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
            return result.structured_content

        return self.mcp(work)

    def audit(self) -> list[dict[str, Any]]:
        path = self.home / "data" / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def console_config(home: Path, *, http_port: int | None = None) -> Path:
    notes = home / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (notes / f"{name}.md").write_text(text)
    (notes / "meta.md").write_text(MANUAL)
    port = f"[server.http]\nport = {http_port}\n" if http_port else ""
    return write_config(
        home / "nexus.toml",
        f'[server]\ndata_dir = "{home / "data"}"\n{port}'
        '[plugins.graph]\ncategories = ["read", "write"]\n'
        '[plugins.manual]\ncategories = ["read", "write"]\n'
        f'[plugins.manual.libraries]\nnotes = "{notes}"\n'
        "[plugins.files]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    home = tmp_path_factory.mktemp("console")
    # A free port, not the default 8766: a console the user runs, or another test run, may hold that one.
    server = ConsoleServer(console_config(home, http_port=free_port()), home_env(home), home, [])

    async def populate(session: ClientSession) -> list[str]:
        ids = []
        for memory in MEMORIES:
            result = await session.call_tool("store_memory", memory)
            assert not result.is_error, result.content
            stored = result.structured_content or {}
            ids.append(stored.get("memory_id") or stored["id"])  # the design's name, or main's before issue 15
        for entity_id, kind, name in GRAPH["entities"]:
            args = {"category": "concepts", "id": entity_id, "type": kind, "name": name, "desc": f"{name}, a {kind}."}
            assert not (await session.call_tool("add_entity", args)).is_error
        for src, rel, dst in GRAPH["relations"]:
            assert not (await session.call_tool("connect_entities", {"src": src, "rel": rel, "dst": dst})).is_error
        return ids

    try:
        server.memory_ids = server.mcp(populate)
        yield server
    finally:
        stop_shared_servers(run_dir(home))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium per module: Playwright's sync driver holds an event loop on this thread
    while it is open, so it must be closed before async tests run (anyio refuses a second loop)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests skipped: Playwright is not installed (pip install playwright)")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).is_file():
        pytest.skip(f"browser tests skipped: no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, console_server: ConsoleServer) -> Iterator[Any]:
    """A new browser profile, logged in with a fresh link; page errors fail the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(30_000)
    page.goto(console_server.login_url())
    page.wait_for_selector("#nav a")
    yield page
    context.close()
    assert not errors, errors


def screenshot(page: Any, name: str, tmp_path: Path) -> Path:
    """A PNG of the page, left in $NEXUS_SCREENSHOTS (docs/console for the README) or the test's folder."""
    folder = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 5000
    return path
