"""Fake plugins for host tests: classes with @hookimpl methods, registered with pm.register."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from nexus_core import Category, PluginConfig, PluginContext, ToolError, hookimpl


class Sum(BaseModel):
    total: int = Field(description="a + b")


class Tally(PluginConfig):
    start: int = Field(0, ge=0)


class Lifecycle:
    """Records its own startup and shutdown in a list, which several instances may share."""

    def __init__(self, events: list[str] | None = None) -> None:
        self.events = [] if events is None else events

    @hookimpl
    async def nexus_startup(self, ctx: PluginContext) -> None:
        self.events.append(f"start {ctx.name}")

    @hookimpl
    async def nexus_shutdown(self, ctx: PluginContext) -> None:
        self.events.append(f"stop {ctx.name}")


class Calculator(Lifecycle):
    """Two categories: `math` (default on) and `danger` (default off)."""

    @hookimpl
    def nexus_permission_categories(self) -> list[Category]:
        return [
            Category(name="math", description="Arithmetic.", default=True),
            Category(name="danger", description="Destructive arithmetic."),
        ]

    @hookimpl
    def nexus_config_model(self) -> type[BaseModel]:
        return Tally

    @hookimpl
    def nexus_register_tools(self, register, ctx: PluginContext) -> None:
        config: Tally = ctx.config

        def add(a: int, b: Annotated[int, Field(ge=0, description="Non-negative.")]) -> Sum:
            """Add two numbers."""
            return Sum(total=config.start + a + b)

        def fail(message: str) -> str:
            """Always fails with the message."""
            raise ToolError(message)

        def wipe() -> str:
            """Pretend to wipe everything."""
            self.events.append("wiped")
            return "wiped"

        def read_path(path: str) -> str:
            """Read a text file through the path policy."""
            return Path(ctx.paths.resolve(path)).read_text()

        register(add, category="math", title="Add", read_only=True, idempotent=True)
        register(fail, category="math", read_only=True)
        register(wipe, category="danger", title="Wipe", destructive=True)
        register(read_path, category="math", read_only=True)

    @hookimpl
    def nexus_register_resources(self, register) -> None:
        register(lambda: "42", "calc://answer", name="answer", mime_type="text/plain")
        register(lambda n: str(int(n) ** 2), "calc://square/{n}", name="square")
        register(lambda: "boom", "calc://danger", name="danger", category="danger")

    @hookimpl
    def nexus_register_prompts(self, register, ctx: PluginContext) -> None:
        def explain(expression: str) -> str:
            """Explain an expression."""
            return f"Explain {expression} step by step."

        def explain_file(path: str) -> str:
            """Explain a file (through the path policy)."""
            return f"Explain this:\n{ctx.paths.resolve(path).read_text()}"

        def crash() -> str:
            raise RuntimeError("internal detail /srv/secret")

        register(explain, title="Explain")
        register(explain_file)
        register(crash)


class Echo:
    """A plugin without declared categories: its tools fall in `default`."""

    @hookimpl
    def nexus_register_tools(self, register) -> None:
        def add(a: int, b: int) -> int:
            """A second tool named add, to collide with Calculator's."""
            return a + b

        register(add, category="default")


class BrokenRegistration:
    @hookimpl
    def nexus_register_tools(self, register) -> None:
        raise RuntimeError("cannot reach the database")


class UndeclaredCategory:
    @hookimpl
    def nexus_permission_categories(self) -> list[Category]:
        return [Category(name="read", description="Read.", default=True)]

    @hookimpl
    def nexus_register_tools(self, register) -> None:
        register(lambda: "x", name="sneaky", category="write")


class FailingStartup:
    @hookimpl
    def nexus_register_tools(self, register) -> None:
        register(lambda: "up", name="status", category="default", read_only=True)

    @hookimpl
    def nexus_startup(self) -> None:
        raise ConnectionError("database is down")


class TraceReader:
    """One tool that answers with the OpenTelemetry trace it runs in."""

    @hookimpl
    def nexus_register_tools(self, register) -> None:
        def trace_id() -> str:
            """The current trace id, as 32 hex digits (all zeros outside a trace)."""
            from opentelemetry import trace

            return format(trace.get_current_span().get_span_context().trace_id, "032x")

        register(trace_id, category="default")
