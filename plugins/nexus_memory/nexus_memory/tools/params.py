"""What the tool modules share: the parameters several tools take, and how a tool function gets its runtime."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from nexus_memory.models import MemoryType
from nexus_memory.runtime import Runtime

# Described only where the name, type and default leave a model guessing.
MemoryId = Annotated[str, Field(min_length=1)]
ContextFilter = Annotated[str | None, Field(description="A context_name.")]
TagFilter = Annotated[list[str] | None, Field(description="Any of these tags.")]
TypeFilter = MemoryType | None
IncludeArchived = bool


def bound(fn: Callable[..., Any], rt: Runtime) -> Callable[..., Any]:
    """``fn`` with its first parameter (the runtime) given: what the host registers. The host reads the tool's
    name, docstring and schema from the signature, which is ``fn``'s without that parameter (types resolved in
    ``fn``'s module)."""
    sig = inspect.signature(fn, eval_str=True)
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def tool(*args: Any, **kwargs: Any) -> Any:
            return await fn(rt, *args, **kwargs)

    else:

        @functools.wraps(fn)
        def tool(*args: Any, **kwargs: Any) -> Any:
            return fn(rt, *args, **kwargs)

    tool.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])  # type: ignore[attr-defined]
    del tool.__wrapped__  # type: ignore[attr-defined]  # the signature above, not fn's
    return tool
