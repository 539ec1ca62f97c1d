"""MiniLM with its word embeddings dequantized row by row, as a text looks them up: 11.7 MB of int8 instead of 47 MB.

The int8 model dequantizes its word embeddings whole (``Cast`` and ``Mul`` by a scale per row) before ``Gather``
picks the rows of a text's tokens. onnxruntime's constant folding computes that float32 table once, at load, and
keeps it: 47 MB resident for 30,522 rows of which a text reads a few dozen. Here the same nodes run the other way
round: ``Gather`` the int8 rows and their scales, then ``Cast`` and ``Mul`` those rows only. The products are the
same float32 products, so the vectors are the same, bit for bit (``tests/memory/test_minilm_rows.py``); the weights
of the layers are folded as before (dequantizing them at every call made a call 10x slower).

The model file is rewritten once, by editing the protobuf's nodes (no onnx package needed), into the model cache
beside USE's (``use_cache.cache_folder()``), with its sha256 recorded and checked at every load, as USE's files.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nexus_core import private_folder
from nexus_memory.embed import checksums, use_cache
from nexus_memory.embed.base import EmbedderError

log = logging.getLogger("nexus.memory")

TABLE = "inner.embeddings.word_embeddings."
MODEL = "model.onnx"


def cached_model() -> Path:
    """The rewritten model in the model cache, built there first from the checked package's model if it is not."""
    folder = _folder()
    if not (folder / (MODEL + ".sha256")).is_file():
        _build(folder)
    return folder / MODEL


@contextmanager
def checked(path: Path) -> Iterator[str]:
    """``path`` as onnxruntime loads it: through the descriptor it was hashed from (``/proc/self/fd``), so the file
    loaded is the file checked against the sha256 recorded when it was built."""
    expected = (path.parent / (path.name + ".sha256")).read_text(encoding="ascii").strip()
    with path.open("rb") as f:
        digest = hashlib.sha256()
        while chunk := f.read(checksums.CHUNK):
            digest.update(chunk)
        if (actual := digest.hexdigest()) != expected:
            raise EmbedderError(
                f"{path} (built from {checksums.MINILM.name}) has sha256 {actual}, expected {expected}: "
                f"delete it to build it again from the checked package: rm -r '{path.parent}'"
            )
        yield f"/proc/self/fd/{f.fileno()}"


def _folder() -> Path:
    """Named after the package's model and this module's code: a change to either builds it again."""
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    return use_cache.cache_folder() / f"minilm-{checksums.MINILM.files[MODEL][:12]}-{code}"


def _build(folder: Path) -> None:
    (path,) = checksums.check_package(checksums.MINILM).values()
    data = rewrite(path.read_bytes())
    private_folder(folder.parent)
    log.info("building MiniLM with its word embeddings looked up row by row, once: %s", folder)
    with tempfile.TemporaryDirectory(prefix="building-", dir=folder.parent) as tmp:
        built = Path(tmp)
        (built / MODEL).write_bytes(data)
        (built / (MODEL + ".sha256")).write_text(hashlib.sha256(data).hexdigest() + "\n", encoding="ascii")
        private_folder(folder)
        for name in (MODEL, MODEL + ".sha256"):  # the sha256 last: a build cut short is built again
            os.replace(built / name, folder / name)
    for old in folder.parent.glob("minilm-*"):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)


# -- the protobuf: ModelProto.graph (7) -> GraphProto.node (1) -> NodeProto input (1), output (2), op_type (4) ------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """Each field of a message: (number, its raw bytes with the tag, its payload if length-delimited, else b"")."""
    out, pos = [], 0
    while pos < len(data):
        start = pos
        tag, pos = _varint(data, pos)
        wire = tag & 7
        if wire == 0:
            _, pos = _varint(data, pos)
            payload = b""
        elif wire == 2:
            size, pos = _varint(data, pos)
            payload, pos = data[pos : pos + size], pos + size
        elif wire in (1, 5):
            pos, payload = pos + (8 if wire == 1 else 4), b""
        else:
            raise EmbedderError(f"MiniLM's model has a protobuf field of wire type {wire}: not rewritten")
        out.append((tag >> 3, data[start:pos], payload))
    return out


def _field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def _node(op: str, inputs: list[str], output: str, attribute: bytes = b"") -> bytes:
    body = b"".join(_field(1, name.encode()) for name in inputs) + _field(2, output.encode()) + _field(4, op.encode())
    return _field(1, body + attribute)


def _int_attribute(name: str, value: int) -> bytes:
    """An AttributeProto of type INT (2): name (1), i (3), type (20)."""
    return _field(5, _field(1, name.encode()) + b"\x18" + _encode_varint(value) + b"\xa0\x01\x02")


def _rows_nodes(ids: str, output: str) -> bytes:
    """The four nodes that replace Cast, Mul and Gather: the rows of ``ids``, dequantized."""
    return b"".join(
        (
            _node("Gather", [TABLE + "weight_q", ids], TABLE + "rows_q", _int_attribute("axis", 0)),
            _node("Gather", [TABLE + "weight_scale", ids], TABLE + "rows_scale", _int_attribute("axis", 0)),
            _node("Cast", [TABLE + "rows_q"], TABLE + "rows_f", _int_attribute("to", 1)),  # 1: FLOAT
            _node("Mul", [TABLE + "rows_f", TABLE + "rows_scale"], output),
        )
    )


def rewrite(model: bytes) -> bytes:
    """``model`` with the table's Cast, Mul and Gather replaced by ``_rows_nodes``; the rest byte for byte."""
    graph_out, replaced = bytearray(), []
    ((graph,),) = [[payload] for number, _, payload in _fields(model) if number == 7]
    for number, raw, payload in _fields(graph):
        if number != 1:
            graph_out += raw
            continue
        node = _fields(payload)
        op = next(p.decode() for n, _, p in node if n == 4)
        inputs = [p.decode() for n, _, p in node if n == 1]
        outputs = [p.decode() for n, _, p in node if n == 2]
        if (op, inputs[:1]) in (("Cast", [TABLE + "weight_q"]), ("Mul", [TABLE + "weight_f"])):
            replaced.append(op)
        elif (op, inputs[:1]) == ("Gather", [TABLE + "weight"]) and len(inputs) == 2 and len(outputs) == 1:
            replaced.append(op)
            graph_out += _rows_nodes(inputs[1], outputs[0])
        else:
            graph_out += raw
    if sorted(replaced) != ["Cast", "Gather", "Mul"]:
        raise EmbedderError(f"MiniLM's model does not dequantize its word embeddings as expected ({replaced})")
    return b"".join(raw for number, raw, _ in _fields(model) if number != 7) + _field(7, bytes(graph_out))
