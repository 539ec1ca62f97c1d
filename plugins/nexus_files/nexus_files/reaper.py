"""Run a command so that nothing it starts outlives it (Linux): ``python -I -S reaper.py PROGRAM ARGS...``.

A process group does not hold a command's descendants: one that calls
``setsid`` or double-forks leaves it, and a kill of the group misses it. So the
command runs under this small process, which makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``): whatever the command starts and orphans becomes
the reaper's child instead of init's. When the command exits, or when the
reaper gets SIGTERM (the timeout), it kills every descendant it has until none
is left, then exits as the command did. Standard library only, run without
``site``, so it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> set[int]:
    """Every process below ``root`` (by parent links in /proc)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                parents[int(name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in found}
        found |= frontier
    return found


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all() -> None:
    """SIGKILL every descendant, again and again (they may fork meanwhile), until none is left."""
    me = os.getpid()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        reap()
        pids = descendants(me)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def main(argv: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os.execvp(argv[0], argv)  # no subreaper here: run the command as it is, the caller kills the group
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)

    def stop(signum: int, frame: object) -> None:
        kill_all()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    _, status = os.waitpid(child, 0)
    kill_all()
    if os.WIFSIGNALED(status):  # die the same way, so the caller sees the command's signal
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
