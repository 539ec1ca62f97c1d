"""A long job run in a child process while this one draws its progress (a model's first build).

Libraries written in C++ (onnx, protobuf) hold the interpreter lock for seconds at a time: run in this process,
they would stop the progress line. The child reports on its stdout, one JSON object a line (``Relay``); this
process draws, and re-raises the child's error as the same kind of exception. The child's memory (a build peaks
above 1 GB) is given back when it exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Protocol

from nexus_memory.progress import Progress


class Meter(Protocol):
    """What a job reports its progress to: a ``Progress`` here, a ``Relay`` in the child."""

    done: float

    def update(self, n: float = 1) -> None: ...

    def reach(self, n: float) -> None: ...

    def unseen(self, amount: float) -> Any: ...


class Relay:
    """The child's meter: each report one JSON line on the stream the parent reads."""

    def __init__(self, out: IO[str]) -> None:
        self.out, self.done = out, 0.0

    def update(self, n: float = 1) -> None:
        self.done += n
        self.send({"update": n})

    def reach(self, n: float) -> None:
        self.update(max(n - self.done, 0))

    @contextmanager
    def unseen(self, amount: float) -> Iterator[None]:
        self.send({"unseen": amount})
        yield
        self.update(amount)

    def send(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()


def run_apart(module: str, function: str, args: list[str], bar: Progress, raises: tuple[type[Exception], ...]) -> None:
    """``module.function(*args, meter)`` in a child process, its progress on ``bar``. An ``OSError`` or one of
    ``raises`` in the child is raised here (same kind, same message); any other failure as an ``OSError``."""
    code = f"from nexus_memory.apart import child; child({module!r}, {function!r}, {args!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    failure: dict[str, Any] = {}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if "update" in event:
                bar.update(event["update"])
            elif "unseen" in event:
                bar.guess(event["unseen"])
            else:
                failure = event
    except BaseException:
        proc.kill()  # this process was interrupted: the child's temporary folder goes with it
        raise
    finally:
        proc.wait()
    if failure or proc.returncode:
        raise _error(failure, proc, raises)


def _error(failure: dict[str, Any], proc: subprocess.Popen[str], raises: tuple[type[Exception], ...]) -> Exception:
    if failure.get("errno") is not None:
        return OSError(failure["errno"], failure["strerror"], failure.get("filename"))
    for kind in raises:
        if failure.get("kind") == kind.__name__:
            return kind(failure["message"])
    if "kind" in failure:
        return OSError(f"{failure['kind']}: {failure['message']}")
    return OSError(f"the child process {proc.pid} ended with status {proc.returncode}")


def child(module: str, function: str, args: list[str]) -> None:
    """The child's side: the job's reports on a copy of stdout, stdout itself pointed at stderr (a library's
    stray print cannot break the reports), and its error sent as the last line."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    import importlib

    try:
        getattr(importlib.import_module(module), function)(*args, Relay(out))
    except OSError as exc:
        Relay(out).send({"errno": exc.errno, "strerror": exc.strerror, "filename": exc.filename, "message": str(exc)})
        sys.exit(1)
    except Exception as exc:
        Relay(out).send({"kind": type(exc).__name__, "message": str(exc) or type(exc).__name__})
        sys.exit(1)
