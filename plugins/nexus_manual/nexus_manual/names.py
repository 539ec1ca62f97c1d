"""Entity names, heading names and globs: validation and the matching rules every tool shares."""

from __future__ import annotations

import re
import unicodedata
from fnmatch import fnmatchcase, translate

from nexus_core import ToolError

MANUAL_NAME = "meta"  # meta.md is the library's manual, never an entity
MAX_NAME_BYTES = 200  # leaves room for ".md" and the temp-file affixes within a 255-byte file name
FRONTMATTER = "frontmatter"  # the pseudo-section holding the YAML front matter

_HEADING_MARKS = re.compile(r"^\s*#+\s*")


def check_entity_name(name: str) -> str:
    """``name`` when it is a safe file stem, else a ToolError saying what is wrong with it."""
    if not name or not name.strip():
        raise ToolError("entity name is empty")
    if name != name.strip():
        raise ToolError(f"entity name '{name}' has leading or trailing whitespace")
    if "/" in name or "\\" in name:
        raise ToolError(f"entity name '{name}' contains a path separator; names are flat file stems")
    if "\x00" in name or any(unicodedata.category(c) == "Cc" for c in name):
        raise ToolError(f"entity name {name!r} contains a control character")
    if name.startswith("."):
        raise ToolError(f"entity name '{name}' starts with a dot; hidden names are not entities")
    if ".." in name:
        raise ToolError(f"entity name '{name}' contains '..'")
    if name.lower().endswith(".md"):
        raise ToolError(f"entity name '{name}' ends with '.md'; give the name without the extension")
    if name.casefold() == MANUAL_NAME:
        raise ToolError(f"'{name}' is reserved for the library manual (meta.md); use the manual tools")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ToolError(f"entity name '{name[:40]}…' is longer than {MAX_NAME_BYTES} bytes in UTF-8")
    return name


def normalize_heading(text: str) -> str:
    """Heading text as compared: leading ``#`` marks, surrounding and repeated spaces, and case ignored."""
    return " ".join(_HEADING_MARKS.sub("", text).split()).casefold()


def heading_level_hint(text: str) -> int | None:
    """The level written as leading ``#`` marks (``"## Setup"`` -> 2), or None when there are none."""
    stripped = text.lstrip()
    marks = len(stripped) - len(stripped.lstrip("#"))
    return min(marks, 6) if marks else None


def compile_globs(patterns: list[str]) -> re.Pattern[str]:
    """One regex for fnmatch-style, case-insensitive globs over normalised heading text.

    A pattern may carry leading ``#`` marks like a heading. Compiled once per call,
    so matching thousands of headings costs microseconds.
    """
    return re.compile("|".join(f"(?:{translate(normalize_heading(p))})" for p in patterns), re.DOTALL)


def glob_match(pattern: str, text: str) -> bool:
    return compile_globs([pattern]).match(normalize_heading(text)) is not None


def name_glob_match(pattern: str, name: str) -> bool:
    """fnmatch-style, case-insensitive match of an entity name."""
    return fnmatchcase(name.casefold(), pattern.casefold())


def snippet(text: str, width: int = 60) -> str:
    """A short, one-line rendering of user text for error messages."""
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= width else flat[: width - 1] + "…"
