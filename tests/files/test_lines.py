"""read_file's line counting on bytes and its per-file line index: the same lines as str.splitlines."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from nexus_core import PathPolicy, ToolError
from nexus_files.lines import BLOCK, IndexCache, only_newlines
from nexus_files.read import read_lines

LIMIT = 64 << 20
# Line breaks str.splitlines honours besides \n, and bytes that are not UTF-8.
ODD = ["\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def expected(data: bytes, offset: int, limit: int) -> tuple[list[str], int]:
    every = data.decode("utf-8", errors="replace").splitlines()
    return (every[offset : offset + limit] if limit else every[offset:]), len(every)


def text(rng: random.Random, lines: int, breaks: list[str]) -> bytes:
    words = ["alpha", "β", "日本", "", "x" * 300, "tab\there"]
    body = "".join(rng.choice(words) + rng.choice(breaks) for _ in range(lines))
    data = body.encode()
    if rng.random() < 0.5:
        data = data.rstrip(b"\n")  # no newline at the end
    return data + (b"\xff\xc3 bad utf-8\n" if rng.random() < 0.5 else b"")


def read(policy: PathPolicy, path: Path, offset: int, limit: int, cache: IndexCache) -> tuple[list[str], int]:
    with policy.open_read(path) as opened:
        return read_lines(opened, path.name, offset, limit, LIMIT, cache)


@pytest.mark.parametrize("breaks", [["\n"], ["\n", "\r\n"], ["\n", *ODD]], ids=["lf", "crlf", "every-break"])
def test_lines_and_total_match_splitlines_across_blocks(tmp_path: Path, breaks: list[str]) -> None:
    rng = random.Random(len(breaks))
    policy = PathPolicy([tmp_path])
    cache = IndexCache(settle_ns=0)  # index every file read, so the second read takes the indexed path
    for size in (0, 1, 40, 700):
        path = tmp_path / f"f{size}.txt"
        data = text(rng, size, breaks)
        path.write_bytes(data)
        assert data == b"" or len(data) > BLOCK or size < 700
        for offset, limit in [(0, 2000), (0, 0), (1, 1), (3, 50), (size // 2, 0), (size - 1, 3), (size + 5, 10)]:
            offset = max(offset, 0)
            want = expected(data, offset, limit)
            assert read(policy, path, offset, limit, cache) == want  # first read: counted on the bytes
            assert read(policy, path, offset, limit, cache) == want  # then from the index
    every = expected(data, 0, 0)[0]
    for offset in range(len(every)):  # every line start, those at the ends of blocks included
        assert read(policy, path, offset, 2, cache) == (every[offset : offset + 2], len(every))


def test_only_newlines_finds_every_other_break() -> None:
    assert only_newlines(b"plain\nascii\n") and only_newlines("日本\n".encode()) and only_newlines(b"\xff\xfe\n")
    for brk in ODD:
        assert not only_newlines(f"a{brk}b\n".encode()), repr(brk)


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    policy = PathPolicy([tmp_path])
    cache = IndexCache(settle_ns=0)
    path = tmp_path / "f.txt"
    path.write_text("one\ntwo\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert read(policy, path, 0, 0, cache) == (["one", "two"], 2)
    path.write_text("1\n2\n3\n4\n")  # same size: the stamp differs by its times
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))
    assert read(policy, path, 0, 0, cache) == (["1", "2", "3", "4"], 4)


def test_a_file_changed_just_before_the_read_is_not_indexed(tmp_path: Path) -> None:
    policy = PathPolicy([tmp_path])
    cache = IndexCache()  # the default settling time
    path = tmp_path / "f.txt"
    path.write_text("one\ntwo\n")
    read(policy, path, 0, 0, cache)
    assert cache.get(path.stat()) is None
    settled = IndexCache(settle_ns=0)
    read(policy, path, 0, 0, settled)
    assert settled.get(path.stat()) is not None


def test_binary_and_too_large_files_are_refused_as_before(tmp_path: Path) -> None:
    policy = PathPolicy([tmp_path])
    (tmp_path / "b.bin").write_bytes(b"head\x00tail\n")
    (tmp_path / "big.txt").write_text("x\n" * 100)
    cache = IndexCache(settle_ns=0)
    with pytest.raises(ToolError, match="is a binary file"), policy.open_read(tmp_path / "b.bin") as opened:
        read_lines(opened, "b.bin", 0, 10, LIMIT, cache)
    for _ in range(2):  # the second time the file is indexed: still refused
        with pytest.raises(ToolError, match="above max_file_size"), policy.open_read(tmp_path / "big.txt") as opened:
            read_lines(opened, "big.txt", 0, 10, 100, cache)
        read(policy, tmp_path / "big.txt", 0, 1, cache)
