"""run_command reads each argument as the command will: per-command specs, failing closed, and nothing outlives it.

Each attack here ran on the string-matching checks before: an abbreviated long
option, a value attached to combined short options, a list of files read from a
file, a walker told to follow symlinks, a detached process. Each must now be
refused with its reason, leave no trace, and the ordinary uses must still run.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from nexus_core.host.hardening import make_undumpable
from tests.files.helpers import alive, call, fail

pytestmark = pytest.mark.anyio

EXEC = ["read", "execute"]
ALLOWED = [
    "sort", "wc", "du", "grep", "find", "rg", "fd", "ls", "cp", "tee", "touch", "split", "cat", "head", "echo",
    "nice", "timeout", "setsid", "nohup", "sleep", "less", "cut", "uniq", "mkdir", "gzip",
]  # fmt: skip


@pytest.fixture
def evil(repo: Path, tmp_path: Path) -> Path:
    """An executable in the root that leaves a marker when anything runs it; returns the marker's path."""
    marker = tmp_path / "RAN"
    script = repo / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    (repo / "big.txt").write_text("".join(f"{i:07d} some text to sort\n" for i in range(60000, 0, -1)))
    (repo / "list0").write_bytes(str(repo.parent / "outside" / "secret.txt").encode() + b"\0")
    return marker


ATTACKS = [
    # (command, the reason the refusal must give)
    ("sort -S 64K --compress-prog=./evil.sh big.txt", "'sort --compress-program' runs a program"),
    ("sort -S 64K --compress=./evil.sh big.txt", "'sort --compress-program' runs a program"),
    ("sort -S 64K --compress-program ./evil.sh big.txt", "'sort --compress-program' runs a program"),
    ("sort --files0-from=list0", "'sort --files0-from' reads the names of files"),
    ("sort --files0=list0", "'sort --files0-from' reads the names of files"),
    ("wc --files0-from=list0", "'wc --files0-from' reads the names"),
    ("du --files0-from list0", "'du --files0-from' reads the names"),
    ("sort -uo{outside}/stolen README.md", "outside the allowed roots"),
    ("sort -o {outside}/stolen README.md", "outside the allowed roots"),
    ("sort --out={outside}/stolen README.md", "outside the allowed roots"),
    ("sort README.md -T {outside}", "outside the allowed roots"),
    ("sort --temporary-dir={outside} README.md", "outside the allowed roots"),
    ("grep -R secret .", "'grep -R' follows symlinks"),
    ("grep -rR secret .", "'grep -R' follows symlinks"),
    ("grep --dereference-recursive secret .", "'grep --dereference-recursive' follows symlinks"),
    ("grep --deref secret .", "'grep --dereference-recursive' follows symlinks"),
    ("grep -f {outside}/secret.txt README.md", "outside the allowed roots"),
    ("find -L . -name secret.txt", "'find -L' follows symlinks"),
    ("find . -follow -name secret.txt", "'find -follow' follows symlinks"),
    ("find . -name x -execdir ./evil.sh ';'", "'find -execdir' runs a program"),
    ("find . -name README.md -ok ./evil.sh ';'", "'find -ok' runs a program"),
    ("find . -fprint {outside}/stolen", "'find -fprint' writes a file"),
    ("find docs -newer {outside}/secret.txt", "outside the allowed roots"),
    ("find {outside}", "outside the allowed roots"),
    ("find . -frobnicate", "no test or action '-frobnicate'"),
    ("rg -L secret", "'rg -L' follows symlinks"),
    ("rg --follow secret", "'rg --follow' follows symlinks"),
    ("rg --pre ./evil.sh secret", "'rg --pre' runs a program"),
    ("rg --pre=./evil.sh secret", "'rg --pre' runs a program"),
    ("rg -z secret", "'rg -z' runs a program"),
    ("rg --fol secret", "'rg' has no option --fol"),  # ripgrep takes no abbreviations: no guessing either
    ("fd -L secret", "'fd -L' follows symlinks"),
    ("fd -x ./evil.sh", "'fd -x' runs a program"),
    ("fd --exec ./evil.sh", "'fd --exec' runs a program"),
    ("split --filter=./evil.sh big.txt", "'split --filter' runs a shell command"),
    ("split --fil=./evil.sh big.txt", "'split --filter' runs a shell command"),
    ("ls -L escape_dir", "'ls -L' follows symlinks"),
    ("ls --dereference escape_dir", "'ls --dereference' follows symlinks"),
    ("ls --deref escape_dir", "'ls --deref' is ambiguous"),
    ("cp -L escape_dir/secret.txt copy.txt", "'cp -L' follows symlinks"),
    ("cp README.md {outside}/stolen", "outside the allowed roots"),
    ("tee {outside}/stolen", "outside the allowed roots"),
    ("touch -r README.md ../outside/stolen", "outside the allowed roots"),
    ("cat --bogus README.md", "'cat' has no option --bogus"),
    ("ls --co", "'ls --co' is ambiguous"),
    ("head -Q README.md", "'head' has no option -Q"),
    ("setsid sleep 31.7", "'setsid' starts a process in a session of its own"),
    ("nohup sleep 31.7", "'nohup' keeps a process running"),
    ("nice -n 5 setsid sleep 31.7", "'setsid' starts a process in a session of its own"),
    ("timeout 5 nohup sleep 31.7", "'nohup' keeps a process running"),
    ("timeout -s KILL 5 sort --compress-prog=./evil.sh big.txt", "'sort --compress-program' runs a program"),
    ("less README.md", "'less' is a pager"),
    # walkers know nothing of deny_paths: a folder they go through may hold nothing hidden (src/.env here)
    ("grep -r NESTED src", "'src': the program goes through every file in it, and '.env' there is hidden"),
    ("grep --directories=recurse NESTED src", "and '.env' there is hidden"),
    ("grep -r NESTED", "'.': the program goes through every file in it"),
    ("rg NESTED", "'.': the program goes through every file in it"),
    ("rg -uuu NESTED src", "and '.env' there is hidden"),
    ("find . -name '.env'", "'.': the program goes through every file in it"),
    ("find s* -type f", "and '.env' there is hidden"),
    ("cp -r src {outside}/../repo/public", "and '.env' there is hidden"),
    ("du -a src", "and '.env' there is hidden"),
    ("ls -R src", "and '.env' there is hidden"),
    ("sleep 31.7 & echo hi", "background jobs ('&') are not allowed"),
    ("echo hi; disown", "'disown' changes the shell itself"),
]


