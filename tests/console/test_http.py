"""The console over plain HTTP: who gets in (a one-time link, a Strict cookie), what is refused (no cookie, a
foreign Origin or Host, a cross-site fetch, a missing CSRF token), and `nexus console` on the shared server."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.conftest import (
    HTTP_TOKEN,
    config_dir,
    free_port,
    home_env,
    http_client,
    nexus_command,
    run_dir,
    server_env,
    stop_shared_servers,
    wait_listening,
    write_config,
)


class Standalone:
    def __init__(self, port: int, proc: subprocess.Popen[str], login: str) -> None:
        self.port, self.proc, self.login = port, proc, login
        self.base = f"http://127.0.0.1:{port}"


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    """`nexus serve --transport http` with the example plugin, and a login link from `nexus console` (the
    serve command prints none: a link is a credential)."""
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n'
        "[plugins.files]\nenabled = false\n[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    port = free_port()
    cmd = nexus_command("serve", "--transport", "http", "--port", str(port), "--config", str(config))
    proc = subprocess.Popen(cmd, env=server_env(), cwd=tmp_path, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_listening(proc, port)
        console = subprocess.run(
            nexus_command("console", "--no-open", "--config", str(config)),
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=120,
        )
        match = re.search(rf"http://127\.0\.0\.1:{port}(/console/login\?token=\S+)", console.stdout)
        assert match, console.stdout + console.stderr
        yield Standalone(port, proc, match.group(1))
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def logged_in(server: Standalone) -> tuple[httpx2.Client, dict[str, str]]:
    """A client holding the session cookie, and the headers a same-origin page sends with a POST."""
    client = httpx2.Client(base_url=server.base, timeout=30)
    assert client.get(server.login).status_code == 200
    csrf = re.search(r'name="nexus-csrf" content="([^"]+)"', client.get("/console/").text).group(1)  # type: ignore[union-attr]
    return client, {"x-nexus-csrf": csrf, "origin": server.base}


def test_the_login_link_sets_a_strict_http_only_cookie_once(standalone: Standalone) -> None:
    with httpx2.Client(base_url=standalone.base) as client:
        first = client.get(standalone.login)
        again = client.get(standalone.login)
    cookie = first.headers["set-cookie"]
    assert first.status_code == 200 and f"nexus_console_{standalone.port}=" in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert again.status_code == 403 and "already used" in again.text
    assert "frame-ancestors 'none'" in first.headers["content-security-policy"]


def test_without_the_cookie_everything_is_refused(standalone: Standalone) -> None:
    with httpx2.Client(base_url=standalone.base) as client:
        shell = client.get("/console/")
        script = client.get("/console/static/nexus.js")
        session = client.get("/console/api/session")
        call = client.post(
            "/console/api/call", json={"tool": "hello", "arguments": {"name": "x"}}, headers={"origin": standalone.base}
        )
    assert [r.status_code for r in (shell, script, session, call)] == [401, 401, 401, 401]
    assert "nexus console" in shell.text


def test_a_call_runs_through_the_gate_as_the_console(standalone: Standalone, tmp_path: Path) -> None:
    client, headers = logged_in(standalone)
    info = client.get("/console/api/session").json()
    ok = client.post("/console/api/call", json={"tool": "hello", "arguments": {"name": "Ada"}}, headers=headers)
    refused = client.post(
        "/console/api/call", json={"tool": "count_lines", "arguments": {"path": "x"}}, headers=headers
    )
    batch = client.post(
        "/console/api/call",
        json={"calls": [{"tool": "hello", "arguments": {"name": "Bo"}}, {"tool": "hello", "arguments": {}}]},
        headers=headers,
    )
    script = client.get("/console/js/hello/nexus_hello.js")
    assert {"hello/greet", "core/activity"} <= {p["key"] for p in info["pages"]}  # a third-party page
    assert info["tools"]["count_lines"]["refusal"].startswith("permission denied")
    assert ok.json() == {"ok": True, "result": {"text": "Hello, Ada!", "count": 1}}
    assert refused.json()["ok"] is False and refused.json()["refused"] is True
    first, second = batch.json()["results"]
    assert first["ok"] and not second["ok"] and "name" in second["error"] and not second["refused"]
    assert script.status_code == 200 and 'Nexus.page("hello/greet"' in script.text
    audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
    assert [(e["client"], e["tool"], e["outcome"]) for e in audit] == [
        ("console", "hello", "ok"),
        ("console", "count_lines", "denied"),
        ("console", "hello", "ok"),
        ("console", "hello", "error"),
    ]


REFUSED = [  # (headers changed from a good same-origin POST, status, reason)
    ({"origin": "http://evil.example"}, 403, "requests from http://evil.example are refused"),
    ({"origin": None}, 403, "must say where it comes from"),
    ({"x-nexus-csrf": "forged"}, 403, "CSRF"),
    ({"x-nexus-csrf": None}, 403, "CSRF"),
    ({"host": "evil.example"}, 403, "is not this machine"),
    ({"sec-fetch-site": "cross-site"}, 403, "cross-site"),
    ({"content-type": "text/plain"}, 415, "JSON"),
]


def test_a_state_changing_request_must_be_same_origin_with_its_csrf_token(
    standalone: Standalone, tmp_path: Path
) -> None:
    client, good = logged_in(standalone)
    body = json.dumps({"tool": "hello", "arguments": {"name": "Eve"}})
    for headers, status, reason in REFUSED:
        sent = {"content-type": "application/json", **good, **headers}
        answer = client.post("/console/api/call", content=body, headers={k: v for k, v in sent.items() if v})
        assert (answer.status_code, reason in answer.json()["error"]) == (status, True), headers
    assert not (tmp_path / "data" / "audit.jsonl").exists()  # nothing reached the gate
    sent = {"content-type": "application/json", **good}
    assert client.post("/console/api/call", content=body, headers=sent).json()["ok"] is True


def test_the_activity_log_and_plugins(standalone: Standalone) -> None:
    client, headers = logged_in(standalone)
    for name in ("Ann", "Ben"):
        client.post("/console/api/call", json={"tool": "hello", "arguments": {"name": name}}, headers=headers)
    client.post("/console/api/call", json={"tool": "count_lines", "arguments": {"path": "x"}}, headers=headers)
    everything = client.get("/console/api/activity", params={"own": "1"}).json()
    quiet = client.get("/console/api/activity").json()  # the console's own reads (hello) left out by default
    problems = client.get("/console/api/activity", params={"outcome": "problem"}).json()
    client.post("/console/api/call", json={"tool": "hello", "arguments": {"name": "Cy"}}, headers=headers)
    since = client.get("/console/api/activity", params={"since": everything["offset"], "own": "1"}).json()
    plugins = {p["name"]: p for p in client.get("/console/api/plugins").json()["plugins"]}
    assert [e["tool"] for e in everything["entries"]] == ["count_lines", "hello", "hello"]  # newest first
    assert [e["tool"] for e in quiet["entries"]] == ["count_lines"]  # refused: not a quiet read
    assert [(e["tool"], e["outcome"]) for e in problems["entries"]] == [("count_lines", "denied")]
    assert [e["tool"] for e in since["entries"]] == ["hello"] and since["offset"] > everything["offset"]
    assert plugins["hello"]["granted"] == ["greet"] and plugins["hello"]["refused"] == ["files"]
    assert plugins["memory"]["status"] == "disabled"
    negative = client.get("/console/api/activity", params={"since": -1})
    assert negative.status_code == 400 and "not negative" in negative.json()["error"]


def test_nexus_console_starts_the_shared_server_and_http_on_demand(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[server.http]\nport = {taken}\n'  # enabled = false
        "[plugins.files]\nenabled = false\n[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    env = home_env(tmp_path / "home")
    run = lambda *args: subprocess.run(  # noqa: E731
        nexus_command(*args, "--config", str(config)), capture_output=True, text=True, env=env, timeout=120
    )
    try:
        assert run("server", "status").returncode == 3  # none yet
        first, second = run("console", "--no-open"), run("console", "--no-open")
        status = json.loads(run("server", "status", "--json").stdout)
        urls = [re.search(r"http://127\.0\.0\.1:(\d+)/console/login\?token=(\S+)", o.stdout) for o in (first, second)]
        assert first.returncode == 0 and all(urls), first.stderr
        port = int(urls[0].group(1))  # type: ignore[union-attr]
        assert port != taken and urls[1].group(1) == str(port)  # the configured port was busy: a free one, once
        assert urls[0].group(2) != urls[1].group(2)  # type: ignore[union-attr]
        assert status["http"] == f"http://127.0.0.1:{port}/mcp"
        with httpx2.Client() as client:
            assert client.get(urls[1].group(0)).status_code == 200  # type: ignore[union-attr]
            assert client.get(f"http://127.0.0.1:{port}/console/api/session").status_code == 200
    finally:
        busy.close()
        stop_shared_servers(run_dir(tmp_path / "home"))


def test_nexus_serve_over_http_joins_the_address_the_console_serves(tmp_path: Path) -> None:
    """`nexus console`, then `nexus serve --transport http` on the same port: one listener serves both, and the
    console's outlives the command (before, the command failed: address already in use)."""
    port, home = free_port(), tmp_path / "home"
    (config_dir(home)).mkdir(parents=True)
    (config_dir(home) / "http-token").write_text(HTTP_TOKEN + "\n")
    config = write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[server.http]\nport = {port}\n'
        "[plugins.files]\nenabled = false\n[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n",
    )
    env = home_env(home)
    command = lambda *args: nexus_command(*args, "--config", str(config))  # noqa: E731
    serving = None
    try:
        console = subprocess.run(command("console", "--no-open"), capture_output=True, text=True, env=env, timeout=120)
        link = re.search(rf"http://127\.0\.0\.1:{port}/console/login\?token=\S+", console.stdout)
        assert link, console.stdout + console.stderr
        serving = subprocess.Popen(command("serve", "--transport", "http"), env=env, stderr=subprocess.PIPE, text=True)
        assert serving.stderr is not None
        said = serving.stderr.readline()
        assert f"serving Streamable HTTP on http://127.0.0.1:{port}/mcp" in said, said + serving.stderr.read()

        async def tools() -> list[str]:
            async with http_client(f"http://127.0.0.1:{port}/mcp") as client:
                return [tool.name for tool in (await client.list_tools()).tools]

        assert "hello" in anyio.run(tools)
        serving.terminate()
        serving.wait(timeout=30)
        with httpx2.Client() as client:  # the console still serves once the command is gone
            assert client.get(link.group(0)).status_code == 200
            assert client.get(f"http://127.0.0.1:{port}/console/api/session").status_code == 200
    finally:
        if serving is not None and serving.poll() is None:
            serving.kill()
        stop_shared_servers(run_dir(home))


