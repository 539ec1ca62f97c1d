"""The warm-up: right after start, a worker thread opens the store and loads the model, so the first
store_memory does not pay for them; a call that arrives during the warm-up waits for it, and nothing
is loaded twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.memory.conftest import memory_config, served

pytestmark = pytest.mark.anyio


async def test_a_store_right_after_initialize_waits_for_the_warm_up_which_loads_everything_once(
    tmp_path: Path,
) -> None:
    log = tmp_path / "stderr.log"
    with log.open("w") as errlog:
        async with served(memory_config(tmp_path), errlog, "-v") as session:
            stored = await session.call_tool(
                "store_memory",
                {"content": "Nginx 502 after deploys: add readiness checks.", "context_name": "web", "tags": []},
            )
            assert not stored.is_error, stored.content
            pong = await session.call_tool("ping", {})
            assert pong.structured_content["store"] == "ready"
            hit = await session.call_tool("recall_memories", {"query": "bad gateway right after a release"})
            assert hit.structured_content["memories"][0]["id"] == stored.structured_content["memory_id"]
    text = log.read_text()
    assert text.count("memory store ready: warmed up in the background") == 1, text
    assert text.count("loaded the MiniLM model") == 1, text
    assert text.count("opened the embedded Chroma") == 1, text


def test_without_warm_up_start_loads_neither_chroma_nor_the_model(tmp_path: Path) -> None:
    """With warm_up = false, serving and listing tools imports no chromadb, onnxruntime or tokenizers."""
    code = (
        "import sys, anyio\n"
        "from mcp import Client\n"
        "from nexus_core.config.model import parse_config\n"
        "from nexus_core.assembly import build_host\n"
        f"config = {{'server': {{'data_dir': {str(tmp_path)!r}}}, 'plugins': {{'memory': {{'warm_up': False}}}}}}\n"
        "host = build_host(parse_config(config))\n"
        "async def main():\n"
        "    async with Client(host.server) as c:\n"
        "        names = {t.name for t in (await c.list_tools()).tools}\n"
        "        pong = (await c.call_tool('ping', {})).structured_content\n"
        "    assert 'recall_memories' in names and pong['store'] == 'not loaded', (names, pong)\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in ('chromadb', 'onnxruntime', 'tokenizers', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
    assert not (tmp_path / "memory").exists()  # no data dir, no Chroma files until first use


async def test_the_warm_up_hands_back_what_loading_freed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the models frees far more than they keep (onnxruntime's graph optimisation): the warm-up's last step
    hands it back to the system (``nexus_core.release_freed``, measured in bench/RESULTS.md)."""
    import anyio
    from mcp import Client

    from nexus_memory import runtime as module
    from tests.memory.conftest import memory_host_at

    released: list[bool] = []
    real = module.release_freed
    monkeypatch.setattr(module, "release_freed", lambda: released.append(real()) or True)
    async with Client(memory_host_at(tmp_path, warm_up=True).server) as client:
        while (await client.call_tool("ping", {})).structured_content["store"] == "warming up":
            await anyio.sleep(0.05)
        assert released


PRELOADED = (
    "import sys\n"
    "from nexus_core.config.model import parse_config\n"
    "from nexus_core.host import preload\n"
    "from nexus_memory import preload as memory\n"
    "from nexus_memory.embed import MiniLMEmbedder, UseEmbedder\n"
    "started = preload.start(parse_config({'plugins': {'memory': TABLE}}))\n"
    "memory.wait()\n"
    "print(started, 'mcp' in sys.modules, MiniLMEmbedder._session is not None, UseEmbedder._model is not None)\n"
)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({}, "['memory'] False True True"),
        ({"embedder": "minilm"}, "['memory'] False True False"),
        ({"warm_up": False}, "['memory'] False False False"),
        ({"enabled": False}, "[] False False False"),
    ],
)
def test_the_shared_servers_process_loads_the_configured_models_without_the_sdk(table: dict, expected: str) -> None:
    """``nexus.preload``: the configured embedder's models, loaded as the shared server's process starts, before and
    without the SDK (it imports beside them); nothing with warm_up = false or the plugin disabled."""
    code = PRELOADED.replace("TABLE", repr(table))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == expected, out.stderr


def test_the_shared_server_starts_the_preload_before_it_imports_the_sdk(tmp_path: Path) -> None:
    """``serve.shared_main``: the lock, the config, the plugins' early loading, then the SDK and the host (stopped
    here where the host would be built: the rest is every shared-server test's)."""
    code = (
        "import sys, types\n"
        "from nexus_core.host import preload\n"
        "from nexus_core.serve import shared_main\n"
        "real, seen = preload.start, []\n"
        "preload.start = lambda config: seen.append('mcp' in sys.modules) or real(config)\n"
        "stop = types.ModuleType('nexus_core.serve.shared')\n"
        "stop.build = lambda config: config\n"
        "stop.serve = lambda key, config: print(seen, config.table('memory').plugin_keys) or 0\n"
        "sys.modules['nexus_core.serve.shared'] = stop\n"
        "sys.exit(shared_main.main(['--key', 'preload-test', '--set', 'plugins.memory.warm_up=false']))\n"
    )
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert out.stdout.strip() == "[False] {'warm_up': False}", out.stderr


async def test_the_cyclic_collector_stays_off_until_the_warm_up_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up holds the garbage collector off (``nexus_core.hold_gc``): it would walk again and again what the
    imports and the models build, all of it as long-lived as the process."""
    import gc

    import anyio
    from mcp import Client

    from nexus_memory import runtime as module
    from tests.memory.conftest import memory_host_at

    seen: list[bool] = []
    monkeypatch.setattr(module, "release_freed", lambda: seen.append(gc.isenabled()) or True)  # its last step
    async with Client(memory_host_at(tmp_path, warm_up=True).server) as client:
        while (await client.call_tool("ping", {})).structured_content["store"] == "warming up":
            await anyio.sleep(0.05)
    assert seen == [False]
    assert gc.isenabled()