@pytest.mark.parametrize(("command", "reason"), ATTACKS, ids=[a[0][:45] for a in ATTACKS])
async def test_what_arguments_mean_is_checked(files_client, repo, outside, evil, command, reason):
    command = command.format(outside=outside)
    async with files_client(categories=EXEC, allowed_commands=ALLOWED) as client:
        result = await client.call_tool("run_command", {"command": command})
    text = result.content[0].text
    assert result.is_error, text
    assert reason in text, text
    assert "top secret" not in text and "NESTED=" not in text
    assert not evil.exists() and not (repo / "public").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_a_glob_that_would_expand_to_an_option_is_refused(files_client, repo, evil):
    (repo / "docs" / "--compress-program=evil.sh").write_text("")
    async with files_client(categories=EXEC, allowed_commands=ALLOWED) as client:
        message = await fail(client, "run_command", command="sort *", cwd="docs")
    assert "would expand to '--compress-program=evil.sh'" in message


async def test_a_command_without_a_spec_runs_only_when_trusted(files_client, repo):
    async with files_client(categories=EXEC, allowed_commands=["expr"]) as client:
        message = await fail(client, "run_command", command="expr 6 \\* 7")
        assert "no argument spec for 'expr'" in message and "trusted_commands" in message
    async with files_client(categories=EXEC, trusted_commands=["expr"]) as client:
        assert (await call(client, "run_command", command="expr 6 \\* 7"))["stdout"] == "42\n"
        assert "outside the allowed roots" in await fail(client, "run_command", command="expr length /etc/passwd")


