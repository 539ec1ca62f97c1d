"""Sessions: one per connected client, each with its own identity and roots.

A shared server serves many clients at once (Claude Desktop, Cursor, a terminal
agent), each launched in its own folder and each offering its own roots. What
belongs to one client lives on its ``Session``; the host binds the session of
the connection a request arrived on (``bind``), so a tool reads it with
``current()`` and the path policy of every plugin follows the caller.

Roots, when the config names none, come from the session in this order: the
roots the client offers (``roots/list``), the ``--root`` folders given at
launch, then the launch folder, but only when it is a project folder (not
``/``, not the home folder or above it, not a system folder).
"""

from __future__ import annotations

import contextvars
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexus_core.access.enable import Enabled
    from nexus_core.config.model import Profile
    from nexus_core.config.narrowing import Narrowing

NO_ROOTS = (
    "no roots: this session has no folder to work in. Open a folder or workspace in your client (it offers it "
    "as a root), or pass --root PATH to `nexus serve` (nexus install CLIENT --root PATH writes it), or set "
    '[server] roots = ["~/code"] in nexus.toml'
)

# System folders: neither they nor anything under them is a project. A client launched there gets no default root.
SYSTEM_TREES = tuple(
    Path(p)
    for p in (
        "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr",
        "/var/lib", "/var/log", "/var/run", "/var/cache", "/var/spool", "/Applications", "/Library", "/System",
        "/private/etc", "/private/var/db", "/cores", "C:/Windows", "C:/Program Files", "C:/Program Files (x86)",
    )
)  # fmt: skip
# Folders that hold projects but are not one themselves.
CONTAINERS = tuple(
    Path(p)
    for p in ("/tmp", "/var", "/var/tmp", "/opt", "/srv", "/mnt", "/media", "/Volumes", "/private", "/private/tmp")
)


@dataclass(eq=False)
class Session:
    """One client connection: who it is, where it was launched, which roots it offers."""

    transport: str = "stdio"
    cwd: Path | None = None
    launch_roots: tuple[Path, ...] = ()
    narrowing: Narrowing | None = None
    profile: Profile | None = None
    enabled: Enabled | None = None  # --enable: the categories this session may use (None: the config's)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    client: str = ""
    client_roots: tuple[Path, ...] | None = None  # None: the client offers none (or has not answered)
    started: float = field(default_factory=time.time)
    calls: int = 0
    found_tools: set[str] = field(default_factory=set)  # tool search: what find_tools showed, listed from then on
    _roots_wait: Any = field(default=None, repr=False)  # an anyio.Event while roots/list is outstanding
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # per-session derived state (path policies)
    state: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)  # each plugin's, gone with the session
    lasting: bool = True  # False: a request that stands alone (2026-07-28 without a connection of its own)

    def roots(self) -> tuple[Path, ...]:
        """The folders this session may work in when the config names none; empty when it has none."""
        if self.client_roots:
            return self.client_roots
        if self.launch_roots:
            return self.launch_roots
        if self.cwd is not None and is_project_folder(self.cwd):
            return (self.cwd,)
        return ()

    def set_client_roots(self, roots: Sequence[Path] | None) -> None:
        self.client_roots = tuple(roots) if roots else None
        self.cache.clear()  # path policies are derived from the roots

    def describe(self) -> str:
        who = self.client or "unknown client"
        return f"{who} ({self.transport}, session {self.id})"


def is_project_folder(folder: Path) -> bool:
    """A folder worth serving by default: not ``/``, not home or above it, not a system folder."""
    real = Path(os.path.realpath(folder))
    home = Path(os.path.realpath(Path.home()))
    if real == real.parent or real == home or home.is_relative_to(real) or real in CONTAINERS:
        return False
    return not any(real == s or real.is_relative_to(s) for s in SYSTEM_TREES)


_current: contextvars.ContextVar[Session] = contextvars.ContextVar("nexus_session")
_process_session: Session | None = None


def current() -> Session:
    """The session of the request being served; outside any request, the process's own (launched here)."""
    try:
        return _current.get()
    except LookupError:
        return process_session()


def process_session() -> Session:
    """The session of an in-process caller (``nexus call``, a test's in-memory client): launched in the cwd.

    A standalone server's connections start from it too (``like_process``): same launch folder,
    ``--root`` folders and narrowing, each with its own client and client roots.
    """
    global _process_session
    if _process_session is None:
        _process_session = Session(transport="in-process", cwd=Path.cwd())
    return _process_session


_template: contextvars.ContextVar[Session | None] = contextvars.ContextVar("nexus_session_template", default=None)


def start_sessions_like(template: Session) -> None:
    """New sessions in this task (and the tasks it starts) start from ``template``, not from the process's:
    the shared server's HTTP listener for a ``nexus serve --transport http`` launched elsewhere."""
    _template.set(template)


def like_process(transport: str = "in-process") -> Session:
    template = _template.get() or process_session()
    return Session(
        transport=transport,
        cwd=template.cwd,
        launch_roots=template.launch_roots,
        narrowing=template.narrowing,
        profile=template.profile,
        enabled=template.enabled,
    )


def bound_session() -> Session | None:
    """The session a transport or the middleware bound to this task, if any."""
    return _current.get(None)


@contextmanager
def bound(session: Session) -> Iterator[Session]:
    """Serve what runs inside as ``session``."""
    token = _current.set(session)
    try:
        yield session
    finally:
        _current.reset(token)


def bind(session: Session) -> None:
    """Make ``session`` current for the rest of this task (and tasks it starts)."""
    _current.set(session)
