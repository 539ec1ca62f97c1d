"""The shared server's socket is this user's alone: its folder cannot be planted or swapped, its peers are checked."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from nexus_core.config import folders
from nexus_core.serve import relay, rendezvous
from tests.conftest import nexus_command, server_env, stdio_session, stop_shared_servers, write_config

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "/usr/bin/python3", "-c"]
as_another_user = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to act as another user"
)


def test_the_runtime_folder_follows_the_home_folder_not_xdg_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One client passes XDG_RUNTIME_DIR (and XDG_STATE_HOME), another does not: both must meet in one place.
    A shared /tmp-like folder is never used either: anyone could plant a `nexus` there, or rename one away."""
    expected = folders.runtime_dir()
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    folder = folders.runtime_dir()
    assert folder == expected == Path.home() / ".local" / "state" / "nexus" / "run"
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert not any(shared.iterdir()) and not (tmp_path / "state").exists()


def test_a_symlink_planted_as_the_runtime_folder_is_refused(tmp_path: Path) -> None:
    base, elsewhere = Path.home() / ".local" / "state" / "nexus", tmp_path / "elsewhere"
    base.mkdir(mode=0o700, parents=True)
    elsewhere.mkdir(mode=0o700)
    (base / "run").symlink_to(elsewhere)  # whoever planted it can point it at their own folder later
    with pytest.raises(PermissionError, match="symlink"):
        folders.runtime_dir()


