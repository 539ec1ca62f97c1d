"""bench/cli_speed.py keeps running: one run of each command, every row printed.

Not a timing test: no figure is compared with anything.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cli_speed.py"


def test_one_run_prints_every_row() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--runs", "1"], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for label in ("python -c pass", "nexus --help", "nexus server status"):
        assert re.search(rf"^{re.escape(label)} +\d+\.\d{{3}} +\d+\.\d$", proc.stdout, re.M), proc.stdout
