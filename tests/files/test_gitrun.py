"""run_git: git's own process group, killed on timeout, on cancellation and after git exits; output capped."""

from __future__ import annotations

import os
import sys
import time

import anyio
import pytest

from nexus_files.gitrun import run_git

pytestmark = pytest.mark.anyio
ENV = dict(os.environ)


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


async def test_its_own_process_group_in_our_session(tmp_path):
    ids = [sys.executable, "-c", "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"]
    out = await run_git(ids, cwd=str(tmp_path), env=ENV, timeout=30, cap=1000)
    pid, pgid, sid = map(int, out.stdout.split())
    assert out.exit_code == 0 and pgid == pid and sid == os.getsid(0)


async def test_exit_code_stderr_and_the_cap(tmp_path):
    script = "import sys; sys.stdout.write('x' * 200000); sys.stderr.write('oops'); sys.exit(3)"
    out = await run_git([sys.executable, "-c", script], cwd=str(tmp_path), env=ENV, timeout=30, cap=1000)
    assert (out.exit_code, out.stdout, out.stderr) == (3, b"x" * 1000, b"oops")


async def test_a_timeout_kills_the_whole_group(tmp_path):
    out = await run_git(["sh", "-c", "sleep 30 & echo $!; wait"], cwd=str(tmp_path), env=ENV, timeout=0.5, cap=1000)
    assert out.exit_code is None
    assert gone(int(out.stdout.split()[0]))


async def test_what_git_leaves_running_is_killed(tmp_path):
    """A background job that keeps the pipes open gets EXIT_GRACE, then the group is killed."""
    started = time.monotonic()
    out = await run_git(["sh", "-c", "sleep 30 & echo $!"], cwd=str(tmp_path), env=ENV, timeout=30, cap=1000)
    assert out.exit_code == 0 and time.monotonic() - started < 10
    assert gone(int(out.stdout.split()[0]))


async def test_cancelling_the_call_kills_the_group(tmp_path):
    marker = tmp_path / "pid"
    script = f"echo $$ > {marker}; sleep 30"
    with anyio.move_on_after(1):
        await run_git(["sh", "-c", script], cwd=str(tmp_path), env=ENV, timeout=30, cap=1000)
    assert gone(int(marker.read_text()))