def _listen_as_nobody(path: Path) -> subprocess.Popen[bytes]:
    """A process of another user listening on ``path`` (bound here, where that user could not)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    code = (
        "import socket, sys\n"
        "s = socket.socket(fileno=int(sys.argv[1])); s.listen(); print('ready', flush=True)\n"
        'c, _ = s.accept(); c.sendall(b\'{"nexus": "welcome"}\\n\'); c.recv(1 << 16)\n'
    )
    proc = subprocess.Popen([*SETPRIV, code, str(sock.fileno())], pass_fds=[sock.fileno()], stdout=subprocess.PIPE)
    sock.close()
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


@as_another_user
def test_the_relay_does_not_hand_its_client_to_another_users_server(tmp_path: Path) -> None:
    key = "0123456789abcdef"
    server = _listen_as_nobody(rendezvous.server_files(key)["socket"])
    try:
        link = relay.Relay(key, [], {"nexus": "hello"}, stdin=os.open(os.devnull, os.O_RDONLY))
        with pytest.raises(relay.RelayError, match="another user"):
            link.connect()
    finally:
        server.kill()
        server.wait()


@as_another_user
def test_control_commands_are_not_sent_to_another_users_server(tmp_path: Path) -> None:

    key = "fedcba9876543210"
    server = _listen_as_nobody(rendezvous.server_files(key)["socket"])
    try:
        with pytest.raises(PermissionError, match="another user"):
            rendezvous.ask(key, "console")  # `nexus console` would open the link it answers
    finally:
        server.kill()
        server.wait()


@as_another_user
def test_the_server_refuses_control_lines_from_another_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    base = Path(tempfile.mkdtemp(prefix="nexus-peer-"))  # outside pytest's 0700 folders: the other user reaches it
    monkeypatch.setenv("HOME", str(base))
    config = write_config(tmp_path / "nexus.toml", "[plugins.files]\nenabled = false\n")
    subprocess.run([*nexus_command(), "server", "start", "--config", str(config)], env=server_env(), check=True)
    key = rendezvous.server_key(config, ["--config", str(config)])
    path = rendezvous.server_files(key)["socket"]
    assert rendezvous.ask(key, "status") is not None  # its own user is served
    for folder in (base, *path.parent.relative_to(base).parents, path.parent.relative_to(base)):
        (base / folder).chmod(0o711)  # as if the folders let others in: the peer check holds alone
    path.chmod(0o666)
    try:
        code = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            # The server may hang up before the line is even sent: a refusal as good as an empty answer.
            'try:\n    s.sendall(b\'{"nexus": "stop"}\\n\')\n    print(repr(s.recv(1 << 16)))\n'
            "except (BrokenPipeError, ConnectionResetError):\n    print(repr(b''))\n"
        )
        out = subprocess.run([*SETPRIV, code, str(path)], capture_output=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == b"b''"  # no answer, and no stop
        path.parent.chmod(0o700)
        answer = rendezvous.ask(key, "status")
        assert answer is not None and answer["key"] == key
    finally:
        stop_shared_servers(path.parent)
        shutil.rmtree(base, ignore_errors=True)


def _venv_with_nexus(folder: Path) -> tuple[Path, Path]:
    """A second install made from this Python (its python, its site folder) that imports this Nexus."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip())
    here = sysconfig.get_paths()["purelib"]
    (purelib / "nexus_here.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    return python, purelib


def test_two_venvs_of_one_python_have_two_shared_servers(tmp_path: Path) -> None:
    """Each venv links to the same interpreter; sharing a server, each install's clients restarted the other's."""
    python, _ = _venv_with_nexus(tmp_path / "venv")
    assert os.path.realpath(python) == os.path.realpath(sys.executable)
    code = "import sys, pathlib, nexus_core.serve.rendezvous as r; print(r.server_key(pathlib.Path(sys.argv[1]), []))"
    config = tmp_path / "nexus.toml"
    theirs = subprocess.run([python, "-c", code, str(config)], capture_output=True, text=True)
    assert theirs.returncode == 0, theirs.stderr
    assert theirs.stdout.strip() != rendezvous.server_key(config, [])


@asynccontextmanager
async def _session_of(python: Path, config: Path, cwd: Path) -> AsyncIterator[ClientSession]:
    """The official MCP client over stdio, with the relay of the install ``python`` belongs to."""
    args = ["-m", "nexus_core", "serve", "--config", str(config)]
    params = StdioServerParameters(command=str(python), args=args, env=server_env(), cwd=cwd)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.mark.anyio
async def test_a_relay_launched_before_an_upgrade_does_not_restart_the_new_server_forever(tmp_path: Path) -> None:
    python, purelib = _venv_with_nexus(tmp_path / "venv")
    config = write_config(
        tmp_path / "nexus.toml",
        "[plugins.files]\nenabled = false\n[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    async with _session_of(python, config, tmp_path) as old:
        await old.send_ping()
        (purelib / "someplugin-1.1.dist-info").mkdir()  # `pip install -U someplugin` while the client runs
        async with _session_of(python, config, tmp_path) as new:  # finds the server stale: one restart
            with anyio.fail_after(30):
                await old.send_ping()  # its relay reconnects to the new server, and stays there
            for _ in range(4):
                await anyio.sleep(0.5)
                with anyio.fail_after(10):
                    await new.send_ping()
    restarts = sum(log.read_text().count("stopping: stale") for log in (folders.state_dir() / "logs").glob("*.log"))
    assert restarts == 1


@pytest.mark.anyio
async def test_a_taken_http_port_does_not_take_the_stdio_clients_down(tmp_path: Path) -> None:
    """Any local program (another user's too) may hold the configured port: the shared server serves stdio anyway."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    config = write_config(
        tmp_path / "nexus.toml",
        f"[server.http]\nenabled = true\nport = {port}\n"
        "[plugins.files]\nenabled = false\n[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    try:
        async with stdio_session("--config", str(config), cwd=tmp_path) as session:
            for _ in range(3):
                await anyio.sleep(0.5)  # past the moment HTTP fails to bind
                with anyio.fail_after(10):
                    result = await session.call_tool("hello", {"name": "stdio"})
                assert not result.is_error, result.content
        key = rendezvous.server_key(config, ["--config", str(config)])
        log = rendezvous.server_files(key)["log"].read_text()
        assert "HTTP is not served" in log and log.count("listening on") == 1  # one server, never restarted
    finally:
        squatter.close()
