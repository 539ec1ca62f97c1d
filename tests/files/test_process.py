"""run_process: its own process group either way (so a timeout kills the whole group); a session only when asked."""

from __future__ import annotations

import os
import sys
import time

import pytest

from nexus_files.process import run_process

pytestmark = pytest.mark.anyio

IDS = [sys.executable, "-c", "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"]


@pytest.mark.parametrize("new_session", [True, False])
async def test_own_group_and_session_only_when_asked(tmp_path, new_session):
    env = dict(os.environ)
    out = await run_process(IDS, cwd=tmp_path, env=env, timeout=30, max_output=1000, new_session=new_session)
    pid, pgid, sid = map(int, out.stdout.split())
    assert pgid == pid
    assert (sid == pid) is new_session and (sid == os.getsid(0)) is not new_session


@pytest.mark.parametrize("new_session", [True, False])
async def test_a_timeout_kills_the_background_jobs_too(tmp_path, new_session):
    script = "sleep 30 & echo $!; wait"
    out = await run_process(
        ["sh", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout=0.5, max_output=1000, new_session=new_session
    )
    assert out.timed_out
    background = int(out.stdout.split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(background, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the background job {background} outlived the timeout")