async def test_ordinary_uses_still_run(files_client, repo):
    async with files_client(categories=["read", "execute"], allowed_commands=ALLOWED) as client:
        for command, expected in [
            ("sort --rev -u src/pkg/util.py | head -1", "def helper(x):\n"),
            ("sort -u -o sorted.txt README.md && cat sorted.txt", "\n# Demo\nA demo project.\n"),
            ("grep -rn -e helper src/pkg | cut -d: -f1,2", "src/pkg/util.py:1\nsrc/pkg/util.py:5\n"),
            ("grep -c Hello src/app.py", "1\n"),
            ("find src/pkg docs -name '*.py' -type f | sort", "src/pkg/util.py\n"),
            ("find docs -name '*.md' -newer README.md", "docs/guide.md\n"),
            ("ls -1 --rev src", "pkg\napp.py\n"),
            ("cp -r src/pkg pkg-copy && ls pkg-copy", "util.py\n"),
            ("head -2 README.md", "# Demo\n\n"),
            ("wc -l src/app.py", "7 src/app.py\n"),
            ("mkdir -p out/deep && touch out/deep/x && ls out/deep", "x\n"),
            ("cp -v README.md out/copy.md > /dev/null && uniq out/copy.md | head -1", "# Demo\n"),
            ("timeout 5 nice -n 2 echo wrapped", "wrapped\n"),
            ("echo --not-an-option -L", "--not-an-option -L\n"),
        ]:
            result = await call(client, "run_command", command=command)
            assert (result["stdout"], result["exit_code"]) == (expected, 0), (command, result)


# -- processes: nothing outlives the call, nothing reads the server ----------------------


ESCAPE = """
import os, time
if os.fork() == 0:
    os.setsid()                       # a session of its own: out of the process group
    if os.fork() == 0:                # and double-forked: orphaned, then reparented
        os.execv("/bin/sleep", ["sleep", "{duration}"])
    os._exit(0)
print("started", flush=True)
time.sleep({wait})
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the reaper needs Linux (a child subreaper)")
@pytest.mark.parametrize("ends", ["timeout", "exit"])
async def test_a_detached_double_forked_child_does_not_outlive_the_call(files_client, ends):
    duration = "41.2718" if ends == "timeout" else "41.3141"  # tells this test's sleep from any other
    code = ESCAPE.format(duration=duration, wait=60 if ends == "timeout" else 0)
    async with files_client(categories=["read", "python"], command_timeout=30) as client:
        if ends == "timeout":
            assert "timed out" in await fail(client, "run_python", code=code, timeout=2)
        else:
            assert (await call(client, "run_python", code=code))["exit_code"] == 0
    deadline = time.monotonic() + 5
    while alive(duration) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = alive(duration)
    for pid in survivors:
        os.kill(pid, 9)
    assert survivors == []


PR_GET_DUMPABLE = 3


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_DUMPABLE is Linux's")
async def test_the_server_is_undumpable_once_it_runs_a_child(files_client):
    async with files_client(categories=EXEC, allowed_commands=["echo"]) as client:
        await call(client, "run_command", command="echo hi")
    assert ctypes.CDLL(None).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


READ_PARENT = """
import os, subprocess, sys
sys.path.insert(0, {root!r})
code = "open('/proc/%d/environ', 'rb').read()" % os.getpid()
before = subprocess.run([sys.executable, "-c", code], capture_output=True).returncode
from hardening import make_undumpable
assert make_undumpable()
after = subprocess.run([sys.executable, "-c", code], capture_output=True)
print(before, after.returncode, b"PermissionError" in after.stderr)
"""


def _nobody_python() -> str | None:
    """An interpreter the unprivileged user can run, to test as someone who is not root."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        path = Path(candidate)
        if path.exists() and all(os.stat(p).st_mode & stat.S_IXOTH for p in [path.resolve(), *path.resolve().parents]):
            return candidate
    return None


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_DUMPABLE is Linux's")
def test_an_undumpable_server_hides_its_environment_from_its_children() -> None:
    # The module (standard library only) is copied where the user nobody can read it: CI's checkout may sit
    # in a private folder.
    root = Path(tempfile.mkdtemp(prefix="nexus-undumpable-"))
    shutil.copy(sys.modules[make_undumpable.__module__].__file__ or "", root / "hardening.py")
    root.chmod(0o755)
    (root / "hardening.py").chmod(0o644)
    try:
        script = READ_PARENT.format(root=str(root))
        if os.getuid() != 0:
            out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        else:  # root reads any process's memory anyway: test as the unprivileged user
            python = _nobody_python()
            if python is None:
                pytest.skip("running as root and no interpreter the user nobody may run")

            def become_nobody() -> None:
                os.setgid(65534)
                os.setuid(65534)
                ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # setuid cleared the dumpable flag: start from a normal process

            out = subprocess.run(
                [python, "-c", script], capture_output=True, text=True, check=True, preexec_fn=become_nobody, cwd="/"
            )
    finally:
        shutil.rmtree(root)
    assert out.stdout.split() == ["0", "1", "True"], out
