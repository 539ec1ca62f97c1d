"""The text in an image, read by RapidOCR (the ``[ocr]`` extra) with the PP-OCRv6 models inside its wheel.

Nothing is downloaded. The two model files are found in the installed package, their sha256 checked against
``embed.checksums.RAPIDOCR`` before they load, and handed to RapidOCR by path, so the files it loads are the
files checked (its own lookup fetches a model it misses from the network). The image goes in decoded, never as
a path or a URL (RapidOCR would open or fetch those itself). Only detection and recognition run: the
text-direction classifier stays off, as screenshots are upright. One engine per process, loaded at the first
image; its calls run one at a time, as each already uses every core.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from nexus_memory.embed import checksums
from nexus_memory.images.files import EXTRA, ImageError

log = logging.getLogger("nexus.memory")

# Detection sees the image scaled so that its shorter side is at least this many pixels (RapidOCR's default, 736,
# made a one-line screenshot four times larger: 2.8 s of detection on the 2-core machine instead of 0.5 s).
DETECT_MIN_SIDE = 320

_lock = threading.Lock()
_engine: Any = None


def require() -> None:
    """Refuse at once, in one line, where the ``[ocr]`` extra (Pillow and RapidOCR) is not installed."""
    try:
        import PIL.Image  # noqa: F401
        import rapidocr  # noqa: F401  (light: it imports its engine, cv2 and onnxruntime, when first used)
    except ImportError:
        raise ImageError(f"storing an image needs the memory plugin's OCR extra: {EXTRA}") from None


def engine() -> Any:
    """The process's RapidOCR, loaded (its models checked first) on the first call."""
    global _engine
    with _lock:
        if _engine is None:
            started = time.perf_counter()
            try:
                from rapidocr import RapidOCR
            except ImportError:
                raise ImageError(f"reading an image's text needs the memory plugin's OCR extra: {EXTRA}") from None
            models = checksums.check_package(checksums.RAPIDOCR, ImageError)
            _engine = RapidOCR(
                params={
                    "Global.log_level": "warning",  # its INFO lines name every model it loads
                    "Global.use_cls": False,
                    "Det.model_path": str(models["models/PP-OCRv6_det_small.onnx"]),
                    "Rec.model_path": str(models["models/PP-OCRv6_rec_small.onnx"]),
                    "Det.limit_type": "min",
                    "Det.limit_side_len": DETECT_MIN_SIDE,
                }
            )
            log.info("loaded the OCR models in %.2f s", time.perf_counter() - started)
        return _engine


def read_text(picture: Any) -> str:
    """The lines of text in ``picture`` (a decoded Pillow image), top to bottom; '' when it has none."""
    reader = engine()
    started = time.perf_counter()
    with _lock:
        found = reader(picture.convert("RGB"))
    lines = [t.strip() for t in (getattr(found, "txts", None) or ()) if t and t.strip()]
    log.debug("read %d lines of text in an image in %.2f s", len(lines), time.perf_counter() - started)
    return "\n".join(lines)


def forget() -> None:
    """Load the engine again at the next image (for tests)."""
    global _engine
    with _lock:
        _engine = None
