"""bench/peers.py keeps running: its smoke mode prints every row, with figures or the reason a peer was skipped.

Not a timing test: no figure is compared with anything.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "peers.py"
ROWS = [
    "read_file 10 KB",
    "git_status, small repository",
    "search_knowledge, 100 entities",
    "memory search, 20 notes",
    "glob, 200 files",
    "trivial tool call (echo)",
    "read_file 10 KB (first 2000 lines)",
    "read_file 100 KB (first 2000 lines)",
    "grep, 200 files",
    "search_knowledge, 50 entities",
    "recall_memories, 50 memories",
]
FIGURES = r"\d+\.\d\d / \d+\.\d\d"


def test_smoke_mode_prints_every_row(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--cache", str(tmp_path / "peers")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    variants = "nexus variant standalone: nexus serve --standalone\nnexus variant relay: nexus serve\n"
    tables = proc.stdout.split(variants, 1)[1]
    assert "| standalone p50 / p95 ms | standalone / peer | relay p50 / p95 ms | relay / peer |" in tables
    for work in ROWS:
        line = next((ln for ln in tables.splitlines() if ln.startswith(f"| {work} |")), None)
        assert line is not None, f"row {work!r} missing from:\n{tables}"
        peer, standalone, _, relay = line.split(" | ")[2:6]
        assert re.fullmatch(FIGURES, standalone) and re.fullmatch(FIGURES, relay), line  # Nexus is always measured
        assert re.fullmatch(FIGURES, peer) or re.fullmatch(r"SKIPPED: .+", peer), line
    # The bare SDK server needs nothing installed: its row always has figures and a ratio.
    echo = next(ln for ln in tables.splitlines() if ln.startswith("| trivial tool call (echo) |"))
    assert re.search(rf"\| {FIGURES} \| {FIGURES} \| \*\*\d+\.\d\dx\*\* \| {FIGURES} \| \*\*\d+\.\d\dx\*\* \|$", echo)
