"""``nexus_core.report_progress``: a tool reports, the host sends the client notifications/progress.

In process through the official client (its handshake era carries the progress token in the request, as
stdio and HTTP do; the relay and HTTP are covered by tests/files/test_progress.py and the bridge's).
"""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from mcp import Client

from nexus_core import PluginContext, hookimpl, report_progress
from nexus_core.host import progress
from tests.conftest import HeardProgress

pytestmark = pytest.mark.anyio


class Reporting:
    """Tools that report progress: from a worker thread, from the loop, too often, backwards."""

    @hookimpl
    def nexus_register_tools(self, register, ctx: PluginContext) -> None:
        def count(steps: int, pause: float = 0.0) -> bool:
            """Report steps 1..STEPS from the worker thread this body runs in, and from a thread it starts."""
            asked = report_progress(0.5, message="starting")
            for step in range(1, steps + 1):
                report_progress(step, steps, f"step {step}")
                time.sleep(pause)
            done = threading.Thread(target=report_progress, args=(steps + 1, steps + 1, "x" * 1000))
            done.start()  # a bare thread has not the call's context: nothing happens, nothing breaks
            done.join()
            return asked

        async def backwards() -> str:
            """Report 5, then 3, then 4 (a step back is not sent: MCP requires progress to grow)."""
            for value in (5, 3, 4):
                report_progress(value, message=f"at {value}")
                await anyio.sleep(0.1)
            report_progress(9, message="x" * 1000)
            await anyio.sleep(0.1)
            return "done"

        register(count, category="default")
        register(backwards, category="default")


async def test_what_a_tool_reports_reaches_a_client_that_asked(make_host, monkeypatch) -> None:
    monkeypatch.setattr(progress, "INTERVAL", 0.02)
    host = make_host({"reporting": Reporting()})
    heard, got = HeardProgress(), []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        got.append((value, total, message))

    async with Client(host.server, mode="legacy", message_handler=heard) as client:
        asked = await client.call_tool("count", {"steps": 10, "pause": 0.01}, progress_callback=on_progress)
        assert asked.structured_content == {"result": True}
        assert got and all(m.startswith(("starting", "step ")) for _, _, m in got), got
        assert [v for v, _, _ in got] == sorted({v for v, _, _ in got})
        sent = len(heard.progress)
        await anyio.sleep(0.1)
        assert len(heard.progress) == sent  # nothing after the answer, though the call reported until its end

        got.clear()
        assert (await client.call_tool("backwards", {}, progress_callback=on_progress)).structured_content
        assert [v for v, _, _ in got] == [5, 9], got  # 3 and 4 came after 5: dropped
        assert len(got[-1][2]) == 300 and got[-1][2].endswith("…")  # a long message is cut
        sent = len(heard.progress)
        unasked = await client.call_tool("count", {"steps": 10, "pause": 0.01})
        assert unasked.structured_content == {"result": False}  # report_progress says nobody listens
        assert len(heard.progress) == sent


async def test_many_reports_make_a_few_notifications(make_host) -> None:
    host = make_host({"reporting": Reporting()})  # the default INTERVAL, 0.25 s
    got: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        got.append(value)

    async with Client(host.server, mode="legacy") as client:
        started = time.monotonic()
        await client.call_tool("count", {"steps": 400, "pause": 0.002}, progress_callback=on_progress)
        seconds = time.monotonic() - started
    assert 1 <= len(got) <= seconds / progress.INTERVAL + 1, (len(got), seconds)
