"""Break each documented behaviour in turn and check that a test notices: a hand-written mutation testing run.

    scripts/mutate                 every mutation (about 15 minutes on the 2-core machine)
    scripts/mutate ID [ID ...]     only these
    scripts/mutate --list          the mutations, one a line
    scripts/mutate --check         only check that every snippet occurs exactly once (what CI runs, via pytest)

Each mutation replaces one exact snippet of one file, runs the few tests named to kill it
(``pytest -x -q`` with a timeout), and restores the file. The files are mutated in place (the
virtualenv's editable installs, and the servers the tests start, import this checkout) and always
restored, in a ``finally`` and on SIGINT/SIGTERM; a file with uncommitted changes is refused. A
snippet that no longer occurs exactly once is STALE: the list must follow the code. Exit status 1
when a mutation survived or is stale. Stdlib only; logs go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 600  # seconds for one mutation's tests; a hang counts as killed (the tests did not pass)


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str  # relative to the checkout
    original: str  # must occur exactly once in the file
    replacement: str
    tests: tuple[str, ...]  # pytest node ids or files that must fail
    behaviour: str  # the documented behaviour it breaks


def m(id: str, file: str, original: str, replacement: str, tests: str, behaviour: str) -> Mutation:
    return Mutation(id, file, original, replacement, tuple(tests.split()), behaviour)


BRIDGE = "plugins/nexus_bridge/nexus_bridge/upstream.py"
MEMORY = "plugins/nexus_memory/nexus_memory/"
BT = "tests/bridge/test_bridge.py::"

MUTATIONS: list[Mutation] = [
    # -- the list -------------------------------------------------------------------------------
    m(
        "bridge-no-ping-task",
        BRIDGE,
        "helpers.start_soon(self._ping, client)",
        "pass",
        BT + "test_a_hung_upstream_is_noticed_by_its_pings_and_replaced",
        "the bridge pings each upstream every ping_interval",
    ),
    m(
        "bridge-ping-failure-kept",
        BRIDGE,
        "                self.lost(client)\n                return",
        "                return",
        BT + "test_a_hung_upstream_is_noticed_by_its_pings_and_replaced",
        "an unanswered ping drops the connection and reconnects",
    ),
]


def check(mutations: list[Mutation]) -> list[str]:
    """The mutations whose snippet does not occur exactly once (or whose test files are gone)."""
    stale = []
    for mut in mutations:
        path = ROOT / mut.file
        count = path.read_text(encoding="utf-8").count(mut.original) if path.is_file() else 0
        missing = [t for t in mut.tests if not (ROOT / t.split("::")[0]).is_file()]
        if count != 1 or missing:
            stale.append(f"{mut.id}: snippet occurs {count} times in {mut.file}; missing tests {missing}")
    return stale


def run_one(mut: Mutation) -> tuple[str, float]:
    """Apply, test, restore: KILLED (a test failed or hung), SURVIVED (every test passed) or ERROR."""
    path = ROOT / mut.file
    original = path.read_text(encoding="utf-8")
    started = time.monotonic()
    try:
        path.write_text(original.replace(mut.original, mut.replacement, 1), encoding="utf-8")
        returncode, _ = pytest(["-x", *mut.tests], TIMEOUT)
    finally:
        path.write_text(original, encoding="utf-8")
    return verdict(returncode), time.monotonic() - started


def pytest(args: list[str], timeout: float) -> tuple[int | None, str]:
    """Run pytest in a process group of its own, so that a timeout also ends the servers it started.
    The exit status is None after a timeout."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        return None, ""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def verdict(returncode: int | None) -> str:
    if returncode is None:
        return "KILLED"  # a hang: the tests did not pass
    if returncode == 0:
        return "SURVIVED"
    if returncode in (4, 5):  # a usage error or no test collected: the named tests are wrong, not killing
        return "ERROR"
    return "KILLED"  # 1: a test failed; 2 or 3: collection or pytest itself broke on the mutated code


def baseline(mutations: list[Mutation]) -> bool:
    """Every named test passes on the unmutated code: else a kill would prove nothing."""
    tests = sorted({t for mut in mutations for t in mut.tests})
    print(f"baseline: {len(tests)} tests on the unmutated code ...", file=sys.stderr, flush=True)
    returncode, out = pytest(tests, TIMEOUT * 2)
    if returncode != 0:
        print(out[-4000:], file=sys.stderr)
    return returncode == 0


def uncommitted(files: set[str]) -> list[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--", *files], cwd=ROOT, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def _restore_on_signal(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds through run_one's finally, which restores the file


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations")
    parser.add_argument("--check", action="store_true", help="only check that every snippet occurs once")
    parser.add_argument("--no-baseline", action="store_true", help="skip running the tests unmutated first")
    args = parser.parse_args(argv)
    chosen = [mut for mut in MUTATIONS if not args.ids or mut.id in args.ids]
    if unknown := set(args.ids) - {mut.id for mut in MUTATIONS}:
        parser.error(f"unknown mutation ids: {', '.join(sorted(unknown))}")
    if args.list:
        for mut in chosen:
            print(f"{mut.id}\t{mut.file}\t{mut.behaviour}")
        return 0
    stale = check(chosen)
    for line in stale:
        print(f"STALE     {line}")
    if args.check:
        return 1 if stale else 0
    if dirty := uncommitted({mut.file for mut in chosen}):
        print("refusing to mutate files with uncommitted changes:\n" + "\n".join(dirty), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _restore_on_signal)
    if not args.no_baseline and not baseline(chosen):
        print("the named tests fail on the unmutated code: fix them first", file=sys.stderr)
        return 2
    stale_ids = {line.split(":")[0] for line in stale}
    started, survivors, killed = time.monotonic(), [], 0
    for n, mut in enumerate(m for m in chosen if m.id not in stale_ids):
        print(f"[{n + 1}/{len(chosen) - len(stale_ids)}] {mut.id} ...", file=sys.stderr, flush=True)
        outcome, seconds = run_one(mut)
        print(f"{outcome:<9} {mut.id} ({seconds:.0f} s): {mut.behaviour}", flush=True)
        if outcome == "KILLED":
            killed += 1
        else:
            survivors.append(f"{mut.id} ({outcome})")
    total = killed + len(survivors) + len(stale)
    print(
        f"\n{killed} of {total} mutations killed ({100 * killed / max(total, 1):.0f}%), "
        f"{len(survivors)} survived, {len(stale)} stale, in {time.monotonic() - started:.0f} s"
    )
    if survivors:
        print("survivors: " + ", ".join(survivors))
    return 1 if survivors or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
