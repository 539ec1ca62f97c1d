"""Runs a benchmark at its smoke size, as a user would, in a temporary folder of the test's own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import leftovers

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def run_bench(tmp_path: Path) -> Callable[..., str]:
    """``run_bench("name.py", *args)``: its stdout; fails on a non-zero exit or a server still running after it."""

    def run(script: str, *args: str, timeout: float = 300) -> str:
        env = os.environ | {"TMPDIR": str(tmp_path), "ANONYMIZED_TELEMETRY": "False"}
        proc = subprocess.run(
            [sys.executable, str(BENCH / script), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        deadline = time.monotonic() + 15
        while (left := leftovers(str(tmp_path))) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, f"{script} left processes running: {left}"
        return proc.stdout

    return run
