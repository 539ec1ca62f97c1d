"""The shared server's safety promises, driven the way clients reach them: real relays, a real server, a real socket.

Every process here runs with HOME in a fresh folder and no XDG_* variable, and the runtime folder is the one
``folders.runtime_dir()`` gives under that same environment (checked against what the server reports), so the
tests hold wherever the rendezvous lives. Each test stops every server it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nexus_core.config import folders
from nexus_core.serve import rendezvous
from tests.conftest import alive, nexus_command, write_config

XDG = ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
QUIET = "".join(f"[plugins.{name}]\nenabled = false\n" for name in ("files", "memory", "graph", "manual", "bridge"))
NOBODY = 65534
as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder to another user")


@dataclass
class Home:
    """A user's fresh home: the environment its processes get, its config, its runtime folder."""

    env: dict[str, str]
    config: Path
    key: str  # of the server for ``config``
    run: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(self, *args: str, umask: int = -1, **kwargs: Any) -> subprocess.Popen[bytes]:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(nexus_command(*args), env=self.env, cwd=self.config.parent, umask=umask, **kwargs)
        self.procs.append(proc)
        return proc

    def relay(self, umask: int = -1) -> subprocess.CompletedProcess[bytes]:
        """A client's ``nexus serve`` whose client leaves at once: it starts the server if none runs."""
        proc = self.spawn(
            "serve", "--config", str(self.config), umask=umask, stdin=subprocess.PIPE, stderr=subprocess.PIPE
        )
        _, err = proc.communicate(b"", timeout=120)  # a pipe, as clients give: the server cannot poll /dev/null
        return subprocess.CompletedProcess(proc.args, proc.returncode, b"", err)

    def status(self) -> dict[str, Any] | None:
        """The server's own status over its socket (asked in-process, under the same environment)."""
        answer = rendezvous.ask(self.key, "status")
        assert answer is None or Path(answer["socket"]).parent == self.run  # the folder these tests watch
        return answer


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    folder = Path(tempfile.mkdtemp(prefix="nx-"))  # short: the socket's path must fit in AF_UNIX's 108 bytes
    monkeypatch.setenv("HOME", str(folder))
    for name in XDG:
        monkeypatch.delenv(name, raising=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "XDG_"))}
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n{QUIET}')
    user = Home(env, config, rendezvous.server_key(config, ["--config", str(config)]), folders.runtime_dir())
    try:
        yield user
    finally:
        for proc in user.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if user.run.exists():
            os.chown(user.run, os.getuid(), os.getgid())  # given away by a test: take it back to clean it up
        _stop_servers_of(folder)
        for leftover in user.run.glob(f"{user.key}.*"):  # the runtime folder may be outside HOME
            leftover.unlink()
        if not user.run.is_relative_to(folder):
            with contextlib.suppress(OSError):
                user.run.rmdir()  # only if nothing else lives there
        shutil.rmtree(folder, ignore_errors=True)


def _stop_servers_of(home: Path, timeout: float = 15) -> None:
    """Stop every shared server started with this HOME: by process, not by lock file (only these tests' own,
    and a mutated server may have overwritten the lock file's pid)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        serves = b"\0nexus_core.serve.shared_main\0" in cmdline or b"\0server\0run\0" in cmdline  # a relay's; ours
        if f"HOME={home}".encode() in environ and serves:
            pids.append(int(proc.name))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_relays_starting_at_the_same_instant_spawn_one_server(home: Home) -> None:
    """The start lock: without it, every relay that found no server spawned its own (all but one then quit)."""
    relays = [home.spawn("serve", "--config", str(home.config), stdin=subprocess.PIPE) for _ in range(4)]
    _wait(lambda: len((home.status() or {}).get("sessions", [])) == 4, 90, "four sessions on one server")
    status = home.status()
    assert status is not None
    for proc in relays:  # each client leaves: its relay ends its session and exits
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    log = Path(status["log"]).read_text()
    assert log.count("listening on") == 1, log
    assert "already running" not in log, log  # no second server was even spawned


def test_a_second_server_for_the_same_key_does_not_serve(home: Home, tmp_path: Path) -> None:
    """The lifetime lock is exclusive: a second ``server run`` for a running key says so and exits."""
    assert home.relay().returncode == 0
    first = home.status()
    assert first is not None
    output = tmp_path / "second.log"
    with open(output, "wb") as out:
        second = home.spawn(
            "server", "run", "--key", first["key"], "--config", str(home.config), stdout=out, stderr=out
        )
    # It exits at once; one that took the key too would listen in the first one's place.
    _wait(lambda: second.poll() is not None or "listening on" in output.read_text(), 60, "the second server")
    assert second.poll() == 0 and "is already running" in output.read_text(), output.read_text()
    now = home.status()
    assert now is not None and now["pid"] == first["pid"]


@as_root
def test_a_runtime_folder_owned_by_another_user_is_refused(home: Home) -> None:
    """Whoever owns the folder could swap or read what is put in it: the relay starts nothing there."""
    os.chown(home.run, NOBODY, NOBODY)
    outcome = home.relay()
    assert outcome.returncode != 0
    assert b"belongs to another user" in outcome.stderr, outcome.stderr
    assert list(home.run.glob(f"{home.key}.*")) == []  # no socket, no lock, no server


def test_an_existing_runtime_folder_others_can_reach_is_made_private(home: Home) -> None:
    home.run.chmod(0o755)  # made by hand, or by an older version, with the default umask
    assert home.relay().returncode == 0
    assert _mode(home.run) == 0o700  # before this process asks anything: runtime_dir() here would fix it too
    status = home.status()
    assert status is not None and Path(status["socket"]).is_socket()


def test_the_socket_is_the_users_alone_whatever_the_umask(home: Home) -> None:
    """The client launching the relay may have any umask (the server inherits it): the socket is 0600."""
    assert home.relay(umask=0).returncode == 0
    status = home.status()
    assert status is not None
    socket_path = Path(status["socket"])
    assert socket_path.is_socket() and _mode(socket_path) == 0o600
