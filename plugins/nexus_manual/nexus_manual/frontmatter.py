"""YAML front matter: split it from the body, read it, and write it back without reordering keys.

PyYAML (with its C loader when present) is enough: keys keep their order
(``sort_keys=False``) and unknown keys survive. Comments inside the front
matter are kept when only ``date modified`` changes (that line is edited in
place) and lost only when the relations or aliases are rewritten.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from nexus_core import ToolError

_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
_MODIFIED_LINE = re.compile(r"^date modified[ \t]*:.*$", re.MULTILINE)
DATE_CREATED = "date created"
DATE_MODIFIED = "date modified"


@dataclass(frozen=True)
class Split:
    """A file cut in two: ``raw`` is the YAML between the fences (None without front matter)."""

    raw: str | None
    body_start: int  # offset of the first body character in the whole text
    text: str

    @property
    def body(self) -> str:
        return self.text[self.body_start :]

    @property
    def block(self) -> str:
        """The front matter block as written, fences included ('' when there is none)."""
        return self.text[: self.body_start]


def split(text: str) -> Split:
    first_nl = text.find("\n")
    # A byte-order mark (some Windows editors write one) is not content: the fence after it still opens the
    # front matter, else an edit would add a second front matter above it. Rewrites leave the mark out.
    if first_nl < 0 or text[:first_nl].lstrip("\ufeff").rstrip("\r \t") != "---":
        return Split(None, 0, text)
    close = _CLOSE.search(text, first_nl + 1)
    if close is None:
        return Split(None, 0, text)
    end = text.find("\n", close.end())
    body_start = len(text) if end < 0 else end + 1
    return Split(text[first_nl + 1 : close.start()], body_start, text)


def load(raw: str | None, *, where: str) -> dict[str, Any]:
    """The front matter as a dict ({} when absent); ToolError when it is not a YAML mapping."""
    if raw is None or not raw.strip():
        return {}
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(raw, Loader=loader)  # a safe loader: CSafeLoader or SafeLoader
    except yaml.YAMLError as exc:
        raise ToolError(f"the front matter of {where} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ToolError(f"the front matter of {where} is not a YAML mapping")
    return data


def dump(data: dict[str, Any]) -> str:
    """YAML text for a front matter dict, keys in their given order, non-ASCII kept readable."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=4096)


def render(data: dict[str, Any], body: str) -> str:
    return f"---\n{dump(data)}---\n{body}"


def now() -> str:
    """The current local time in ISO 8601, to the second, with its UTC offset."""
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def touch(text: str, *, add_if_missing: bool = True) -> str:
    """``text`` with ``date modified`` set to now, edited in place so the rest of the front matter is untouched.

    Without front matter, one is added when ``add_if_missing`` (entities), else the text is returned as is.
    """
    line = dump({DATE_MODIFIED: now()}).rstrip("\n")
    parts = split(text)
    if parts.raw is None:
        return f"---\n{line}\n---\n{text}" if add_if_missing else text
    if _MODIFIED_LINE.search(parts.raw):
        raw = _MODIFIED_LINE.sub(lambda _m: line, parts.raw, count=1)
    else:
        raw = parts.raw + ("" if parts.raw.endswith("\n") or not parts.raw else "\n") + line + "\n"
    return f"---\n{raw}---\n{parts.body}"


def jsonable(value: Any) -> Any:
    """Front matter values for JSON output: dates become ISO strings."""
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value
