"""Hostile paths against every tool, resource and prompt of the files plugin that takes a path.

Every secret the paths aim at holds the same canary: a file outside the roots,
the home folder's key (by a symlink and by a hard link), deny-listed files
inside the root, the server's own environment. Whatever each call returns, a
result or an error, must not hold the canary, and nothing outside the root (or
hidden inside it) may change.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

CANARY = "FUZZ-CANARY-91d4"
PASSWD = "root:x:0:0"


@pytest.fixture
def world(repo: Path, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"{CANARY} home key\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"[default]\naws_secret_access_key = {CANARY}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FUZZ_SECRET", CANARY)  # the server's own environment
    (outside / "secret.txt").write_text(f"{CANARY} outside\n")
    (repo / ".env").write_text(f"TOKEN={CANARY}\n")
    (repo / "src" / ".env.local").write_text(f"TOKEN={CANARY}\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "key.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{CANARY}\n")
    (repo / "home_link").symlink_to(home / ".ssh")
    (repo / "aws_link").symlink_to(home / ".aws" / "credentials")
    (repo / "proc_link").symlink_to("/proc/self")
    (repo / "loop").symlink_to(repo / "loop")
    (repo / "dots").symlink_to("../../..")
    os.link(home / ".ssh" / "id_ed25519", repo / "hard")
    return {"repo": repo, "outside": outside, "home": home}


def hostile(world: dict[str, Path]) -> list[str]:
    repo, outside, home = world["repo"], world["outside"], world["home"]
    return [
        "../outside/secret.txt", "../../outside/secret.txt", str(outside / "secret.txt"), str(outside),
        f"{repo}/../outside/secret.txt", "src/../../outside/secret.txt", "escape", "escape_dir",
        "escape_dir/secret.txt", "escape_dir/../outside/secret.txt", "dots/etc/passwd", "dots",
        "/etc/passwd", "/etc/shadow", "/etc", "/", "//etc//passwd", "/" * 50 + "etc/passwd", "/./etc/../etc/passwd",
        "~", "~/.ssh/id_ed25519", "~/.aws/credentials", "~root/.bashrc", str(home), str(home / ".ssh"),
        "home_link/id_ed25519", "home_link", "aws_link", "hard",
        "/proc/self/environ", "/proc/self/cmdline", f"/proc/{os.getpid()}/environ", "/proc/self/root/etc/passwd",
        "/proc/self/cwd", "proc_link/environ", "/sys/kernel", "/dev/stdin", "/dev/fd/0", "/dev/zero",
        ".env", "./.env", "src/../.env", "src/.env.local", "sub/key.pem", "sub", "sub/../sub/key.pem",
        "loop", "loop/x", "README.md/../.env",
        "", " ", ".", "..", "...", "a\x00b", "README.md\x00../../etc/passwd", "x" * 5000, "a/" * 2000 + "b",
        "%2e%2e/outside/secret.txt", "..%2foutside%2fsecret.txt", "\u2024\u2024/outside/secret.txt",
        "\uff0e\uff0e/outside/secret.txt", "..\u2215outside\u2215secret.txt", "\u202e/txt.terces/edistuo/..",
        "..\\outside\\secret.txt", "file:///etc/passwd", "\\\\?\\C:\\Windows", "-rf", "--help", "*", "**/.env",
        ".e*", "{.env,README.md}", "$HOME/.ssh/id_ed25519", "`id`", "README.md\n../.env",
    ]  # fmt: skip


def reading_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("read_many_files", {"paths": [path]}),
        ("tail", {"path": path}),
        ("file_info", {"path": path}),
        ("list_directory", {"path": path, "depth": 3, "include_ignored": True}),
        ("directory_tree", {"path": path, "include_ignored": True}),
        ("glob", {"pattern": "*", "path": path, "include_ignored": True}),
        ("grep", {"pattern": "FUZZ|root", "path": path, "include_ignored": True}),
        ("concat_files", {"paths": [path], "include_ignored": True}),
        ("edit_file", {"path": path, "edits": [{"old_text": "zz", "new_text": "y"}], "dry_run": True}),
        ("copy_file", {"source": path, "destination": "copied.txt", "overwrite": True}),
        ("run_command", {"command": "cat README.md", "cwd": path}),
        ("run_python", {"code": "import os; print(os.listdir('.'))", "cwd": path}),
        ("git_status", {"repo": path}),
        ("git_log", {"path": path}),
        ("git_diff", {"path": path}),
        ("git_show", {"path": path}),
        ("git_blame", {"path": path}),
        ("git_branches", {"repo": path}),
    ]


def writing_calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("write_file", {"path": path, "content": "overwritten\n"}),
        ("append_file", {"path": path, "content": "appended\n"}),
        ("edit_file", {"path": path, "edits": [{"old_text": CANARY, "new_text": "gone"}]}),
        ("mkdir", {"path": path}),
        ("copy_file", {"source": "README.md", "destination": path, "overwrite": True}),
        ("rename", {"source": path, "destination": "moved-away", "overwrite": True}),
        ("rename", {"source": "docs/guide.md", "destination": path, "overwrite": True}),
        ("delete_file", {"path": path}),
    ]


def snapshot(*folders: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for folder in folders:
        for parent, dirs, files in os.walk(folder):
            for name in dirs + files:
                full = os.path.join(parent, name)
                out[full] = os.readlink(full).encode() if os.path.islink(full) else b"" if name in dirs else b"f"
                if os.path.isfile(full) and not os.path.islink(full):
                    with open(full, "rb") as f:
                        out[full] = f.read()
    return out


def text_of(result: Any) -> str:
    parts = [getattr(c, "text", "") or "" for c in result.content]
    if result.structured_content:
        parts.append(str(result.structured_content))
    return "\n".join(parts)


async def test_hostile_paths_leak_nothing_through_any_tool_resource_or_prompt(files_client, world):
    repo, outside, home = world["repo"], world["outside"], world["home"]
    protected = snapshot(outside, home) | {
        str(p): p.read_bytes() for p in (repo / ".env", repo / "src" / ".env.local", repo / "sub" / "key.pem")
    }
    paths = hostile(world)
    leaks: list[str] = []
    calls = 0

    def check(where: str, text: str) -> None:
        if CANARY in text or PASSWD in text:
            leaks.append(f"{where}: {text[:160]!r}")

    config = {"categories": ["read", "search", "write", "execute", "vcs", "python"], "allowed_commands": ["cat"]}
    async with files_client(**config) as client:
        for path in paths:
            for tool, args in reading_calls(path):
                calls += 1
                check(f"{tool}({path[:40]!r})", text_of(await client.call_tool(tool, args)))
            for read in (
                lambda p: client.read_resource(f"file:///{p}"),
                lambda p: client.get_prompt("explain_file", {"path": p}),
                lambda p: client.get_prompt("review_diff", {"repo": p}),
            ):
                calls += 1
                try:
                    check(f"resource/prompt({path[:40]!r})", str(await read(path)))
                except MCPError as exc:
                    check(f"resource/prompt({path[:40]!r})", str(exc))
        for path in (p for p in paths if p.count("/") < 100):  # a 2000-deep mkdir would outlive the test's cleanup
            for tool, args in writing_calls(path):
                calls += 1
                check(f"{tool}({path[:40]!r})", text_of(await client.call_tool(tool, args)))
    assert calls > 2000
    assert leaks == [], f"{len(leaks)} leaks:\n" + "\n".join(leaks[:20])
    after = snapshot(outside, home) | {
        str(p): p.read_bytes() for p in (repo / ".env", repo / "src" / ".env.local", repo / "sub" / "key.pem")
    }
    assert without_locks(after, home) == protected


def without_locks(files: dict[str, bytes], home: Path) -> dict[str, bytes]:
    """``files`` without the lock files that writes inside the roots take, and the folders that hold them:
    Nexus's own bookkeeping, which follows the home folder (``nexus_core.fs.locks.lock_path``)."""
    locks = home / ".local" / "state" / "nexus" / "run" / "locks"
    return {k: v for k, v in files.items() if not (Path(k) in locks.parents or Path(k).is_relative_to(locks))}
