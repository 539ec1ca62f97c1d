"""What the manual's tool modules share: the arguments' annotations, and ``bound``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from nexus_manual.library import Libraries
from nexus_manual.models import Edge

LibraryName = Annotated[str, Field(min_length=1)]  # a wrong one is answered with the configured names
EntityName = Annotated[str, Field(min_length=1, description="Without '.md'.")]
EntityNames = Annotated[list[str], Field(min_length=1, description="Without '.md'.")]
InSection = Annotated[
    str | None,
    Field(description="Limit the edit to this section (heading text, '#'s and case ignored). Default: the whole body."),
]
Toc = Annotated[
    str, Field(min_length=1, description="The manual section's heading, e.g. 'Conventions' or '## Conventions'.")
]
EdgeList = Annotated[list[Edge], Field(min_length=1, description="Relations as {from, to, type}.")]


def bound(fn: Callable[..., Any], libs: Libraries) -> Callable[..., Any]:
    """The tool ``fn(libs, ...)`` with the plugin's libraries given, as the host takes it.

    The host builds the tool's name, description and schemas from the result's name, docstring and
    ``__signature__``: ``fn``'s, without ``libs``.
    """
    body = functools.partial(fn, libs)

    @functools.wraps(fn)
    def call(**kwargs: Any) -> Any:
        return body(**kwargs)

    call.__signature__ = inspect.signature(body, eval_str=True)  # type: ignore[attr-defined]
    return call
