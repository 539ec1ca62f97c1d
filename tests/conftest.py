"""Shared fixtures: build a host from fake plugins, and talk to real servers through the MCP client."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from nexus_core.assembly import build_host
from nexus_core.config.model import parse_config
from nexus_core.host.build import Host
from nexus_core.host.discovery import get_plugin_manager


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A home folder of its own for each test: no test reads the developer's own nexus.toml or writes to their
    data dir (servers inherit this too); every shared server a test started is stopped when it ends.

    Nexus's folders follow HOME alone, never XDG_* variables (clients launched with the SDKs' default
    environment have none), so none is set here. The model cache stays the developer's: the built
    all-mpnet-base-v2 model is reused, not rebuilt in every test's home.
    """
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_CACHE_HOME", _MODEL_CACHE)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "NEXUS_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    yield home
    stop_shared_servers(run_dir(home))
    for folder in (tmp_path, *tmp_path.iterdir()):  # a test that gave its servers a home of its own
        stop_shared_servers(run_dir(folder))


@pytest.fixture(scope="session", autouse=True)
def no_server_left_running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fails the run if any process started under this run's temporary folders outlives its test."""
    yield
    # A process naming this run's folders, or (a home elsewhere, say /dev/shm) started by this worker of this run.
    markers = [[str(tmp_path_factory.getbasetemp())]]
    if run := os.environ.get("PYTEST_XDIST_TESTRUNUID"):
        markers.append(
            [f"PYTEST_XDIST_TESTRUNUID={run}\0", f"PYTEST_XDIST_WORKER={os.environ['PYTEST_XDIST_WORKER']}\0"]
        )
    deadline = time.monotonic() + 15
    while (left := [p for m in markers for p in leftovers(*m)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert not left, f"tests left processes running: {left}"


def leftovers(*markers: str) -> list[str]:
    """Processes whose command line or environment names every one of ``markers`` (a server a test left running)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            text = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
        except OSError:
            continue
        if all(marker.encode() in text for marker in markers):
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{proc.name}: {command}")
    return found


def run_dir(home: Path) -> Path:
    """The folder of the shared servers' sockets and locks for a user whose home folder is ``home``."""
    return home / ".local" / "state" / "nexus" / "run"


def logs_dir(home: Path) -> Path:
    return home / ".local" / "state" / "nexus" / "logs"


def config_dir(home: Path) -> Path:
    return home / ".config" / "nexus"


def stop_shared_servers(folder: Path, timeout: float = 15) -> None:
    """SIGTERM every shared server whose lifetime lock is in ``folder``, and wait until each has exited."""
    pids = []
    for lock in folder.glob("*.lock"):
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(lock.read_text() or 0))
    for pid in filter(None, pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in filter(None, pids):
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie (exited, not yet reaped by its parent) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    return True


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def make_host(data_dir: Path, tmp_path: Path) -> Callable[..., Host]:
    """``make_host({"name": plugin_object}, {config as a dict})``: no entry points, no installing."""

    def make(plugins: dict[str, Any], config: dict[str, Any] | None = None) -> Host:
        data = dict(config or {})
        data.setdefault("server", {}).setdefault("data_dir", str(data_dir))
        pm = get_plugin_manager()
        for name, plugin in plugins.items():
            pm.register(plugin, name=name)
        return build_host(parse_config(data, source="test.toml", base_dir=tmp_path), pm)

    return make


class HeardProgress:
    """A client's message handler that keeps every notifications/progress it receives, whichever request it is for."""

    def __init__(self) -> None:
        self.progress: list[types.ProgressNotificationParams] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            self.progress.append(message.params)


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def nexus_command(*args: str) -> list[str]:
    """Run the CLI with this interpreter, so tests use the environment pytest runs in."""
    return [sys.executable, "-m", "nexus_core", *args]


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
    return env | extra


_MODEL_CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")  # read before any test moves HOME


def home_env(home: Path, **extra: str) -> dict[str, str]:
    """``server_env`` for a user whose home folder is ``home`` (the built model cache stays shared)."""
    env = {k: v for k, v in server_env(**extra).items() if not k.startswith("XDG_")}
    return env | {"HOME": str(home), "XDG_CACHE_HOME": _MODEL_CACHE} | extra


@asynccontextmanager
async def stdio_session(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, message_handler: Any = None
) -> AsyncIterator[Any]:
    """An initialized ``ClientSession`` with ``nexus serve ARGS`` as a subprocess (the classic handshake), served by
    the server: a relay that starts one answers ``initialize`` itself (``serve/greeting.py``), so one ping more
    waits until the server has taken the session over (its status lists it)."""
    command = nexus_command("serve", *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=env or server_env(), cwd=cwd)
    session_args = {"message_handler": message_handler} if message_handler else {}
    async with stdio_client(params) as (read, write), ClientSession(read, write, **session_args) as session:
        await session.initialize()
        await session.send_ping()
        yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    """Until ``proc`` accepts connections on 127.0.0.1:``port``; an error if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start listening")


HTTP_TOKEN = "test-http-token"


def http_client(url: str, *, mode: str = "auto", token: str = HTTP_TOKEN) -> Client:
    """The official client over Streamable HTTP, sending the bearer token every Nexus HTTP server requires."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)  # a loaded machine
    return Client(streamable_http_client(url, http_client=http), mode=mode)


@pytest.fixture
def http_server(tmp_path: Path, isolated_user_dirs: Path) -> Iterator[Callable[..., str]]:
    """Start ``nexus serve --transport http`` on a free loopback port; returns its URL.

    Its generated token (no config names one) is ``HTTP_TOKEN``: ``http_client(url)`` sends it.
    """
    token_file = config_dir(isolated_user_dirs) / "http-token"
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.write_text(HTTP_TOKEN + "\n")
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
        port = free_port()
        cmd = nexus_command("serve", "--transport", "http", "--port", str(port), *args)
        proc = subprocess.Popen(cmd, env=env or server_env(), cwd=cwd or tmp_path, stderr=subprocess.PIPE)
        procs.append(proc)
        wait_listening(proc, port)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
