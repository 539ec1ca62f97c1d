"""The console's HTTP routes, mounted at ``/console`` on the Streamable HTTP app.

Every request must come from loopback, from a process of the user the server
runs as (on Linux: any local user can reach loopback, and browsers send a
127.0.0.1 cookie to every port), with a loopback ``Host`` (no DNS rebinding),
and no foreign ``Origin`` or cross-site fetch. Everything but the
login link needs the session cookie; every POST also needs a same-origin
``Origin``, a JSON body and the session's CSRF token in ``X-Nexus-CSRF``.
"""

from __future__ import annotations

import functools
import html
import ipaddress
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from nexus_core.access import peers
from nexus_core.console import PATH, Console, activity, calls
from nexus_core.console.logins import BrowserSession
from nexus_core.console.pages import STATIC

log = logging.getLogger("nexus.console")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
CSRF_HEADER = "x-nexus-csrf"
CORE_SCRIPTS = ("nexus.js", "markdown.js", "graphview.js")
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

Handler = Callable[[Request, BrowserSession], Awaitable[Response]]


class Endpoints:
    """The console's request handlers, each behind ``guarded`` but the login link."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.scripts = script_urls(console)

    def guarded(self, handler: Handler, *, post: bool = False) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            refused = refusal(request, post=post)
            session = self.console.logins.session(request.cookies.get(cookie_name(request)))
            if refused is None and session is None:
                refused = 401, "not logged in: run `nexus console` and open the link it prints"
            if refused is None and post and not session.csrf_matches(request.headers.get(CSRF_HEADER)):  # type: ignore[union-attr]
                refused = 403, "missing or wrong CSRF token: reload the page"
            if refused is not None:
                return _refuse(request, *refused)
            return _secured(await handler(request, session))  # type: ignore[arg-type]

        return endpoint

    async def login(self, request: Request) -> Response:
        refused = refusal(request, post=False, navigation=True)
        if refused is not None:
            return _refuse(request, *refused)
        session = self.console.logins.redeem(request.query_params.get("token", ""))
        if session is None:
            return _refuse(request, 403, "this login link was already used or has expired: run `nexus console` again")
        # A page, not a redirect: a redirect after a cross-site navigation would not carry the Strict cookie.
        page = f'<!doctype html><meta charset="utf-8">{ICON}<meta http-equiv="refresh" content="0;url={PATH}/">'
        response = _secured(HTMLResponse(page + f'<a href="{PATH}/">Open the Nexus console</a>'))
        response.set_cookie(cookie_name(request), session.id, httponly=True, samesite="strict", path=PATH, secure=False)
        return response

    async def shell(self, request: Request, session: BrowserSession) -> Response:
        return HTMLResponse(shell_html(session.csrf, list(self.scripts)))

    async def static(self, request: Request, session: BrowserSession) -> Response:
        name = request.path_params["name"]
        if name not in (*CORE_SCRIPTS, "activity.js", "boot.js", "console.css"):
            return _refuse(request, 404, "no such file")
        return FileResponse(STATIC / name, media_type=_media_type(name))

    async def script(self, request: Request, session: BrowserSession) -> Response:
        path = self.scripts.get(request.url.path)
        if path is None:
            return _refuse(request, 404, "no such script")
        return FileResponse(path, media_type="text/javascript")

    async def session_info(self, request: Request, session: BrowserSession) -> Response:
        return JSONResponse(
            {
                "pages": [p.describe() for p in self.console.pages],
                "tools": calls.tools(self.console.host, session.gate),
                "server": self.console.host.config.server.name,
            }
        )

    async def call(self, request: Request, session: BrowserSession) -> Response:
        try:
            body = await request.json()
            batch = body.get("calls", [body])
            if not isinstance(batch, list) or not 0 < len(batch) <= calls.MAX_BATCH:
                raise ValueError(f"calls must be a list of 1 to {calls.MAX_BATCH} calls")
            jobs = [(str(c["tool"]), dict(c.get("arguments") or {})) for c in batch]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return JSONResponse({"error": f"expected {{tool, arguments}} or {{calls: [...]}}: {exc}"}, 400)
        results = [await calls.call(self.console.host, session.gate, tool, args) for tool, args in jobs]
        return JSONResponse({"results": results} if "calls" in body else results[0])

    async def activity_log(self, request: Request, session: BrowserSession) -> Response:
        query = request.query_params
        try:
            limit = max(1, min(int(query.get("limit", 200)), 1000))
            since = int(query["since"]) if query.get("since") else None
            if since is not None and since < 0:
                raise ValueError(since)  # an offset from an earlier answer is never negative (seek would fail)
        except ValueError:
            return JSONResponse({"error": "limit and since must be integers, since not negative"}, 400)
        filters = {k: query.get(k, "") for k in activity.FILTERS}
        path = self.console.host.audit.path
        quiet = frozenset() if query.get("own") == "1" else activity.read_tools(self.console.host)
        found = await anyio.to_thread.run_sync(lambda: activity.read_activity(path, filters, limit, since, quiet))
        return JSONResponse(found)

    async def plugins(self, request: Request, session: BrowserSession) -> Response:
        status: dict[str, list[str]] = {}
        with anyio.move_on_after(5):  # a plugin slow to describe itself does not hold the page
            status = await self.console.host.status()
        return JSONResponse({"plugins": activity.plugins_report(self.console.host, session.gate, status)})

    async def logout(self, request: Request, session: BrowserSession) -> Response:
        self.console.logins.end(session)
        response = JSONResponse({"ok": True})
        response.delete_cookie(cookie_name(request), path=PATH)
        return response


def console_app(console: Console) -> Starlette:
    endpoints = Endpoints(console)
    routes = [
        Route(f"{PATH}/login", endpoints.login, methods=["GET"]),
        Route(f"{PATH}/", endpoints.guarded(endpoints.shell), methods=["GET"]),
        Route(f"{PATH}/static/{{name}}", endpoints.guarded(endpoints.static), methods=["GET"]),
        Route(f"{PATH}/js/{{plugin}}/{{name}}", endpoints.guarded(endpoints.script), methods=["GET"]),
        Route(f"{PATH}/api/session", endpoints.guarded(endpoints.session_info), methods=["GET"]),
        Route(f"{PATH}/api/activity", endpoints.guarded(endpoints.activity_log), methods=["GET"]),
        Route(f"{PATH}/api/plugins", endpoints.guarded(endpoints.plugins), methods=["GET"]),
        Route(f"{PATH}/api/call", endpoints.guarded(endpoints.call, post=True), methods=["POST"]),
        Route(f"{PATH}/api/logout", endpoints.guarded(endpoints.logout, post=True), methods=["POST"]),
    ]
    return Starlette(routes=routes)


def mount(app: Starlette, console: Console) -> None:
    """Serve the console's routes from ``app`` (the Streamable HTTP app) too."""
    app.router.routes.extend(console_app(console).routes)


