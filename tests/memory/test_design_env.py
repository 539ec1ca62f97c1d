"""002's environment variables: EXOCORTEX_DATA_DIR, EXOCORTEX_LOG_LEVEL, EXOCORTEX_EMBEDDING_MODEL (the config wins)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import nexus_memory
from tests.conftest import http_client, logs_dir, server_env, stdio_session, write_config
from tests.memory.helpers import call, store

pytestmark = pytest.mark.anyio


def memory(make_host: Callable[..., Any], **table: Any) -> Any:
    return make_host({"memory": nexus_memory}, {"plugins": {"memory": {"warm_up": False, **table}}})


async def test_the_design_env_vars_are_honoured_and_the_config_wins(
    make_host: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXOCORTEX_DATA_DIR", str(tmp_path / "exo"))
    monkeypatch.setenv("EXOCORTEX_EMBEDDING_MODEL", "minilm")
    monkeypatch.setenv("EXOCORTEX_LOG_LEVEL", "debug")
    host = memory(make_host)
    assert host.plugins["memory"].ctx.config.embedder == "minilm"
    async with Client(host.server) as client:
        mid = await store(client, "Kept where EXOCORTEX_DATA_DIR says", "exo", ["env"])
        assert (await call(client, "get_memory", memory_id=mid))["context"] == "exo"
    assert (tmp_path / "exo" / "chroma").is_dir()
    assert logging.getLogger("nexus.memory").level == logging.DEBUG
    logging.getLogger("nexus.memory").setLevel(logging.NOTSET)  # leave the shared logger as other tests expect it

    configured = memory(make_host, data_dir=str(tmp_path / "mine"), embedder="minilm")
    async with Client(configured.server) as client:
        await store(client, "Kept where the config says", "mine", ["env"])
    assert (tmp_path / "mine" / "chroma").is_dir()


def test_an_embedding_model_nexus_cannot_load_is_a_clear_error_listing_the_ones_it_can(
    make_host: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXOCORTEX_EMBEDDING_MODEL", "BAAI/bge-small-en-v1.5")
    message = memory(make_host).plugins["memory"].error or ""  # the plugin does not load, and says why
    assert message.endswith(
        "plugins.memory: EXOCORTEX_EMBEDDING_MODEL = 'BAAI/bge-small-en-v1.5' is not an embedder Nexus can load; it "
        "can load: e5, minilm, minilm+e5, minilm+use, minilm+use+mpnet, mpnet, use (or set [plugins.memory] embedder)"
    ), message
    assert memory(make_host, embedder="minilm").plugins["memory"].ctx.config.embedder == "minilm"  # the config wins


async def test_002s_data_dir_as_written_over_the_relay_and_http_even_beside_a_server_started_without_it(
    tmp_path: Path, http_server: Any, isolated_user_dirs: Path
) -> None:
    """A client launched with EXOCORTEX_DATA_DIR (and _EMBEDDING_MODEL, _LOG_LEVEL) while another client's shared
    server, started without them, runs: its memories go where the variables say, over stdio and HTTP alike."""
    config = write_config(tmp_path / "nexus.toml", "[plugins.memory]\nwarm_up = false\n")
    exo = tmp_path / "exo"
    design = server_env(EXOCORTEX_DATA_DIR=str(exo), EXOCORTEX_EMBEDDING_MODEL="minilm", EXOCORTEX_LOG_LEVEL="debug")
    async with stdio_session("--config", str(config), cwd=tmp_path) as plain:
        assert (await call(plain, "ping"))["store"] == "not loaded"  # a shared server without the variables runs
        url = http_server("--config", str(config), env=design, cwd=tmp_path)
        async with http_client(url) as client:
            over_http = await store(client, "Stored over HTTP where EXOCORTEX_DATA_DIR says", "exo", ["env"])
        async with stdio_session("--config", str(config), cwd=tmp_path, env=design) as session:
            await store(session, "Stored over stdio where EXOCORTEX_DATA_DIR says", "exo", ["env"])
            stats = await call(session, "get_stats")
            assert (await call(session, "get_memory", memory_id=over_http))["context"] == "exo"  # one store
    assert stats["total_memories"] == 2 and stats["embedder"] == "minilm"
    assert (exo / "chroma").is_dir() and not (isolated_user_dirs / ".local" / "share" / "nexus" / "memory").exists()
    logs = "".join(log.read_text() for log in logs_dir(isolated_user_dirs).glob("*.log"))
    assert f"DEBUG nexus.memory: opened the embedded Chroma in {exo / 'chroma'}" in logs  # the level it was given