NOBODY_FETCH = """
import json, sys, urllib.request
from urllib.error import HTTPError
request = urllib.request.Request(sys.argv[1], headers=json.loads(sys.argv[2]))
try:
    response = urllib.request.urlopen(request, timeout=30)
    print(response.status, response.read().decode()[:300])
except HTTPError as error:
    print(error.code, error.read().decode()[:300])
"""


def _as_nobody(url: str, headers: dict[str, str]) -> str:
    """GET ``url`` from a process of another local user (what it prints: status and body)."""
    setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c"]
    out = subprocess.run([*setpriv, NOBODY_FETCH, url, json.dumps(headers)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(
    os.getuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
    reason="needs root and setpriv to act as another local user",
)
def test_another_local_user_gets_nothing_even_with_the_cookie_or_a_login_link(standalone: Standalone) -> None:
    """Browsers send a 127.0.0.1 cookie to every port: a page another user serves on loopback can read it."""
    link = _as_nobody(f"{standalone.base}{standalone.login}", {})
    assert link.startswith("403 ") and "its own user" in link
    client, _ = logged_in(standalone)  # the same link still works for its own user: the refusal spent nothing
    name = f"nexus_console_{standalone.port}"
    cookie = {"Cookie": f"{name}={client.cookies[name]}"}
    assert client.get("/console/api/session").status_code == 200

    stolen = _as_nobody(f"{standalone.base}/console/api/session", cookie)
    assert stolen.startswith("403 ") and "its own user" in stolen
    claimed = _as_nobody(f"{standalone.base}/console/api/session", cookie | {"X-Forwarded-For": "127.0.0.1"})
    assert claimed.startswith("403 ") and "its own user" in claimed  # the peer is the socket's, not a header's
    shell = _as_nobody(f"{standalone.base}/console/", cookie)
    assert shell.startswith("403 ") and "nexus-csrf" not in shell
    client.close()
