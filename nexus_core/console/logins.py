"""Who may use the console: one-time login tokens, then browser sessions with their CSRF token.

A login token is printed by ``nexus console`` (or by ``nexus serve --transport
http`` at start) and works once, for a few minutes. Opening it gives the
browser a session cookie (HttpOnly, SameSite=Strict) and the page a CSRF token
that every state-changing request must send back. Each browser session is one
gate session, with the client name "console", so the audit log tells its calls
apart from the assistants'.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

from nexus_core.access.sessions import Session, like_process

LOGIN_TTL = 300.0  # seconds a login link stays valid (it works once)
SESSION_IDLE = 12 * 3600.0  # a browser session unused this long must log in again
MAX_SESSIONS = 64


@dataclass
class BrowserSession:
    id: str
    csrf: str
    gate: Session
    last_seen: float = field(default_factory=time.monotonic)

    def csrf_matches(self, sent: str | None) -> bool:
        return bool(sent) and hmac.compare_digest(sent.encode(), self.csrf.encode())


class Logins:
    def __init__(self) -> None:
        self._tokens: dict[str, float] = {}  # one-time token -> expiry (monotonic)
        self._sessions: dict[str, BrowserSession] = {}
        self._lock = threading.Lock()  # the shared server mints tokens from its socket task, the app reads them
        self.last_seen: float | None = None  # the last logged-in request: an idle shared server waits for it

    def new_token(self) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = time.monotonic()
            self._tokens = {t: exp for t, exp in self._tokens.items() if exp > now}
            self._tokens[token] = now + LOGIN_TTL
        return token

    def redeem(self, token: str) -> BrowserSession | None:
        """A new browser session for a valid, unused login token (then spent); None otherwise."""
        with self._lock:
            expiry = next((exp for t, exp in self._tokens.items() if hmac.compare_digest(t, token)), None)
            if expiry is None or expiry < time.monotonic():
                return None
            self._tokens = {t: exp for t, exp in self._tokens.items() if not hmac.compare_digest(t, token)}
            session = BrowserSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32), _gate_session())
            self._sessions[session.id] = session
            while len(self._sessions) > MAX_SESSIONS:  # the least recently used goes first
                del self._sessions[min(self._sessions.values(), key=lambda s: s.last_seen).id]
        return session

    def session(self, cookie: str | None) -> BrowserSession | None:
        if not cookie:
            return None
        with self._lock:
            session = next((s for k, s in self._sessions.items() if hmac.compare_digest(k, cookie)), None)
            now = time.monotonic()
            if session is None or now - session.last_seen > SESSION_IDLE:
                return None
            session.last_seen = self.last_seen = now
        return session

    def end(self, session: BrowserSession) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)


def _gate_session() -> Session:
    """The gate session of one browser: as the process's own (its narrowing and profile), named "console"."""
    session = like_process("console")
    session.client = "console"
    return session
