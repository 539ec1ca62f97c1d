"""The shared server under hostile and broken conditions: nothing lost, nothing leaked, nothing wedged.

Each test reproduces what a red team found, through real relays, a real server and real clients: a client that
stops reading, a line too large, a stopped server, another user holding a lock file, one plugin's calls piling up.
Limits are lowered through the environment the server inherits, so each case takes seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from nexus_core.fs.locks import lock_path
from nexus_core.serve import rendezvous
from nexus_core.serve.shared import SharedServer
from tests.conftest import HTTP_TOKEN, alive, nexus_command, server_env, stdio_session, write_config
from tests.core.test_shared_security import SETPRIV, as_another_user

QUIET = "".join(f"[plugins.{name}]\nenabled = false\n" for name in ("files", "memory", "graph", "manual", "bridge"))
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stress", "version": "0"}},
}


def quiet_config(tmp_path: Path, extra: str = "") -> Path:
    return write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n{QUIET}{extra}')


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Raw:
    """A client speaking JSON-RPC lines to ``nexus serve`` itself: it decides when (and whether) it reads."""

    def __init__(self, *args: str, env: dict[str, str], cwd: Path) -> None:
        command = nexus_command("serve", *args)
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        self.proc = subprocess.Popen(command, env=env, cwd=cwd, **pipes)  # type: ignore[call-overload]

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(message if isinstance(message, bytes) else _line(message))
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.stderr()
        return json.loads(line)

    def handshake(self) -> None:
        self.send(INIT)
        assert "result" in self.read()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def ping(self, request_id: int | str) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        return self.read()

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()


@contextlib.contextmanager
def raw(*args: str, env: dict[str, str], cwd: Path) -> Iterator[Raw]:
    client = Raw(*args, env=env, cwd=cwd)
    try:
        yield client
    finally:
        client.close()


# -- 1. no process-wide umask while plugin threads create folders ---------------------------------------------------


def _umask_now() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise AssertionError("no Umask line in /proc/self/status")


@pytest.mark.anyio
async def test_creating_the_socket_never_changes_the_process_umask(tmp_path: Path) -> None:
    """A plugin's warm-up thread made its folders while the socket was bound under umask 0o177: they came out 0600.
    Another thread watches the umask (read from /proc, which does not change it) while the socket is made."""
    server = SharedServer.__new__(SharedServer)  # only its socket: no host to build
    server.files = rendezvous.server_files("0123456789abcdef")
    original, seen, done = _umask_now(), set(), threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.add(_umask_now())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(20):
            async with server._listen():
                assert oct(server.files["socket"].stat().st_mode & 0o777) == oct(0o600)
    finally:
        done.set()
        watcher.join()
    assert seen == {original}


# -- 2. a client that stops reading; a message too large ----------------------------------------------------------


def _flood(client: Raw, count: int, size: int) -> list[int]:
    """Requests whose answers are large (a long id comes back in each), written by a thread (the writes block);
    how many were written, as it goes."""
    written = [0]

    def write() -> None:
        with contextlib.suppress(OSError, ValueError):
            for i in range(count):
                client.send({"jsonrpc": "2.0", "id": f"{i}-" + "x" * size, "method": "ping"})
                written[0] += 1

    threading.Thread(target=write, daemon=True).start()
    return written


def test_a_client_that_stops_reading_is_cut_off_and_the_others_are_served(tmp_path: Path) -> None:
    env = server_env(NEXUS_WRITE_TIMEOUT="2", NEXUS_MAX_IN_FLIGHT="8")
    config = quiet_config(tmp_path)
    with (
        raw("--config", str(config), env=env, cwd=tmp_path) as other,
        raw("--config", str(config), env=env, cwd=tmp_path) as hog,
    ):
        other.handshake()
        hog.handshake()
        written = _flood(hog, 400, 20_000)  # 8 MB of answers it never reads
        try:
            hog.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("a client that does not read its answers is never disconnected")
        assert "read none of its answers" in hog.stderr()
        # Backpressure: once 8 requests wait on their answers the server reads no more (the pipes hold a few more).
        assert written[0] < 40, f"the server took {written[0]} requests it could not answer"
        assert other.ping("after")["result"] == {}  # the other session never noticed
        key = rendezvous.server_key(config, ["--config", str(config)])
        status = rendezvous.ask(key, "status")
        assert status is not None and len(status["sessions"]) == 1  # the cut session is gone, its memory with it


@pytest.mark.parametrize("mode", [(), ("--standalone",)], ids=["relay", "standalone"])
def test_a_message_over_the_limit_gets_an_error_and_the_session_goes_on(tmp_path: Path, mode: tuple[str, ...]) -> None:
    env = server_env(NEXUS_MAX_MESSAGE_BYTES="100000")
    with raw(*mode, "--config", str(quiet_config(tmp_path)), env=env, cwd=tmp_path) as client:
        client.handshake()
        huge = {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": {"pad": "y" * 2_000_000}}}
        client.send(huge)
        answer = client.read()
        assert answer["error"]["code"] == -32600 and "message too large" in answer["error"]["message"], answer
        assert answer["id"] == 7  # its id read from the line's start: the client's call ends, it does not wait on
        assert client.ping(8) == {"jsonrpc": "2.0", "id": 8, "result": {}}


def test_an_http_body_over_the_limit_is_refused_with_a_json_rpc_error(tmp_path: Path, http_server: Any) -> None:
    url = http_server("--config", str(quiet_config(tmp_path)), env=server_env(NEXUS_MAX_MESSAGE_BYTES="100000"))
    headers = {
        "Authorization": f"Bearer {HTTP_TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    big = dict(INIT, params=dict(INIT["params"], pad="z" * 500_000))  # type: ignore[arg-type]
    refused = httpx.post(url, content=_line(big), headers=headers, timeout=30)
    assert refused.status_code == 413 and "message too large" in refused.json()["error"]["message"]
    chunked = httpx.post(url, content=iter([_line(big)]), headers=headers, timeout=30)  # no Content-Length
    assert chunked.status_code == 413
    assert httpx.post(url, content=_line(INIT), headers=headers, timeout=30).status_code == 200


# -- 3. a stopped server ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def stopped_server(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[Path, int]]:
    config = quiet_config(tmp_path)
    subprocess.run([*nexus_command("server", "start", "--config", str(config))], env=env, check=True, cwd=tmp_path)
    pid = rendezvous.lock_holder(rendezvous.server_key(config, ["--config", str(config)]))
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        yield config, pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)


def test_a_stopped_server_fails_new_clients_fast_and_says_what_to_run(tmp_path: Path) -> None:
    env = server_env(NEXUS_SERVER_TIMEOUT="1")
    with stopped_server(tmp_path, env) as (config, pid):
        started = time.monotonic()
        with raw("--config", str(config), env=env, cwd=tmp_path) as client:
            client.send(INIT)
            try:
                client.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pytest.fail("a client's initialize waits on a stopped server for ever")
            assert client.proc.returncode != 0
            err = client.stderr()
        assert time.monotonic() - started < 15
        assert "not answering" in err and f"kill {pid}" in err and "nexus server stop --force" in err, err
        status = subprocess.run(
            nexus_command("server", "status", "--config", str(config)), env=env, capture_output=True, text=True
        )
        assert status.returncode == 4 and "Traceback" not in status.stderr, status.stderr
        assert f"pid {pid}" in status.stderr and "not answering" in status.stderr
        stop = subprocess.run(
            nexus_command("server", "stop", "--force", "--config", str(config)), env=env, capture_output=True, text=True
        )
        assert stop.returncode == 0, stop.stderr
        assert not alive(pid)


@pytest.mark.anyio
async def test_the_timeouts_bound_waits_for_answers_never_a_quiet_session(tmp_path: Path, http_server: Any) -> None:
    """A session (stdio or `nexus serve --transport http`) silent for longer than the timeout goes on."""
    env = server_env(NEXUS_SERVER_TIMEOUT="1")
    config = quiet_config(tmp_path)
    url = http_server("--config", str(config), env=env)
    async with stdio_session("--config", str(config), cwd=tmp_path, env=env) as session:
        await anyio.sleep(3)
        await session.send_ping()
    headers = {"Authorization": f"Bearer {HTTP_TOKEN}", "Accept": "application/json, text/event-stream"}
    answer = httpx.post(url, content=_line(INIT), headers=headers | {"Content-Type": "application/json"}, timeout=30)
    assert answer.status_code == 200


# -- 4. locks another user cannot take; a plugin that cannot starve the others ----------------------------------------


ECHO_PLUGIN = """
from nexus_core import hookimpl
@hookimpl
def nexus_register_tools(register):
    def echo(text: str) -> str:  # not async: the SDK runs it in a worker thread
        return text
    register(echo, category="default", read_only=True)
