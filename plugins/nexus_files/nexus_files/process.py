"""Running a subprocess without blocking the event loop: timeout, output caps, process-group kill."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nexus_core import make_undumpable, report_progress

# The environment a command gets: these names, LC_*, and what pass_env adds. Anything else
# (OPENAI_KEY, GITHUB_PAT, MONGODB_URI, ...) stays out, whatever it is called.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ")
# Variables that make a shell, interpreter or the dynamic linker run code first: never passed.
STARTUP_HOOKS = {
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONPATH", "PERL5OPT", "RUBYOPT",
    "NODE_OPTIONS", "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "ZDOTDIR", "SHELLOPTS",
    "BASHOPTS", "IFS", "CDPATH", "GLOBIGNORE",
}  # fmt: skip


def child_env(pass_env: Sequence[str] = (), cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """An allowlisted environment: BASE_ENV, LC_*, and the names in ``pass_env`` (startup hooks excepted)."""
    wanted = set(BASE_ENV) | set(pass_env)
    env = {
        k: v
        for k, v in os.environ.items()
        if (k in wanted or k.startswith("LC_")) and k not in STARTUP_HOOKS and not k.startswith("BASH_FUNC_")
    }
    if "PATH" in env:  # an empty or relative entry would run programs from the command's folder
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if os.path.isabs(p))
    if cwd is not None:
        env["PWD"] = os.fspath(cwd)
    return env


@dataclass
class ProcessOutput:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    duration: float


# After the command itself exits, how long its background jobs may keep writing before they are killed.
EXIT_GRACE = 0.5
REAPER = str(Path(__file__).with_name("reaper.py"))
CAN_CONTAIN = sys.platform == "linux"  # the reaper needs PR_SET_CHILD_SUBREAPER and /proc


class _Sink:
    """Output of one pipe, capped; what was read survives a cancelled reader."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.cut = cap, bytearray(), False

    async def collect(self, stream: asyncio.StreamReader) -> None:
        # Read everything (so the child never blocks on a full pipe) but keep only ``cap`` bytes.
        while chunk := await stream.read(65536):
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            if len(chunk) > room:
                self.cut = True


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _exited(proc: asyncio.subprocess.Process, timeout: float, tick: Callable[[], object] | None = None) -> bool:
    """Wait until the process itself exits (True) or ``timeout`` passes (False); ``tick()`` at every look.

    Not ``proc.wait()``: on Python 3.11 that also waits for stdout and stderr to
    close, which a background job of the command can keep open for as long as it runs.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while proc.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)
        if tick is not None:
            tick()
    return True


def _report(started: float, out: _Sink, err: _Sink) -> None:
    """The progress of a running command: how long it has run, how much it wrote, its last line (streamed)."""
    seconds = time.perf_counter() - started
    last = (out.data or err.data)[-400:].rstrip().rsplit(b"\n", 1)[-1].decode("utf-8", "replace")
    written = len(out.data) + len(err.data)
    report_progress(
        round(seconds, 1), message=f"running {seconds:.0f} s, {written} bytes of output" + (f": {last}" if last else "")
    )


async def _drain(readers: asyncio.Future, seconds: float) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(readers), seconds)
    except TimeoutError:
        return False
    return True


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float,
    max_output: int,
    stdin: bytes | None = None,
    contain: bool = False,
) -> ProcessOutput:
    """Run ``argv`` in its own process group; on timeout (or cancellation) kill the whole group.

    The result comes when the process exits: its background jobs get EXIT_GRACE
    seconds to finish writing, then the group is killed. With ``contain`` (on
    Linux) the command runs under ``reaper.py``, which also kills what left the
    group (``setsid``, double forks) when the command ends or times out.
    """
    make_undumpable()  # the child may not read this server's environment (/proc/<pid>/environ)
    started = time.perf_counter()
    contained = contain and CAN_CONTAIN
    if contained:
        argv = [sys.executable, "-I", "-S", REAPER, *argv]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Sink(max_output), _Sink(max_output)
    readers = asyncio.gather(out.collect(proc.stdout), err.collect(proc.stderr))
    timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()
        if not await _exited(proc, timeout, functools.partial(_report, started, out, err)):
            timed_out = True
            if contained:  # the reaper kills every descendant, then exits; the group kill below is the fallback
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                await _exited(proc, 5)
            _kill_group(proc.pid)
            await _exited(proc, 5)
        if not await _drain(readers, EXIT_GRACE):
            _kill_group(proc.pid)  # background jobs still holding the pipes
            if not await _drain(readers, 1.0):
                # Something that left the group holds the pipes: keep what was read, stop reading.
                readers.cancel()
                out.cut = err.cut = True
                with contextlib.suppress(Exception):
                    proc._transport.close()  # release our ends of the pipes (no public API)
    finally:
        if proc.returncode is None:
            if contained:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                with contextlib.suppress(Exception):
                    await _exited(proc, 5)
            _kill_group(proc.pid)
            with contextlib.suppress(Exception):
                await _exited(proc, 5)
        # A child still holding a group id of its own, e.g. a background job, is killed too.
        _kill_group(proc.pid)
        if not readers.done():
            readers.cancel()
    return ProcessOutput(
        exit_code=None if timed_out else proc.returncode,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.cut,
        stderr_truncated=err.cut,
        timed_out=timed_out,
        duration=time.perf_counter() - started,
    )
