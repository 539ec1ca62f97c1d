"""run_process without the reaper (macOS, or where prctl fails): the group kill alone ends a timed-out command."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_files.process import child_env, run_process
from tests.files.helpers import survivors

pytestmark = pytest.mark.anyio


async def test_without_the_reaper_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    duration = "30.3142"  # tells this test's processes from any other
    argv = ["sh", "-c", f"echo started; sleep {duration} | sleep {duration}"]
    out = await run_process(argv, cwd=tmp_path, env=child_env(), timeout=0.5, max_output=1000, contain=False)
    assert (out.timed_out, out.exit_code, out.stdout) == (True, None, b"started\n")
    assert survivors(duration) == []  # the shell and both sleeps: the whole group, not only its leader
