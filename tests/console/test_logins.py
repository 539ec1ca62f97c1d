"""How long a console login lasts, and who may use it: a login link's 5 minutes, a browser session's 12 idle
hours, logout, loopback only.

The console is served by ``serve_http`` itself (what `nexus serve --transport http` runs) on a real socket in a
thread of this process, and every request is real HTTP. The logins read ``time.monotonic()``: rather than fake
the clock, the tests age the timestamps the running server holds, which is what the passing of time does.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import anyio.from_thread
import httpx2
import pytest
import uvicorn

from nexus_core.console import Console, console_for
from nexus_core.host.build import Host
from nexus_core.serve.http import serve_http

MINUTE, HOUR = 60.0, 3600.0
TOKEN_VARIABLE = "NEXUS_TEST_CONSOLE_TOKEN"  # listening beyond loopback needs a token for /mcp


@dataclass
class Served:
    console: Console  # the very object the running server checks logins with
    port: int

    def url(self, address: str = "127.0.0.1") -> str:
        return f"http://{address}:{self.port}"

    @property
    def cookie(self) -> str:
        return f"nexus_console_{self.port}"

    def age_link(self, link: str, seconds: float) -> None:
        """As if ``seconds`` had passed since ``link`` was made."""
        token = parse_qs(urlsplit(link).query)["token"][0]
        logins = self.console.logins
        with logins._lock:
            logins._tokens[token] -= seconds

    def age_session(self, client: httpx2.Client, seconds: float) -> None:
        """As if the browser holding ``client``'s cookie had not been used for ``seconds`` more."""
        logins = self.console.logins
        with logins._lock:
            logins._sessions[client.cookies[self.cookie]].last_seen -= seconds


@contextlib.contextmanager
def serving(host: Host, bind: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """``serve_http`` on ``bind`` (a socket already listening: no port race), shut down as on Ctrl-C at the end."""
    servers: list[uvicorn.Server] = []

    class Kept(uvicorn.Server):  # the same server, kept at hand: signals reach only the main thread
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            servers.append(self)

    monkeypatch.setattr(uvicorn, "Server", Kept)
    sock = socket.create_server((bind, 0))
    port = sock.getsockname()[1]
    try:
        with anyio.from_thread.start_blocking_portal() as portal:
            task = portal.start_task_soon(functools.partial(serve_http, host, bind=bind, port=port, sock=sock))
            try:
                served = Served(console_for(host), port)
                # Answered once uvicorn runs, so after serve_http minted its own link at start (minting drops
                # the expired links: one minted after a test aged its links would hide what the test checks).
                assert httpx2.get(served.url() + "/console/", timeout=30).status_code == 401
                yield served
            finally:
                for server in servers:
                    server.should_exit = True
                task.result(timeout=30)
    finally:
        sock.close()


@pytest.fixture
def served(
    make_host: Callable[..., Host], monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    with serving(make_host({}), "127.0.0.1", monkeypatch) as server:
        yield server


def logged_in(server: Served) -> tuple[httpx2.Client, dict[str, str]]:
    """A client holding a fresh session cookie, and the headers the console's page sends with a POST."""
    client = httpx2.Client(base_url=server.url(), timeout=30)
    assert client.get(server.console.login_path()).status_code == 200
    shell = client.get("/console/")
    assert shell.status_code == 200, shell.text
    csrf = re.search(r'name="nexus-csrf" content="([^"]+)"', shell.text)
    assert csrf
    return client, {"x-nexus-csrf": csrf.group(1), "origin": server.url()}


def test_a_login_link_expires_after_five_minutes(served: Served) -> None:
    almost, expired = served.console.login_path(), served.console.login_path()
    served.age_link(almost, 5 * MINUTE - 10)
    served.age_link(expired, 5 * MINUTE + 10)
    with httpx2.Client(base_url=served.url(), timeout=30) as client:
        late = client.get(expired)
        in_time = client.get(almost)
        assert client.get("/console/").status_code == 200  # the link that was still valid logged in
    assert late.status_code == 403 and "has expired" in late.text and "set-cookie" not in late.headers
    assert in_time.status_code == 200 and served.cookie in in_time.headers["set-cookie"]


def test_a_browser_session_unused_for_12_hours_must_log_in_again(served: Served) -> None:
    client, _ = logged_in(served)
    with contextlib.closing(client):
        for _ in range(2):  # each use restarts the idle clock: 23 h 40 after logging in, but never 12 h unused
            served.age_session(client, 12 * HOUR - 10 * MINUTE)
            assert client.get("/console/api/session").status_code == 200
        served.age_session(client, 12 * HOUR + 10)
        idle = client.get("/console/api/session")
        shell = client.get("/console/")
    assert idle.status_code == 401 and "not logged in" in idle.json()["error"]
    assert shell.status_code == 401 and "nexus-csrf" not in shell.text


def test_logout_ends_the_session_on_the_server(served: Served) -> None:
    client, headers = logged_in(served)
    with contextlib.closing(client):
        cookie = client.cookies[served.cookie]
        out = client.post("/console/api/logout", json={}, headers=headers)
        assert out.status_code == 200 and out.json() == {"ok": True}
        # The browser drops the cookie; someone who kept a copy must get nothing with it either.
        for path in ("/console/", "/console/api/session"):
            again = httpx2.get(served.url() + path, cookies={served.cookie: cookie}, timeout=30)
            assert again.status_code == 401, (path, again.text)
        replayed = httpx2.post(
            served.url() + "/console/api/call",
            json={"tool": "nexus_status", "arguments": {}},
            headers=headers,
            cookies={served.cookie: cookie},
            timeout=30,
        )
    assert replayed.status_code == 401


def outward_address() -> str | None:
    """This machine's address on its first route out (not loopback), or None where it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # UDP: sends nothing, only picks the interface a route leaves by
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


def test_only_loopback_clients_are_answered(
    make_host: Callable[..., Host], monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    address = outward_address()
    if address is None:
        pytest.skip("this machine has no address but loopback to reach the console from")
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv(TOKEN_VARIABLE, "not-the-console's")
    host = make_host({}, {"server": {"http": {"token": {"env": TOKEN_VARIABLE}}}})
    with serving(host, "0.0.0.0", monkeypatch) as served:
        link = served.console.login_path()
        # Every other check would pass: a loopback Host, no Origin, the process of this very user.
        outside = {"host": f"127.0.0.1:{served.port}"}
        refused = httpx2.get(served.url(address) + link, headers=outside, timeout=30)
        assert refused.status_code == 403 and "only on this machine (loopback)" in refused.text
        with httpx2.Client(base_url=served.url(), timeout=30) as client:
            assert client.get(link).status_code == 200  # the refusal spent nothing: the link works from loopback
            cookie = {served.cookie: client.cookies[served.cookie]}
            stolen = httpx2.get(
                served.url(address) + "/console/api/session", headers=outside, cookies=cookie, timeout=30
            )
            assert client.get("/console/api/session").status_code == 200
    assert stolen.status_code == 403 and "loopback" in stolen.json()["error"]