"""


def graph_config(tmp_path: Path) -> Path:
    """The graph plugin, and another plugin (a plugin folder's) with a tool that runs in a worker thread."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "stress_echo.py").write_text(ECHO_PLUGIN)
    server = f'[server]\ndata_dir = "{tmp_path / "data"}"\nplugin_dirs = ["{tmp_path / "plugins"}"]\n'
    graph = '[plugins.graph]\ncategories = ["read", "write"]\n'
    return write_config(tmp_path / "nexus.toml", server + QUIET.replace("[plugins.graph]\nenabled = false\n", graph))


def entity(i: int) -> dict[str, Any]:
    return {"category": "concepts", "id": f"e-{i}", "type": "t", "name": f"E {i}", "desc": "d"}


@as_another_user
@pytest.mark.anyio
async def test_another_user_cannot_freeze_the_graph(tmp_path: Path) -> None:
    """Another local user opens (read-only) every lock file of the graph it can reach and holds a flock on each."""
    base = Path("/tmp") / f"nexus-graph-{os.getpid()}"
    base.mkdir(mode=0o755)
    data = base / "data"
    config = write_config(
        base / "nexus.toml",
        f'[server]\ndata_dir = "{data}"\n'
        + QUIET.replace("[plugins.graph]\nenabled = false\n", "")
        + '[plugins.graph]\ncategories = ["read", "write"]\n',
    )
    try:
        async with stdio_session("--config", str(config), cwd=base) as session:
            assert not (await session.call_tool("add_entity", entity(0))).is_error
            for folder in [data, *data.rglob("*")]:
                if folder.is_dir():
                    folder.chmod(0o755)  # as readable as a shared project's folders are
            code = (
                "import fcntl, os, sys, time\n"
                "held = []\n"
                "for top, dirs, files in os.walk(sys.argv[1]):\n"
                "    for name in files:\n"
                "        try:\n"
                "            fd = os.open(os.path.join(top, name), os.O_RDONLY)\n"
                "            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); held.append(fd)\n"
                "        except OSError:\n"
                "            pass\n"
                "print(len(held), flush=True); time.sleep(60)\n"
            )
            nobody = subprocess.Popen([*SETPRIV, code, str(data)], stdout=subprocess.PIPE, cwd="/")
            try:
                assert nobody.stdout is not None and nobody.stdout.readline().strip().isdigit()
                with anyio.fail_after(15):
                    added = await session.call_tool("add_entity", entity(1))
                assert not added.is_error, added.content
            finally:
                nobody.kill()
                nobody.wait()
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


@contextlib.contextmanager
def graph_lock_held(data: Path) -> Iterator[None]:
    """This user's other process (a stuck one) holding the graph's lock."""
    path = lock_path((data / "graph").resolve() / ".lock")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)


