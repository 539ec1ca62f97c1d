"""Fixtures for the memory plugin: a host with the plugin, and a client to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from mcp import Client

import nexus_memory
from nexus_memory.embedders import MiniLMEmbedder

ALL = ["read", "write", "delete"]


@pytest.fixture(scope="session", autouse=True)
def _model_loaded() -> None:
    """Load the real model once per session; every host in the process shares it."""
    MiniLMEmbedder._load()


@pytest.fixture
def memory_host(make_host: Callable[..., Any]) -> Callable[..., Any]:
    def make(categories: list[str] | None = ALL, **keys: Any) -> Any:
        table: dict[str, Any] = dict(keys)
        if categories is not None:
            table["categories"] = categories
        return make_host({"memory": nexus_memory}, {"plugins": {"memory": table}})

    return make


@pytest.fixture
async def client(memory_host: Callable[..., Any]) -> AsyncIterator[Client]:
    async with Client(memory_host().server) as c:
        yield c
