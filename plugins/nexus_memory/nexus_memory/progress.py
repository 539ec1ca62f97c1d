"""The progress line of the long commands (``nexus memory export|import|reindex``, a model's first build), on stderr.

On a terminal the line is redrawn at least every ``STEP`` items and every second (a ticker thread redraws it while
one step takes longer), with the count, the total, the rate and the time left. Anywhere else (a pipe, the shared
server's log) only the final line is written: a log gets one line, not a redraw per step. When a tool runs the job
(``import_memories``) for a client that asked for progress, each step also goes to that client as MCP progress.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import IO

from nexus_core import report_progress

STEP = 50  # items at most between redraws: the callers work in steps of this size
TICK = 0.2  # seconds between the ticker's looks; it redraws a line older than STALE
STALE = 0.5
GUESS_CAP = 0.95  # an unseen step is shown at most this far along until it ends


class Progress:
    """``with Progress("export", total, "lines") as bar: ... bar.update(n)``: a line on ``stream`` (stderr)."""

    def __init__(self, label: str, total: int | None = None, unit: str = "memories", stream: IO[str] | None = None):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0.0  # a fraction when a step is counted in parts of its bytes
        self.started = self._drawn_at = time.monotonic()
        self._drawn = -float(STEP)
        self._guess: tuple[float, float, float] | None = None  # (done, when, amount) of a step that reports nothing
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name=f"progress {label}", daemon=True)

    def __enter__(self) -> Progress:
        if self.live:
            self._draw(time.monotonic())
            self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._ticker.is_alive():
            self._ticker.join()
        elapsed = max(time.monotonic() - self.started, 1e-6)
        if kind is None:
            text = f"{self.label}: {self._count(self.done)} in {_seconds(elapsed)} ({_rate(self.done / elapsed)}/s)"
        else:
            text = f"{self.label}: stopped at {self._count(self.done)} after {_seconds(elapsed)}"
        self._write(text, final=True)

    def update(self, n: float = 1) -> None:
        with self._lock:
            self.done += n
            self._guess = None
            now = time.monotonic()
            # Redrawn when a step as long as this one would take the line more than STEP past the last drawn.
            if self.live and (self.done - self._drawn + n > STEP or now - self._drawn_at >= TICK):
                self._draw(now)
            done = self.done
        report_progress(done, self.total, f"{self.label}: {self._count(done)}")  # a tool's caller, if it asked

    def reach(self, n: float) -> None:
        """Count up to ``n``: what a step did not report (files already checked, rounding)."""
        self.update(max(n - self.done, 0))

    def guess(self, amount: float) -> None:
        """A step worth ``amount`` that reports nothing until it ends (one library call) starts: until the next
        update it is shown moving at the rate so far, never past ``GUESS_CAP`` of it."""
        with self._lock:
            self._guess = (self.done, time.monotonic(), amount)

    @contextmanager
    def unseen(self, amount: float) -> Iterator[None]:
        """``guess(amount)`` for the block; counted whole when it ends."""
        self.guess(amount)
        yield
        self.update(amount)

    def _shown(self, now: float) -> float:
        if self._guess is None:
            return self.done
        done, since, amount = self._guess
        rate = done / max(since - self.started, 1e-9)
        return done + min(amount * GUESS_CAP, rate * (now - since))

    def _tick(self) -> None:
        while not self._stop.wait(TICK):
            with self._lock:
                now = time.monotonic()
                if now - self._drawn_at >= STALE:
                    self._draw(now)

    def _draw(self, now: float) -> None:
        """The live line (the caller holds the lock, or no ticker runs yet)."""
        shown, elapsed = self._shown(now), now - self.started
        rate = shown / elapsed if elapsed > 0 else 0.0
        text = f"{self.label}: {self._count(shown)}, {_rate(rate)}/s"
        if self.total is not None:
            text += f", {_clock((self.total - shown) / rate) if rate > 0 else '?'} left"
        self._write(text, final=False)
        self._drawn, self._drawn_at = self.done, now

    def _count(self, n: float) -> str:
        whole = int(n + 1e-6)  # steps counted in fractions add up to a hair under their sum
        return f"{whole}/{self.total} {self.unit}" if self.total is not None else f"{whole} {self.unit}"

    def _write(self, text: str, final: bool) -> None:
        if self.live:  # back to the line's start, the new text, the rest of the old one erased
            self.stream.write(f"\r{text}\x1b[K" + ("\n" if final else ""))
        elif final:
            self.stream.write(text + "\n")
        else:
            return
        self.stream.flush()


def _rate(per_second: float) -> str:
    return f"{per_second:.1f}" if per_second < 10 else f"{per_second:.0f}"


def _seconds(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else _clock(seconds)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(max(seconds, 0)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"
