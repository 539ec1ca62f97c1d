"""How long the command line takes to answer when it serves nothing: ``nexus --help`` and ``nexus server status``
(no shared server running, so it only asks), beside ``python -c pass`` on the same interpreter.

    .venv/bin/python bench/cli_speed.py            5 runs of each, medians
    .venv/bin/python bench/cli_speed.py --runs 1   one run of each (what the smoke test does)

Each run is a fresh process, after one untimed run that writes the bytecode caches (as an installed
package has them; ``PYTHONDONTWRITEBYTECODE`` is dropped for that reason). ``server status`` runs in an
empty HOME, so it finds no config and no server and answers "no shared server is running" (exit 3), as on
a machine where no client has started one yet.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NEXUS = Path(sys.executable).with_name("nexus")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "nexus --help": [str(NEXUS), "--help"],
    "nexus server status": [str(NEXUS), "server", "status"],
}
EXPECTED_STATUS = {"nexus server status": 3}  # no shared server runs: it says so and exits 3


def once(command: list[str], env: dict[str, str], expected: int) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != expected:
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (the median is shown)")
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="nexus-cli-speed-") as home:
        skipped = ("NEXUS_", "XDG_", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if not k.startswith(skipped)} | {"HOME": home}
        medians = {}
        for label, command in COMMANDS.items():
            once(command, env, EXPECTED_STATUS.get(label, 0))  # warm: bytecode written, files in the page cache
            times = [once(command, env, EXPECTED_STATUS.get(label, 0)) for _ in range(runs)]
            medians[label] = statistics.median(times)
    baseline = medians["python -c pass"]
    print(f"{'command':<22} {'median (s)':>10} {'x python -c pass':>17}   ({runs} runs each)")
    for label, median in medians.items():
        print(f"{label:<22} {median:>10.3f} {median / baseline:>17.1f}")


if __name__ == "__main__":
    main()
