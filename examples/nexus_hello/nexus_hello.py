"""nexus-hello: the smallest complete Nexus plugin. Copy it to start your own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import click
from pydantic import BaseModel, Field

from nexus_core import Category, PluginConfig, PluginContext, ToolError, hookimpl


class HelloConfig(PluginConfig):
    """The keys of [plugins.hello] besides those the host reads."""

    greeting: str = Field("Hello", description="The word hello() greets with.")


class Greeting(BaseModel):
    text: str = Field(description="The greeting.")
    count: int = Field(description="Greetings given since the server started.")


class LineCount(BaseModel):
    path: str
    lines: int


@hookimpl
def nexus_permission_categories() -> list[Category]:
    return [
        Category(name="greet", description="Say hello.", default=True),
        Category(name="files", description="Count the lines of files inside the roots."),
    ]


@hookimpl
def nexus_config_model() -> type[BaseModel]:
    return HelloConfig


@hookimpl
def nexus_register_tools(register, ctx: PluginContext) -> None:
    config: HelloConfig = ctx.config
    greeted = [0]

    def hello(name: Annotated[str, Field(min_length=1, description="Who to greet.")]) -> Greeting:
        """Greet someone by name."""
        greeted[0] += 1
        return Greeting(text=f"{config.greeting}, {name}!", count=greeted[0])

    def count_lines(path: Annotated[str, Field(description="A file inside the roots.")]) -> LineCount:
        """Count the lines of a text file."""
        real = ctx.paths.resolve(path)  # refuses paths outside the roots, symlink escapes and deny_paths
        if not real.is_file():
            raise ToolError(f"'{path}' is not a file")
        with real.open("rb") as f:
            return LineCount(path=ctx.paths.display(real), lines=sum(1 for _ in f))

    register(hello, category="greet", title="Say hello", read_only=True, idempotent=False)
    # keywords: other words for the job, which tool search (find_tools) matches; no client is sent them
    register(count_lines, category="files", title="Count lines", read_only=True, idempotent=True, keywords="wc -l")


@hookimpl
def nexus_register_resources(register, ctx: PluginContext) -> None:
    config: HelloConfig = ctx.config

    def greeting() -> str:
        return config.greeting

    def greeting_for(name: str) -> str:
        return f"{config.greeting}, {name}!"

    register(greeting, "hello://greeting", name="greeting", mime_type="text/plain")
    register(greeting_for, "hello://greeting/{name}", name="greeting_for", mime_type="text/plain")


@hookimpl
def nexus_register_prompts(register) -> None:
    def welcome(name: str) -> str:
        """Ask the assistant to welcome someone."""
        return f"Write a one-line, friendly welcome for {name}."

    register(welcome, title="Welcome someone")


@hookimpl
def nexus_console_pages(register) -> None:
    """A page in `nexus console`: a script that calls the tools above through the gate."""
    register("greet", title="Hello", script=Path(__file__).with_name("nexus_hello.js"), order=80)


@hookimpl
async def nexus_startup(ctx: PluginContext) -> None:
    ctx.log.debug("hello plugin started")


@hookimpl
async def nexus_shutdown(ctx: PluginContext) -> None:
    ctx.log.debug("hello plugin stopped")


@click.command("hello")
@click.argument("name")
def hello_command(name: str) -> None:
    """Greet NAME from the command line (a plugin's own `nexus` subcommand)."""
    click.echo(f"Hello, {name}!")
