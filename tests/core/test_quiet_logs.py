"""What a user reads in the server's log: no traceback for a clean stop, no third-party chatter at INFO."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
from pathlib import Path

from nexus_core.config.effective import load
from tests.conftest import nexus_command, server_env, write_config


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_stopping_the_shared_server_with_http_on_logs_no_traceback(tmp_path: Path) -> None:
    off = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "bridge"))
    text = f'[server]\ndata_dir = "data"\n[server.http]\nenabled = true\nport = {_free_port()}\n{off}'
    config = write_config(tmp_path / "nexus.toml", text)
    env = server_env(HOME=str(tmp_path / "home"))

    def nexus(*args: str) -> str:
        done = subprocess.run(nexus_command(*args, "--config", str(config)), capture_output=True, text=True,
                              timeout=120, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    nexus("server", "start")
    log = Path(json.loads(nexus("server", "status", "--json"))["log"])
    nexus("server", "stop")
    text = log.read_text()
    assert "shared server stopping" in text
    assert "Traceback" not in text and "CancelledError" not in text and " ERROR " not in text


def test_ctrl_c_stops_a_standalone_http_server_cleanly(tmp_path: Path) -> None:
    """A person stops `nexus serve --standalone --transport http` with Ctrl-C: status 0, one line, no "Aborted!"."""
    import signal

    from tests.conftest import wait_listening

    off = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "bridge"))
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "data"\n{off}')
    port = _free_port()
    where = ("--port", str(port), "--config", str(config))
    command = nexus_command("serve", "--standalone", "--transport", "http", *where)
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, env=server_env(HOME=str(tmp_path / "home")))
    try:
        wait_listening(proc, port)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    text = stderr.decode()
    assert proc.returncode == 0, text
    assert text.rstrip().endswith("nexus: stopped serving HTTP") and "Aborted" not in text and "Traceback" not in text


def test_other_libraries_info_stays_out_of_the_log_unless_verbose(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", '[server]\nlog_level = "INFO"\n')
    root, nexus = logging.getLogger(), logging.getLogger("nexus.memory")
    before = root.level, logging.getLogger("nexus").level
    try:
        load(str(config))
        assert nexus.isEnabledFor(logging.INFO)
        assert not root.isEnabledFor(logging.INFO)  # the quantizer's logging.info(...) on the root logger
        load(str(config), verbose=True)
        assert root.isEnabledFor(logging.DEBUG)
    finally:
        root.setLevel(before[0])
        logging.getLogger("nexus").setLevel(before[1])
