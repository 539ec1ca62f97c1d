"""PathPolicy's race-free opening, deterministically: a folder swapped for a symlink after the check fails the open."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nexus_core import PathPolicy, PermissionDenied, Raced, write_at
from nexus_core.fs.safe_open import open_beneath, open_folder_beneath


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE\n")
    return root, outside


def swap_for_link(folder: Path, target: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".away"))
    folder.symlink_to(target)


def test_a_folder_swapped_after_the_check_is_not_followed(tree):
    root, outside = tree
    policy = PathPolicy([root])
    real = policy.resolve("a/f.txt")  # checked while a/ is a folder ...
    swap_for_link(root / "a", outside)  # ... then swapped, before the open
    with pytest.raises(Raced, match="changed while it was opened"):
        open_beneath(root, real)
    with pytest.raises(Raced):
        open_folder_beneath(root, real.parent)


def test_open_read_and_write_file_go_beneath_the_root(tree):
    root, outside = tree
    policy = PathPolicy([root])
    with policy.open_read("a/f.txt") as opened:
        assert opened.read() == b"inside\n" and opened.path == root / "a" / "f.txt" and opened.stat.st_size == 7
    assert policy.write_file("a/new.txt", "made\n") is True
    assert policy.write_file("a/new.txt", b"again\n") is False
    assert (root / "a" / "new.txt").read_text() == "again\n"
    with pytest.raises(FileExistsError):
        policy.write_file("a/new.txt", "x", overwrite=False)
    assert policy.write_file("b/c/d.txt", "deep\n", create_dirs=True) and (root / "b" / "c" / "d.txt").exists()
    with pytest.raises(FileNotFoundError):
        policy.write_file("e/f.txt", "x")
    os.mkfifo(root / "pipe")
    with pytest.raises(PermissionDenied, match="not a regular file"):
        policy.open_read("pipe")  # refused at once, not hung on the FIFO
    with pytest.raises(IsADirectoryError):
        policy.open_read("a")
    with policy.open_read("a", folders=True) as folder:
        assert folder.is_dir
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]


def test_a_symlink_planted_at_the_name_is_replaced_not_written_through(tree):
    root, outside = tree
    policy = PathPolicy([root])
    folder = open_folder_beneath(root, root / "a")
    try:
        (root / "a" / "f.txt").unlink()
        (root / "a" / "f.txt").symlink_to(outside / "f.txt")  # planted after the folder was opened
        write_at(folder, "f.txt", b"written\n")
    finally:
        os.close(folder)
    assert (outside / "f.txt").read_text() == "OUTSIDE\n"
    assert not (root / "a" / "f.txt").is_symlink() and (root / "a" / "f.txt").read_text() == "written\n"
    assert policy.allows(root / "a" / "f.txt")


def test_hard_links_to_secrets_are_refused_and_others_read(tree, tmp_path, monkeypatch):
    root, outside = tree
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("no header, only its identity\n")
    (home / ".config" / "gcloud").mkdir(parents=True)
    (home / ".config" / "gcloud" / "token.db").write_text("nested secret\n")
    monkeypatch.setenv("HOME", str(home))
    (outside / "k").write_text("-----BEGIN RSA PRIVATE KEY-----\nabc\n")
    (root / ".env").write_text("TOKEN=1\n")
    os.link(home / ".ssh" / "id_ed25519", root / "a" / "by-identity")
    os.link(home / ".config" / "gcloud" / "token.db", root / "a" / "nested")
    os.link(outside / "k", root / "a" / "by-content")
    os.link(root / ".env", root / "a" / "twin")
    os.link(root / "a" / "f.txt", root / "a" / "g.txt")
    policy = PathPolicy([root])
    for name, reason in [
        ("by-identity", "hard link to a secret file in the home folder"),
        ("nested", "hard link to a secret file in the home folder"),
        ("by-content", "holds key material"),
        ("twin", "is a hard link to '.env', which is hidden"),
    ]:
        with pytest.raises(PermissionDenied, match=reason):
            policy.open_read(f"a/{name}")
    with policy.open_read("a/g.txt") as opened:
        assert opened.read() == b"inside\n"
    with pytest.raises(PermissionDenied, match="secret list"):
        PathPolicy([root]).open_read(".env")
    assert PathPolicy([root], deny_secrets=False).open_read("a/twin").read() == b"TOKEN=1\n"


def test_open_read_as_written_opens_what_open_read_opens_and_refuses_what_it_refuses(tree):
    root, outside = tree
    (root / "b").mkdir()
    (root / "b" / "notes.txt").write_text("notes\n")
    (root / "vault").mkdir()
    (root / "vault" / "plan.txt").write_text("plan\n")
    (root / "vault" / "alone.txt").write_text("one name only\n")
    (root / "via").symlink_to(root / "b")  # inside the roots: followed, as open_read follows it
    (root / "plan-link.txt").symlink_to(root / "vault" / "plan.txt")  # to a hidden file
    (root / "out").symlink_to(outside)
    os.link(root / "vault" / "plan.txt", root / "b" / "twin.txt")  # a hard link to the hidden file
    policy = PathPolicy([root], ["vault/"])
    for rel in ("a/f.txt", "b/notes.txt", "via/notes.txt"):
        with policy.open_read(rel) as expected, policy.open_read_as_written(root / rel) as opened:
            assert (opened.path, opened.read()) == (expected.path, expected.read())
    for rel in ("vault/alone.txt", "vault/plan.txt", "plan-link.txt", "out/f.txt", "b/twin.txt", "b"):
        with pytest.raises((PermissionDenied, IsADirectoryError)) as refused:
            policy.open_read(root / rel)
        with pytest.raises(type(refused.value), match=re.escape(str(refused.value))):
            policy.open_read_as_written(root / rel)


def test_a_capped_read_takes_what_the_file_holds_without_a_buffer_the_size_of_the_cap(tree):
    """``read(cap + 1)`` (how a size limit is checked) allocates what the file holds, not the cap; a file that
    grew after its ``fstat`` is still read on up to the cap."""
    import tracemalloc

    root, _ = tree
    policy = PathPolicy([root])
    cap = 50 << 20
    tracemalloc.start()
    try:
        with policy.open_read("a/f.txt") as opened:
            tracemalloc.reset_peak()
            assert opened.read(cap + 1) == b"inside\n"
            assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    with policy.open_read("a/f.txt") as opened:
        with open(root / "a" / "f.txt", "ab") as grown:
            grown.write(b"and more\n")
        assert opened.read(cap + 1) == b"inside\nand more\n"
    with policy.open_read("a/f.txt") as opened:
        assert opened.read(10) == b"inside\nand"
