"""Race-free opening and hard links: what a tool returns is the file the checked path names, never another.

A second process flips a folder inside the root between a real folder and a
symlink to a folder outside, as fast as it can, while thousands of reads and
writes go through the tools; nothing from outside may come back, and nothing
may be written outside. Hard links to secrets (by identity, by a hidden twin, by
their content) are refused by every tool that returns content.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

CANARY = "CANARY-OUTSIDE-7f3a"
READS = 5000
PARALLEL = 16

FLIPPER = """
import os, sys
root, outside = sys.argv[1], sys.argv[2]
flip, parked = os.path.join(root, "flip"), os.path.join(root, ".parked")
while True:
    try:
        os.rename(flip, parked)          # the real folder steps aside ...
        os.symlink(outside, flip)        # ... and a symlink to the outside takes its name
        os.unlink(flip)
        os.rename(parked, flip)          # then the real folder comes back
    except OSError:
        pass
"""


@pytest.fixture
def flipping(repo: Path, outside: Path) -> Iterator[Path]:
    """``repo/flip`` (holding data.txt) flipping between a folder and a symlink to ``outside`` (holding the canary)."""
    (repo / "flip").mkdir()
    (repo / "flip" / "data.txt").write_text("inside\n" * 3)
    (outside / "data.txt").write_text(f"{CANARY}\n" * 3)
    (outside / f"{CANARY}.txt").write_text("a name that must not be listed\n")
    proc = subprocess.Popen([sys.executable, "-c", FLIPPER, str(repo), str(outside)])
    try:
        yield repo / "flip"
    finally:
        proc.kill()
        proc.wait()


def returned_text(result) -> str:
    parts = [c.text for c in result.content if hasattr(c, "text")]
    if result.structured_content:
        parts.append(str(result.structured_content))
    return "\n".join(parts)


async def test_a_folder_flipping_to_a_symlink_leaks_nothing_over_5000_reads(files_client, flipping, outside, repo):
    """Every read and list tool, the resource and the prompt, 5,000 calls in all, while the folder flips."""
    calls = [
        ("read_file", {"path": "flip/data.txt"}),
        ("tail", {"path": "flip/data.txt", "lines": 2}),
        ("read_many_files", {"paths": ["flip/data.txt"]}),
        ("concat_files", {"paths": ["flip/data.txt"]}),
        ("file_info", {"path": "flip/data.txt"}),
        ("edit_file", {"path": "flip/data.txt", "edits": [{"old_text": "x", "new_text": "y"}], "dry_run": True}),
        ("copy_file", {"source": "flip/data.txt", "destination": "copied.txt", "overwrite": True}),
        ("grep", {"pattern": "[A-Z]", "path": "flip/data.txt"}),
        ("grep", {"pattern": "[A-Z]", "path": "flip"}),
        ("list_directory", {"path": "flip"}),
        ("directory_tree", {"path": "flip"}),
        ("glob", {"pattern": "*.txt", "path": "flip"}),
        ("concat_files", {"paths": ["flip"]}),
    ]
    leaks: list[str] = []
    served = 0

    async with files_client(categories=["read", "search", "write"], use_ripgrep="never") as client:

        async def one(i: int) -> None:
            nonlocal served
            kind = i % (len(calls) + 2)
            if kind == len(calls):
                try:
                    text = (await client.read_resource("file:///flip/data.txt")).contents[0].text
                except MCPError:
                    return
            elif kind == len(calls) + 1:
                try:
                    prompt = await client.get_prompt("explain_file", {"path": "flip/data.txt"})
                except MCPError:
                    return
                text = prompt.messages[0].content.text
            else:
                tool, args = calls[kind]
                result = await client.call_tool(tool, args)
                text = returned_text(result)
                if tool == "copy_file" and not result.is_error:
                    text += (repo / "copied.txt").read_text()
                served += not result.is_error
            if CANARY in text:
                leaks.append(text[:200])

        for start in range(0, READS, PARALLEL):
            async with anyio.create_task_group() as tg:
                for i in range(start, min(start + PARALLEL, READS)):
                    tg.start_soon(one, i)
    assert leaks == [], f"{len(leaks)} of {READS} calls returned the file outside the roots: {leaks[:3]}"
    assert served > READS // 50  # the race did not just refuse everything (about 1 in 10 lands on the folder)
    assert sorted(p.name for p in outside.iterdir()) == [f"{CANARY}.txt", "data.txt", "secret.txt"]


async def test_writes_through_a_flipping_folder_never_land_outside(files_client, flipping, outside):
    async with files_client(categories=["read", "write"]) as client:
        for start in range(0, 480, PARALLEL):
            async with anyio.create_task_group() as tg:
                for i in range(start, start + PARALLEL):
                    tool, args = [
                        ("write_file", {"path": f"flip/w{i}.txt", "content": "x", "create_dirs": False}),
                        ("append_file", {"path": "flip/data.txt", "content": "more\n"}),
                        ("edit_file", {"path": "flip/data.txt", "edits": [{"old_text": "more", "new_text": "m"}]}),
                        ("mkdir", {"path": f"flip/d{i}"}),
                        ("delete_file", {"path": f"flip/w{i - 4}.txt"}),
                    ][i % 5]
                    tg.start_soon(client.call_tool, tool, args)
    assert sorted(p.name for p in outside.iterdir()) == [f"{CANARY}.txt", "data.txt", "secret.txt"]
    assert (outside / "data.txt").read_text() == f"{CANARY}\n" * 3


# -- hard links ----------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folder))
    return folder


KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY}\n-----END OPENSSH PRIVATE KEY-----\n"


async def content_everywhere(client, path: str) -> list[str]:
    """What every content-returning tool, the resource and the prompt give for ``path`` (error texts included)."""
    out = []
    for tool, args in [
        ("read_file", {"path": path}),
        ("tail", {"path": path}),
        ("read_many_files", {"paths": [path]}),
        ("concat_files", {"paths": [path]}),
        ("edit_file", {"path": path, "edits": [{"old_text": "zzz", "new_text": "y"}], "dry_run": True}),
        ("append_file", {"path": path, "content": ""}),
        ("copy_file", {"source": path, "destination": "copy-of-link", "overwrite": True}),
        ("grep", {"pattern": "CANARY", "path": "."}),
        ("grep", {"pattern": "CANARY", "path": path}),
    ]:
        out.append(returned_text(await client.call_tool(tool, args)))
    for reader in (
        lambda: client.read_resource(f"file:///{path}"),
        lambda: client.get_prompt("explain_file", {"path": path}),
    ):
        try:
            out.append(str(await reader()))
        except MCPError as exc:
            out.append(str(exc))
    return out


@pytest.mark.parametrize("engine", ["always", "never"])
async def test_a_hard_link_to_a_home_secret_is_refused_everywhere(files_client, repo, home, engine):
    key = home / ".ssh" / "id_ed25519"
    key.write_text("plain words, no header: only its identity gives it away " + CANARY + "\n")
    os.link(key, repo / "notes.txt")
    async with files_client(categories=["read", "search", "write"], use_ripgrep=engine) as client:
        texts = await content_everywhere(client, "notes.txt")
        assert "hard link to a secret file in the home folder" in await fail(client, "read_file", path="notes.txt")
    assert not any(CANARY in t for t in texts), [t[:200] for t in texts if CANARY in t]
    assert not (repo / "copy-of-link").exists()


async def test_a_hard_link_holding_key_material_is_refused(files_client, repo, outside):
    elsewhere = outside / "deploy_key"
    elsewhere.write_text(KEY)
    os.link(elsewhere, repo / "harmless.txt")
    async with files_client(categories=["read", "search", "write"]) as client:
        texts = await content_everywhere(client, "harmless.txt")
        assert "holds key material" in await fail(client, "read_file", path="harmless.txt")
    assert not any(CANARY in t for t in texts)


async def test_a_hard_link_to_a_deny_listed_file_is_refused(files_client, repo):
    (repo / ".env").write_text(f"TOKEN={CANARY}\n")
    os.link(repo / ".env", repo / "src" / "config.txt")
    async with files_client(categories=["read", "search", "write"]) as client:
        texts = await content_everywhere(client, "src/config.txt")
        assert "hard link to '.env'" in await fail(client, "read_file", path="src/config.txt")
    assert not any(CANARY in t for t in texts)


async def test_ordinary_hard_links_are_still_read(files_client, repo):
    (repo / "a.txt").write_text("shared words\n")
    os.link(repo / "a.txt", repo / "b.txt")
    async with files_client() as client:
        assert (await call(client, "read_file", path="b.txt"))["content"] == "     1  shared words\n"
        grep = await call(client, "grep", pattern="shared", literal=True)
        assert [f["path"] for f in grep["files"]] == ["a.txt", "b.txt"]
