"""A command run with its stderr on a pseudo-terminal (as a person runs it), and the progress lines it drew there."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO

GAP = 1.5  # seconds between redraws at most: the bar redraws within 0.7 s; the rest is room for a busy machine
LIVE = re.compile(
    r"^(?P<label>.+?): (?P<done>\d+)/(?P<total>\d+) (?P<unit>\S+), (?P<rate>[\d.]+)/s, (?P<left>[\d:]+|\?) left$"
)
FINAL = re.compile(r"^(?P<label>.+?): (?P<done>\d+)/(?P<total>\d+) (?P<unit>\S+) in [\d.:]+( s)? \([\d.]+/s\)$")


@dataclass
class Drawn:
    at: float  # seconds since the command started, when the text reached the terminal
    text: str


@dataclass
class Run:
    returncode: int
    stdout: str
    drawn: list[Drawn]  # each line or redraw the terminal got, in order

    def bar(self, label: str) -> tuple[list[Drawn], Drawn]:
        """The live lines of the bar called ``label`` (each checked against ``LIVE``), and its final line."""
        mine = [d for d in self.drawn if d.text.startswith(f"{label}: ")]
        assert mine and FINAL.match(mine[-1].text), [d.text for d in self.drawn]
        for d in mine[:-1]:
            assert LIVE.match(d.text), d.text
        return mine[:-1], mine[-1]


def on_a_terminal(command: list[str], env: dict[str, str], cwd: str, timeout: float = 120) -> Run:
    """Run ``command`` with stderr on a pseudo-terminal, stdout on a pipe; split what the terminal got at each
    carriage return and newline, with the time each piece arrived."""
    leader, follower = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower, env=env, cwd=cwd
    )
    os.close(follower)
    drawn: list[Drawn] = []
    reader = threading.Thread(target=_read, args=(leader, started, drawn), daemon=True)
    reader.start()
    stdout = _drain(proc.stdout)
    proc.wait(timeout)
    reader.join(timeout)
    os.close(leader)
    return Run(proc.returncode, stdout, drawn)


def _drain(out: IO[bytes] | None) -> str:
    assert out is not None
    return out.read().decode("utf-8")


def _read(fd: int, started: float, drawn: list[Drawn]) -> None:
    """Each piece keeps the time its first character arrived: a redraw is "\\r text \\x1b[K", ended by the next."""
    pending, pending_at = "", 0.0
    while True:
        try:
            chunk = os.read(fd, 65536).decode("utf-8", "replace")
        except OSError:  # EIO: the command closed the terminal's last descriptor
            chunk = ""
        at = time.monotonic() - started
        if not chunk:
            break
        first, *rest = re.split(r"[\r\n]", chunk)
        pieces = [(pending + first, pending_at if pending else at)] + [(text, at) for text in rest]
        (pending, pending_at), pieces = pieces[-1], pieces[:-1]
        drawn += [Drawn(when, text.replace("\x1b[K", "")) for text, when in pieces if text.strip()]
    if pending.strip():
        drawn.append(Drawn(pending_at, pending.replace("\x1b[K", "")))


def drawn_at(text: str) -> float | None:
    """The seconds since the bar began when it drew ``text``, by its own clock: its elapsed time (a final or a
    stopped line), else its count over its rate (None while the rate is still 0). A test starved of the CPU reads
    several redraws at once, late; the bar's own clock says when each was drawn."""
    if final := re.search(r" (?:in|after) ([\d.]+) s\b", text):
        return float(final[1])
    live = LIVE.match(text)
    rate = float(live["rate"]) if live else 0.0
    return int(live["done"]) / rate if live and rate > 0 else None  # type: ignore[index]