def script_urls(console: Console) -> dict[str, Path]:
    """URL path -> file, for every distinct script of the plugins' pages (in page order)."""
    urls: dict[str, Path] = {}
    for page in console.pages:
        if page.plugin == "core":
            continue
        for file in page.scripts:
            if file in urls.values():
                continue
            url = f"{PATH}/js/{page.plugin}/{file.name}"
            n = 1
            while url in urls:  # two folders of one plugin with the same file name
                n += 1
                url = f"{PATH}/js/{page.plugin}/{n}-{file.name}"
            urls[url] = file
    return urls


# The console's icon, inline (the CSP allows data: images): no request, so no favicon.ico 404 either.
ICON = (
    '<link rel="icon" href="data:image/svg+xml,'
    "%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='7' "
    "fill='%232b5fd9'/%3E%3Cpath d='M9 24V8h3l8 11V8h3v16h-3l-8-11v11z' fill='white'/%3E%3C/svg%3E\">"
)


def shell_html(csrf: str, page_scripts: list[str]) -> str:
    core = [f"{PATH}/static/{name}" for name in CORE_SCRIPTS]
    tags = "\n".join(f'<script src="{html.escape(u)}" defer></script>' for u in [*core, *page_scripts])
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="nexus-csrf" content="{html.escape(csrf)}">
<title>Nexus console</title>
{ICON}
<link rel="stylesheet" href="{PATH}/static/console.css">
{tags}
<script src="{PATH}/static/activity.js" defer></script>
<script src="{PATH}/static/boot.js" defer></script>
</head>
<body>
<header class="top"><a class="brand" href="#/">Nexus</a><nav id="nav"></nav><span id="who"></span></header>
<main id="main"><p class="muted">Loading…</p></main>
</body>
</html>
"""


# -- the checks --------------------------------------------------------------------


def refusal(request: Request, *, post: bool, navigation: bool = False) -> tuple[int, str] | None:
    """Why this request is refused before any cookie is looked at, or None."""
    client = request.client.host if request.client else ""
    if not is_loopback(client):
        return 403, "the console answers only on this machine (loopback)"
    if not _same_user(request):  # a stolen cookie (cookies ignore ports) is no use to another local user
        return 403, "the console answers only its own user"
    host = request.headers.get("host", "")
    if _hostname(host) not in LOOPBACK_NAMES:
        return 403, f"Host '{host}' is not this machine: open the console at http://127.0.0.1"
    origin = request.headers.get("origin")
    own = {f"http://{host}"}
    if origin is not None and origin not in own:
        return 403, f"requests from {origin} are refused"
    if request.headers.get("sec-fetch-site") == "cross-site" and not navigation:
        return 403, "cross-site requests are refused"
    if post:
        if origin is None:
            return 403, "a state-changing request must say where it comes from (Origin)"
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return 415, "send JSON (Content-Type: application/json)"
    return None


def _same_user(request: Request) -> bool:
    """Whether the connection comes from a process of this user (or the system cannot tell)."""
    server = request.scope.get("server") or ("", 0)
    if request.client is None or not server[1]:
        return False
    return peers.tcp_peer_uid(request.client.port, server[1]) in (None, os.getuid())


def cookie_name(request: Request) -> str:
    """Cookies do not tell ports apart: each console (one per port) has its own name."""
    server = request.scope.get("server") or ("", 0)
    return f"nexus_console_{server[1]}"


def _refuse(request: Request, status: int, reason: str) -> Response:
    log.info("console: refused %s %s: %s", request.method, request.url.path, reason)
    if request.url.path.startswith(f"{PATH}/api/"):
        return _secured(JSONResponse({"error": reason}, status))
    body = f'<!doctype html><meta charset="utf-8"><title>Nexus console</title><p>{html.escape(reason)}</p>'
    return _secured(HTMLResponse(body, status))


def _secured(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _media_type(name: str) -> str:
    return "text/css" if name.endswith(".css") else "text/javascript"
