"""Running a subprocess without blocking the event loop: timeout, output caps, process-group kill."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Names that usually hold secrets; their variables never reach a child process.
SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|SESSION|COOKIE|"
    r"^AWS_|^AZURE_|^GCP_|^GOOGLE_APPLICATION|^DATABASE_URL$|^.*_DSN$|^NEXUS_",
    re.IGNORECASE,
)
# Variables that make a shell or interpreter run code before the command.
STARTUP_HOOKS = {"BASH_ENV", "ENV", "PROMPT_COMMAND", "PYTHONSTARTUP", "PYTHONINSPECT", "LD_PRELOAD", "LD_AUDIT"}


def scrubbed_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if not SECRET_NAME.search(k) and k not in STARTUP_HOOKS}


@dataclass
class ProcessOutput:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    duration: float


async def _collect(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    """Read everything (so the child never blocks on a full pipe) but keep only ``cap`` bytes."""
    kept = bytearray()
    cut = False
    while chunk := await stream.read(65536):
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            cut = True
    return bytes(kept), cut


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout: float,
    max_output: int,
    stdin: bytes | None = None,
) -> ProcessOutput:
    """Run ``argv`` in its own process group; on timeout (or cancellation) kill the whole group."""
    started = time.perf_counter()
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
    readers = asyncio.gather(_collect(proc.stdout, max_output), _collect(proc.stderr, max_output))
    timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
            await proc.wait()
        # Grandchildren that left the group could hold the pipes open; do not wait on them forever.
        try:
            (out, out_cut), (err, err_cut) = await asyncio.wait_for(asyncio.shield(readers), 2.0)
        except TimeoutError:
            readers.cancel()
            out, out_cut, err, err_cut = b"", True, b"", True
    finally:
        if proc.returncode is None:
            _kill_group(proc.pid)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
        # A child still holding a group id of its own, e.g. a background job, is killed too.
        _kill_group(proc.pid)
    return ProcessOutput(
        exit_code=None if timed_out else proc.returncode,
        stdout=out,
        stderr=err,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        timed_out=timed_out,
        duration=time.perf_counter() - started,
    )
