"""Fixtures for the memory plugin: a host with the plugin, and a client to it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

import nexus_memory
from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.build import Host
from nexus_core.host.discovery import get_plugin_manager
from nexus_memory.embed import MiniLMEmbedder
from tests.conftest import nexus_command, server_env

ALL = ["read", "write", "delete"]


@pytest.fixture(scope="session", autouse=True)
def _model_loaded() -> None:
    """Load the real model once per session; every host in the process shares it."""
    MiniLMEmbedder._load()


def memory_host_at(data_dir: Path, categories: list[str] | None = ALL, **keys: Any) -> Host:
    """A host serving only the memory plugin, its data in ``data_dir`` (MiniLM alone unless ``embedder`` says)."""
    table: dict[str, Any] = {"embedder": "minilm", **keys}
    if categories is not None:
        table["categories"] = categories
    pm = get_plugin_manager()
    pm.register(nexus_memory, name="memory")
    config = {"server": {"data_dir": str(data_dir)}, "plugins": {"memory": table}}
    return build_host(parse_config(config, source="test.toml", base_dir=data_dir), pm)


@pytest.fixture
def memory_host(make_host: Callable[..., Any]) -> Callable[..., Any]:
    def make(categories: list[str] | None = ALL, **keys: Any) -> Any:
        # MiniLM alone unless a test asks: e5 costs ~3.5x its CPU, and most tests are not about the model.
        table: dict[str, Any] = {"embedder": "minilm", **keys}
        if categories is not None:
            table["categories"] = categories
        return make_host({"memory": nexus_memory}, {"plugins": {"memory": table}})

    return make


@pytest.fixture
async def client(memory_host: Callable[..., Any]) -> AsyncIterator[Client]:
    async with Client(memory_host().server) as c:
        yield c


def service_in(host: Host) -> Any:
    """The memory plugin's service inside ``host``: the public way in, ``nexus_memory.service_of``."""
    return nexus_memory.service_of(host.plugins["memory"].ctx)


def memory_config(tmp_path: Path, name: str = "nexus.toml", extra: str = "") -> Path:
    """A config file whose data dir is ``tmp_path/data``; ``extra`` is appended (TOML)."""
    path = tmp_path / name
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "data"}"\nroots = ["{tmp_path}"]\n{extra}', encoding="utf-8")
    return path


@asynccontextmanager
async def served(
    config: Path, errlog: TextIO | None = None, *args: str, standalone: bool = True
) -> AsyncIterator[ClientSession]:
    """An initialized session with ``nexus serve --config CONFIG ARGS`` on stdio, its stderr to ``errlog``:
    the server in that process (``--standalone``), or the relay to the shared server."""
    command = nexus_command("serve", "--config", str(config), *(["--standalone"] if standalone else []), *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=config.parent)
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def holder_pid(data_dir: Path) -> int:
    """The pid written in the memory store's lock file by the process that holds it."""
    return int((data_dir / "memory" / "chroma.lock").read_text())
