"""The console: a local web page to see, search, fix and forget what the assistant knows and did.

It is served beside Streamable HTTP (``/console/`` on the same listener), on
loopback only, to a browser that logged in with a one-time link
(``nexus console`` prints one). Each plugin adds its pages through the hook
``nexus_console_pages``: a script that renders the page from the plugin's own
MCP tools, called through the gate as the client "console". The same scripts
render MCP Apps views inside clients that support them (``apps``).

Nothing here is imported by the relay; Starlette only by ``app``.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING

from nexus_core.console.logins import Logins
from nexus_core.console.pages import Page, PageRegistrar, core_pages

if TYPE_CHECKING:
    from nexus_core.host.build import Host

log = logging.getLogger("nexus.console")

PATH = "/console"


class Console:
    """One host's console: its pages and who is logged in."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.logins = Logins()
        self.pages = collect_pages(host)

    def login_path(self) -> str:
        """A fresh one-time login link (path and query) for this console."""
        return f"{PATH}/login?token={self.logins.new_token()}"

    def page(self, key: str) -> Page | None:
        return next((p for p in self.pages if p.key == key), None)


def collect_pages(host: Host) -> list[Page]:
    """Every active plugin's pages (a plugin whose hook fails loses only its pages), then the console's own."""
    pages: list[Page] = []
    for state in host.active():
        register = PageRegistrar(state.name)
        try:
            host.pm.call_one(state.name, "nexus_console_pages", register=register, ctx=state.ctx)
        except Exception as exc:
            log.error("plugin '%s': console pages not added: %s", state.name, exc)
            continue
        pages += register.pages
    return sorted(pages + core_pages(), key=lambda p: (p.order, p.key))


_consoles: weakref.WeakKeyDictionary[Host, Console] = weakref.WeakKeyDictionary()


def console_for(host: Host) -> Console:
    """The console of ``host`` (made on first use)."""
    console = _consoles.get(host)
    if console is None:
        console = _consoles[host] = Console(host)
    return console


def last_used(host: Host) -> float | None:
    """When ``host``'s console last served a logged-in request (``time.monotonic()``); None if it never did."""
    console = _consoles.get(host)
    return console.logins.last_seen if console is not None else None
