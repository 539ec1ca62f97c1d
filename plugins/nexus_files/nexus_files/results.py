"""Turning a tool body's pydantic model into a result with structured content and readable text."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

from nexus_core import PluginContext, ToolError, run_nonblocking


class ToolOutput(BaseModel):
    """Base of every output model: ``render()`` is the text a person (or model) reads."""

    def render(self) -> str:
        return self.model_dump_json(indent=2)


def tool(fn: Callable[..., Any], ctx: PluginContext, *, on_loop: bool = False) -> Callable[..., Any]:
    """Bind a module-level tool body ``fn(ctx, ...)`` to ``ctx``; its result carries structured content and text.

    The SDK builds the schemas from the wrapper's ``__signature__``: ``fn``'s own
    without ``ctx``, so clients see only the tool's arguments. Sync bodies run in
    a worker thread so the event loop is never blocked; with ``on_loop``, a body
    that checks every step that may block (``nexus_core.on_loop``) runs on the
    loop and moves to the thread when one might. ``OSError`` becomes a readable
    tool error.
    """
    body = functools.partial(fn, ctx)
    is_async = inspect.iscoroutinefunction(fn)

    @functools.wraps(fn)
    async def wrapper(**kwargs: Any) -> Any:
        try:
            if is_async:
                result = await body(**kwargs)
            elif on_loop:
                result = await run_nonblocking(functools.partial(body, **kwargs))
            else:
                result = await anyio.to_thread.run_sync(functools.partial(body, **kwargs))
        except OSError as exc:
            raise ToolError(os_error_text(exc)) from None
        return CallToolResult(
            content=[TextContent(type="text", text=result.render())],
            structured_content=result.model_dump(mode="json"),
        )

    wrapper.__signature__ = inspect.signature(body, eval_str=True)  # type: ignore[attr-defined]
    return wrapper


def os_error_text(exc: OSError) -> str:
    what = exc.strerror or type(exc).__name__
    where = f": {exc.filename}" if exc.filename else ""
    return f"{what}{where}"
