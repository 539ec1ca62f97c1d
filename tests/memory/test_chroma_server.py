"""The plugin against a real `chroma run` server: everything lands on the server."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from nexus_memory.store.parts import Parts
from tests.conftest import free_port
from tests.memory.helpers import call, store

pytestmark = pytest.mark.anyio

CHROMA = Path(sys.executable).parent / "chroma"  # where installing chromadb (a required dependency) puts it


def chroma_declared() -> bool:
    scripts = importlib.metadata.distribution("chromadb").entry_points.select(group="console_scripts")
    return "chroma" in scripts.names


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[str]:
    if not chroma_declared():
        pytest.skip("this chromadb has no `chroma` command")
    # Missing is then a broken install, not a reason to skip.
    assert CHROMA.is_file(), f"no {CHROMA}, although chromadb declares it: run scripts/setup"
    port = free_port()
    proc = subprocess.Popen(
        [CHROMA, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma run did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_store_and_recall_on_a_chroma_server(
    memory_host, chroma_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, askers = Parts.nearest_dots, []

    def nearest_dots(self: Parts, *args: Any) -> Any:
        askers.append(threading.current_thread().name)
        return real(self, *args)

    monkeypatch.setattr(Parts, "nearest_dots", nearest_dots)
    async with Client(memory_host(chroma_url=chroma_server).server) as client:
        a = await store(client, "gRPC calls fail with DEADLINE_EXCEEDED under load.", "gateway", ["grpc"], "failure")
        b = await store(client, "Per-method deadlines fixed the gRPC timeouts.", "gateway", ["grpc"], "success")
        await call(client, "link_memories", source_id=b, target_id=a, relation_type="supersedes", reason="fix")
        hit = await call(client, "recall_memories", query="DEADLINE_EXCEEDED when the service is busy", limit=1)
        assert hit["memories"][0]["id"] == a
        # Asked after the candidates, not beside them: other processes may write sentence vectors there meanwhile.
        assert askers and not [name for name in askers if name.startswith("nexus-memory-recall")]
        assert (await call(client, "get_stats"))["backend"] == chroma_server
    assert not (tmp_path / "data" / "memory" / "chroma").exists()  # nothing embedded: it is all on the server

    import chromadb
    from chromadb.config import Settings

    port = int(chroma_server.rsplit(":", 1)[1])
    remote = chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False))
    assert remote.get_collection("nexus_memories", embedding_function=None).count() == 2
    links = remote.get_collection("nexus_memories_links", embedding_function=None).get(include=["metadatas"])
    assert [(m["source_id"], m["target_id"]) for m in links["metadatas"]] == [(b, a)]