@pytest.mark.anyio
async def test_a_lock_held_for_ever_ends_the_call_with_a_clear_error(tmp_path: Path) -> None:
    env = server_env(NEXUS_LOCK_TIMEOUT="1")
    config = graph_config(tmp_path)
    async with stdio_session("--config", str(config), cwd=tmp_path, env=env) as session:
        assert not (await session.call_tool("add_entity", entity(0))).is_error
        with graph_lock_held(tmp_path / "data"):
            with anyio.fail_after(20):
                stuck = await session.call_tool("add_entity", entity(1))
            assert stuck.is_error and re.search("timed out waiting for the lock", stuck.content[0].text), stuck
        assert not (await session.call_tool("add_entity", entity(2))).is_error  # held no more: served again


@pytest.mark.anyio
async def test_one_plugins_blocked_calls_do_not_starve_another_plugin(tmp_path: Path) -> None:
    """45 graph calls wait on a lock: another plugin's calls still get a worker thread."""
    env = server_env(NEXUS_LOCK_TIMEOUT="30")
    async with stdio_session("--config", str(graph_config(tmp_path)), cwd=tmp_path, env=env) as session:
        assert not (await session.call_tool("add_entity", entity(0))).is_error
        with graph_lock_held(tmp_path / "data"):
            async with anyio.create_task_group() as tg:
                for i in range(1, 46):
                    tg.start_soon(session.call_tool, "add_entity", entity(i))
                await anyio.sleep(1.0)
                with anyio.fail_after(10):
                    echoed = await session.call_tool("echo", {"text": "still served"})
                assert not echoed.is_error and "still served" in str(echoed.content), echoed
                tg.cancel_scope.cancel()
